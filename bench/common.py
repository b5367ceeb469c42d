"""Shared pieces of Kelvin's benchmarks: machine info, timing, corpora and cached embeddings.

Everything here is deterministic for a given seed. Generated corpora and their MiniLM vectors are
cached under ``bench/results/`` (git-ignored), so a second run skips the slow embedding step.
"""
from __future__ import annotations

import atexit
import json
import os
import platform
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(os.environ.get("KELVIN_BENCH_CACHE", ROOT / "bench" / "results"))
ST_MODEL = "all-MiniLM-L6-v2"
ST_SPEC = f"st:{ST_MODEL}"
BASE_MS = int(datetime(2026, 11, 2, 9, 0, tzinfo=timezone.utc).timestamp() * 1000)

sys.path.insert(0, str(ROOT))
os.environ.setdefault("LANCEDB_LOG", "error")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
# benchmarks never read an artist's kelvin.toml or environment overrides
os.environ["KELVIN_CONFIG_DIR"] = tempfile.mkdtemp(prefix="kelvin-bench-config-")
atexit.register(shutil.rmtree, os.environ["KELVIN_CONFIG_DIR"], True)
for _var in ("KELVIN_EMBEDDER", "KELVIN_INDEX_URI", "KELVIN_DATA_DIR", "KELVIN_PROJECT"):
    os.environ.pop(_var, None)


def log(*parts) -> None:
    print(*parts, file=sys.stderr, flush=True)


def app_sources_hash() -> str:
    """A fingerprint of app/ as it is on disk (the code under test may be uncommitted)."""
    import hashlib

    h = hashlib.sha1()
    for p in sorted((ROOT / "app").rglob("*.py")):
        h.update(p.relative_to(ROOT).as_posix().encode() + b"\0" + p.read_bytes())
    return h.hexdigest()[:12]


def emit(doc: dict) -> None:
    """The one JSON document a benchmark prints to stdout."""
    doc["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    doc["app_sources_at_end"] = app_sources_hash()
    print(json.dumps(doc, indent=2, ensure_ascii=False))


# ---- machine -----------------------------------------------------------------------------------
def machine_info() -> dict:
    import psutil

    cpu = platform.processor() or "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from importlib.metadata import PackageNotFoundError, version

    versions = {}  # (read from the installed packages' metadata: importing torch only for this cost ~6 CPU-s)
    for mod, dist in (("lancedb", "lancedb"), ("pyarrow", "pyarrow"), ("numpy", "numpy"), ("torch", "torch"),
                      ("sentence_transformers", "sentence-transformers")):
        try:
            versions[mod] = version(dist)
        except PackageNotFoundError:  # optional
            versions[mod] = None
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "status", "--porcelain", "app"], cwd=ROOT, capture_output=True,
                                    text=True).stdout.strip())
    except OSError:
        rev, dirty = "", False
    return {
        "cpu": cpu, "logical_cores": os.cpu_count(), "ram_gib": round(psutil.virtual_memory().total / 2**30, 1),
        "os": platform.platform(), "python": platform.python_version(), "versions": versions,
        "git": rev + ("+dirty(app)" if dirty else ""), "app_sources": app_sources_hash(),
        "loadavg_at_start": [round(x, 2) for x in os.getloadavg()],
        "date_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


# ---- timing --------------------------------------------------------------------------------------
def summary_ms(samples_s: list[float]) -> dict:
    a = np.asarray(samples_s, dtype=float) * 1000.0
    return {"n": int(a.size), "mean": round(float(a.mean()), 3), "p50": round(float(np.percentile(a, 50)), 3),
            "p95": round(float(np.percentile(a, 95)), 3), "p99": round(float(np.percentile(a, 99)), 3),
            "max": round(float(a.max()), 3)}


def time_calls(fn, args_list, warmup: int = 20) -> dict:
    """Call ``fn(*args)`` for each args (after ``warmup`` untimed calls) and summarise in ms."""
    for args in args_list[:warmup]:
        fn(*args)
    out = []
    for args in args_list:
        t0 = time.perf_counter()
        fn(*args)
        out.append(time.perf_counter() - t0)
    return summary_ms(out)


def folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def peak_rss_mib() -> float:
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)  # Linux: kB


# ---- Kelvin --------------------------------------------------------------------------------------
def make_service(data_dir: Path, embedder: str = "none", project: str = "bench", embedder_obj=None):
    from app.services.memory import MemoryService
    from app.config import load

    settings = load({"data_dir": str(data_dir), "project": project, "embedder": embedder})
    return MemoryService(settings, embedder=embedder_obj)


def to_items(msgs: list[dict], project: str = "bench"):
    from app.core.records import Message
    from app.services.importer import ImportItem

    return [ImportItem(project, Message(id=m["id"], project=project, conversation_id=m["conversation_id"],
                                        role=m["role"], speaker="", text=m["text"], ts_ms=m["ts_ms"]))
            for m in msgs]


def candidate(x, score: float = 0.0, distance: bool = False):
    """A search leg's result as a fusion Candidate, whether the index returns Candidates or chunk rows;
    ``score`` is the leg's own (BM25, or a cosine distance when ``distance``: made a similarity)."""
    from app.core.fusion import Candidate

    if not isinstance(x, dict):
        return x
    return Candidate(x["message_id"], x["ts_ms"], x["text"], score=1.0 - score if distance else score)


# ---- the rendering vocabulary ------------------------------------------------------------------------
# name, engine, values, unit, alternative wording, problem it fixes, that problem said another way
PARAMS = [
    ("GI clamp", "Octane", [1, 2, 3, 5, 8, 10, 15, 20, 25, 40, 50], "", "the clamp on indirect light",
     "fireflies in the glass", "sparkly white pixels in the glassware"),
    ("max samples", "Octane", [256, 512, 1000, 1024, 2000, 2048, 4000, 4096, 8000], "", "the sample cap",
     "grain in the shadows", "the dark areas still crawling with noise"),
    ("parallel samples", "Octane", [4, 8, 16, 32, 64], "", "the number of samples run at once",
     "the GPU sitting half idle", "the graphics card not being fully used"),
    ("AO distance", "Octane", [0.5, 1, 2, 3, 5, 10], "m", "the ambient occlusion reach",
     "dirty dark corners", "corners that looked grimy"),
    ("specular depth", "Octane", [4, 6, 8, 12, 16, 24], "", "the glossy bounce count",
     "black patches inside the bottle", "the inside of the glass going black"),
    ("adaptive error threshold", "Redshift", [0.003, 0.005, 0.01, 0.02, 0.05], "", "the adaptive noise target",
     "blotchy noise on the walls", "patchy grain across the plaster"),
    ("num GI bounces", "Redshift", [2, 3, 4, 5, 6, 8], "", "the number of indirect bounces",
     "the room looking too dark", "the interior feeling dim and flat"),
    ("brute force rays", "Redshift", [64, 128, 256, 512, 1024], "", "the rays for brute-force GI",
     "splotches in the indirect light", "stains in the bounced lighting"),
    ("maxsubdivs", "V-Ray", [4, 8, 12, 16, 24, 32, 48], "", "the maximum subdivisions",
     "render time blowing up", "frames taking forever"),
    ("light cache subdivs", "V-Ray", [500, 1000, 1500, 2000, 3000], "", "the light cache quality",
     "flickering in the animation", "the secondary bounce flickers between frames"),
    ("min shading rate", "V-Ray", [2, 4, 6, 8, 16], "", "the shading rate floor",
     "noisy glossy reflections", "grainy reflections on the chrome"),
    ("camera AA samples", "Arnold", [3, 4, 5, 6, 8, 10], "", "the anti-aliasing samples",
     "jagged edges on the logo", "stair-stepping along the lettering"),
    ("diffuse ray depth", "Arnold", [1, 2, 3, 4], "", "the diffuse bounce limit",
     "the fabric looking flat", "the cloth missing soft bounce"),
    ("noise threshold", "Cycles", [0.005, 0.01, 0.02, 0.05, 0.1], "", "the adaptive sampling threshold",
     "speckles on the car paint", "tiny dots all over the paintwork"),
    ("max bounces", "Cycles", [4, 6, 8, 12, 16, 32], "", "the light path limit",
     "dark glass inside the headlights", "headlight lenses rendering too black"),
    ("filter glossy", "Cycles", [0.5, 1, 1.5, 2], "", "the glossy blur for caustics",
     "caustic fireflies on the floor", "bright sparkles scattered across the ground"),
    ("pixel samples", "Karma", [16, 32, 64, 128, 256], "", "the samples per pixel",
     "noisy motion blur", "grainy streaks on the moving parts"),
    ("noise level limit", "Corona", [1, 2, 3, 4, 5], "%", "the target noise level",
     "renders never finishing overnight", "the overnight batch not completing"),
    ("passes limit", "Corona", [50, 100, 200, 300, 500], "", "the pass cap",
     "unpredictable render times", "frame times all over the place"),
    ("focal length", None, [24, 28, 35, 50, 85, 100, 135], "mm", "the lens",
     "distortion on the product edges", "the packshot edges bulging"),
    ("f-stop", None, [1.4, 2, 2.8, 4, 5.6, 8, 11], "", "the aperture",
     "too much blur on the label", "the label being out of focus"),
    ("HDRI exposure", None, [-1, -0.5, 0.5, 1, 1.5, 2], "ev", "the environment brightness",
     "the background blowing out", "the sky burning to white"),
    ("sun intensity", None, [0.5, 1, 2, 3, 5, 8], "", "the strength of the sun",
     "harsh shadows on the facade", "the building shadows being too hard"),
    ("key light intensity", None, [10, 20, 40, 80, 150, 300], "", "the main light",
     "the face being overexposed", "the subject's skin looking burnt"),
    ("color temperature", None, [2700, 3200, 4500, 5600, 6500, 7500], "K", "the white balance of the lights",
     "the interior looking too orange", "everything having a warm cast"),
    ("roughness", None, [0.05, 0.1, 0.2, 0.3, 0.45, 0.6], "", "the material glossiness",
     "the car paint looking like plastic", "the bodywork feeling cheap and CG"),
    ("IOR", None, [1.33, 1.45, 1.5, 1.52, 1.6, 2.4], "", "the refraction index",
     "the glass looking fake", "the glassware not reading as real"),
    ("SSS radius", None, [0.5, 1, 2, 3, 5], "mm", "the subsurface scattering distance",
     "the skin looking waxy", "the face looking like a candle"),
    ("displacement height", None, [0.5, 1, 2, 4, 8], "cm", "the displacement amount",
     "the bricks looking painted on", "the wall reading flat from the camera"),
    ("bump strength", None, [0.1, 0.2, 0.3, 0.5, 0.8, 1], "", "the bump amount",
     "the leather looking too smooth", "the seats missing their grain"),
    ("texture tiling", None, [2, 4, 6, 8, 12, 16], "x", "the texture repeat",
     "visible repetition on the floor", "the floor pattern obviously repeating"),
    ("bloom strength", None, [0.05, 0.1, 0.2, 0.3, 0.5], "", "the glow in post",
     "the highlights looking dull", "the bright spots lacking glow"),
    ("motion blur shutter", None, [90, 120, 180, 270, 360], "°", "the shutter angle",
     "the wheels looking frozen", "the spinning rims not reading as motion"),
    ("denoiser blend", None, [0.2, 0.3, 0.5, 0.7, 1], "", "the denoiser mix",
     "the wood grain getting smeared", "the timber detail turning to mush"),
]

SCENES = ["kitchen", "bathroom", "car studio", "forest path", "perfume bottle", "living room", "night street",
          "watch closeup", "sneaker", "ocean cliff", "hotel lobby", "coffee machine", "museum hall",
          "sports car", "rooftop bar", "jewelry box"]

FILLER = [
    "thanks!", "ok", "sounds good", "coffee break, back in 10", "client call moved to 3pm",
    "the render farm is down again", "can you remind me to export the AOVs later", "looks good to me",
    "the client liked the second version", "I'll render a preview and get back to you",
    "ugh, the scene crashed on save", "lunch, brb", "can you write that down for tomorrow?",
    "the art director wants more mood", "we need the first stills by Friday", "how long did that frame take?",
    "my viewport is super slow today", "did the backup finish?", "let's do a quick review at 5",
    "the producer asked for an ETA", "I'm reopening the file from yesterday", "nice, much better",
    "that's weird, it looked fine in the viewport", "let me check the asset library", "sent the preview to Anna",
    "merging the new model from the modeler", "going to update the plugins tonight",
    "client feedback came in, mostly about framing", "I'll do the cleanup pass tomorrow morning",
    "remember the deadline moved to next Tuesday", "can you summarize what we changed today?",
]

ASSISTANT = [
    "{name} controls {alt}. Lower values trade {problem} for speed; raise it only as far as the shot needs.",
    "On {engine_or} the {name} setting is usually the first thing to look at when you see {problem}.",
    "A good way to check {name} is a crop render of the worst area: change one value at a time and compare.",
    "If {problem} remains after changing {name}, the cause is often elsewhere: light sizes, materials or the denoiser.",
    "Keep in mind {name} interacts with the denoiser; judge it on the raw beauty pass first.",
    "For stills you can afford a more conservative {name}; for animation watch out for flicker.",
]

SET_TEMPLATES = [  # {ex} is the exact, searchable "name value" phrase
    "{scene}: set {ex} {reason}.",
    "Let's start the {scene} shot with {ex}.",
    "For the {scene} I'm putting {ex}, {reason}.",
    "Trying {ex} on the {scene} render {reason}.",
]
CHANGE_TEMPLATES = [
    "The {scene} still has {problem}, so I changed {ex}.",
    "{scene}: bumped {ex} because of {problem}.",
    "Fixed {problem} on the {scene} by going to {ex}.",
    "Because of {problem} in the {scene}, we switched to {ex}.",
]
FINAL_TEMPLATES = [
    "OK, the {scene} is locked: {ex}, that's final.",
    "Final call for the {scene}: {ex}. Don't touch it anymore.",
    "We're keeping {ex} for the {scene} final renders.",
    "Approved by the client, so the {scene} stays at {ex}.",
]
REVERT_TEMPLATES = [
    "{scene}: back to {ex}, the other value looked worse.",
    "Reverting the {scene} to {ex}; the change didn't help.",
]
EXACT_FORMS = ["{name} {v}{u}", "{name} to {v}{u}", "{name} = {v}{u}", "{name} at {v}{u}"]
FINAL_Q = [
    "what did we settle on for {n} in the {scene}?", "what value did we end up with for {n} on the {scene}?",
    "remind me the final value of {n} for the {scene} shot", "where did we land with {n} on the {scene}?",
]
WHY_Q = [
    "how did we fix {para} in the {scene}?", "what did we change about {para} on the {scene}?",
    "in the {scene}, what was done against {para}?",
]
FIRST_Q = [
    "what value of {n} did we start the {scene} with?", "what was {n} initially on the {scene}?",
]


def _fmt(v) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def _exact(rng: random.Random, name: str, v, unit: str) -> str:
    return rng.choice(EXACT_FORMS).format(name=name, v=_fmt(v), u=unit)


def _msg(msgs: list, conv: str, role: str, text: str, ts_ms: int) -> dict:
    m = {"id": f"m{len(msgs):07d}", "conversation_id": conv, "role": role, "text": text, "ts_ms": ts_ms}
    msgs.append(m)
    return m


def _assistant(rng: random.Random, p: tuple) -> str:
    name, engine, _v, _u, alt, problem, _para = p
    parts = rng.sample(ASSISTANT, k=rng.randint(1, 3))
    sentences = [t.format(name=name, alt=alt, problem=problem, engine_or=engine or "most engines") for t in parts]
    return " ".join(x[0].upper() + x[1:] for x in sentences)


def recall_corpus(seed: int = 7, scenes: int = 16, params_per_scene: int = 8, days: int = 10,
                  filler_per_event: float = 8.0) -> tuple[list[dict], list[dict]]:
    """A project of rendering sessions over ``days`` days with known answers.

    Each (scene, parameter) history: an initial setting, a change that names the problem it fixes,
    sometimes a revert ("back to 25"), and a final, settled value; around it assistant explanations
    and distractors (the same parameter in other scenes, talk about it without values) and filler.
    Returns (messages, questions); a question's ``relevant`` ids are the messages that answer it.
    """
    rng = random.Random(seed)
    events = []  # (day, minute, scene, kind, payload)
    histories = []
    for scene in SCENES[:scenes]:
        for p in rng.sample(PARAMS, k=params_per_scene):
            name, engine, values, unit, alt, problem, para = p
            vals = rng.sample(values, k=min(3, len(values)))
            d0 = rng.randint(0, days - 4)
            d = sorted(rng.sample(range(d0, days), k=3))
            hist = {"scene": scene, "p": p, "vals": vals, "ids": {}}
            histories.append(hist)
            events.append((d[0], rng.randint(0, 400), scene, "set", hist))
            events.append((d[1], rng.randint(0, 400), scene, "change", hist))
            hist["revert"] = rng.random() < 0.35
            events.append((d[2], rng.randint(0, 400), scene, "final", hist))
    events.sort(key=lambda e: (e[0], e[1], e[2]))
    msgs: list[dict] = []
    for day, minute, scene, kind, hist in events:
        name, engine, values, unit, alt, problem, para = hist["p"]
        conv = f"{scene.replace(' ', '-')}-day{day + 1:02d}"
        ts = BASE_MS + day * 86_400_000 + minute * 60_000 + len(msgs) * 1000
        for _ in range(int(rng.expovariate(1 / filler_per_event))):
            _msg(msgs, conv, "user", rng.choice(FILLER), ts)
            ts += 20_000
        eng = f" in {engine}" if engine and rng.random() < 0.5 else ""  # "… GI clamp 10 in Octane."
        if kind == "set":
            ex = _exact(rng, name, hist["vals"][0], unit)
            text = rng.choice(SET_TEMPLATES).format(scene=scene, ex=ex + eng, reason=rng.choice(
                ["as a start", "for now", "to see where we are", "first"]))
        elif kind == "change":
            ex = _exact(rng, name, hist["vals"][1], unit)
            text = rng.choice(CHANGE_TEMPLATES).format(scene=scene, ex=ex, problem=problem)
        else:
            v = hist["vals"][0] if hist["revert"] else hist["vals"][2]
            ex = _exact(rng, name, v, unit)
            tpl = REVERT_TEMPLATES if hist["revert"] else FINAL_TEMPLATES
            text = rng.choice(tpl).format(scene=scene, ex=ex)
            if hist["revert"]:
                text += " " + rng.choice(["That's the final value.", "Locking that in.", "Keep it there."])
        text = text[0].upper() + text[1:]
        hist["ids"][kind] = _msg(msgs, conv, "user", text, ts)["id"]
        hist.setdefault("exact", {})[kind] = ex
        ts += 30_000
        if rng.random() < 0.7:
            _msg(msgs, conv, "assistant", _assistant(rng, hist["p"]), ts)
            ts += 30_000
        if rng.random() < 0.3:  # a distractor: the parameter mentioned with no decision
            other = rng.choice(SCENES[:scenes])
            _msg(msgs, conv, "user", rng.choice([
                f"should we look at {name} on the {other} too?", f"does {name} matter much for the {other}?",
                f"not touching {name} yet, first the materials", f"what does {name} actually do?"]), ts)
    questions = _recall_questions(rng, histories, msgs)
    return msgs, questions


def _recall_questions(rng: random.Random, histories: list[dict], msgs: list[dict]) -> list[dict]:
    from app.core.fusion import normalise

    norm = [normalise(m["text"]) for m in msgs]

    def holding(ex: str) -> list[str]:  # "GI clamp 1" is in neither "GI clamp 10" nor "GI clamp 1.5"
        rx = re.compile(r"(?<!\w)" + re.escape(normalise(ex)) + r"(?!\w|[.,]\d)")
        return [m["id"] for m, t in zip(msgs, norm) if rx.search(t)]
    qs = []
    for h in histories:
        name, engine, values, unit, alt, problem, para = h["p"]
        scene = h["scene"]
        for kind in ("set", "change", "final"):  # exact strings: every message holding them is an answer
            ex = h["exact"][kind]
            rel = holding(ex)
            qs.append({"type": "exact", "q": ex, "relevant": rel})
        n = "the " + name if rng.random() < 0.5 else alt
        qs.append({"type": "final", "q": rng.choice(FINAL_Q).format(n=n, scene=scene), "relevant": [h["ids"]["final"]]})
        qs.append({"type": "why", "q": rng.choice(WHY_Q).format(para=para, scene=scene), "relevant": [h["ids"]["change"]]})
        n = "the " + name if rng.random() < 0.5 else alt
        first = [h["ids"]["set"]] + ([h["ids"]["final"]] if h["revert"] else [])
        qs.append({"type": "first", "q": rng.choice(FIRST_Q).format(n=n, scene=scene), "relevant": first})
    # exact strings repeat across scenes ("GI clamp 10" set twice): keep one question per string
    seen, out = set(), []
    for q in qs:
        if q["q"] in seen:
            continue
        seen.add(q["q"])
        out.append(q)
    return out


def scale_corpus(conversations: int = 1000, per_conversation: int = 100, seed: int = 11) -> list[dict]:
    """``conversations`` x ``per_conversation`` messages of rendering sessions, for latency, import and
    disk numbers (no ground truth). The first k*per_conversation messages are the corpus for size k."""
    rng = random.Random(seed)
    msgs: list[dict] = []
    for c in range(conversations):
        scene = rng.choice(SCENES) + f" sh{rng.randint(1, 99) * 10:03d}"
        conv = f"conv-{c:04d}"
        ts = BASE_MS + c * 3_600_000
        while len(msgs) < (c + 1) * per_conversation:
            p = rng.choice(PARAMS)
            name, engine, values, unit, alt, problem, para = p
            r = rng.random()
            if r < 0.35:
                ex = _exact(rng, name, rng.choice(values), unit)
                tpl = rng.choice(SET_TEMPLATES + CHANGE_TEMPLATES + FINAL_TEMPLATES)
                text = tpl.format(scene=scene, ex=ex, problem=problem, reason=rng.choice(["for now", "as a start"]))
                role = "user"
            elif r < 0.7:
                text, role = _assistant(rng, p), "assistant"
                if rng.random() < 0.5:
                    text += " " + _assistant(rng, rng.choice(PARAMS))
            else:
                text, role = rng.choice(FILLER), "user"
                if rng.random() < 0.5:
                    text = f"{text} ({scene}, {rng.choice(PARAMS)[0]})"
            _msg(msgs, conv, role, text[0].upper() + text[1:], ts)
            ts += rng.randint(5, 120) * 1000
    return msgs


def latency_queries(n: int = 250, seed: int = 5) -> list[str]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        name, engine, values, unit, alt, problem, para = rng.choice(PARAMS)
        scene = rng.choice(SCENES)
        kind = i % 4
        if kind == 0:
            out.append(_exact(rng, name, rng.choice(values), unit))
        elif kind == 1:
            out.append(rng.choice(FINAL_Q).format(n=rng.choice(["the " + name, alt]), scene=scene))
        elif kind == 2:
            out.append(rng.choice(WHY_Q).format(para=para, scene=scene))
        else:
            out.append(f"{name} {engine or ''}".strip())
    return out


# ---- embeddings ------------------------------------------------------------------------------------
_MODEL = None


def st_model():
    global _MODEL
    if _MODEL is None:
        from app.llm.embedders import bundled_minilm_path
        from sentence_transformers import SentenceTransformer

        _MODEL = SentenceTransformer(str(bundled_minilm_path()), device="cpu", local_files_only=True)
    return _MODEL


def embed(texts: list[str], batch: int = 128) -> np.ndarray:
    return st_model().encode(texts, batch_size=batch, normalize_embeddings=True, show_progress_bar=False,
                             convert_to_numpy=True).astype(np.float32)


def cached_vectors(texts: list[str]) -> np.ndarray:
    """MiniLM vectors for ``texts`` (one row each). Each distinct text is embedded once, ever: the
    vectors live in ``bench/results/minilm-cache.{json,npy}``, shared by every benchmark, saved as
    they are made (an interrupted run keeps its work)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    tpath, vpath = RESULTS / "minilm-cache.json", RESULTS / "minilm-cache.npy"
    known: list[str] = json.loads(tpath.read_text()) if tpath.exists() and vpath.exists() else []
    vecs = np.load(vpath) if known else np.empty((0, 384), np.float32)
    known, vecs = known[: len(vecs)], vecs[: len(known)]
    pos = {t: i for i, t in enumerate(known)}
    todo = sorted({t for t in texts if t not in pos})
    if todo:
        log(f"embedding {len(todo):,} new distinct texts with {ST_MODEL} (cached for later runs) …")
        t0 = time.perf_counter()
        step = 4096
        for i in range(0, len(todo), step):
            part = todo[i : i + step]
            vecs = np.concatenate([vecs, embed(part)])
            for t in part:
                pos[t] = len(known)
                known.append(t)
            np.save(vpath, vecs)
            tpath.write_text(json.dumps(known))
            done = min(i + step, len(todo))
            rate = done / (time.perf_counter() - t0)
            log(f"  {done:,} / {len(todo):,}  ({rate:.0f} texts/s, {(len(todo) - done) / rate:.0f} s left)")
    return vecs[np.array([pos[t] for t in texts], np.int64)]


class LookupEmbedder:
    """Kelvin's ``st:all-MiniLM-L6-v2`` embedder, answered from precomputed vectors of the same model
    (the model itself is only called for a text not in the table). Lets a benchmark build a 100k
    store through Kelvin's own write path without re-embedding it on every run."""

    spec = ST_SPEC

    def __init__(self, table: dict[str, np.ndarray]):
        self.table = table
        self.misses = 0

    def dim(self) -> int:
        return 384

    def close(self) -> None:
        pass

    def embed(self, texts, kind="document"):
        missing = [t for t in texts if t not in self.table]
        if missing:
            self.misses += len(missing)
            for t, v in zip(missing, embed(missing)):
                self.table[t] = v
        return [self.table[t].tolist() for t in texts]

"""Retrieval on real long conversations: LoCoMo evidence recall through Kelvin's own command line.

LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``, CC BY-NC 4.0) holds 10 conversations of about
600 turns over months, each with questions and the turns that hold their evidence. This script
imports each conversation with ``kelvin memory import`` (one project per conversation, speaker and
session date kept), asks every question of categories 1, 2 and 4 (multi-hop, temporal,
single-hop) with ``kelvin memory search --batch FILE --k 10 --json``, and scores evidence
recall@5 and @10 (the share of a question's evidence turns among the first k hits, averaged over
questions), per category and overall — for embedder ``none`` and ``st:all-MiniLM-L6-v2`` — against
baselines computed in the same run on the same turns: plain BM25 (``rank_bm25``, lower-cased
words; also with the speaker's name in each turn) and dense MiniLM cosine.

The data is never committed (evaluation use only under its licence): give its path. By default the
first five conversations are scored; ``--held-out`` scores the other five, which nothing in Kelvin
was tuned on.

    git clone https://github.com/snap-research/LoCoMo /tmp/LoCoMo   # or any copy of locomo10.json
    python bench/locomo.py /tmp/LoCoMo/data/locomo10.json > bench/results/locomo.json
    python bench/locomo.py /tmp/LoCoMo/data/locomo10.json --held-out > bench/results/locomo-held-out.json
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

import common as c

DEV = ("conv-26", "conv-30", "conv-41", "conv-42", "conv-43")
HELD_OUT = ("conv-44", "conv-47", "conv-48", "conv-49", "conv-50")
# the labels of LoCoMo's own evaluation code (task_eval/evaluation.py); issue 21 called 1, 2 and 4
# single-hop, multi-hop and open-domain
CATEGORIES = {1: "multi-hop", 2: "temporal", 4: "single-hop"}
KS = (5, 10)
WORD = re.compile(r"\w+")


# ---- the data --------------------------------------------------------------------------------------
def session_time(text: str) -> datetime:
    """'1:56 pm on 8 May, 2023' → a datetime (taken as UTC)."""
    return datetime.strptime(" ".join(text.split()), "%I:%M %p on %d %B, %Y")


def turn_text(t: dict) -> str:
    text = str(t.get("text", "")).strip()
    if t.get("blip_caption"):  # a shared photo: its caption is part of what was said
        text += f" [shares a photo: {str(t['blip_caption']).strip()}]"
    return text


def turns(sample: dict) -> list[dict]:
    conv = sample["conversation"]
    out = []
    n = 1
    while f"session_{n}" in conv:
        start = session_time(conv[f"session_{n}_date_time"])
        for i, t in enumerate(conv[f"session_{n}"]):
            out.append({"id": t["dia_id"], "speaker": t["speaker"], "text": turn_text(t),
                        "session": n, "ts": start + timedelta(seconds=30 * i)})
        n += 1
    return out


def questions(sample: dict, known: set[str]) -> list[dict]:
    out = []
    for q in sample["qa"]:
        if q.get("category") not in CATEGORIES:
            continue
        evidence = {e.strip() for raw in q.get("evidence", []) for e in re.split(r"[;,]", str(raw)) if e.strip()}
        evidence &= known  # a few evidence ids name no turn: they cannot be found by anyone
        if evidence:
            out.append({"q": " ".join(str(q["question"]).split()), "evidence": evidence, "category": q["category"]})
    return out


# ---- Kelvin, as an artist runs it -----------------------------------------------------------------------
def kelvin(args: list[str], env: dict, timeout: float = 1800) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=c.ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    if proc.returncode != 0:
        raise SystemExit(f"kelvin {' '.join(args[:4])} failed: {proc.stderr[-2000:]}")
    return proc


def kelvin_search(sample_id: str, ts: list[dict], qs: list[dict], embedder: str, work: Path) -> tuple[list, dict]:
    env = {**os.environ, "KELVIN_DATA_DIR": str(work / embedder.replace(":", "-")), "KELVIN_EMBEDDER": embedder,
           "KELVIN_OLLAMA_HOST": "http://127.0.0.1:9", "KELVIN_VRAM_GUARD": "false"}
    env.pop("KELVIN_PROJECT", None)
    data = work / f"{sample_id}.jsonl"
    data.write_text("".join(json.dumps({"id": t["id"], "text": t["text"], "speaker": t["speaker"], "role": "user",
                                        "conversation_id": f"session_{t['session']}",
                                        "timestamp": t["ts"].isoformat() + "Z"}, ensure_ascii=False) + "\n"
                            for t in ts), encoding="utf-8")
    batch = work / f"{sample_id}.questions.txt"
    batch.write_text("".join(q["q"] + "\n" for q in qs), encoding="utf-8")
    t0 = time.perf_counter()
    kelvin(["--project", sample_id, "memory", "import", str(data)], env)
    imported = time.perf_counter() - t0
    out = kelvin(["--project", sample_id, "memory", "search", "--batch", str(batch), "--k", "10", "--json"], env)
    lines = [json.loads(line) for line in out.stdout.splitlines() if line.strip()]
    assert [x["query"] for x in lines] == [q["q"] for q in qs], "the batch answered other questions"
    return [[h["id"] for h in x["hits"]] for x in lines], {"import_s": round(imported, 2),
                                                            "took_ms": [x["took_ms"] for x in lines]}


# ---- baselines, in the same run -----------------------------------------------------------------------
def words(text: str) -> list[str]:
    return WORD.findall(text.lower())


def bm25(ts: list[dict], qs: list[dict], with_speaker: bool) -> list[list[str]]:
    from rank_bm25 import BM25Okapi

    index = BM25Okapi([words((t["speaker"] + ": " if with_speaker else "") + t["text"]) for t in ts])
    ids = [t["id"] for t in ts]
    out = []
    for q in qs:
        scores = index.get_scores(words(q["q"]))
        out.append([ids[i] for i in np.argsort(-scores, kind="stable")[:10]])
    return out


def dense(ts: list[dict], qs: list[dict]) -> list[list[str]]:
    model = c.st_model()
    docs = model.encode([t["text"] for t in ts], batch_size=64, normalize_embeddings=True)
    queries = model.encode([q["q"] for q in qs], batch_size=64, normalize_embeddings=True)
    ids = [t["id"] for t in ts]
    return [[ids[i] for i in np.argsort(-(docs @ v), kind="stable")[:10]] for v in queries]


# ---- scoring -------------------------------------------------------------------------------------------
def recall(ranked: list[str], evidence: set[str], k: int) -> float:
    return len(set(ranked[:k]) & evidence) / len(evidence)


def score(ranked: list[list[str]], qs: list[dict]) -> dict:
    out = {}
    for name, keep in (("overall", lambda q: True), *((label, lambda q, cat=cat: q["category"] == cat)
                                                      for cat, label in CATEGORIES.items())):
        picked = [(r, q) for r, q in zip(ranked, qs) if keep(q)]
        out[name] = {"n": len(picked), **{f"recall@{k}": round(statistics.fmean(recall(r, q["evidence"], k)
                                                                                for r, q in picked), 4)
                                            if picked else None for k in KS}}
    return out


# ---- levers: one at a time, in one process, against Kelvin as shipped ------------------------------------
def rrf(text, vector=(), query="", **_):
    """Reciprocal rank fusion (k=60) with the shipped verbatim bonus and archived weight: what Kelvin
    fused with before its scores were mixed."""
    from app.core import fusion

    votes: dict[str, float] = {}
    for leg in (text, vector):
        seen: list[str] = []
        for cand in leg:
            if cand.message_id not in seen:
                seen.append(cand.message_id)
                votes[cand.message_id] = votes.get(cand.message_id, 0.0) + 1 / (60 + len(seen))
    base = {f.message_id: f for f in fusion.fuse(text, vector, query)}  # the verbatim bonus and recency
    out = [fusion.Fused(mid, v + (1 / 61 if base[mid].score > 1 else 0), base[mid].ts_ms) for mid, v in votes.items()]
    return sorted(out, key=lambda f: (-f.score, -f.ts_ms, f.message_id))


def _only_matches(search):
    def matches_only(self, *args, **kwargs):
        return search(self, *args, **{**kwargs, "only_matches": True})
    return matches_only


def levers() -> dict:
    """name → what to change (module, attribute, value) for one variant."""
    import app.memory.index as index
    import app.services.memory as memory
    from app.core import fusion

    plain = dict(index.FTS_OPTIONS, stem=False, remove_stop_words=False)
    return {
        "as shipped": [],
        "no stemming, stop words kept": [(index, "FTS_OPTIONS", plain)],
        "no speaker in the text": [(index, "said_by", lambda speaker: "")],
        "no message before (context)": [(index, "CONTEXT_CHARS", 0)],
        "rank fusion (RRF) instead of scores": [(memory, "fuse", rrf)],
        "text weight 0.5": [(fusion, "TEXT_WEIGHT", 0.5)],
        "text weight 0.7": [(fusion, "TEXT_WEIGHT", 0.7)],
        "20 candidates per leg": [(memory, "TEXT_CANDIDATES", 20), (memory, "VECTOR_CANDIDATES", 20),
                                  (memory, "CANDIDATES_PER_K", 0)],
        "40 candidates per leg": [(memory, "TEXT_CANDIDATES", 40), (memory, "VECTOR_CANDIDATES", 40),
                                  (memory, "CANDIDATES_PER_K", 0)],
        "100 candidates per leg": [(memory, "TEXT_CANDIDATES", 100), (memory, "VECTOR_CANDIDATES", 100),
                                   (memory, "CANDIDATES_PER_K", 0)],
        "only matches (as the browser shows)": [(memory.MemoryService, "search", _only_matches(memory.MemoryService.search))],
    }


def run_levers(samples: dict, wanted: list[str], embedders: list[str]) -> dict:
    """Every lever's variant on every conversation, through MemoryService in this process."""
    from app.services.importer import ImportItem
    from app.core.records import Message

    out: dict = {}
    convs = []
    for sid in wanted:
        ts = turns(samples[sid])
        convs.append((sid, ts, questions(samples[sid], {t["id"] for t in ts})))
    for name, changes in levers().items():
        for e in embedders:
            saved = [(mod, attr, getattr(mod, attr)) for mod, attr, _ in changes]
            for mod, attr, value in changes:
                setattr(mod, attr, value)
            try:
                ranked, qs = [], []
                for sid, ts, cq in convs:
                    data = Path(tempfile.mkdtemp(prefix="kelvin-locomo-lever-"))
                    obj = None
                    if e != "none":
                        from app.memory.index import embed_text

                        texts = [embed_text(t["speaker"], t["text"]) for t in ts] + [q["q"] for q in cq]
                        obj = c.LookupEmbedder(dict(zip(texts, c.cached_vectors(texts))))
                    svc = c.make_service(data, e, project=sid, embedder_obj=obj)
                    try:
                        svc.import_items([ImportItem(sid, Message(
                            id=t["id"], project=sid, conversation_id=f"session_{t['session']}", role="user",
                            speaker=t["speaker"], text=t["text"], ts_ms=int(t["ts"].timestamp() * 1000))) for t in ts])
                        ranked += [[h.message.id for h in svc.search(q["q"], 10, project=sid)] for q in cq]
                    finally:
                        svc.close()
                        shutil.rmtree(data, ignore_errors=True)
                    qs += cq
                out.setdefault(name, {})[e] = score(ranked, qs)["overall"]
                c.log(f"[locomo levers] {name:38} {e:24} {out[name][e]}")
            finally:
                for mod, attr, value in saved:
                    setattr(mod, attr, value)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("data", type=Path, help="LoCoMo's data/locomo10.json (never committed)")
    ap.add_argument("--held-out", action="store_true", help="score the five held-out conversations instead")
    ap.add_argument("--embedders", default="none,st:all-MiniLM-L6-v2")
    ap.add_argument("--conversations", help="comma-separated sample ids (default: the first five)")
    ap.add_argument("--levers", action="store_true", help="also score each retrieval lever switched off or "
                    "changed, one at a time (in this process; embeddings cached under bench/results)")
    args = ap.parse_args()
    wanted = args.conversations.split(",") if args.conversations else list(HELD_OUT if args.held_out else DEV)
    samples = {s["sample_id"]: s for s in json.loads(args.data.read_text(encoding="utf-8"))}
    missing = [w for w in wanted if w not in samples]
    if missing:
        raise SystemExit(f"{args.data} has no conversation {', '.join(missing)}")
    embedders = [e for e in args.embedders.split(",") if e]
    work = Path(tempfile.mkdtemp(prefix="kelvin-locomo-"))
    doc: dict = {"machine": c.machine_info(), "conversations": wanted, "categories": CATEGORIES}
    ranked: dict[str, list] = {}
    all_qs: list[dict] = []
    timing: dict[str, dict] = {e: {"import_s": [], "took_ms": []} for e in embedders}
    per_conv: dict[str, dict] = {}
    try:
        for sid in wanted:
            ts = turns(samples[sid])
            qs = questions(samples[sid], {t["id"] for t in ts})
            c.log(f"[locomo] {sid}: {len(ts)} turns, {len(qs)} questions")
            got = {"bm25": bm25(ts, qs, False), "bm25 + speaker": bm25(ts, qs, True), "dense MiniLM": dense(ts, qs)}
            for e in embedders:
                hits, t = kelvin_search(sid, ts, qs, e, work)
                got[f"kelvin {e}"] = hits
                timing[e]["import_s"].append(t["import_s"])
                timing[e]["took_ms"] += t["took_ms"]
            per_conv[sid] = {name: score(r, qs)["overall"] for name, r in got.items()}
            for name, r in got.items():
                ranked.setdefault(name, []).extend(r)
            all_qs += qs
        doc["questions"] = len(all_qs)
        doc["results"] = {name: score(r, all_qs) for name, r in ranked.items()}
        doc["per_conversation"] = per_conv
        doc["kelvin_timing"] = {e: {"import_s": v["import_s"], "search_ms": c.summary_ms([x / 1000 for x in v["took_ms"]])}
                                for e, v in timing.items()}
        best = max(doc["results"][b]["overall"]["recall@10"] for b in ("bm25", "bm25 + speaker", "dense MiniLM"))
        doc["targets"] = {
            "best_baseline_recall@10": best,
            **{f"kelvin {e}": {"recall@10": doc["results"][f"kelvin {e}"]["overall"]["recall@10"],
                               "target": round(best + 0.10, 4) if e != "none" else doc["results"]["bm25"]["overall"]["recall@10"]}
               for e in embedders}}
        if args.levers:
            doc["levers"] = run_levers(samples, wanted, embedders)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

"""Settings intelligence (issue 4): how well the rules extract settings and how fast they tag.

On the labelled set ``bench/data/settings_labelled.jsonl`` (sessions of artist and assistant
messages, each message with the settings it states and their status, each session with the
expected current values at its end), run the real extractor in order, with the conversation
context it carries, exactly as the settings ledger does, and report:

* **mentions**: precision / recall / F1 of (engine, parameter, value, status), overall, for
  applied settings only (the targets: precision ≥ 0.95, recall ≥ 0.85), per status, per engine;
* **ledger**: precision / recall of the final current values of each session, after the
  extracted mentions went through the real ledger rules;
* **speed**: time to tag one message (the rule tagger + the settings extraction), p50/p95, against
  the tagger alone in the same run (a ratio), and on a 20k-character paste;
* **by file**: applied precision / recall and final ledger values for each labelled file, so a set
  written by someone who never saw the rules can be read on its own (measure a new one *before*
  changing the rules because of it: ``--data`` with that one file);
* **errors**: every missed and every spurious mention, for reading.

With ``--model NAME`` (a small model on the Ollama host of ``--host``), every message also goes
through the optional model pass exactly as the app runs it (the same prompt, JSON schema and strict
check against the taxonomy, adding only what the rules did not find), so its worth can be read on
the blind sets: ``--data bench/data/settings_labelled_l.jsonl --model qwen2.5:3b``.

    python bench/settings_extraction.py > bench/results/settings_extraction.json
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common as c  # noqa: E402

from app.core.extraction import Context  # noqa: E402
from app.core.ledger import Entry, Ledger  # noqa: E402
from app.core.parameters import same_value  # noqa: E402
from app.services.memory import load_extractor, load_tagger, load_taxonomy  # noqa: E402

DATA = ROOT / "bench" / "data"  # every settings_labelled*.jsonl in it


def norm_value(v):
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, str):
        return v.strip().lower().replace(" ", "_") if not any(ch.isdigit() for ch in v) else v.strip().lower()
    return v


def key(m: dict, with_status: bool = True) -> tuple:
    return (m.get("engine") or "", m["parameter"], norm_value(m.get("value")),
            m["status"] if with_status else "")


def matches(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1] == b[1] and a[3] == b[3] and (
        (a[2] is None and b[2] is None) or (a[2] is not None and b[2] is not None and same_value(a[2], b[2])))


def score(pairs: list[tuple[list[tuple], list[tuple]]]) -> dict:
    tp = fp = fn = 0
    for got, want in pairs:
        left = list(want)
        for g in got:
            hit = next((w for w in left if matches(g, w)), None)
            if hit is not None:
                left.remove(hit)
                tp += 1
            else:
                fp += 1
        fn += len(left)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(p, 4), "recall": round(r, 4),
            "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}


def load(path: Path) -> tuple[dict[str, list[dict]], dict[str, list[dict]]]:
    sessions: dict[str, list[dict]] = {}
    finals: dict[str, list[dict]] = {}
    files = sorted(path.glob("settings_labelled*.jsonl")) if path.is_dir() else [path]
    lines = [(f.name, line) for f in files for line in f.read_text(encoding="utf-8").splitlines()]
    for name, line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            print(f"{name}: a line is not JSON, skipped: {line[:80]!r}", file=sys.stderr)
            continue
        sid = f"{name.removeprefix('settings_labelled_').removesuffix('.jsonl')}/{row['session']}"  # ids repeat across files
        if "final" in row:
            finals[sid] = row["final"]
        else:
            sessions.setdefault(sid, []).append(row)
    return sessions, finals


class ModelPass:
    """The optional model pass over one message, as the app runs it (``Conversation._extract``): the
    prompt and schema of ``app.core.model_extraction``, its strict check, only what the rules missed."""

    def __init__(self, host: str, model: str, cpu: bool = False):
        from app.llm.backend import OllamaBackend
        self.backend, self.model, self.cpu = OllamaBackend(host), model, cpu
        self.stats = {"model": model, "host": host, "calls": 0, "failed": 0, "kept_nothing": 0, "added": 0,
                      "seconds": 0.0}

    def __call__(self, text: str, role: str, cat, engine: str, have: list) -> list:
        from app.core.model_extraction import SCHEMA, check, prompt
        from app.llm.errors import OllamaUnavailable
        t0 = time.perf_counter()
        self.stats["calls"] += 1
        try:
            with self.backend.chat(self.model, prompt(text, role, cat, engine), format=SCHEMA, num_ctx=4096,
                                   cpu=self.cpu, num_predict=400) as stream:
                for _ in stream:
                    pass
            reply = stream.text
        except OllamaUnavailable as exc:
            self.stats["failed"] += 1
            print(f"model pass: {exc}", file=sys.stderr)
            return []
        finally:
            self.stats["seconds"] = round(self.stats["seconds"] + time.perf_counter() - t0, 2)
        seen = {(m.engine, m.parameter, m.status) for m in have}
        found = [m for m in check(reply, role, cat) if (m.engine, m.parameter, m.status) not in seen]
        self.stats["added"] += len(found)
        self.stats["kept_nothing"] += not found
        return found

    def close(self) -> None:
        self.backend.close()


def run(extractor, sessions, finals, model_pass: ModelPass | None = None):
    pairs, per_status, per_engine, errors = [], {}, {}, []
    ledger_pairs = []
    per_file: dict[str, dict[str, list]] = {}  # file → applied mention pairs and final ledger pairs
    candidates = 0
    for sid, rows in sessions.items():
        mine = per_file.setdefault(sid.split("/")[0], {"applied": [], "ledger": [], "messages": []})
        mine["messages"].append(len(rows))
        ctx = Context()
        ledger = Ledger()
        for i, row in enumerate(rows):
            got, ctx = extractor.extract(row["text"], row["role"], ctx)
            if model_pass is not None:
                got = got + model_pass(row["text"], row["role"], extractor.cat, ctx.engine, got)
            candidates += sum(m.candidate for m in got)
            got_keys = [key(m.to_json()) for m in got if not m.candidate]
            want_keys = [key(m) for m in row.get("expected", [])]
            pairs.append((got_keys, want_keys))
            mine["applied"].append(([k for k in got_keys if k[3] == "applied"], [k for k in want_keys if k[3] == "applied"]))
            for st in ("applied", "proposed", "rejected"):
                per_status.setdefault(st, []).append(([k for k in got_keys if k[3] == st], [k for k in want_keys if k[3] == st]))
            for eng in {k[0] for k in got_keys + want_keys}:
                per_engine.setdefault(eng or "any", []).append(([k for k in got_keys if k[0] == eng],
                                                                 [k for k in want_keys if k[0] == eng]))
            missed = [w for w in want_keys if not any(matches(g, w) for g in got_keys)]
            spurious = [g for g in got_keys if not any(matches(g, w) for w in want_keys)]
            if missed or spurious:
                errors.append({"session": sid, "role": row["role"], "text": row["text"],
                               "missed": [list(m) for m in missed], "spurious": [list(s) for s in spurious]})
            for n, m in enumerate(got):
                ledger.add(Entry(id=f"{i}.{n}", engine=m.engine, parameter=m.parameter, value=m.value, unit=m.unit,
                                 status=m.status, ts_ms=i, order=i, candidate=m.candidate))
        have = [(cur.entry.engine, cur.entry.parameter, norm_value(cur.entry.value), "")
                for cur in ledger.currents()]
        want = [key({**f, "status": ""}) for f in finals.get(sid, [])]
        ledger_pairs.append((have, want))
        mine["ledger"].append((have, want))
        if any(not any(matches(h, w) for h in have) for w in want) or any(not any(matches(h, w) for w in want) for h in have):
            errors.append({"session": sid, "ledger_final": {"have": [list(h) for h in have], "want": [list(w) for w in want]}})
    by_file = {name: {"messages": sum(p["messages"]),
                      "applied": {k: score(p["applied"])[k] for k in ("precision", "recall")},
                      "ledger_final_values": {k: score(p["ledger"])[k] for k in ("precision", "recall")}}
               for name, p in sorted(per_file.items())}
    return {
        "mentions_all": score(pairs),
        "mentions_by_status": {st: score(p) for st, p in per_status.items()},
        "mentions_by_engine": {e: score(p) for e, p in sorted(per_engine.items())},
        "ledger_final_values": score(ledger_pairs),
        "candidates_kept": candidates,
    }, errors, by_file


def timing(extractor, tagger, texts: list[str], reps: int) -> dict:
    def per_message(fn) -> list[float]:
        out = []
        for _ in range(reps):
            for t in texts:
                t0 = time.perf_counter()
                fn(t)
                out.append((time.perf_counter() - t0) * 1000)
        return out

    per_message(tagger.tag)  # warm-up
    tag_only = per_message(tagger.tag)
    both = per_message(lambda t: (tagger.tag(t), extractor.extract(t, "user", Context())))
    paste = "\n".join(texts) * (1 + 20_000 // max(1, len("\n".join(texts))))
    paste = paste[:20_000]
    t_paste = []
    for _ in range(20):
        t0 = time.perf_counter()
        tagger.tag(paste)
        extractor.extract(paste, "user", Context())
        t_paste.append((time.perf_counter() - t0) * 1000)

    def stats(xs):
        xs = sorted(xs)
        return {"n": len(xs), "p50": round(statistics.median(xs), 4), "p95": round(xs[int(0.95 * (len(xs) - 1))], 4),
                "max": round(xs[-1], 4)}

    return {"tagger_only_ms": stats(tag_only), "tag_and_extract_ms": stats(both),
            "ratio_p50": round(statistics.median(both) / statistics.median(tag_only), 2),
            "paste_20k_chars_ms": stats(t_paste)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--reps", type=int, default=20, help="timing passes over every message (0: quality only)")
    ap.add_argument("--model", default="", help="also run the optional model pass with this Ollama model")
    ap.add_argument("--host", default=os.environ.get("KELVIN_OLLAMA_HOST", "http://127.0.0.1:11434"),
                    help="the Ollama host for --model")
    ap.add_argument("--cpu", action="store_true", help="run the model pass on the CPU (num_gpu 0)")
    args = ap.parse_args()
    taxonomy = load_taxonomy()
    extractor, tagger = load_extractor(taxonomy), load_tagger(taxonomy)
    sessions, finals = load(args.data)
    rows = [r for rs in sessions.values() for r in rs]
    model_pass = ModelPass(args.host, args.model, args.cpu) if args.model else None
    try:
        quality, errors, by_file = run(extractor, sessions, finals, model_pass)
    finally:
        if model_pass is not None:
            model_pass.close()
    doc = {
        "benchmark": "settings_extraction",
        "machine": c.machine_info(),
        "data": {"files": sorted(p.name for p in (args.data.glob("settings_labelled*.jsonl") if args.data.is_dir()
                                                   else [args.data])), "messages": len(rows), "sessions": len(sessions),
                 "messages_with_settings": sum(bool(r.get("expected")) for r in rows),
                 "labelled_mentions": dict(Counter(m["status"] for r in rows for m in r.get("expected", []))),
                 "parameters_in_taxonomy": len(extractor.cat.specs)},
        "quality": quality,
        "model_pass": model_pass.stats if model_pass else None,
        "by_file": by_file,
        "targets": {"applied_precision": 0.95, "applied_recall": 0.85, "tag_ms": 2.0},
        "speed": timing(extractor, tagger, [r["text"] for r in rows], args.reps) if args.reps > 0 else None,
        "errors": errors,
    }
    print(json.dumps(doc, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    main()

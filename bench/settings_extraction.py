"""Settings intelligence (issue 4): how well the rules extract settings and how fast they tag.

On the labelled set ``bench/data/settings_labelled.jsonl`` (sessions of artist and assistant
messages, each message with the settings it states and their status, each session with the
expected current values at its end), run the real extractor in order, with the conversation
context it carries, exactly as the settings ledger does, and report:

* **mentions**: precision / recall / F1 of (engine, parameter, value, status, scope), overall, per
  status (applied, proposed, rejected), per engine;
* **current values** (issue 30): precision / recall of the ledger's current values after each
  session against its "final" row, per (engine, parameter, scope) — a value the ledger holds *to
  confirm* is not counted as current — and how many current values the session's labels only ever
  rejected or proposed (**turned down or floated, shown as current**: the target is 0). Scopes and
  how they match: ``bench/ledger_scoring.py``;
* **speed**: time to tag one message (the rule tagger + the settings extraction), p50/p95, against
  the tagger alone in the same run (a ratio), and on a 20k-character paste;
* **by file**: applied precision / recall and final ledger values for each labelled file, so a set
  written by someone who never saw the rules can be read on its own (measure a new one *before*
  changing the rules because of it: ``--data`` with that one file);
* **errors**: every missed and every spurious mention, for reading.

With ``--model NAME`` (a small model on the Ollama host of ``--host``), every message also goes
through the optional model pass exactly as the app runs it (the same prompt, JSON schema and strict
check against the taxonomy, adding only what the rules did not find), so its worth can be read on
the blind sets: ``--data bench/data/settings_labelled_l.jsonl --model qwen2.5:3b``; ``--openai-url`` sends it to
an OpenAI-compatible server instead (llama.cpp's llama-server with Gemma 3 270M: ``bench/real_model.py``'s parts).

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
from dataclasses import fields
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common as c  # noqa: E402
from ledger_scoring import SessionScore, file_is_scoped, matches, mention_key, norm_value, scope_of, score  # noqa: E402

from app.core.render_settings.extraction import Context  # noqa: E402
from app.core.render_settings.ledger import Entry, Ledger  # noqa: E402
from app.services.memory import load_extractor, load_tagger, load_taxonomy, load_trust  # noqa: E402

DATA = ROOT / "bench" / "data"  # every settings_labelled*.jsonl in it
# a blind set, while it is one: scored by this bench, never learned from by bench/train_*.py
# (issue 30's o, p, q, then r, s, t, then u, v, w are spent; x, y, z came at Stop 41)
BLIND = frozenset({"x", "y", "z"})


def to_entry(m, i: int, n: int) -> Entry:
    """A mention as the ledger takes it: every field the two share (scope, and whether it is sure,
    come along once the mention carries them)."""
    shared = {f.name for f in fields(Entry)} & {f.name for f in fields(m)}
    return Entry(id=f"{i}.{n}", ts_ms=i, order=i, **{k: getattr(m, k) for k in shared})


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
    prompt and schema of ``app.core.render_settings.model_extraction``, its strict check, only what the rules missed."""

    def __init__(self, host: str, model: str, cpu: bool = False, openai_url: str = ""):
        from app.llm.backend import OllamaBackend
        from app.llm.openai_compat import OpenAIBackend
        backend = OpenAIBackend(openai_url, timeout_s=600) if openai_url else OllamaBackend(host)
        self.backend, self.model, self.cpu = backend, model, cpu
        host = openai_url or host
        self.stats = {"model": model, "host": host, "calls": 0, "failed": 0, "kept_nothing": 0, "added": 0,
                      "seconds": 0.0}

    def __call__(self, text: str, role: str, cat, engine: str, have: list) -> list:
        from app.core.render_settings.model_extraction import SCHEMA, check, prompt
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


def run(extractor, sessions, finals, model_pass: ModelPass | None = None, read_status=None, trust=None):
    """Every session through the extractor and the ledger, in order. ``read_status`` (the status
    model under cross-validation, ``train_status.py``) replaces how the statuses are read."""
    total, per_engine, errors = SessionScore(), {}, []
    per_file: dict[str, SessionScore] = {}
    candidates = 0
    for sid, rows in sessions.items():
        name = sid.split("/")[0]
        mine = per_file.setdefault(name, SessionScore())
        scoped = file_is_scoped(rows, finals.get(sid, []))
        ctx = Context()
        ledger = Ledger(trust)
        labels: list[tuple] = []
        for i, row in enumerate(rows):
            got, ctx = extractor.extract(row["text"], row["role"], ctx)
            if read_status is not None:
                got = read_status(row["text"], row["role"], got)
            if model_pass is not None:
                got = got + model_pass(row["text"], row["role"], extractor.cat, ctx.engine, got)
            candidates += sum(m.candidate for m in got)
            got_keys = [mention_key({**m.to_json(), "scope": getattr(m, "scope", "")}, with_scope=scoped)
                        for m in got if not m.candidate]
            want_keys = [mention_key(m, with_scope=scoped) for m in row.get("expected", [])]
            labels += want_keys
            for acc in (total, mine):
                acc.message(got_keys, want_keys)
            for eng in {k[0] for k in got_keys + want_keys}:
                per_engine.setdefault(eng or "any", []).append(([k for k in got_keys if k[0] == eng],
                                                                 [k for k in want_keys if k[0] == eng]))
            missed = [w for w in want_keys if not any(matches(g, w) for g in got_keys)]
            spurious = [g for g in got_keys if not any(matches(g, w) for w in want_keys)]
            if missed or spurious:
                errors.append({"session": sid, "role": row["role"], "text": row["text"],
                               "missed": [list(m) for m in missed], "spurious": [list(s) for s in spurious]})
            for n, m in enumerate(got):
                ledger.add(to_entry(m, i, n))
        currents = ledger.currents()
        asserted = [cur for cur in currents  # (a value to confirm, or only in a file, is not asserted)
                    if not getattr(cur, "unsure", False) and getattr(cur, "decision", True) is not None]
        have = [(cur.entry.engine, cur.entry.parameter, norm_value(cur.entry.value), "",
                 scope_of(cur.entry.parameter, getattr(cur.entry, "scope", "")) if scoped else "") for cur in asserted]
        unsure = sum(bool(getattr(cur, "unsure", False)) for cur in currents)
        want = [mention_key({**f, "status": ""}, with_scope=scoped) for f in finals.get(sid, [])]
        for acc in (total, mine):
            wrong = acc.session(have, unsure, want, labels)
        if any(not any(matches(h, w) for h in have) for w in want) or wrong:
            errors.append({"session": sid, "ledger_final": {"have": [list(h) for h in have], "want": [list(w) for w in want],
                                                            "wrong": wrong}})
    by_file = {}
    for name, acc in sorted(per_file.items()):
        s = acc.summary()
        by_file[name] = {"applied": {k: s["by_status"]["applied"][k] for k in ("precision", "recall")},
                         "ledger_final_values": {k: s["current_values"][k] for k in ("precision", "recall")},
                         **acc.short()}
    s = total.summary()
    return {
        "mentions_all": s["mentions_all"],
        "mentions_by_status": s["by_status"],
        "mentions_by_engine": {e: score(p) for e, p in sorted(per_engine.items())},
        "ledger_final_values": {k: v for k, v in s["current_values"].items() if k != "to_confirm"},
        "current_values": s["current_values"],
        "turned_down_or_floated_shown_as_current": s["turned_down_or_floated_shown_as_current"],
        "wrong_current": s["wrong_current"],
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
    ap.add_argument("--rules-only", action="store_true", help="statuses by the rules alone (no status model)")
    ap.add_argument("--no-trust", action="store_true", help="every decided value stated (no trust model)")
    ap.add_argument("--without", default="", help="labelled sets to leave out, by name: o,p,q")
    ap.add_argument("--reps", type=int, default=20, help="timing passes over every message (0: quality only)")
    ap.add_argument("--model", default="", help="also run the optional model pass with this Ollama model")
    ap.add_argument("--host", default=os.environ.get("KELVIN_OLLAMA_HOST", "http://127.0.0.1:11434"),
                    help="the Ollama host for --model")
    ap.add_argument("--cpu", action="store_true", help="run the model pass on the CPU (num_gpu 0)")
    ap.add_argument("--openai-url", default="", help="the model pass through an OpenAI-compatible server at this URL "
                    "(llama.cpp's llama-server, LM Studio, vLLM) instead of Ollama")
    args = ap.parse_args()
    taxonomy = load_taxonomy()
    extractor, tagger = load_extractor(taxonomy), load_tagger(taxonomy)
    if args.rules_only:
        extractor.status_model = None
    sessions, finals = load(args.data)
    left_out = {x.strip() for x in args.without.split(",") if x.strip()}
    sessions = {k: v for k, v in sessions.items() if k.split("/")[0] not in left_out}
    rows = [r for rs in sessions.values() for r in rs]
    model_pass = ModelPass(args.host, args.model, args.cpu, args.openai_url) if args.model else None
    try:
        trust = None if args.rules_only or args.no_trust else load_trust()
        quality, errors, by_file = run(extractor, sessions, finals, model_pass, trust=trust)
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
        "status_model": None if extractor.status_model is None else {
            "sure": extractor.status_model.sure, "doubt": extractor.status_model.doubt,
            "features": len(extractor.status_model.weights)},
        "trust_model": None if trust is None else {"threshold": trust.threshold, "features": len(trust.weights)},
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

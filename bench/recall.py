"""Recall@k on a synthetic rendering-session corpus with known answers (see common.recall_corpus).

Four systems answer the same questions on the same messages:
  * kelvin-hybrid-none : svc.search with embedder none (full text + phrase vote + recency)
  * kelvin-hybrid-st   : svc.search with st:all-MiniLM-L6-v2 (query vector passed in)
  * bm25               : the index's full-text search alone (LanceDB native FTS, BM25)
  * vector             : the index's vector search alone (MiniLM cosine)
recall@k here is the share of questions with at least one answering message in the top k
(almost every question has exactly one answer; "exact" questions count every message that holds
the string verbatim as an answer).
``--roll-over N`` archives the corpus' days before day N first (as Kelvin's first turn that day
does), so the archived messages rank a little lower (see app/core/fusion.py).

    python bench/recall.py > bench/results/recall.json
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
from collections import defaultdict
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np

import common as c

KS = (1, 3, 5)


def dedupe(rows, k: int) -> list[str]:
    out: list[str] = []
    for x, _ in rows:
        mid = c.candidate(x).message_id
        if mid not in out:
            out.append(mid)
        if len(out) == k:
            break
    return out


def score(ranked: dict[str, list[list[str]]], questions: list[dict]) -> dict:
    out = {}
    for system, lists in ranked.items():
        by_type: dict[str, list] = defaultdict(list)
        for q, ids in zip(questions, lists):
            rel = set(q["relevant"])
            first = next((i + 1 for i, mid in enumerate(ids) if mid in rel), None)
            by_type[q["type"]].append(first)
            by_type["all"].append(first)
        out[system] = {
            t: {"n": len(firsts), **{f"recall@{k}": round(sum(1 for f in firsts if f and f <= k) / len(firsts), 3) for k in KS},
                "mrr@5": round(float(np.mean([1 / f if f and f <= 5 else 0 for f in firsts])), 3)}
            for t, firsts in sorted(by_type.items())
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--scenes", type=int, default=16)
    ap.add_argument("--params-per-scene", type=int, default=8)
    ap.add_argument("--filler", type=float, default=8.0, help="mean filler messages before each event")
    ap.add_argument("--examples", type=int, default=3, help="misses to show per system and question type")
    ap.add_argument("--roll-over", type=int, default=0, metavar="N",
                    help="archive the days before the corpus' day N (1-based) first; 0: no rollover")
    args = ap.parse_args()
    msgs, questions = c.recall_corpus(args.seed, args.scenes, args.params_per_scene, filler_per_event=args.filler)
    c.log(f"recall corpus: {len(msgs):,} messages, {len(questions)} questions")
    vecs = c.cached_vectors([m["text"] for m in msgs])
    qvecs = c.cached_vectors([q["q"] for q in questions])
    table = {m["text"]: v for m, v in zip(msgs, vecs)}
    workdir = Path(tempfile.mkdtemp(prefix="kelvin-recall-"))
    k = max(KS)
    ranked: dict[str, list[list[str]]] = {}
    try:
        for name, spec in (("none", "none"), ("st", c.ST_SPEC)):
            svc = c.make_service(workdir / name, spec, embedder_obj=c.LookupEmbedder(table) if spec != "none" else None)
            try:
                svc.import_items(c.to_items(msgs))
                svc.maintain()
                if args.roll_over:
                    first = datetime.fromtimestamp(min(m["ts_ms"] for m in msgs) / 1000).date()
                    moved = svc.roll_over(None, (first + timedelta(days=args.roll_over - 1)).isoformat())
                    c.log(f"day rolled over before day {args.roll_over}: {moved:,} messages archived")
                ix = svc.store().index
                ranked[f"kelvin-hybrid-{name}"] = [
                    [h.message.id for h in svc.search(q["q"], k, query_vector=v.tolist() if spec != "none" else None)]
                    for q, v in zip(questions, qvecs)]
                if spec == "none":
                    ranked["bm25"] = [dedupe(ix.search_text(q["q"], "", 50), k) for q in questions]
                else:
                    ranked["vector"] = [dedupe(ix.search_vector(v.tolist(), "", 50), k) for v in qvecs]
            finally:
                svc.close()
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    by_id = {m["id"]: m["text"] for m in msgs}
    misses: dict = {}
    for system, lists in ranked.items():
        for q, ids in zip(questions, lists):
            per = misses.setdefault(system, {}).setdefault(q["type"], [])
            if not set(q["relevant"]) & set(ids[:k]) and len(per) < args.examples:
                per.append({"q": q["q"], "answer": by_id[q["relevant"][0]], "got": by_id.get(ids[0]) if ids else None})
    types = sorted({q["type"] for q in questions})
    doc = {"benchmark": "recall", "machine": c.machine_info(),
           "setup": {**vars(args), "messages": len(msgs), "conversations": len({m["conversation_id"] for m in msgs}),
                     "questions": len(questions), "by_type": {t: sum(q["type"] == t for q in questions) for t in types},
                     "examples": {t: next(q for q in questions if q["type"] == t) for t in types}},
           "results": score(ranked, questions), "misses": misses}
    c.emit(doc)


if __name__ == "__main__":
    main()

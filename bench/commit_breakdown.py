"""Where one commit's time goes, and how it drifts while commits keep coming (no idle upkeep).

Wraps the writer-side steps (journal append, duplicate check, Markdown, index add, projection
state) with timers, commits one message at a time in rounds, and compares the shipped duplicate
check (``ProjectIndex.messages_present``) with cheaper LanceDB calls on the same table, before and
after a burst of small commits has left many unmerged versions behind.

    python bench/commit_breakdown.py > bench/results/commit_breakdown.json
"""
from __future__ import annotations

import argparse
import functools
import shutil
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import common as c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=10000)
    ap.add_argument("--per-round", type=int, default=200)
    args = ap.parse_args()
    from app.memory import index, journal, markdown
    from app.memory import store as store_mod
    from app.memory.index import sql_in, sql_str
    from app.memory.store import journaling

    acc: dict[str, float] = defaultdict(float)

    def wrap(cls, name):
        f = getattr(cls, name, None)
        if f is None:  # the code under test may no longer have this step
            return

        @functools.wraps(f)
        def timed(*a, **k):
            t = time.perf_counter()
            try:
                return f(*a, **k)
            finally:
                acc[f"{cls.__name__.rpartition('.')[2]}.{name}"] += time.perf_counter() - t

        setattr(cls, name, timed)

    for cls, name in [(store_mod.ProjectStore, "write"), (index.ProjectIndex, "messages_present"),
                      (journaling, "known_ids"),
                      (index.ProjectIndex, "put_messages"), (journal.Journal, "append"),
                      (markdown.MarkdownBook, "append"), (store_mod.Projections, "save")]:
        wrap(cls, name)
    base = c.scale_corpus(conversations=args.base // 100)[: args.base]
    texts = [m["text"] for m in c.scale_corpus(conversations=10, seed=99)]
    work = Path(tempfile.mkdtemp(prefix="kelvin-commit-"))
    svc = c.make_service(work, "none")
    doc: dict = {"benchmark": "commit_breakdown", "machine": c.machine_info(), "setup": vars(args)}
    try:
        svc.import_items(c.to_items(base))
        svc.maintain()
        ix = svc.store().index
        tbl = ix._chunks
        probe = [m["id"] for m in base[:: max(1, len(base) // 60)]][:60]

        def checks(label: str) -> dict:
            def t(fn):
                for i in probe[:5]:
                    fn(i)
                s = []
                for i in probe:
                    t0 = time.perf_counter()
                    fn(i)
                    s.append(time.perf_counter() - t0)
                return c.summary_ms(s)

            out = {"table_versions": ix.disk_versions()}
            if hasattr(ix, "messages_present"):
                out["messages_present_as_shipped"] = t(lambda i: ix.messages_present([i]))
            return {**out, "search_where_message_id_in": t(lambda i: tbl.search().where(sql_in("message_id", [i]))
                                                    .select(["message_id"]).limit(None).to_list()),
                    "count_rows_message_id_eq": t(lambda i: tbl.count_rows(f"message_id = {sql_str(i)}"))}

        def commit_round(tag: str, n: int) -> dict:
            acc.clear()
            lat = []
            for i in range(n):
                t0 = time.perf_counter()
                svc.commit(f"{texts[i]} {tag}{i}", conversation_id="breakdown")[1].result()
                lat.append(time.perf_counter() - t0)
                time.sleep(0.02)  # closer than the writer's 1.5 s idle: no compaction in between
            q = max(1, n // 4)
            return {"latency_ms": c.summary_ms(lat), "p50_first_quarter": c.summary_ms(lat[:q])["p50"],
                    "p50_last_quarter": c.summary_ms(lat[-q:])["p50"], "table_versions": ix.disk_versions(),
                    "mean_ms_per_commit": {k: round(v / n * 1000, 2) for k, v in sorted(acc.items())}}

        doc["duplicate_check_compacted"] = checks("compacted")
        doc["rounds"] = {"1": commit_round("a", args.per_round), "2": commit_round("b", args.per_round)}
        doc["duplicate_check_after_rounds"] = checks("after")
        svc.maintain()
        doc["rounds"]["3_after_maintain"] = commit_round("c", args.per_round // 2)
    finally:
        svc.close()
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

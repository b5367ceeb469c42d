"""A/B diagnosis of the two search legs on one store: how many columns a leg selects, and how many
IVF partitions the vector index has. Alternates the variants round by round (ABAB…) so that other
work on the machine hits them alike. Not Kelvin's API: it queries the index's LanceDB table directly.

    python bench/search_ab.py --size 100000 > bench/results/search_ab.json
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path


import common as c


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=100000)
    ap.add_argument("--queries", type=int, default=250)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--partitions", default="8192,4096", help="rows per IVF partition to compare")
    args = ap.parse_args()
    from lancedb.index import IvfHnswSq
    from lancedb.query import MatchQuery

    from app.memory.index import _CHUNK_COLS

    msgs = c.scale_corpus(conversations=args.size // 100)
    vecs = c.cached_vectors([m["text"] for m in msgs])
    queries = c.latency_queries(args.queries)
    qvecs = [v.tolist() for v in c.cached_vectors(queries)]
    work = Path(tempfile.mkdtemp(prefix="kelvin-ab-"))
    svc = c.make_service(work, c.ST_SPEC, embedder_obj=c.LookupEmbedder({m["text"]: v for m, v in zip(msgs, vecs)}))
    doc = {"benchmark": "search_ab", "machine": c.machine_info(), "setup": vars(args)}
    try:
        svc.import_items(c.to_items(msgs))
        svc.maintain()
        time.sleep(3)
        tbl = svc.store().index._chunks
        narrow = ["message_id", "ts_ms", "text"]

        def fts(cols):
            return lambda q, v: tbl.search(MatchQuery(q, "text"), query_type="fts").select(cols + ["_score"]).limit(20).to_list()

        def vec(cols):
            return lambda q, v: tbl.search(v, vector_column_name="vector").distance_type("cosine") \
                .select(cols + ["_distance"]).limit(20).to_list()

        pairs = list(zip(queries, qvecs))
        ix = svc.store().index
        top5 = [[r["message_id"] for r in vec(narrow)(q, v)[:5]] for q, v in pairs]
        rowids = {}
        for (q, v), _ids in zip(pairs, top5):
            rows = tbl.search(v, vector_column_name="vector").distance_type("cosine").with_row_id(True) \
                .select(narrow + ["_distance"]).limit(5).to_list()
            rowids[q] = [r["_rowid"] for r in rows]
        ids_of = {q: ids for (q, _), ids in zip(pairs, top5)}
        variants = {"fts_3_cols": fts(narrow), "fts_all_cols": fts(_CHUNK_COLS),
                    "fts_3_cols_with_row_id": lambda q, v: tbl.search(MatchQuery(q, "text"), query_type="fts")
                    .with_row_id(True).select(narrow + ["_score"]).limit(20).to_list(),
                    "fetch_5_messages_by_id (messages())": lambda q, v: ix.messages(ids_of[q]),
                    "fetch_5_rows_by_row_id (take_row_ids)": lambda q, v: tbl.take_row_ids(rowids[q])
                    .select(_CHUNK_COLS).to_list()}
        per_part = [int(x) for x in args.partitions.split(",")]
        results: dict = {}
        for rows_per_part in per_part:
            n = max(1, args.size // rows_per_part)
            t0 = time.perf_counter()
            tbl.create_index("vector", config=IvfHnswSq(distance_type="cosine", num_partitions=n), replace=True)
            build = time.perf_counter() - t0
            vv = {f"vector_3_cols_{n}_partitions": vec(narrow), f"vector_all_cols_{n}_partitions": vec(_CHUNK_COLS)}
            samples = {name: [] for name in {**variants, **vv}}
            for fn in {**variants, **vv}.values():
                for q, v in pairs[:20]:
                    fn(q, v)
            for _ in range(args.rounds):
                for name, fn in {**variants, **vv}.items():
                    for q, v in pairs:
                        t = time.perf_counter()
                        fn(q, v)
                        samples[name].append(time.perf_counter() - t)
            for name, s in samples.items():
                results.setdefault(name, c.summary_ms(s))
            results[f"index_build_s_{n}_partitions"] = round(build, 2)
        doc["latency_ms"] = results
    finally:
        svc.close()
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

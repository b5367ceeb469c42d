"""Search latency at several corpus sizes: Kelvin hybrid, FTS only, vector only, and a brute-force
NumPy cosine scan over the very same vectors, in the same process and run.

Query embedding is excluded everywhere (query vectors are computed beforehand and passed in);
its cost is reported on its own. Each store is built through Kelvin's own import path with real
all-MiniLM-L6-v2 vectors (cached), then ``svc.maintain()`` is run (compaction, and the IVF_HNSW_SQ
vector index from 20k vectors on) before anything is timed.

    python bench/search_latency.py --sizes 10000,100000 > bench/results/search_latency.json
"""
from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

import common as c


def numpy_topk(matrix: np.ndarray, v: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ v  # rows are unit vectors: cosine similarity
    top = np.argpartition(-scores, k)[:k]
    return top[np.argsort(-scores[top])]


def unique_ids(rows, k: int) -> list[str]:
    out: list[str] = []
    for x, _ in rows:
        mid = c.candidate(x).message_id
        if mid not in out:
            out.append(mid)
    return out[:k]


def bench_size(size: int, msgs: list[dict], vecs: np.ndarray, queries: list[str], qvecs: np.ndarray,
               args, workdir: Path) -> dict:
    from app.core.fusion import Candidate  # noqa: F401 — imports app (and lancedb) before timing
    from app.core.filters import Filters
    from app.services.memory import CANDIDATES_PER_K, TEXT_CANDIDATES, VECTOR_CANDIDATES

    part = msgs[:size]
    table = {m["text"]: vecs[i] for i, m in enumerate(part)}
    data = workdir / f"n{size}"
    svc = c.make_service(data, c.ST_SPEC, embedder_obj=c.LookupEmbedder(table))
    out: dict = {"messages": size}
    try:
        c.log(f"[{size:,}] importing through MemoryService.import_items …")
        t0 = time.perf_counter()
        svc.import_items(c.to_items(part))
        out["build_s"] = round(time.perf_counter() - t0, 2)
        t0 = time.perf_counter()
        svc.maintain()
        out["maintain_s"] = round(time.perf_counter() - t0, 2)
        time.sleep(3.0)  # let the writer's one idle upkeep pass (vector fill check) run before timing
        ix = svc.store().index
        out["vector_index"] = [f"{i.index_type}({','.join(i.columns)})" for i in ix._chunks.list_indices()]
        out["chunks"] = ix.count_chunks()
        k = args.k
        limit = max(TEXT_CANDIDATES, k * CANDIDATES_PER_K)  # what hybrid asks each leg for
        vlimit = max(VECTOR_CANDIDATES, k * CANDIDATES_PER_K)
        out["k"], out["candidates_per_leg"] = k, {"text": limit, "vector": vlimit}
        pairs = [(q, v.tolist()) for q, v in zip(queries, qvecs)]
        w = args.warmup
        c.log(f"[{size:,}] timing {len(pairs)} queries per mode (after {w} warm-up calls) …")
        res = {}
        res["hybrid"] = c.time_calls(lambda q, v: svc.search(q, k, query_vector=v), pairs, w)
        res["fts_only"] = c.time_calls(lambda q, v: ix.search_text(q, "", limit), pairs, w)
        res["vector_only"] = c.time_calls(lambda q, v: ix.search_vector(v, "", vlimit), pairs, w)
        lighting = Filters(domain="lighting")
        res["hybrid_filtered_domain"] = c.time_calls(lambda q, v: svc.search(q, k, lighting, query_vector=v), pairs, w)
        fetch_ids = [[h.message.id for h in svc.search(q, k, query_vector=v)] for q, v in pairs]
        res["fetch_messages_only"] = c.time_calls(ix.messages, [(ids,) for ids in fetch_ids], w)
        matrix = np.ascontiguousarray(vecs[:size])
        qv32 = [np.asarray(v, np.float32) for v in qvecs]
        res["numpy_bruteforce_top%d" % vlimit] = c.time_calls(lambda v: numpy_topk(matrix, v, vlimit), [(v,) for v in qv32], w)
        res["numpy_bruteforce_top%d" % k] = c.time_calls(lambda v: numpy_topk(matrix, v, k), [(v,) for v in qv32], w)
        out["latency_ms"] = res
        out["what_if_ms"] = what_if(svc, ix, pairs, k, limit, w)
        base = res["numpy_bruteforce_top%d" % vlimit]
        out["ratio_vs_numpy"] = {m: {"p50": round(res[m]["p50"] / base["p50"], 2), "p95": round(res[m]["p95"] / base["p95"], 2)}
                                 for m in ("hybrid", "fts_only", "vector_only")}
        # how much of the exact top-`limit` the vector leg (ANN index or flat scan) returns
        ids = [m["id"] for m in part]
        out["vector_leg_recall_vs_exact"] = ann_recall(ix, pairs, matrix, ids, vlimit)
        out["disk_bytes"] = disk(data / "bench")
        out["table_versions"] = ix.disk_versions()
        if args.settle_s:
            # Kelvin keeps replaced data files for a minute (readers in other processes); what stays
            c.log(f"[{size:,}] waiting {args.settle_s} s, then maintain() again, for the settled disk size …")
            time.sleep(args.settle_s)
            svc.maintain()
            out["disk_bytes_settled"] = disk(data / "bench")
            out["table_versions_settled"] = ix.disk_versions()
        if "what_if_ann_index" in out["what_if_ms"]:
            out["what_if_ms"]["what_if_ann_index"].update(ann_index_what_if(ix, pairs, k, limit, w, svc, matrix, ids))
    finally:
        svc.close()
    if not args.keep:
        shutil.rmtree(data, ignore_errors=True)
    return out


def what_if(svc, ix, pairs, k, limit, w) -> dict:
    """Diagnosis, not Kelvin as shipped: where the hybrid time goes and what would change it (both legs
    at the full-text leg's limit)."""
    import lancedb

    from app.core.fusion import fuse
    from app.memory.index import ProjectIndex

    out = {}

    def no_fetch(q, v):  # svc.search minus the final messages() round trip
        t = ix.search_text(q, "", limit)
        vv = ix.search_vector(v, "", limit)
        return fuse([c.candidate(x, s) for x, s in t], [c.candidate(x, d, True) for x, d in vv], q)[:k]

    out["hybrid_without_fetch"] = c.time_calls(no_fetch, pairs, w)
    out.update(parallel_what_ifs(ix, pairs, k, limit, w))
    # the same calls on a handle that does not re-check the table version on every call (lancedb's
    # default consistency), swapped in for this process only
    store = svc.store()
    fast = ProjectIndex(ix.uri)
    fast._db = lancedb.connect(ix.uri)
    fast._chunks, fast._memories = fast._db.open_table("chunks"), fast._db.open_table("memories")
    store._index = fast
    try:
        out["hybrid_no_version_check"] = c.time_calls(lambda q, v: svc.search(q, k, query_vector=v), pairs, w)
        out["fts_only_no_version_check"] = c.time_calls(lambda q, v: fast.search_text(q, "", limit), pairs, w)
        out["vector_only_no_version_check"] = c.time_calls(lambda q, v: fast.search_vector(v, "", limit), pairs, w)
    finally:
        store._index = ix
    out["vector_dim_call"] = c.time_calls(ix.vector_dim, [()] * len(pairs), w)
    if not any("vector" in i.columns for i in ix._chunks.list_indices()):
        out["what_if_ann_index"] = {}
    return out


def parallel_what_ifs(ix, pairs, k, limit, w) -> dict:
    """The two legs run at once (LanceDB releases the GIL), and the legs select every column a
    Message needs so the final messages() round trip is only needed for multi-chunk messages."""
    from concurrent.futures import ThreadPoolExecutor

    from lancedb.query import MatchQuery

    from app.core.fusion import Candidate, fuse
    from app.memory import index as index_mod
    from app.memory.index import _CHUNK_COLS

    from_rows = getattr(index_mod, "message_from_rows", None) or index_mod._message_from_rows

    pool = ThreadPoolExecutor(2)

    def text_leg(q):
        return ix._chunks.search(MatchQuery(q, "search_text"), query_type="fts").select(_CHUNK_COLS + ["_score"]) \
            .limit(limit).to_list()

    def vector_leg(v):
        return ix._chunks.search(v, vector_column_name="vector").distance_type("cosine") \
            .select(_CHUNK_COLS + ["_distance"]).limit(limit).to_list()

    def as_cands(rows, key, distance=False):
        return [Candidate(r["message_id"], r["ts_ms"], r["text"], score=(1.0 - r[key]) if distance else r[key])
                for r in rows]

    def parallel_fetch(q, v):
        ft, fv = pool.submit(ix.search_text, q, "", limit), pool.submit(ix.search_vector, v, "", limit)
        fused = fuse([c.candidate(x, s) for x, s in ft.result()], [c.candidate(x, d, True) for x, d in fv.result()],
                     q)[:k]
        found = ix.messages([f.message_id for f in fused])
        return [found[f.message_id] for f in fused if f.message_id in found]

    def parallel_full_rows(q, v):
        ft, fv = pool.submit(text_leg, q), pool.submit(vector_leg, v)
        rows_t, rows_v = ft.result(), fv.result()
        fused = fuse(as_cands(rows_t, "_score"), as_cands(rows_v, "_distance", True), q)[:k]
        whole = {r["message_id"]: r for r in rows_t + rows_v if r["n_chunks"] == 1}
        rest = ix.messages([f.message_id for f in fused if f.message_id not in whole])
        return [from_rows([whole[f.message_id]]) if f.message_id in whole else rest.get(f.message_id)
                for f in fused]

    out = {"hybrid_parallel_legs": c.time_calls(parallel_fetch, pairs, w),
           "hybrid_parallel_legs_full_rows_no_fetch": c.time_calls(parallel_full_rows, pairs, w)}
    pool.shutdown()
    return out


def ann_index_what_if(ix, pairs, k, limit, w, svc, matrix, ids) -> dict:
    """Below Kelvin's 20k-vector threshold: build the same IVF_HNSW_SQ index anyway and re-time."""
    from lancedb.index import IvfHnswSq

    n = ix._chunks.count_rows("vector IS NOT NULL")
    t0 = time.perf_counter()
    ix._chunks.create_index("vector", config=IvfHnswSq(distance_type="cosine", num_partitions=max(1, n // 8192)),
                            replace=True)
    out = {"build_s": round(time.perf_counter() - t0, 2)}
    out["vector_only"] = c.time_calls(lambda q, v: ix.search_vector(v, "", limit), pairs, w)
    out["hybrid"] = c.time_calls(lambda q, v: svc.search(q, k, query_vector=v), pairs, w)
    out["vector_leg_recall_vs_exact"] = ann_recall(ix, pairs, matrix, ids, limit)
    return out


def ann_recall(ix, pairs, matrix, ids, limit) -> float:
    """Share of the exact top-``limit`` (NumPy) that the vector leg returns, averaged over queries."""
    overlap = []
    for _q, v in pairs:
        exact = {ids[i] for i in numpy_topk(matrix, np.asarray(v, np.float32), limit)}
        got = set(unique_ids(ix.search_vector(v, "", limit), limit))
        overlap.append(len(exact & got) / limit)
    return round(float(np.mean(overlap)), 4)


def disk(folder: Path) -> dict:
    journal = c.folder_bytes(folder / "journal")
    lance = c.folder_bytes(folder / "memory.lance")
    md = sum(p.stat().st_size for p in folder.glob("*.md"))
    return {"journal": journal, "lance_index": lance, "markdown": md, "total": c.folder_bytes(folder)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000", help="corpus sizes, comma-separated (multiples of 100)")
    ap.add_argument("--queries", type=int, default=250)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--k", type=int, default=5)
    ap.add_argument("--workdir", help="where the stores go (default: a temp folder)")
    ap.add_argument("--keep", action="store_true", help="keep the stores afterwards")
    ap.add_argument("--settle-s", type=int, default=65,
                    help="wait this long, maintain() again and measure disk once more (0: skip)")
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    doc = {"benchmark": "search_latency", "machine": c.machine_info(),
           "setup": {"sizes": sizes, "queries": args.queries, "warmup": args.warmup, "k": args.k,
                     "vectors": "all-MiniLM-L6-v2 (384-d, real model output for every message, cached)",
                     "query_embedding": "excluded (precomputed, passed as query_vector)",
                     "measured_after": "svc.maintain() (optimize + vector index when >= 20k vectors)"}}
    msgs = c.scale_corpus(conversations=max(sizes) // 100, per_conversation=100)
    vecs = c.cached_vectors([m["text"] for m in msgs])
    queries = c.latency_queries(args.queries)
    qvecs = c.cached_vectors(queries)
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="kelvin-bench-"))
    doc["results"] = [bench_size(n, msgs, vecs, queries, qvecs, args, workdir) for n in sizes]
    doc["bench_process_peak_rss_mib"] = c.peak_rss_mib()  # the benchmark itself (vectors in RAM), not Kelvin alone
    # the part excluded above: embedding one query with the same model, on this CPU
    c.st_model()
    doc["query_embedding_ms"] = c.time_calls(lambda q: c.embed([q]), [(q,) for q in queries[:100]], 10)
    if not args.workdir and not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

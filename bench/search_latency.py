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
    for cand, _ in rows:
        if cand.message_id not in out:
            out.append(cand.message_id)
    return out[:k]


def bench_size(size: int, msgs: list[dict], vecs: np.ndarray, queries: list[str], qvecs: np.ndarray,
               args, workdir: Path) -> dict:
    from app.core.fusion import Candidate  # noqa: F401 — imports app (and lancedb) before timing
    from app.memory.index import Filters
    from app.services.memory import CANDIDATES_PER_K

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
        k, limit = args.k, max(20, args.k * CANDIDATES_PER_K)
        out["k"], out["candidates_per_leg"] = k, limit
        pairs = [(q, v.tolist()) for q, v in zip(queries, qvecs)]
        w = args.warmup
        c.log(f"[{size:,}] timing {len(pairs)} queries per mode (after {w} warm-up calls) …")
        res = {}
        res["hybrid"] = c.time_calls(lambda q, v: svc.search(q, k, query_vector=v), pairs, w)
        res["fts_only"] = c.time_calls(lambda q, v: ix.search_text(q, "", limit), pairs, w)
        res["vector_only"] = c.time_calls(lambda q, v: ix.search_vector(v, "", limit), pairs, w)
        lighting = Filters(domain="lighting")
        res["hybrid_filtered_domain"] = c.time_calls(lambda q, v: svc.search(q, k, lighting, query_vector=v), pairs, w)
        fetch_ids = [[h.message.id for h in svc.search(q, k, query_vector=v)] for q, v in pairs]
        res["fetch_messages_only"] = c.time_calls(ix.messages, [(ids,) for ids in fetch_ids], w)
        matrix = np.ascontiguousarray(vecs[:size])
        qv32 = [np.asarray(v, np.float32) for v in qvecs]
        res["numpy_bruteforce_top%d" % limit] = c.time_calls(lambda v: numpy_topk(matrix, v, limit), [(v,) for v in qv32], w)
        res["numpy_bruteforce_top%d" % k] = c.time_calls(lambda v: numpy_topk(matrix, v, k), [(v,) for v in qv32], w)
        # diagnosis: the same calls on a handle that does not re-check the table version on every
        # call (lancedb's default), swapped in for this process only
        import lancedb

        from app.memory.index import ProjectIndex

        store = svc.store()
        fast = ProjectIndex(ix.uri)
        fast._db = lancedb.connect(ix.uri)
        fast._chunks, fast._memories = fast._db.open_table("chunks"), fast._db.open_table("memories")
        store._index = fast
        try:
            res["hybrid_no_version_check"] = c.time_calls(lambda q, v: svc.search(q, k, query_vector=v), pairs, w)
            res["fts_only_no_version_check"] = c.time_calls(lambda q, v: fast.search_text(q, "", limit), pairs, w)
            res["vector_only_no_version_check"] = c.time_calls(lambda q, v: fast.search_vector(v, "", limit), pairs, w)
        finally:
            store._index = ix
        res["vector_dim_call"] = c.time_calls(ix.vector_dim, [()] * len(pairs), w)
        out["latency_ms"] = res
        base = res["numpy_bruteforce_top%d" % limit]
        out["ratio_vs_numpy"] = {m: {"p50": round(res[m]["p50"] / base["p50"], 2), "p95": round(res[m]["p95"] / base["p95"], 2)}
                                 for m in ("hybrid", "fts_only", "vector_only")}
        # how much of the exact top-`limit` the vector leg (ANN index or flat scan) returns
        ids = [m["id"] for m in part]
        overlap = []
        for q, v in pairs:
            exact = {ids[i] for i in numpy_topk(matrix, np.asarray(v, np.float32), limit)}
            got = set(unique_ids(ix.search_vector(v, "", limit), limit))
            overlap.append(len(exact & got) / limit)
        out["vector_leg_recall_vs_exact"] = round(float(np.mean(overlap)), 4)
        out["disk_bytes"] = disk(data / "bench")
        out["table_versions"] = ix.disk_versions()
    finally:
        svc.close()
    if not args.keep:
        shutil.rmtree(data, ignore_errors=True)
    return out


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

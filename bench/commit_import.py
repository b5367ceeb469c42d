"""Write-side numbers: commit throughput, commit-to-searchable time, CLI import of a large history,
and its disk use and peak memory.

* commits: ``svc.commit()`` called back to back N times, every Future awaited (messages/s), and
  one at a time (commit, wait) for the per-commit latency; on a store already holding
  ``--base`` messages. Embedder ``none`` and, unless ``--no-st``, Kelvin's real
  ``st:all-MiniLM-L6-v2`` (each commit embeds its text on the writer thread).
* commit-to-searchable: commit a message with a unique token, then call ``svc.search(token)``
  in a tight loop until it is the top hit.
* import: ``kelvin memory import FILE.jsonl`` as a subprocess (embedder none), 1000 conversations
  x 100 messages by default; wall time, messages/s, peak RSS (wait4), disk by part afterwards.

    python bench/commit_import.py > bench/results/commit_import.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import common as c
from search_latency import disk


def populate(data: Path, embedder: str, base: list[dict]) -> None:
    """A store holding ``base`` messages (vectors from the cache when the embedder is st)."""
    obj = None
    if embedder != "none":
        obj = c.LookupEmbedder({m["text"]: v for m, v in zip(base, c.cached_vectors([m["text"] for m in base]))})
    svc = c.make_service(data, embedder, embedder_obj=obj)
    try:
        svc.import_items(c.to_items(base))
        svc.maintain()
    finally:
        svc.close()


def commits(embedder: str, base: list[dict], n_burst: int, n_single: int, n_visible: int, workdir: Path) -> dict:
    data = workdir / f"commit-{embedder.replace(':', '-')}"
    c.log(f"[commit {embedder}] preparing a store with {len(base):,} messages …")
    populate(data, embedder, base)
    svc = c.make_service(data, embedder)  # Kelvin's own embedder from here on
    rng = random.Random(3)
    texts = [m["text"] for m in c.scale_corpus(conversations=60, per_conversation=100, seed=99)]
    out: dict = {"embedder": embedder, "base_messages": len(base)}
    try:
        svc.open()
        if embedder != "none":
            svc.embedder.embed(["warm-up"])  # load the model outside the timings
        svc.commit("warm-up commit", conversation_id="warm")[1].result()
        # 1. back to back, futures awaited at the end
        c.log(f"[commit {embedder}] {n_burst} commits back to back …")
        t0 = time.perf_counter()
        futs = [svc.commit(f"{texts[i]} #{i}", conversation_id="burst")[1] for i in range(n_burst)]
        t_submit = time.perf_counter() - t0
        for f in futs:
            f.result()
        elapsed = time.perf_counter() - t0
        out["burst"] = {"n": n_burst, "seconds": round(elapsed, 3), "messages_per_s": round(n_burst / elapsed, 1),
                        "submit_us_per_call": round(t_submit / n_burst * 1e6, 1)}
        time.sleep(2.5)  # the writer's idle upkeep (compaction after 50 writes) runs here, as in use
        svc.flush()
        # 2. one at a time: what one chat turn waits for (journal fsync + Markdown + index)
        c.log(f"[commit {embedder}] {n_single} commits one at a time …")
        lat = []
        for i in range(n_single):
            t0 = time.perf_counter()
            svc.commit(f"{texts[n_burst + i]} ~{i}", conversation_id="single")[1].result()
            lat.append(time.perf_counter() - t0)
            time.sleep(0.02)
        out["single"] = {"latency_ms": c.summary_ms(lat), "messages_per_s": round(n_single / sum(lat), 1),
                         **quarters(lat)}
        time.sleep(2.5)
        svc.flush()
        # 3. commit → searchable
        c.log(f"[commit {embedder}] {n_visible} commit-to-searchable trials …")
        vis, polls = [], []
        for i in range(n_visible):
            token = f"zx{rng.randrange(16**8):08x}q{i}"
            qv = svc.embedder.embed([token], kind="query")[0] if embedder != "none" else None
            text = f"{texts[n_burst + n_single + i]} marker {token}"
            t0 = time.perf_counter()
            msg, fut = svc.commit(text, conversation_id="visible")
            n = 0
            while True:
                n += 1
                hits = svc.search(token, 1, query_vector=qv)
                if hits and hits[0].message.id == msg.id:
                    break
            vis.append(time.perf_counter() - t0)
            fut.result()
            polls.append(n)
            time.sleep(0.05)
        out["commit_to_searchable_ms"] = {**c.summary_ms(vis), **quarters(vis)}
        out["polls_per_trial_mean"] = round(sum(polls) / len(polls), 1)
        out["table_versions_at_end"] = svc.store().index.disk_versions()
    finally:
        svc.close()
    shutil.rmtree(data, ignore_errors=True)
    return out


def quarters(samples: list[float]) -> dict:
    """p50 of the first and last quarter: shows drift as un-compacted versions pile up."""
    q = max(1, len(samples) // 4)
    return {"p50_first_quarter": c.summary_ms(samples[:q])["p50"], "p50_last_quarter": c.summary_ms(samples[-q:])["p50"]}


def write_jsonl(msgs: list[dict], path: Path) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for m in msgs:
            ts = datetime.fromtimestamp(m["ts_ms"] / 1000, timezone.utc).isoformat().replace("+00:00", "Z")
            fh.write(json.dumps({"text": m["text"], "conversation_id": m["conversation_id"], "role": m["role"],
                                 "timestamp": ts}, ensure_ascii=False) + "\n")


# Linux keeps a process's peak-RSS mark across exec, so a child forked from this (large) process
# would report our size. A tiny launcher forks the CLI instead and reports its children's peak.
_LAUNCHER = """
import os, resource, sys, time
t0 = time.perf_counter()
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status = os.waitpid(pid, 0)
wall = time.perf_counter() - t0
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
sys.stderr.write("\\n@@bench %d %f %d\\n" % (os.waitstatus_to_exitcode(status), wall, rss))
"""


def run_cli(args: list[str], env: dict) -> tuple[float, float, str, str]:
    """Run ``kelvin ARGS``; (wall seconds, peak RSS MiB, stdout, stderr)."""
    exe = str(c.ROOT / ".venv" / "bin" / "kelvin")
    with tempfile.TemporaryFile() as so, tempfile.TemporaryFile() as se:
        subprocess.run(["/usr/bin/python3", "-S", "-c", _LAUNCHER, exe, *args], env=env, stdout=so, stderr=se)
        so.seek(0), se.seek(0)
        out, err = so.read().decode(), se.read().decode()
    err, _, report = err.rpartition("\n@@bench ")
    report = report.split()
    rc, wall, maxrss_kb = int(report[0]), float(report[1]), int(report[2])
    if rc:
        raise RuntimeError(f"kelvin {' '.join(args)} failed ({rc}): {err[-2000:]}")
    return wall, maxrss_kb / 1024, out, err


def cli_import(conversations: int, workdir: Path) -> dict:
    msgs = c.scale_corpus(conversations=conversations, per_conversation=100)
    path = c.RESULTS / f"import-{len(msgs)}.jsonl"
    if not path.exists():
        write_jsonl(msgs, path)
    data = workdir / "import"
    env = {**os.environ, "KELVIN_EMBEDDER": "none"}
    base = ["--data-dir", str(data), "--project", "bench", "memory"]
    c.log(f"[import] kelvin memory import {path.name} ({len(msgs):,} messages) …")
    wall, rss, out, err = run_cli([*base, "import", str(path)], env)
    t_end = time.perf_counter()
    res = {"messages": len(msgs), "conversations": conversations, "file_bytes": path.stat().st_size,
           "wall_s": round(wall, 2), "messages_per_s": round(len(msgs) / wall, 1), "peak_rss_mib": round(rss, 1),
           "stdout": out.strip()}
    res["disk_bytes"] = disk(data / "bench")
    c.log("[import] re-importing the same file (everything already stored) …")
    wall2, rss2, out2, _ = run_cli([*base, "import", str(path)], env)
    res["reimport"] = {"wall_s": round(wall2, 2), "peak_rss_mib": round(rss2, 1), "stdout": out2.strip()}
    c.log("[import] CLI batch search on the imported store …")
    qfile = workdir / "queries.txt"
    qfile.write_text("\n".join(c.latency_queries(250)) + "\n")
    wall3, rss3, out3, _ = run_cli([*base, "search", "--batch", str(qfile), "--k", "5", "--json"], env)
    took = [json.loads(line)["took_ms"] / 1000 for line in out3.splitlines() if line.strip()]
    res["cli_batch_search"] = {"queries": len(took), "wall_s": round(wall3, 2), "peak_rss_mib": round(rss3, 1),
                               "took_ms_all": c.summary_ms(took), "took_ms_after_20": c.summary_ms(took[20:])}
    stats = json.loads(run_cli([*base, "stats", "--json"], env)[2])
    res["stats"] = {k: stats.get(k) for k in ("messages", "chunks", "conversations", "journal", "index", "markdown_files")}
    # replaced data files are kept for a minute after a compaction; what stays once they are gone
    wait = max(0.0, 65 - (time.perf_counter() - t_end))
    c.log(f"[import] waiting {wait:.0f} s, then maintain(), for the settled disk size …")
    time.sleep(wait)
    svc = c.make_service(data, "none")
    try:
        svc.maintain()
    finally:
        svc.close()
    res["disk_bytes_settled"] = disk(data / "bench")
    shutil.rmtree(data, ignore_errors=True)
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", type=int, default=10000, help="messages already in the store for the commit runs")
    ap.add_argument("--burst", type=int, default=2000)
    ap.add_argument("--single", type=int, default=200)
    ap.add_argument("--visible", type=int, default=200)
    ap.add_argument("--conversations", type=int, default=1000, help="import size, in conversations of 100 messages")
    ap.add_argument("--no-st", action="store_true", help="skip the st:all-MiniLM-L6-v2 commit run")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip: commit,import")
    args = ap.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    workdir = Path(tempfile.mkdtemp(prefix="kelvin-bench-"))
    doc = {"benchmark": "commit_import", "machine": c.machine_info(), "setup": vars(args)}
    try:
        if "commit" not in skip:
            base = c.scale_corpus(conversations=max(1, args.base // 100), per_conversation=100)[: args.base]
            doc["commits"] = [commits("none", base, args.burst, args.single, args.visible, workdir)]
            if not args.no_st:
                doc["commits"].append(commits(c.ST_SPEC, base, args.burst // 4, args.single, args.visible, workdir))
        if "import" not in skip:
            doc["import"] = cli_import(args.conversations, workdir)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

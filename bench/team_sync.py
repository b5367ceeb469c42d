"""Team memory on a real PostgreSQL 15 (a throwaway cluster, fsync on, as a studio's would be):

* ``latency``: a message committed on one Kelvin until a search on another finds it — both with
  the window's background sync (TeamSync: NOTIFY wakes the puller), on loopback; p50/p95 over N.
* ``join``: a new artist joining a project of ``--messages`` messages until it can search it,
  against a local import of the same messages (``import_items``) in the same run: the ratio.
* ``studio``: ``--artists`` simulated artists pushing ``--events`` events each at once (batches of
  ``--batch``), each on its own connection: the server's time per push (p50/p95), then the
  sequence checked gap-free and every event counted.

    python bench/team_sync.py [--parts latency,join,studio] > bench/results/team_sync.json
"""
from __future__ import annotations

import argparse
import statistics
import threading
import time
import uuid
from pathlib import Path
import tempfile

import common as c

from tests.support.postgres import Cluster


def _service(data: Path, server: str, artist: str):
    from app.config import load
    from app.services.memory import MemoryService

    return MemoryService(load({"data_dir": str(data), "embedder": "none", "team_server": server, "artist": artist}))


def latency(cluster: Cluster, n: int, root: Path) -> dict:
    from app.services.team import Team
    from app.services.team_sync import TeamSync

    db = cluster.database("latency")
    server = cluster.conninfo(db, f"writer_{db}")
    a, b = _service(root / "a", server, "Mia"), _service(root / "b", server, "Leo")
    ta, tb = Team(a), Team(b)
    a.import_items(c.to_items(c.scale_corpus(20, 100), project="Job"))
    ta.share("Job")
    tb.join("Job")
    sa, sb = TeamSync(ta), TeamSync(tb)
    sa.follow("Job")
    sb.follow("Job")
    samples = []
    try:
        time.sleep(1.0)
        for _i in range(n):
            token = f"zq{uuid.uuid4().hex[:10]}"
            t0 = time.perf_counter()
            a.commit(f"the {token} pass looks right", project="Job")
            while True:
                if any(h.message.text.startswith(f"the {token}") for h in b.search(token, k=1, project="Job")):
                    break
                if time.perf_counter() - t0 > 30:
                    raise RuntimeError("a message did not arrive within 30 s")
                time.sleep(0.01)
            samples.append(time.perf_counter() - t0)
            time.sleep(0.2)
    finally:
        sa.stop()
        sb.stop()
        ta.close()
        tb.close()
        a.close()
        b.close()
    return {"what": "commit on one Kelvin to a search hit on another (loopback, unix socket)",
            "base_messages": 2000, "commit_to_hit_ms": c.summary_ms(samples)}


def join(cluster: Cluster, messages: int, root: Path) -> dict:
    from app.services.team import Team

    db = cluster.database("join")
    server = cluster.conninfo(db, f"writer_{db}")
    per = 100
    corpus = c.scale_corpus(max(1, messages // per), per)[:messages]
    local = _service(root / "local", "", "Solo")
    t0 = time.perf_counter()
    local.import_items(c.to_items(corpus, project="Big"))
    local.flush()
    import_s = time.perf_counter() - t0
    local.close()
    lead = _service(root / "lead", server, "Lead")
    lead.import_items(c.to_items(corpus, project="Big"))
    t0 = time.perf_counter()
    Team(lead).share("Big")
    share_s = time.perf_counter() - t0
    lead.close()
    new = _service(root / "new", server, "Newcomer")
    team = Team(new)
    t0 = time.perf_counter()
    team.join("Big")
    hits = new.search(corpus[messages // 2]["text"], k=3, project="Big")
    join_s = time.perf_counter() - t0
    assert hits, "the newcomer cannot find what it joined"
    count = len(new.message_ids("Big"))
    team.close()
    new.close()
    return {"messages": messages, "local_import_s": round(import_s, 2), "share_s": round(share_s, 2),
            "join_to_first_search_s": round(join_s, 2), "join_over_import": round(join_s / import_s, 2),
            "messages_after_join": count}


def studio(cluster: Cluster, artists: int, events: int, batch: int) -> dict:
    from app.memory.journal import Entry
    from app.memory.team_server import TeamServer

    db = cluster.database("studio")
    server = cluster.conninfo(db, f"writer_{db}")
    admin = TeamServer(server)
    admin.ensure_schema()
    project = admin.create_project(str(uuid.uuid4()), "Studio", "Lead").id
    admin.close()
    times: list[float] = []
    lock = threading.Lock()
    errors: list[str] = []
    start = threading.Barrier(artists)

    def artist(k: int) -> None:
        srv = TeamServer(server)
        try:
            mine = [Entry(0, "message.add", int(time.time() * 1000),
                          {"id": f"m{k}-{i}", "text": f"artist {k} says {i}"}, uid=str(uuid.uuid4()),
                          by=f"artist{k}", kv=f"kelvin{k}") for i in range(events)]
            srv.schema_version()  # connected before the start
            start.wait()
            for i in range(0, events, batch):
                t0 = time.perf_counter()
                srv.push(project, mine[i : i + batch])
                with lock:
                    times.append(time.perf_counter() - t0)
        except Exception as exc:  # noqa: BLE001 — counted and reported
            errors.append(str(exc))
        finally:
            srv.close()

    # the baseline in the same run: one artist alone (no one to wait for at the project's row lock)
    alone = TeamServer(server)
    solo = []
    for i in range(0, events, batch):
        chunk = [Entry(0, "message.add", int(time.time() * 1000), {"id": f"solo-{i + j}", "text": "alone"},
                       uid=str(uuid.uuid4()), by="solo", kv="kelvin-solo") for j in range(batch)]
        t0 = time.perf_counter()
        alone.push(project, chunk)
        solo.append(time.perf_counter() - t0)
    alone.close()
    threads = [threading.Thread(target=artist, args=(k,)) for k in range(artists)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    seqs = [r[0] for r in cluster.sql("SELECT seq FROM kelvin.events ORDER BY seq", dbname=db)]
    return {"artists": artists, "events_each": events, "batch": batch, "errors": errors[:3],
            "one_artist_alone_push_ms": c.summary_ms(solo),
            "events_on_server": len(seqs), "expected": artists * events + events,
            "gap_free": seqs == list(range(1, len(seqs) + 1)), "wall_s": round(wall, 2),
            "events_per_s": round(len(seqs) / wall, 1), "push_ms": c.summary_ms(times),
            "push_ms_mean_per_event": round(statistics.mean(times) * 1000 / batch, 3)}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--parts", default="latency,join,studio")
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--messages", type=int, default=100_000)
    p.add_argument("--artists", type=int, default=50)
    p.add_argument("--events", type=int, default=200)
    p.add_argument("--batch", type=int, default=10)
    args = p.parse_args()
    parts = args.parts.split(",")
    import signal
    import sys

    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stopped: the cluster is still stopped (finally)
    doc = {"bench": "team_sync", "machine": c.machine_info()}
    cluster = Cluster(durable=True).start()
    root = Path(tempfile.mkdtemp(prefix="kelvin-team-bench-"))
    try:
        if "studio" in parts:
            c.log("studio: artists pushing at once …")
            doc["studio"] = studio(cluster, args.artists, args.events, args.batch)
        if "latency" in parts:
            c.log("latency: commit here, search there …")
            doc["latency"] = latency(cluster, args.trials, root / "latency")
        if "join" in parts:
            c.log(f"join: {args.messages:,} messages …")
            doc["join"] = join(cluster, args.messages, root / "join")
    finally:
        cluster.remove()
        import shutil

        shutil.rmtree(root, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

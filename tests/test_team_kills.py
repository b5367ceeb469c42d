"""kill -9 a Kelvin just before, during and just after the server's commit of its push, and at
random moments of its rounds; and the server stopped, restarted and its connections cut in the
middle of pushes and pulls. After a restart and a sync every event exists exactly once, on the
server and in every journal, and every Kelvin shows the same memory."""
from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.support.team_memory import journal_ids, memory_of

ROOT = Path(__file__).resolve().parent.parent
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}


def _artist(folder: Path, artist: str, project: str, ops: int, seed: int, server: str, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "tests.support.team_artist", str(folder), artist, project, str(ops),
                             str(seed), "--server", server, "--mode", mode], cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _reap(p: subprocess.Popen, timeout: float = 300) -> tuple[int, str, str]:
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    return p.returncode, out, err


def _everyone_agrees(postgres, studio, project, opened) -> int:
    for _round in range(2):
        for _svc, team in opened:
            team.sync(project)
    rows = postgres.sql("SELECT id::text, seq FROM kelvin.events ORDER BY seq", dbname=studio)
    on_server = [r[0] for r in rows]
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
    assert len(set(on_server)) == len(on_server)
    first = memory_of(opened[0][0], project)
    for svc, _team in opened:
        ids = journal_ids(svc, project)
        assert len(ids) == len(set(ids)) and set(ids) == set(on_server)
        assert memory_of(svc, project) == first
    return len(rows)


@pytest.fixture
def shared(postgres, make_service, tmp_path):
    from app.services.team import Team

    studio = postgres.database("kills_" + uuid.uuid4().hex[:6])
    server = postgres.conninfo(studio, f"writer_{studio}")
    lead = make_service(data_dir=str(tmp_path / "lead"), team_server=server, artist="Lead")
    lead_team = Team(lead)
    lead.commit("start of the job", project="Job")[1].result()
    lead_team.share("Job")
    joiner = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    joining = Team(joiner)
    joining.join("Job")
    joining.close()
    joiner.close()
    yield studio, server, lead, lead_team
    lead_team.close()


@pytest.mark.slow(seconds=15)
def test_a_kill_before_during_or_after_the_servers_commit_loses_and_doubles_nothing(postgres, shared, make_service,
                                                                                    tmp_path):
    from app.services.team import Team

    studio, server, lead, lead_team = shared
    moments = ["die-before-push", "push-then-die"] + ["die-in-push"] * 4 + ["push-then-die", "die-before-push"]
    seen = {"none of it": 0, "all of it": 0}
    for n, mode in enumerate(moments):
        rc, out, err = _reap(_artist(tmp_path / "mia", "Mia", "Job", 3 + n % 3, 100 + n, server, mode))
        assert rc == -signal.SIGKILL, f"{mode}: the Kelvin was to die, it ended with {rc}: {err[-2000:]}"
        batch = json.loads(out.strip().splitlines()[-1])["batch"]
        there = {r[0] for r in postgres.sql("SELECT id::text FROM kelvin.events", dbname=studio)}
        got = len(set(batch) & there)
        assert got in (0, len(batch)), "a push is all or nothing"
        seen["all of it" if got else "none of it"] += 1
        mia = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
        team = Team(mia)
        team.sync("Job")  # after the restart: what waited is sent (once), what the server took is known
        assert team.status("Job").waiting == 0
        team.close()
        mia.close()
    assert seen["none of it"] and seen["all of it"]  # both sides of the commit were hit
    mia = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    mia_team = Team(mia)
    assert _everyone_agrees(postgres, studio, "Job", [(lead, lead_team), (mia, mia_team)]) > 10
    mia_team.close()


@pytest.mark.slow(seconds=8)
def test_kills_at_random_moments_of_the_rounds(postgres, shared, make_service, tmp_path):
    from app.services.team import Team

    studio, server, lead, lead_team = shared
    rng = random.Random(34)
    for n in range(6):
        p = _artist(tmp_path / "mia", "Mia", "Job", 2, 300 + n, server, "sync-forever")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (tmp_path / "mia" / "job" / "journal" / "acks.jsonl").exists():
            time.sleep(0.1)  # the first round has reached the server
        time.sleep(rng.uniform(0.2, 2.5))
        os.kill(p.pid, signal.SIGKILL)
        _reap(p)
        lead_team.sync("Job")
    mia = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    mia_team = Team(mia)
    assert _everyone_agrees(postgres, studio, "Job", [(lead, lead_team), (mia, mia_team)]) > 10
    mia_team.close()


@pytest.mark.slow(seconds=4)
def test_the_server_stopped_restarted_and_cut_mid_round(postgres, shared, make_service, tmp_path):
    """Local work goes on while the server is away; the status says so; the rounds resume by themselves."""
    from app.services.team import Team
    from app.services.team_sync import TeamSync

    studio, server, lead, lead_team = shared
    mia = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    team = Team(mia)
    said = []
    sync = TeamSync(team, on_change=lambda status, pulled: said.append(status.words()))
    sync.follow("Job")
    try:
        for i in range(30):
            mia.commit(f"before the cut {i}", project="Job")[1].result()
        # cut every Kelvin connection from the server's side, in the middle of whatever it does
        postgres.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'kelvin%'")
        for i in range(30):
            mia.commit(f"after the cut {i}", project="Job")[1].result()
        postgres.stop()
        for i in range(20):
            mia.commit(f"while the server is down {i}", project="Job")[1].result()  # local work goes on
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(w.startswith("offline since") for w in said):
            time.sleep(0.1)
        assert any(w.startswith("offline since") for w in said), said
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and team.status("Job").waiting < 20:
            time.sleep(0.1)
        assert team.status("Job").waiting >= 20 and team.status("Job").words().startswith("offline since")
        postgres.start()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and team.status("Job").words() != "synced":
            time.sleep(0.2)
        assert team.status("Job").words() == "synced", said[-5:]
    finally:
        sync.stop()
        postgres.ensure_started()  # (if a step above failed: the session's other tests need the cluster)
    assert _everyone_agrees(postgres, studio, "Job", [(lead, lead_team), (mia, team)]) == 81  # the lead's one and Mia's 80
    team.close()

"""Team memory on a real PostgreSQL (tests/support/postgres.py): sharing, joining, offline work,
the shared order, conflicts, authors, rights and plain words for every failure."""
from __future__ import annotations

import json
import re
import uuid

import pytest

from app.memory.team_server import TeamServerError, redact


@pytest.fixture
def studio(postgres, request):
    """A fresh database on the session's cluster, with a writer and a reader role."""
    name = "t_" + re.sub(r"\W", "_", request.node.name)[:40].lower() + "_" + uuid.uuid4().hex[:6]
    postgres.database(name)
    return name


@pytest.fixture
def kelvins(make_service, postgres, studio, tmp_path):
    """Make an artist's Kelvin: its own data folder, its own name, the studio's server."""
    from app.services.team import Team

    teams = []

    def make(artist: str, role: str = "writer"):
        svc = make_service(data_dir=str(tmp_path / artist), team_server=postgres.conninfo(studio, f"{role}_{studio}"),
                           artist=artist)
        team = Team(svc)
        teams.append(team)
        return svc, team

    yield make
    for team in teams:
        team.close()


def _said(svc, project):
    return sorted((m.id, m.text, m.speaker) for m in svc.list(project, limit=0))


def _markdown(svc, project):
    folder = svc.store(project).folder
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*.md")) if "journal" not in p.parts}


def _ledger(svc, project):
    from app.services.settings_ledger import SettingsLedger

    return [c.to_json() for c in SettingsLedger(svc).current(project, candidates=True)]


def test_a_shared_project_reaches_a_teammate_and_back(kelvins):
    mia, mia_team = kelvins("Mia")
    leo, leo_team = kelvins("Leo")
    mia.commit("Octane GI clamp 10 for the finals", project="Spot")[1].result()
    mia.commit("the key light is too warm", project="Spot")[1].result()
    shared = mia_team.share("Spot")
    assert shared.name == "Spot"
    assert mia_team.status("Spot").words() == "synced"

    assert leo_team.join("Spot") == "Spot"
    assert _said(leo, "Spot") == _said(mia, "Spot") and len(_said(leo, "Spot")) == 2
    hits = leo.search("key light warm", project="Spot")
    assert hits and hits[0].message.text == "the key light is too warm"

    leo.commit("rim light 2 stops down", project="Spot")[1].result()
    assert leo_team.status("Spot").words() in ("1 waiting to send", "synced")
    leo_team.sync("Spot")
    mia_team.sync("Spot")
    assert _said(leo, "Spot") == _said(mia, "Spot") and len(_said(mia, "Spot")) == 3
    assert _markdown(leo, "Spot") == _markdown(mia, "Spot")
    assert _ledger(leo, "Spot") == _ledger(mia, "Spot")
    clamp = next(c for c in _ledger(mia, "Spot") if c["parameter"] == "gi_clamp")
    assert clamp["value"] == 10 and clamp["author"] == "Mia"
    # who said it: the user's messages carry the artist's name
    assert {s for _, t, s in _said(leo, "Spot") if t.startswith("rim")} == {"Leo"}


def test_offline_work_is_sent_on_reconnect_and_pushing_twice_changes_nothing(kelvins, postgres, studio):
    mia, mia_team = kelvins("Mia")
    mia.commit("first", project="P")[1].result()
    mia_team.share("P")
    good = mia_team.setting
    mia_team.close()
    mia_team.setting = f"host=/nonexistent port=1 dbname={studio} user=writer_{studio}"
    for i in range(5):
        mia.commit(f"offline {i}", project="P")[1].result()
    with pytest.raises(TeamServerError) as err:
        mia_team.sync("P")
    assert err.value.kind == "offline" and "cannot be reached" in str(err.value)
    status = mia_team.status("P")
    assert status.state == "offline" and status.waiting == 5 and status.words().startswith("offline since ")
    mia_team.close()
    mia_team.setting = good
    done = mia_team.sync("P")
    assert done.pushed == 5 and mia_team.status("P").words() == "synced"
    # the same batch again: the server changes nothing, the sequence stays gap-free
    store = mia.store("P")
    again = [e for e in store.journal.read()]
    places = mia_team.server().push(store.team.server_project, again)
    rows = postgres.sql("SELECT seq FROM kelvin.events ORDER BY seq", dbname=studio)
    assert [r[0] for r in rows] == list(range(1, 7)) and sorted(places.values()) == list(range(1, 7))


def test_two_artists_setting_one_parameter_unseen_is_one_conflict_until_chosen(kelvins):
    from app.services.settings_ledger import SettingsLedger

    mia, mia_team = kelvins("Mia")
    leo, leo_team = kelvins("Leo")
    mia.commit("start", project="Job")[1].result()
    mia_team.share("Job")
    leo_team.join("Job")
    SettingsLedger(mia).set("gi clamp", "10", engine="octane", project="Job")
    SettingsLedger(leo).set("gi clamp", "25", engine="octane", project="Job")
    for team in (mia_team, leo_team, mia_team):
        team.sync("Job")
    shown = []
    for svc in (mia, leo):
        clamp = next(c for c in SettingsLedger(svc).current("Job") if c.entry.parameter == "gi_clamp")
        shown.append((clamp.entry.author, clamp.entry.value, [(c.author, c.value) for c in clamp.conflict]))
    assert shown[0] == shown[1]
    authors = {shown[0][0], *(a for a, _ in shown[0][2])}
    values = {shown[0][1], *(v for _, v in shown[0][2])}
    assert authors == {"Mia", "Leo"} and values == {10, 25}
    # Leo chooses, having seen both: no conflict anywhere any more
    SettingsLedger(leo).set("gi clamp", "10", engine="octane", project="Job")
    for team in (leo_team, mia_team):
        team.sync("Job")
    for svc in (mia, leo):
        clamp = next(c for c in SettingsLedger(svc).current("Job") if c.entry.parameter == "gi_clamp")
        assert clamp.entry.value == 10 and clamp.entry.author == "Leo" and clamp.conflict == ()


def test_a_read_only_role_reads_and_a_write_says_so_in_one_sentence(kelvins, postgres, studio):
    mia, mia_team = kelvins("Mia")
    mia.commit("the lead's decision: GI clamp 10", project="Look")[1].result()
    mia_team.share("Look")
    postgres.grant_reader(studio)
    ro, ro_team = kelvins("Client", role="reader")
    ro_team.join("Look")
    assert [t for _, t, _ in _said(ro, "Look")] == ["the lead's decision: GI clamp 10"]
    ro.commit("can I change it?", project="Look")[1].result()
    with pytest.raises(TeamServerError) as err:
        ro_team.sync("Look")
    assert err.value.kind == "read_only" and "may read this project but not write" in str(err.value)
    assert str(err.value).count(".") <= 2 and "\n" not in str(err.value)
    assert ro_team.status("Look").state == "refused" and ro_team.status("Look").waiting == 1
    assert len(_said(ro, "Look")) == 2  # the local work stays


def test_passwords_are_never_in_the_setting_nor_in_any_message(postgres, make_service, tmp_path, monkeypatch):
    from app.config import ConfigError, load
    from app.services.team import Team

    with pytest.raises(ConfigError, match="pgpass"):
        load({"team_server": "host=db user=mia password=hunter2"})
    with pytest.raises(ConfigError, match="pgpass"):
        load({"team_server": "postgresql://mia:hunter2@db/kelvin"})
    assert "hunter2" not in redact("connection to postgresql://mia:hunter2@db failed; password=hunter2 given")
    postgres.sql("DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'pw_user') THEN "
                 "CREATE ROLE pw_user LOGIN PASSWORD 'right-one'; END IF; END $$")
    monkeypatch.setenv("PGPASSWORD", "wrong-one")
    svc = make_service(data_dir=str(tmp_path / "pw"), team_server=f"host=127.0.0.1 port={postgres.port} "
                       "dbname=postgres user=pw_user")
    with pytest.raises(TeamServerError) as err:
        Team(svc).server().schema_version()
    assert err.value.kind == "refused" and "pgpass" in str(err.value) and "wrong-one" not in str(err.value)


def test_the_command_line_shares_joins_says_where_it_stands_and_the_doctor_checks_the_server(
        postgres, studio, tmp_path, monkeypatch):
    from tests.support.cli import kelvin as run_kelvin

    monkeypatch.setenv("KELVIN_TEAM_SERVER", postgres.conninfo(studio, f"writer_{studio}"))

    def kelvin(artist: str, *argv: str) -> tuple[int, str, str]:
        monkeypatch.setenv("KELVIN_ARTIST", artist)
        monkeypatch.setenv("KELVIN_DATA_DIR", str(tmp_path / artist))
        done = run_kelvin(*argv, check=False)
        return done.returncode, done.stdout, done.stderr

    assert kelvin("Mia", "project", "create", "Nike")[0] == 0
    rc, out, err = kelvin("Mia", "--project", "Nike", "team", "status")
    assert rc == 0 and "personal project" in out
    rc, out, err = kelvin("Mia", "team", "share", "Nike")
    assert rc == 0 and "shared 'Nike'" in out and "synced" in out, err
    assert kelvin("Mia", "--project", "Nike", "settings", "set", "gi clamp", "10", "--engine", "octane")[0] == 0
    rc, out, err = kelvin("Mia", "--project", "Nike", "team", "sync")
    assert rc == 0 and "sent 1" in out and out.rstrip().endswith("synced")
    rc, out, _ = kelvin("Leo", "team", "projects")
    assert rc == 0 and "Nike" in out and "shared by Mia" in out
    rc, out, err = kelvin("Leo", "team", "join", "Nike")
    assert rc == 0 and "joined 'Nike'" in out, err
    rc, out, _ = kelvin("Leo", "--project", "Nike", "settings", "list")
    assert "GI clamp = 10 (Mia, " in out and "by hand" in out
    rc, out, _ = kelvin("Leo", "--project", "Nike", "team", "status", "--json")
    assert json.loads(out)["words"] == "synced"
    rc, out, _ = kelvin("Leo", "doctor", "--json")
    check = next(c for c in json.loads(out) if c["name"] == "team server")
    assert check["status"] == "ok" and "PostgreSQL 15" in check["detail"] and "reads and writes" in check["detail"]
    assert "schema 1" in check["detail"] and "clocks" in check["detail"]
    # a server that is not there: one plain sentence, no traceback, local work goes on
    monkeypatch.setenv("KELVIN_TEAM_SERVER", f"host={tmp_path} port=1 dbname=x user=y")
    rc, out, err = kelvin("Leo", "--project", "Nike", "team", "sync")
    assert rc == 1 and err.startswith("kelvin: the studio's server") and "cannot be reached" in err
    assert "Traceback" not in err and err.count("\n") == 1
    assert kelvin("Leo", "--project", "Nike", "memory", "remember", "the client likes warm light")[0] == 0


def test_with_ollama_on_the_studios_gpu_box_a_local_render_unloads_nothing_and_says_so(make_service):
    from app.core.commands import Mode
    from app.core.vram import GpuSample, ProcessSample, Sample
    from app.services.conversation import Conversation
    from app.services.gpu_guard import GpuGuard, replay

    svc = make_service(ollama_host="http://gpu-box.studio.invalid:11434")
    conv = Conversation(svc.settings, svc)
    notes = []
    guard = GpuGuard(svc.settings, source=None, conversation=conv, synchronous=True,
                     notify=lambda title, text: notes.append((title, text)))
    try:
        events = replay(guard, [Sample(0, (GpuSample(0, 8_000, 7_500, 99),), (ProcessSample(3, "kick", 0, 6_000),))])
        assert events[0].action == "unload" and "nothing of Kelvin's on this GPU" in events[-1].reason
        assert conv.mode is Mode.GPU  # the answers go on on the studio's server
        assert notes == [("Render detected in Arnold (kick)", "Kelvin's model runs on the studio's model server "
                          "(http://gpu-box.studio.invalid:11434), not on this GPU: nothing to unload, and Kelvin keeps "
                          "answering.")]
    finally:
        guard.stop()
        conv.close()


def test_a_busy_shared_model_server_reads_as_waiting_not_as_a_failure():
    import ollama

    from app.llm.errors import ServerBusy, explain

    busy = explain(ollama.ResponseError("server busy, please try again.  maximum pending requests exceeded", 503),
                   "http://gpu-box.studio:11434", "llama3.1:8b")
    assert isinstance(busy, ServerBusy) and str(busy).startswith("waiting for the studio's model server")
    local = explain(ollama.ResponseError("server busy", 503), "http://127.0.0.1:11434", "llama3.1:8b")
    assert isinstance(local, ServerBusy) and "busy" in str(local)

"""The window with a shared project: the header says the team's state, and a teammate's message
appears in the memory view while the window is open; the window and commands in a terminal on the
same machine write the project together and end with the server's ledger (real PostgreSQL, real
window, real processes)."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest
from PySide6.QtCore import QSettings, Qt

from app.config import load
from app.ui.app import build_services
from app.ui.main_window import MainWindow
from tests.support.ollama_server import OllamaTestServer
from tests.support.cli import ROOT


def said(w) -> str:
    """What the header's team label tells (all of it; a narrow window shows a dot and a word, the
    rest in the tooltip)."""
    label = w.header.team_label
    return (label.property("full") or "") if label.isVisible() else ""


def test_the_header_says_the_team_state_and_a_teammates_words_appear(qtbot, tmp_path, postgres, make_service):
    from app.services.team import Team

    studio = postgres.database("window_" + uuid.uuid4().hex[:6])
    server = postgres.conninfo(studio, f"writer_{studio}")
    leo = make_service(data_dir=str(tmp_path / "leo"), team_server=server, artist="Leo")
    leo_team = Team(leo)
    leo.commit("the look: warm key, cool rim", project="Spot")[1].result()
    leo_team.share("Spot")
    mia_data = tmp_path / "mia"
    mia = make_service(data_dir=str(mia_data), team_server=server, artist="Mia")
    joining = Team(mia)
    joining.join("Spot")
    joining.close()
    mia.close()
    with OllamaTestServer() as srv:
        settings = load({"ollama_host": srv.host, "data_dir": str(mia_data), "project": "Spot", "team_server": server,
                         "artist": "Mia"})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        try:
            w.attach(build_services(settings, gpu=False))
            qtbot.waitUntil(lambda: "Team: synced" in said(w), timeout=20_000)
            w.show_view(w.views.indexOf(w.memory))
            leo.commit("GI clamp 10 for the finals, says Leo", project="Spot")[1].result()
            leo_team.sync("Spot")
            qtbot.waitUntil(lambda: any("GI clamp 10 for the finals" in (m.text if hasattr(m, "text") else str(m))
                                        for m in w.services.memory.list("Spot", limit=10)), timeout=15_000)
            qtbot.waitUntil(lambda: w.memory.count.text().startswith("2 messages"), timeout=15_000)  # the view follows
            # the server goes away: the header says so, local work goes on
            postgres.stop()
            w.services.memory.commit("a note while the server is away", project="Spot")[1].result()
            # (the round that finds the server gone may start before the note is written: it is counted next)
            qtbot.waitUntil(lambda: "offline since" in said(w) and "1 waiting to send" in said(w), timeout=30_000)
            postgres.start()
            qtbot.waitUntil(lambda: "Team: synced" in said(w), timeout=60_000)
        finally:
            w.close()
            postgres.ensure_started()  # (if a step above failed: the session's other tests need the cluster)
    leo_team.sync("Spot")
    assert any(m.text == "a note while the server is away" for m in leo.list("Spot", limit=10))
    leo_team.close()


TERMINAL_DAY = [{"id": f"term-{i:02d}", "project": "Spot", "conversation_id": "terminal-day", "role": "user",
                 "text": f"Spot note {i} from the terminal: Octane max samples {2000 + 1000 * (i % 3)} on shot {i}",
                 "timestamp": f"2026-11-24T11:{i:02d}:00Z"} for i in range(12)]


@pytest.mark.slow(seconds=8)
def test_the_window_and_a_terminal_write_one_shared_project_and_end_with_the_servers_ledger(
        qtbot, tmp_path, postgres, make_service, monkeypatch):
    """The window (its own background rounds) and commands in a terminal on the same data folder write
    one shared project, the server away for part of it: each shows what the other has not sent; the
    window sends the terminal's writes without the terminal syncing; afterwards the window, a fresh
    terminal, Leo, a newcomer joining from the server and a rebuild all have one ledger, and every
    event is on the server and in the journal once."""
    import json
    from collections import Counter

    from app.services.settings_ledger import SettingsLedger
    from app.services.team import Team
    from tests.support.cli import kelvin, write_jsonl

    studio = postgres.database("window_term_" + uuid.uuid4().hex[:6])
    server = postgres.conninfo(studio, f"writer_{studio}")
    leo = make_service(data_dir=str(tmp_path / "leo"), team_server=server, artist="Leo")
    leo_team = Team(leo)
    leo.commit("the look: warm key, cool rim", project="Spot")[1].result()
    leo_team.share("Spot")
    mia_data = tmp_path / "mia"
    mia = make_service(data_dir=str(mia_data), team_server=server, artist="Mia")
    joining = Team(mia)
    joining.join("Spot")
    joining.close()
    mia.close()
    SettingsLedger(leo).set("gi clamp", "25", engine="octane", project="Spot")  # Leo's, not sent yet
    for var, value in (("KELVIN_DATA_DIR", str(mia_data)), ("KELVIN_TEAM_SERVER", server), ("KELVIN_ARTIST", "Mia"),
                       ("KELVIN_PROJECT", "Spot")):
        monkeypatch.setenv(var, value)
    day = write_jsonl(tmp_path / "terminal-day.jsonl", TERMINAL_DAY)

    def terminal_ledger() -> list:
        return json.loads(kelvin("settings", "list", "--candidates", "--json").stdout)

    def window_ledger() -> list:
        return [c.to_json() for c in SettingsLedger(w.services.memory).current("Spot", candidates=True)]

    def shown() -> dict:
        return {(c.entry.engine, c.entry.parameter): c.entry.value for c in w.memory.settings.current.rows}

    with OllamaTestServer() as srv:
        monkeypatch.setenv("KELVIN_OLLAMA_HOST", srv.host)
        settings = load({"ollama_host": srv.host, "data_dir": str(mia_data), "project": "Spot", "team_server": server,
                         "artist": "Mia"})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        try:
            w.attach(build_services(settings, gpu=False))
            qtbot.waitUntil(lambda: "Team: synced" in said(w), timeout=20_000)
            qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly(), timeout=20_000)
            postgres.stop()  # a train: nothing reaches the server for a while
            SettingsLedger(w.services.memory).set("gi clamp", "10", engine="octane", project="Spot")
            # a terminal on the same machine reads the window's decision that is not on the server yet
            clamp = next(c for c in terminal_ledger() if c["parameter"] == "gi_clamp")
            assert (clamp["value"], clamp["author"]) == (10, "Mia")
            # the terminal writes while the window asks a question of its own
            env = os.environ.copy()
            procs = [subprocess.Popen([sys.executable, "-m", "app", *argv], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True)
                     for argv in (["settings", "set", "parallel samples", "16", "--engine", "octane"],
                                  ["memory", "import", str(day)],
                                  ["chat", "--once", "Which max samples did we settle on for the hero shot?"])]
            w.show_view(w.views.indexOf(w.chat))
            qtbot.keyClicks(w.chat.composer, "Octane max samples 4000 for the finals, agreed?")
            qtbot.keyClick(w.chat.composer, Qt.Key.Key_Return)
            qtbot.waitUntil(lambda: not w.turns.busy and "Echo: Octane max samples 4000" in w.chat.entries[-1].text,
                            timeout=60_000)
            answer = w.chat.entries[-1].message_id
            for p in procs:
                try:
                    out, err = p.communicate(timeout=120)
                except subprocess.TimeoutExpired:
                    p.terminate()
                    try:
                        out, err = p.communicate(timeout=10)
                    except subprocess.TimeoutExpired:
                        p.kill()
                        out, err = p.communicate()
                assert p.returncode == 0, (p.args, out[-2000:], err[-2000:])
            # the window shows the terminal's unsent decision and messages, the header counts them
            w.show_view(w.views.indexOf(w.memory))
            w.memory.pages.setCurrentIndex(1)
            qtbot.waitUntil(lambda: shown().get(("octane", "parallel_samples")) == 16
                            and shown().get(("octane", "gi_clamp")) == 10, timeout=15_000)
            qtbot.waitUntil(lambda: "waiting to send" in said(w), timeout=30_000)
            assert window_ledger() == terminal_ledger()

            postgres.start()
            leo_team.sync("Spot")  # Leo's 25 and the window's 10: neither saw the other's
            # the window sends what both processes wrote (the terminal never synced) and fetches Leo's
            qtbot.waitUntil(lambda: "Team: synced" in said(w), timeout=90_000)
            leo_team.sync("Spot")
            qtbot.waitUntil(lambda: len(w.services.memory.store("Spot").journal_messages())
                            == len(leo.store("Spot").journal_messages()), timeout=30_000)
            qtbot.waitUntil(lambda: shown().get(("octane", "gi_clamp")) in (10, 25)
                            and any(c.conflict for c in w.memory.settings.current.rows), timeout=15_000)
            rows = postgres.sql("SELECT id::text, seq FROM kelvin.events ORDER BY seq", dbname=studio)
            assert [r[1] for r in rows] == list(range(1, len(rows) + 1))  # gap-free
            journal = [e.uid for e in w.services.memory.store("Spot").journal.read()]
            assert Counter(journal).most_common(1)[0][1] == 1 and set(journal) == {r[0] for r in rows}

            newcomer = make_service(data_dir=str(tmp_path / "nia"), team_server=server, artist="Nia")
            newcomer_team = Team(newcomer)
            newcomer_team.join("Spot")
            newcomer_team.close()
            reference = [c.to_json() for c in SettingsLedger(newcomer).current("Spot", candidates=True)]
            clamp = next(c for c in reference if c["parameter"] == "gi_clamp")
            assert {clamp["author"], *(x["author"] for x in clamp["conflict"])} == {"Mia", "Leo"}
            assert any(c["parameter"] == "parallel_samples" and c["value"] == 16 for c in reference)
            assert window_ledger() == reference
            assert terminal_ledger() == reference
            # what the window's answer looked at and its chips are part of the shared conversation
            notes = w.services.memory.turn_notes([answer], "Spot")[answer]
            assert notes.sources and notes.chips is not None
            for other in (leo, newcomer):
                theirs = other.turn_notes([answer], "Spot")[answer]
                assert (theirs.sources, theirs.chips) == (notes.sources, notes.chips)
            assert [c.to_json() for c in SettingsLedger(leo).current("Spot", candidates=True)] == reference
            kelvin("memory", "reindex")  # a rebuild from the journal, by a terminal, the window open
            assert terminal_ledger() == reference
            qtbot.waitUntil(lambda: window_ledger() == reference, timeout=15_000)
        finally:
            w.close()
            postgres.ensure_started()  # (if a step above failed: the session's other tests need the cluster)
    leo_team.close()

"""Two Kelvin processes on one machine write one shared project (the window and a command in a
terminal, or the Blender add-on), each taking the write lock for one write (issue 32), on a real
PostgreSQL: what one has not sent yet is in the other's ledger too, whichever of them syncs sends
the other's events as well, nothing is sent or settled twice, and both end with the ledger a
newcomer joining from the server and a rebuild get. (Two MemoryServices on one data folder are two
writers as the lock sees them: each opens the lock file on its own; the window test runs real
processes.)"""
from __future__ import annotations

import uuid
from collections import Counter

import pytest

from app.services.settings_ledger import SettingsLedger


@pytest.fixture
def spot(postgres, make_service, tmp_path):
    """Leo shares "Spot" from his machine; Mia joins it on hers; a second Kelvin process on Mia's data
    folder (her terminal) opens it too."""
    from app.services.team import Team

    studio = postgres.database("one_machine_" + uuid.uuid4().hex[:6])
    server = postgres.conninfo(studio, f"writer_{studio}")
    leo = make_service(data_dir=str(tmp_path / "leo"), team_server=server, artist="Leo")
    leo_team = Team(leo)
    leo.commit("the look: warm key, cool rim", project="Spot")[1].result()
    leo_team.share("Spot")
    window = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    window_team = Team(window)
    window_team.join("Spot")
    terminal = make_service(data_dir=str(tmp_path / "mia"), team_server=server, artist="Mia")
    terminal_team = Team(terminal)
    teams = (leo_team, window_team, terminal_team)
    yield studio, server, (leo, leo_team), (window, window_team), (terminal, terminal_team)
    for team in teams:
        team.close()


def _current(svc, project="Spot"):
    return {(c.entry.engine, c.entry.parameter): (c.entry.value, c.entry.author,
                                                  sorted((x.author, x.value) for x in c.conflict))
            for c in SettingsLedger(svc).current(project, candidates=True)}


def _ledger(svc, project="Spot"):
    ledger = SettingsLedger(svc)
    book = ledger.book(project)
    return ([c.to_json() for c in ledger.current(project, candidates=True)],
            {k: [e.to_json() for e in book.history(*k)] for k in sorted(book.keys())})


def test_two_processes_on_one_machine_share_one_outbox_and_one_ledger(spot, postgres, make_service, tmp_path):
    from app.services.team import Team

    studio, server, (leo, leo_team), (window, window_team), (terminal, terminal_team) = spot
    # the window decides something; nothing is sent yet
    SettingsLedger(window).set("gi clamp", "10", engine="octane", project="Spot")
    # the terminal's reader sees the window's unsent decision (from the journal they share)
    assert _current(terminal)[("octane", "gi_clamp")] == (10, "Mia", [])
    # the terminal writes too; the window sees that at once, also unsent
    terminal.commit("Octane max samples 4000 on the hero frames", project="Spot")[1].result()
    SettingsLedger(terminal).set("parallel samples", "16", engine="octane", project="Spot")
    assert _current(window) == _current(terminal)
    assert _current(window)[("octane", "max_samples")][0] == 4000
    assert window_team.recount("Spot").waiting == terminal_team.recount("Spot").waiting == 3

    # meanwhile Leo sets the same parameter without having seen Mia's, and is on the server first
    SettingsLedger(leo).set("gi clamp", "25", engine="octane", project="Spot")
    leo_team.sync("Spot")

    # the terminal syncs: it sends the window's events with its own, and settles Leo's before them
    done = terminal_team.sync("Spot")
    assert done.pushed == 3 and done.pulled == 1
    conflicted = _current(terminal)[("octane", "gi_clamp")]
    assert conflicted[2] and {conflicted[1], *(a for a, _ in conflicted[2])} == {"Mia", "Leo"}
    # the window follows that settlement (its unsent part taken off and put back, none left)
    assert _current(window) == _current(terminal)
    assert window_team.recount("Spot").waiting == 0

    # the window's round after it sends nothing again and settles nothing again
    again = window_team.sync("Spot")
    assert (again.pushed, again.pulled) == (0, 0)
    # and the other way round: the window writes, the window syncs, the terminal follows
    window.commit("Octane GI clamp 10 wins, says Mia, having seen Leo's", project="Spot")[1].result()
    SettingsLedger(window).set("gi clamp", "10", engine="octane", project="Spot")
    assert window_team.sync("Spot").pushed == 2
    assert terminal_team.sync("Spot").pushed == 0
    leo_team.sync("Spot")
    assert _current(terminal)[("octane", "gi_clamp")] == (10, "Mia", [])

    # every event once on the server, gap-free, and once in Mia's journal (shared by both processes)
    rows = postgres.sql("SELECT id::text, seq FROM kelvin.events ORDER BY seq", dbname=studio)
    assert [r[1] for r in rows] == list(range(1, len(rows) + 1))
    mine = [e.uid for e in window.store("Spot").journal.read()]
    assert Counter(mine).most_common(1)[0][1] == 1 and set(mine) == {r[0] for r in rows}

    # both processes, Leo, a newcomer joining from the server and a rebuild: one ledger
    newcomer = make_service(data_dir=str(tmp_path / "newcomer"), team_server=server, artist="Nia")
    newcomer_team = Team(newcomer)
    newcomer_team.join("Spot")
    reference = _ledger(newcomer)
    for svc in (window, terminal, leo):
        assert _ledger(svc) == reference
    terminal.reindex("Spot")
    assert _ledger(terminal) == reference and _ledger(window) == reference
    newcomer_team.close()

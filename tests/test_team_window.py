"""The window with a shared project: the header says the team's state, and a teammate's message
appears in the memory view while the window is open (real PostgreSQL, real window)."""
from __future__ import annotations

import uuid

import pytest
from PySide6.QtCore import QSettings

from app.config import load
from app.ui.app import build_services
from app.ui.main_window import MainWindow
from tests.support.ollama_server import OllamaTestServer


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
            qtbot.waitUntil(lambda: "offline since" in said(w), timeout=30_000)
            assert "waiting to send" in said(w)
            postgres.start()
            qtbot.waitUntil(lambda: "Team: synced" in said(w), timeout=60_000)
        finally:
            w.close()
    leo_team.sync("Spot")
    assert any(m.text == "a note while the server is away" for m in leo.list("Spot", limit=10))
    leo_team.close()

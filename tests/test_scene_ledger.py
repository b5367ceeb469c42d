"""The scene against the decisions where the artist sees it (issue 25): the window's Settings tab,
the brief's "Current settings", and a chat question — from a scene sent in Kelvin's scene format
(what the Blender add-on sends), with real services; no Blender needed here (tests/test_scene.py
reads real .blend files)."""
from __future__ import annotations

from app.core import brief as plan_
from app.core.records import parse_ts
from app.core.render_settings.scene import read
from app.services.settings_ledger import SettingsLedger
from tests.support.ollama_server import OllamaTestServer

SCENE = {"format": "kelvin-scene", "version": 1, "app": "Blender 5.0.1", "file": "/shots/forest.blend",
         "scene": "Scene", "engine": "cycles",
         "settings": [{"engine": "cycles", "parameter": "clamp_indirect", "value": 10},
                      {"engine": "cycles", "parameter": "max_samples", "value": 1024},
                      {"engine": "", "parameter": "resolution", "value": "2048x858"}],
         "extra": [{"name": "view transform", "value": "AgX"}]}


def _decide(memory) -> None:
    t = parse_ts("2026-11-24T10:00:00Z")
    memory.commit("Blender Cycles for the forest.", conversation_id="c1", ts_ms=t)
    memory.commit("Decision: clamp indirect 7 on the hero frames, max samples 1024.", conversation_id="c1", ts_ms=t + 1)
    memory.flush()


def test_a_chat_question_and_the_brief_get_the_diff_of_the_last_imported_scene(make_service):
    memory = make_service()
    ledger = SettingsLedger(memory)
    assert ledger.scene_answer() == ("No scene has been imported into this project yet (kelvin scene import "
                                     "FILE.blend, or Send to Kelvin in Blender)",)
    _decide(memory)
    ledger.import_scene(read(SCENE, ledger.catalogue))
    lines = ledger.relevant("default", "Does my scene match what we decided?")
    assert lines[0] == "The last scene imported (forest.blend · scene 'Scene') differs from what was decided:"
    assert len(lines) == 2 and lines[1].startswith("Cycles Clamp indirect: scene 10, decided 7 (hero) on ")
    assert lines[1].endswith('("Decision: clamp indirect 7 on the hero frames, max samples 1024.")')
    assert "Current settings" not in lines[0]
    # other questions still get the settings they name
    assert ledger.relevant("default", "what max samples are we on?")[0].startswith("Cycles Max samples = 1024")
    # the brief's "Current settings" section carries it under the table
    md = plan_.compose("default", "2026-11-26", "2026-11-26 18:00", {}, "| table |", [], ["lighting"], 3,
                       ledger.scene_answer())
    section = md.split("## Current settings", 1)[1].split("\n## ", 1)[0]
    assert "**The last scene imported (forest.blend · scene 'Scene') differs from what was decided**" in section
    assert "\n- Cycles Clamp indirect: scene 10, decided 7 (hero) on " in section
    # a new scene that matches: the answer says so
    fixed = dict(SCENE, settings=[{"engine": "cycles", "parameter": "clamp_indirect", "value": 7}])
    ledger.import_scene(read(fixed, ledger.catalogue))
    assert ledger.scene_answer() == ("The last scene imported (forest.blend · scene 'Scene') matches what was decided",)


def test_the_settings_tab_shows_where_the_scene_differs_from_what_was_decided(qtbot, window):
    with OllamaTestServer() as server:
        w = window(server)
        _decide(w.services.memory)
        w.services.conversation.ledger.import_scene(read(SCENE, w.services.conversation.ledger.catalogue))
        w.tabs.setCurrentIndex(w.views.indexOf(w.memory))
        w.memory.pages.setCurrentIndex(1)
        w.browser.settings()
        label = w.memory.settings.scene
        qtbot.waitUntil(lambda: label.isVisible(), timeout=10_000)
        assert label.text().startswith("⚠ The last scene imported (forest.blend · scene 'Scene') differs")
        assert "Cycles Clamp indirect: scene 10, decided 7 (hero) on " in label.text()
        assert label.property("differs") is True
        w.projects.switch_project("Other")  # another project: no scene line of the one before
        qtbot.waitUntil(lambda: not label.isVisible(), timeout=10_000)

"""A newcomer's day, as issue 30 tells it: every sentence that put a wrong value in the ledger, now
through the real store (journal → settings book → ledger) and the services that show it — the
prompt's lines, `kelvin settings list|set|unset|adopt`, the scene diff — with the shipped catalogue
and status model. The chip's and the Settings tab's words are in tests/test_ui_window.py."""
from __future__ import annotations

import json

import pytest

from app.core.render_settings.scene import read
from app.services.settings_ledger import SettingsLedger, describe, question
from tests.support.cli import kelvin, write_jsonl

T0 = 1_763_800_000_000  # 2025-11-22


def say(svc, engine_line: str, *turns: tuple[str, str], project: str = "day") -> SettingsLedger:
    """A conversation that names its engine first, then the turns, one minute apart."""
    for i, (role, text) in enumerate((("user", engine_line), *turns)):
        svc.commit(text, role=role, project=project, conversation_id="c1", ts_ms=T0 + i * 60_000)
    svc.flush()
    return SettingsLedger(svc)


def one(ledger: SettingsLedger, parameter: str, scope: str = "", project: str = "day"):
    found = [c for c in ledger.current(project) if (c.entry.parameter, c.entry.scope) == (parameter, scope)]
    assert len(found) <= 1
    return found[0] if found else None


def test_no_keep_256_never_makes_128_the_current_value(make_service):
    ledger = say(make_service(), "Redshift in Houdini, the atrium interior.",
                 ("user", "Brute force rays are at 256."),
                 ("assistant", "You could drop brute force rays to 128 to save time."),
                 ("user", "No, keep brute force rays at 256, it was blotchy at 128."))
    cur = one(ledger, "brute_force_rays")
    assert cur.decision.value == 256  # what was decided stands
    if cur.unsure:  # the last message was not read with confidence: it asks, it never asserts 128
        assert question(cur) == "256 or 128 for brute-force rays?"
        assert describe(cur).startswith("Redshift Brute-force rays = 256 or 128 — to confirm")
    else:
        assert describe(cur).startswith("Redshift Brute-force rays = 256 (")
    lines = ledger.relevant("day", "what brute force rays are we on?")
    assert lines and "= 128 (" not in lines[0]


def test_a_clamp_that_kills_the_fireflies_is_not_turned_down_and_belongs_to_the_hero_frames(make_service):
    ledger = say(make_service(), "Blender 4.2, Cycles, the lobby.",
                 ("user", "Clamp indirect 7 on the hero frames, it kills the fireflies."))
    cur = one(ledger, "clamp_indirect", "hero")
    assert cur is not None and one(ledger, "clamp_indirect") is None  # the hero frames', not render-wide
    assert [a.value for a in cur.alternatives] == [7]
    history = ledger.history("clamp indirect", "cycles", "day")
    assert [e.status for _, entries in history for e in entries] != ["rejected"]


def test_an_idea_turned_down_is_not_switched_on(make_service):
    ledger = say(make_service(), "Octane in C4D, the watch packshot.",
                 ("user", "Idea: shallow depth of field on the dial, f/2. Rejected, the client wants it all sharp."))
    dof = one(ledger, "depth_of_field")
    assert dof is None or dof.decision is None or dof.decision.value is not True
    f = one(ledger, "f_stop")
    assert f is None or f.decision is None


def test_back_to_4_after_a_reflection_depth_that_did_nothing(make_service):
    ledger = say(make_service(), "Redshift 3.6, the kitchen.",
                 ("user", "Reflection max trace depth is 4."),
                 ("user", "Tried reflection depth 8, no visible difference and 20% slower. Back to 4."))
    cur = one(ledger, "reflection_max_trace_depth")
    assert cur.decision.value == 4 and not cur.unsure


def test_redshift_subsample_intensity_and_the_sun_are_what_they_say(make_service):
    ledger = say(make_service(), "Redshift in Maya, the exterior.",
                 ("user", "max subsample intensity 2, and the sun at 45 degrees elevation."))
    assert one(ledger, "max_subsample_intensity").decision.value == 2
    assert one(ledger, "sun_elevation").decision.value == 45
    assert one(ledger, "light_intensity") is None and one(ledger, "hdri_rotation") is None


def test_every_light_and_every_output_is_its_own(make_service):
    ledger = say(make_service(), "Cycles, the cabin interior at dusk.",
                 ("user", "Key light at 5600K, the fireplace at 1900K."),
                 ("user", "Ceiling pendants at 2700 K, ACES tonemapping, hero resolution 3840x2160, "
                          "the turntable stays 1920x1080."))
    got = {(c.entry.parameter, c.entry.scope): c.decision.value for c in ledger.current("day") if c.decision}
    assert got == {("light_temperature", "key"): 5600, ("light_temperature", "fireplace"): 1900,
                   ("light_temperature", "ceiling pendants"): 2700, ("view_transform", ""): "aces",
                   ("resolution", "hero"): "3840x2160", ("resolution", "turntable"): "1920x1080"}
    line = ledger.relevant("day", "what colour temperature is the fireplace?")
    assert any(x.startswith("Light temperature (fireplace) = 1900 K") for x in line)


def test_a_scene_is_compared_light_by_light_and_never_decides(make_service):
    svc = make_service()
    ledger = say(svc, "Cycles, the cabin.", ("user", "The key light is 400 W, max samples 512."))
    scene = read({"format": "kelvin-scene", "version": 1, "app": "Blender", "file": "/shots/cabin.blend",
                  "scene": "Scene", "engine": "cycles",
                  "settings": [{"engine": "cycles", "parameter": "max_samples", "value": 777}],
                  "extra": [{"name": "light Key power", "value": 350, "unit": "W"},
                            {"name": "light Rim power", "value": 80, "unit": "W"}]}, ledger.catalogue)
    ledger.import_scene(scene, "day")
    diff = {d.name: (d.scene, d.decided) for d, _ in ledger.scene_differences(scene, "day")}
    assert diff == {"Light power (key)": ("350 W", "400 W"), "Cycles Max samples": ("777", "512")}
    samples = one(ledger, "max_samples")
    assert (samples.decision.value, samples.held.value, samples.differs) == (512, 777, True)
    assert describe(samples).startswith("Cycles Max samples = 512 (set ")
    assert describe(samples).endswith("in the file cabin.blend · scene 'Scene': 777)")
    rim = one(ledger, "light_power", "rim")
    assert rim.decision is None and describe(rim) == "Light power (rim): not decided (in the file cabin.blend · " \
                                                     "scene 'Scene': 80 W)"
    # one action adopts the file's value: journaled, by hand, the file named
    entry = ledger.adopt("max samples", "cycles", "day")
    assert (entry.value, entry.by, entry.note) == (777, "artist", "adopted from the file: cabin.blend · scene 'Scene'")
    assert not one(ledger, "max_samples").differs and not ledger.scene_differences(scene, "day")[1:]


def test_set_by_hand_after_messages_dated_later_is_the_value_and_unset_clears_it(tmp_path):
    future = "2031-01-01T10:00:00Z"
    day = write_jsonl(tmp_path / "day.jsonl", [
        {"project": "Cabin", "conversation_id": "c1", "text": "Cycles for the cabin.", "timestamp": future},
        {"project": "Cabin", "conversation_id": "c1", "text": "Resolution is 1920x1080 for now.", "timestamp": future},
    ])
    kelvin("memory", "import", str(day))
    out = kelvin("--project", "Cabin", "settings", "set", "resolution", "3840x2160").stdout
    assert out.startswith("Resolution = 3840x2160px (set by hand")
    rows = json.loads(kelvin("--project", "Cabin", "settings", "list", "--json").stdout)
    assert [(r["parameter"], r["value"], r["by"]) for r in rows] == [("resolution", "3840x2160", "artist")]
    out = kelvin("--project", "Cabin", "settings", "unset", "resolution").stdout
    assert out.startswith("resolution: no decided value now")
    assert json.loads(kelvin("--project", "Cabin", "settings", "list", "--json").stdout) == []


def test_adopt_without_a_scene_says_how_to_get_one(tmp_path):
    kelvin("project", "create", "Cabin")
    proc = kelvin("--project", "Cabin", "settings", "adopt", "max samples", "--engine", "cycles", check=False)
    assert proc.returncode == 1 and "no scene file holds a value for 'max samples'" in proc.stderr
    assert "kelvin scene import FILE" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("text", ["would 512 samples be enough?", "maybe later I'll try 16 bounces",
                                  "nah, not going to 4096 samples"])
def test_questions_ideas_and_refusals_are_never_current(make_service, text):
    ledger = say(make_service(), "Cycles, the cabin.", ("user", text))
    assert not [c for c in ledger.current("day") if c.decision is not None]

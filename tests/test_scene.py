"""Scene truth (issue 25): render settings read from a real .blend by real Blender (bpy, in its own
Python, tests/support/blender.py), through the CLI as an artist runs it; the diff against a ledger built
from a conversation; bad input. The add-on in a real bpy session: tests/test_blender_addon.py; Python in
a .blend: tests/test_scene_safe.py."""
from __future__ import annotations

import json
import os
import sys

import pytest

from tests.support.blend_scene import CANDIDATES, EXPECTED, UNITS
from tests.support.blender import BLENDER, make_blend, needs_blender
from tests.support.cli import kelvin, write_jsonl


@pytest.fixture
def blender(monkeypatch):
    monkeypatch.setenv("KELVIN_BLENDER_PYTHON", BLENDER)
    return BLENDER


def settings_json(*flags: str, project: str = "Forest") -> dict:
    """(engine, parameter) → row for render-wide settings; (engine, parameter, scope) for a light's or a
    camera's."""
    rows = json.loads(kelvin("--project", project, "settings", "list", "--json", *flags).stdout)
    return {(r["engine"] or "", r["parameter"], *([r["scope"]] if r.get("scope") else [])): r for r in rows}


def in_file(row: dict):
    """The value a scene file holds for a setting (never the decision: issue 30)."""
    return row["in_file"]["value"] if row.get("in_file") else None


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-6
    return a == b


@needs_blender
def test_a_blend_files_render_settings_land_in_the_ledger_exactly(blender, forest):
    kelvin("project", "create", "Forest")
    out = kelvin("--project", "Forest", "scene", "import", str(forest)).stdout
    assert out.startswith(f"Imported {len(EXPECTED)} settings from forest.blend · scene 'Scene' (Cycles)")
    got = settings_json()
    for key, value in EXPECTED.items():
        row = got.get(key)
        assert row is not None, f"{key} missing from the ledger"
        assert same(in_file(row), value), (key, row, value)
        assert row["in_file"]["unit"] == UNITS.get(key, ""), (key, row["in_file"])
        assert row["value"] is None and row["status"] == "in the file"  # read from a file: not a decision
        assert row["by"] == "scene" and "forest.blend · scene 'Scene'" in row["in_file"]["source"]
    assert set(got) == set(EXPECTED)  # nothing else became a setting
    kept = {k[1]: in_file(r) for k, r in settings_json("--candidates").items() if r["candidate"]}
    for name, value in CANDIDATES.items():
        assert same(kept.get(name), value), (name, kept.get(name))  # not known, never dropped
    history = kelvin("--project", "Forest", "settings", "history", "clamp indirect", "--engine", "cycles").stdout
    assert "scene: forest.blend · scene 'Scene'" in history
    # the prompt's settings use them ("Current settings" of a recall answer, from the ledger)
    shown = kelvin("--project", "Forest", "settings", "list").stdout
    assert "Cycles Clamp indirect: not decided (in the file forest.blend · scene 'Scene': 7.5)" in shown
    assert "Light power (key): not decided (in the file forest.blend · scene 'Scene': 350 W)" in shown


@needs_blender
def test_the_diff_lists_where_the_scene_differs_from_what_was_decided_not_from_earlier_imports(blender, forest,
                                                                                              tmp_path):
    day = write_jsonl(tmp_path / "day.jsonl", [
        {"project": "Forest", "conversation_id": "c1", "text": "Blender Cycles for the forest shot.",
         "timestamp": "2026-11-24T09:00:00Z"},
        {"project": "Forest", "conversation_id": "c1", "text": "Decision: clamp indirect 7 on the hero frames.",
         "timestamp": "2026-11-24T10:00:00Z"},
        {"project": "Forest", "conversation_id": "c1", "text": "focal length 85mm, and the resolution 2048x858 at 100%.",
         "timestamp": "2026-11-24T10:05:00Z"},
    ])
    kelvin("memory", "import", str(day))
    kelvin("--project", "Forest", "settings", "set", "max samples", "1024", "--engine", "cycles", "--note", "farm budget")
    # before any import: the diff reads the file
    out = kelvin("--project", "Forest", "scene", "diff", str(forest)).stdout
    lines = out.splitlines()
    assert lines[0] == "forest.blend · scene 'Scene' differs from what was decided:"
    assert any(x.startswith("  Cycles Clamp indirect: scene 7.5, decided 7 (hero) on ")
               and '("Decision: clamp indirect 7 on the hero frames.")' in x for x in lines), out
    assert any(x.startswith("  Cycles Max samples: scene 777, set by hand 1024 ") and "(farm budget)" in x
               for x in lines), out
    assert any(x.startswith("  Resolution percentage: scene 50%, decided 100% on ") for x in lines), out
    assert "Focal length" not in out and "Resolution:" not in out  # the same as decided
    diff = json.loads(kelvin("--project", "Forest", "scene", "diff", str(forest), "--json").stdout)
    assert {(d["parameter"], d["scene"], d["decided"]) for d in diff["differences"]} == {
        ("clamp_indirect", "7.5", "7 (hero)"), ("max_samples", "777", "1024"), ("resolution_percentage", "50%", "100%")}
    # an import does not decide: the diff after it is the same, and so is the one against a second import
    kelvin("--project", "Forest", "scene", "import", str(forest))
    again = json.loads(kelvin("--project", "Forest", "scene", "diff", str(forest), "--json").stdout)
    assert again["differences"] == diff["differences"]
    # a scene that holds what was decided matches
    shown = kelvin("--project", "Forest", "scene", "diff", "-", input=json.dumps(_scene_json())).stdout
    assert shown.startswith("shot.ma · scene 'main' matches what was decided (1 settings compared")


def _scene_json(**over) -> dict:
    return {"format": "kelvin-scene", "version": 1, "app": "a script", "file": "shot.ma", "scene": "main",
            "engine": "cycles", "settings": [{"engine": "cycles", "parameter": "clamp_indirect", "value": 7}], **over}


def test_the_scene_format_from_any_script_on_stdin_or_a_file(tmp_path):
    kelvin("project", "create", "Forest")
    data = _scene_json(settings=[{"engine": "cycles", "parameter": "max_samples", "value": 2048},
                                 {"name": "focal length", "value": 35},
                                 {"engine": "cycles", "parameter": "max_samples_typo", "value": 3},
                                 {"engine": "cycles", "parameter": "clamp_direct", "value": "lots"}],
                       extra=[{"name": "render layer", "value": "beauty"}])
    out = kelvin("--project", "Forest", "scene", "import", "-", "--json", input=json.dumps(data)).stdout
    got = json.loads(out)
    assert (got["settings"], got["candidates"]) == (2, 3)
    assert got["notes"] == ["Cycles Clamp direct: 'lots' is not a value it can hold (Clamp direct takes a number "
                            "of at least 0 (got 'lots')); kept as a candidate"]
    rows = settings_json("--candidates")
    assert in_file(rows[("", "clamp_direct_as_sent")]) == "lots" and ("cycles", "clamp_direct") not in rows
    assert in_file(rows[("cycles", "max_samples")]) == 2048 and in_file(rows[("", "focal_length")]) == 35
    assert rows[("", "render_layer")]["candidate"] and rows[("", "max_samples_typo")]["candidate"]
    f = tmp_path / "maya.json"
    f.write_text(json.dumps(_scene_json(app="Maya 2025")), encoding="utf-8")
    assert kelvin("--project", "Forest", "scene", "import", str(f)).stdout.startswith(
        "Imported 1 settings from shot.ma · scene 'main' (Cycles).")
    assert settings_json()[("cycles", "clamp_indirect")]["note"] == "shot.ma · scene 'main'"


@pytest.mark.parametrize("payload, said", [
    ("not json at all", "is not JSON"),
    (json.dumps({"format": "something-else"}), "not Kelvin's scene format"),
    (json.dumps({"format": "kelvin-scene", "version": 9}), "this Kelvin reads version 1"),
    (json.dumps({"format": "kelvin-scene", "version": 1, "settings": [{"name": "x", "value": 1}] * 2001}),
     "at most 2,000"),
    (json.dumps({"format": "kelvin-scene", "version": 1, "settings": "nope"}), "are lists"),
])
def test_bad_scene_json_is_a_plain_message_and_writes_nothing(payload, said):
    kelvin("project", "create", "Forest")
    proc = kelvin("--project", "Forest", "scene", "import", "-", input=payload, check=False)
    assert proc.returncode == 1 and said in proc.stderr and "Traceback" not in proc.stderr
    assert settings_json("--candidates") == {}


@needs_blender
def test_bad_blend_files_are_plain_messages_and_write_nothing(blender, forest, tmp_path):
    kelvin("project", "create", "Forest")
    raw = forest.read_bytes()
    damaged = tmp_path / "damaged.blend"
    damaged.write_bytes(raw[: len(raw) // 3])
    newer = tmp_path / "newer.blend"
    newer.write_bytes(raw.replace(b"v0500", b"v0600", 1) if raw[:7] == b"BLENDER" else raw)
    junk = tmp_path / "junk.blend"
    junk.write_bytes(os.urandom(4096))
    cases = [
        ((str(tmp_path / "missing.blend"),), "does not exist"),
        ((str(damaged),), "could not open"),
        ((str(newer),), "newer than this Blender"),
        ((str(junk),), "is not a .blend file"),
        ((str(forest), "--scene", "Nope"), "has no scene 'Nope' (it has 'Scene')"),
        ((str(tmp_path),), "is a folder"),
    ]
    if os.geteuid() != 0:  # root reads any file: "locked" cannot be made here
        locked = tmp_path / "locked.blend"
        locked.write_bytes(raw)
        locked.chmod(0)
        cases.append(((str(locked),), "cannot be read"))
    for args, said in cases:
        proc = kelvin("--project", "Forest", "scene", "import", *args, check=False)
        assert proc.returncode == 1 and said in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
    assert settings_json("--candidates") == {}  # nothing half-written


@needs_blender
def test_a_file_with_hundreds_of_lights_imports_its_render_settings_and_says_so(blender, tmp_path):
    many = make_blend(tmp_path / "lights.blend", "--lights", "150")
    kelvin("project", "create", "Forest")
    out = kelvin("--project", "Forest", "scene", "import", str(many)).stdout
    assert "Note: the scene has 152 lights: they are not read one by one (at most 100)." in out
    assert in_file(settings_json()[("cycles", "max_samples")]) == 777
    assert not any(k == ("", k[1]) and k[1].startswith("light_") for k in settings_json("--candidates"))


def test_without_blender_the_command_says_how_to_install_it(tmp_path, monkeypatch):
    kelvin("project", "create", "Forest")
    blend = tmp_path / "shot.blend"
    blend.write_bytes(b"BLENDER17-01v0500" + b"\0" * 64)
    monkeypatch.setenv("KELVIN_BLENDER_PYTHON", sys.executable)  # Kelvin's own Python has no bpy
    proc = kelvin("--project", "Forest", "scene", "import", str(blend), check=False)
    assert proc.returncode == 1 and "pip install bpy" in proc.stderr and "blender_python" in proc.stderr
    monkeypatch.setenv("KELVIN_BLENDER_PYTHON", str(tmp_path / "no-such-python"))
    proc = kelvin("--project", "Forest", "scene", "import", str(blend), check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stderr and "pip install bpy" in proc.stderr


@needs_blender
def test_an_eevee_scene_and_a_named_scene_send_only_what_is_in_use(blender, tmp_path):
    eevee = make_blend(tmp_path / "eevee.blend", "--eevee", "--scene", "Layout")
    kelvin("project", "create", "Forest")
    out = kelvin("--project", "Forest", "scene", "import", str(eevee), "--scene", "Layout").stdout
    assert out.startswith("Imported ") and "eevee.blend · scene 'Layout' (EEVEE)" in out
    got = settings_json("--candidates")
    assert not any(k[0] == "cycles" for k in got)  # Cycles' settings are not in use
    assert in_file(got[("", "render_engine")]) == "EEVEE" and in_file(got[("", "focal_length", "camera")]) == 85


def test_every_setting_is_shown_by_the_name_an_artist_reads():
    kelvin("project", "create", "Forest")
    data = _scene_json(settings=[{"engine": "", "parameter": "denoiser", "value": "oidn"},
                                 {"engine": "", "parameter": "resolution_percentage", "value": 50}],
                       extra=[{"name": "Denoising prefilter", "value": "Accurate"},
                              {"name": "Denoising passes", "value": "Albedo and Normal"}])
    kelvin("--project", "Forest", "scene", "import", "-", input=json.dumps(data))
    shown = kelvin("--project", "Forest", "settings", "list", "--candidates").stdout
    file = "in the file shot.ma · scene 'main'"  # read from a file: shown as what it holds, not as decided
    assert f"Denoiser: not decided ({file}: OpenImageDenoise)" in shown and "oidn" not in shown
    assert f"Denoising prefilter: not decided ({file}: Accurate)" in shown
    assert f"Denoising passes: not decided ({file}: Albedo and Normal)" in shown
    assert f"Resolution percentage: not decided ({file}: 50%)" in shown

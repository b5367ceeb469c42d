"""Safe by choice (issue 32): a .blend carrying Python — a registered text block that also registers
a load handler, and a scripted driver whose expression calls Python — runs none of it when Kelvin
reads it, by either path (Blender's Python module: ``use_scripts=False``; a ``blender`` program:
``--disable-autoexec``), while the same file opened with scripts allowed runs all three (the bait
is live). Values a driver computes are marked as driven: in the import's notes, the diff and the
ledger's note."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.support.blend_scene import MARKS
from tests.support.cli import kelvin
from tests.support.blender import BLENDER, make_blend, needs_blender

ROOT = Path(__file__).resolve().parent.parent
pytestmark = needs_blender


@pytest.fixture(scope="module")
def baited(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("bait")
    marks = folder / "marks"
    marks.mkdir()
    blend = make_blend(folder / "bait.blend", "--bait", str(marks))
    for f in marks.iterdir():  # what the builder's own session left
        f.unlink()
    return blend, marks


def _ran(marks: Path) -> set[str]:
    return {p.name for p in marks.iterdir()}


def test_the_bait_is_live_opened_with_scripts_allowed_it_runs(baited, tmp_path):
    blend, marks = baited
    script = tmp_path / "allowed.py"
    script.write_text(f"""import bpy
bpy.ops.wm.open_mainfile(filepath={str(blend)!r}, load_ui=False, use_scripts=True)
bpy.context.scene.frame_set(2)
bpy.ops.wm.open_mainfile(filepath={str(blend)!r}, load_ui=False, use_scripts=True)  # the load handler: on the next load
""", encoding="utf-8")
    subprocess.run([BLENDER, str(script)], capture_output=True, timeout=180, check=True)
    try:
        assert _ran(marks) == set(MARKS)
    finally:
        for f in marks.iterdir():
            f.unlink()


def test_kelvin_reading_it_with_blenders_python_runs_none_of_it_and_marks_what_is_driven(baited, monkeypatch):
    blend, marks = baited
    monkeypatch.setenv("KELVIN_BLENDER_PYTHON", BLENDER)
    kelvin("project", "create", "Forest")
    kelvin("--project", "Forest", "settings", "set", "max samples", "1024", "--engine", "cycles")
    out = kelvin("--project", "Forest", "scene", "import", str(blend)).stdout
    assert _ran(marks) == set()
    assert ("Note: 2 values are computed by a driver in the file (scripts do not run when Kelvin reads it): the "
            "values the file holds from the driver's last run.") in out
    assert "  Cycles Max samples: scene 777 (driven by the expression 770 + 7), set by hand 1024 today" in out
    history = json.loads(kelvin("--project", "Forest", "settings", "history", "focal length", "--json").stdout)
    [scene] = [e for e in history[0]["history"] if e["by"] == "scene"]
    assert scene["value"] == 85 and scene["note"] == "bait.blend · scene 'Scene' · driven by the expression 84 + 1"
    diff = json.loads(kelvin("--project", "Forest", "scene", "diff", str(blend), "--json").stdout)["differences"]
    assert [(d["parameter"], d["scene"], d["driven"]) for d in diff] == [
        ("max_samples", "777", "driven by the expression 770 + 7")]
    assert _ran(marks) == set()


def test_kelvin_running_a_blender_program_disables_autoexec_and_runs_none_of_it(baited, tmp_path, monkeypatch):
    blend, marks = baited
    program = tmp_path / "bin" / "blender"  # named as Blender's program: Kelvin runs it as one
    program.parent.mkdir()
    program.write_text(f"#!/bin/sh\nexec {BLENDER} {ROOT / 'tests' / 'support' / 'blender_cli.py'} \"$@\"\n",
                       encoding="utf-8")
    program.chmod(0o755)
    argv = tmp_path / "argv.json"
    monkeypatch.setenv("KELVIN_BLENDER_PYTHON", str(program))
    monkeypatch.setenv("KELVIN_BLENDER_ARGV", str(argv))
    kelvin("project", "create", "Forest")
    out = kelvin("--project", "Forest", "scene", "import", str(blend)).stdout
    # 35 since issue 30: the lights' power and temperature (under each light's name) and the view transform are settings
    assert out.startswith("Imported 35 settings from bait.blend · scene 'Scene' (Cycles)")
    given = json.loads(argv.read_text())
    assert given[:6] == ["--background", "--factory-startup", "--disable-autoexec", "--python-exit-code", "1", "--python"]
    assert _ran(marks) == set()

"""USD for Houdini and every USD pipeline (issue 32): `kelvin scene import FILE.usd|.usda|.usdc` reads the
render settings Solaris writes — UsdRender.Settings, its camera, the frame range, the lights, and the
renderer's namespaced attributes — with Pixar's usd-core in a process of its own; the stages are
built with usd-core itself (tests/support/usd_stage.py). Bad files are one sentence each and write
nothing.

USD's Python comes from KELVIN_USD_PYTHON or ./.venv-usd (.ci/run makes it: pip install usd-core)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.usd_stage import CANDIDATES_KARMA, EXPECTED_KARMA
from tests.support.cli import kelvin, write_jsonl

ROOT = Path(__file__).resolve().parent.parent
BUILDER = ROOT / "tests" / "support" / "usd_stage.py"


def _usd_python() -> str:
    chosen = os.environ.get("KELVIN_USD_PYTHON") or str(ROOT / ".venv-usd" / "bin" / "python")
    return chosen if Path(chosen).exists() else ""


USD = _usd_python()
pytestmark = pytest.mark.skipif(not USD, reason="Pixar's USD is not installed here: python3 -m venv .venv-usd && "
                                                ".venv-usd/bin/pip install usd-core")


@pytest.fixture(autouse=True)
def usd(monkeypatch):
    monkeypatch.setenv("KELVIN_USD_PYTHON", USD)
    return USD


@pytest.fixture(scope="module")
def stages(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("usd")
    for name, kind in (("shot.usda", "karma"), ("shot.usdc", "karma"), ("redshift.usda", "redshift"),
                       ("octane.usd", "octane"), ("two.usda", "two"), ("none.usda", "none"),
                       ("nocamera.usda", "nocamera")):
        done = subprocess.run([USD, str(BUILDER), str(folder / name), kind], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr[-2000:]
    return folder


def settings_json(*flags: str, project: str = "Shot") -> dict:
    """(engine, parameter) → row; (engine, parameter, scope) for a light's or camera's."""
    rows = json.loads(kelvin("--project", project, "settings", "list", "--json", *flags).stdout)
    return {(r["engine"] or "", r["parameter"], *([r["scope"]] if r.get("scope") else [])): r for r in rows}


def in_file(row: dict):
    """The value a scene file holds for a setting (never the decision: issue 30)."""
    return row["in_file"]["value"] if row.get("in_file") else None


def same(a, b) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return abs(float(a) - float(b)) < 1e-6
    return a == b


@pytest.mark.parametrize("name", ["shot.usda", "shot.usdc"])
def test_a_solaris_stages_karma_settings_camera_frames_and_lights_land_in_the_ledger(stages, name):
    kelvin("project", "create", "Shot")
    out = kelvin("--project", "Shot", "scene", "import", str(stages / name)).stdout
    assert out.startswith(f"Imported {len(EXPECTED_KARMA)} settings from {name} · scene '/Render/rendersettings' "
                          f"(Karma), and kept {len(CANDIDATES_KARMA)} Kelvin has no name for")
    assert "Note: 1 value is animated in the file: read at frame 1001." in out
    got = settings_json()
    for key, value in EXPECTED_KARMA.items():
        row = got.get(key)
        assert row is not None, f"{key} missing from the ledger"
        assert same(in_file(row), value), (key, row, value)
        assert row["value"] is None and row["by"] == "scene"  # what the file holds, not a decision
        assert row["in_file"]["source"].startswith(f"{name} · scene '/Render/rendersettings'")
    assert set(got) == set(EXPECTED_KARMA)
    kept = {k[1]: r for k, r in settings_json("--candidates").items() if r["candidate"]}
    for key, value in CANDIDATES_KARMA.items():
        assert same(in_file(kept[key]), value), (key, kept[key])
    assert kept["karma_volume_limit"]["note"].endswith("· animated (2 keys; the value at frame 1001)")
    shown = kelvin("--project", "Shot", "settings", "list", "--candidates").stdout
    file = f"in the file {name} · scene '/Render/rendersettings'"
    assert f"Karma Convergence threshold: not decided ({file}: 0.005)" in shown
    assert f"Light temperature (key): not decided ({file}: 4500 K)" in shown
    assert f"Pixel aspect ratio: not decided ({file}: 2)" in shown
    assert f"Karma Path traced samples: not decided ({file}: 256)" in shown


def test_redshift_and_octane_attributes_are_read_by_their_names(stages):
    kelvin("project", "create", "Shot")
    out = kelvin("--project", "Shot", "scene", "import", str(stages / "redshift.usda")).stdout
    assert "(Redshift)" in out
    # Redshift writes its GI engines as numbers: kept as sent, and said
    assert "Note: Redshift Primary GI engine: '4' is not a value it can hold" in out
    got = settings_json()
    assert {k: in_file(got[k]) for k in got if k[0] == "redshift"} == {
        ("redshift", "unified_samples_min"): 16, ("redshift", "unified_samples_max"): 512,
        ("redshift", "brute_force_rays"): 64, ("redshift", "gi_bounces"): 3, ("redshift", "reflection_max_trace_depth"): 6}
    assert settings_json("--candidates")[("", "redshift_rs_output_enable")]["name"] == "Redshift RS output enable"
    kelvin("--project", "Shot", "scene", "import", str(stages / "octane.usd"))
    got = settings_json()
    assert (in_file(got[("octane", "max_samples")]), in_file(got[("octane", "gi_clamp")]),
            in_file(got[("octane", "kernel")])) == (2000, 10, "path_tracing")


def test_the_diff_reads_a_usd_stage_against_what_was_decided(stages, tmp_path):
    kelvin("project", "create", "Shot")
    day = write_jsonl(tmp_path / "day.jsonl", [
        {"project": "Shot", "conversation_id": "c1", "text": "Karma XPU for the street shot.",
         "timestamp": "2026-11-24T09:00:00Z"},
        {"project": "Shot", "conversation_id": "c1", "text": "Decision: path traced samples 128, focal length 35mm.",
         "timestamp": "2026-11-24T10:00:00Z"},
    ])
    kelvin("memory", "import", str(day))
    diff = json.loads(kelvin("--project", "Shot", "scene", "diff", str(stages / "shot.usdc"), "--json").stdout)
    assert [(d["parameter"], d["scene"], d["decided"]) for d in diff["differences"]] == [
        ("path_traced_samples", "256", "128")]


def test_bad_usd_files_are_one_sentence_each_and_write_nothing(stages, tmp_path):
    kelvin("project", "create", "Shot")
    junk = tmp_path / "junk.usda"
    junk.write_bytes(b"not a stage at all\n")
    cut = tmp_path / "cut.usdc"
    cut.write_bytes((stages / "shot.usdc").read_bytes()[:300])
    broken = tmp_path / "broken.usda"
    broken.write_text('#usda 1.0\ndef Xform "a" {\n  float b = \n', encoding="utf-8")
    folder = tmp_path / "folder.usd"
    folder.mkdir()
    cases = [
        ((str(tmp_path / "missing.usd"),), "does not exist"),
        ((str(folder),), "is a folder, not a USD file"),
        ((str(junk),), "is not a USD file (neither .usda text nor .usdc crate)"),
        ((str(cut),), "USD could not open cut.usdc: Sdf crate file corrupt, possibly truncated"),
        ((str(broken),), "USD could not open broken.usda: line 3: Expected }"),
        ((str(stages / "none.usda"),), "none.usda holds no render settings (no UsdRender.Settings prim"),
        ((str(stages / "two.usda"),), "two.usda has several render settings (/Render/final, /Render/preview); "
                                      "choose one with --scene"),
        ((str(stages / "two.usda"), "--scene", "/Render/nope"), "two.usda has no render settings /Render/nope "
                                                                "(it has /Render/final, /Render/preview)"),
    ]
    for args, said in cases:
        proc = kelvin("--project", "Shot", "scene", "import", *args, check=False)
        assert proc.returncode == 1 and said in proc.stderr, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert settings_json("--candidates") == {}  # nothing half-written
    out = kelvin("--project", "Shot", "scene", "import", str(stages / "two.usda"), "--scene", "/Render/preview").stdout
    assert "two.usda · scene '/Render/preview'" in out
    out = kelvin("--project", "Shot", "scene", "import", str(stages / "nocamera.usda")).stdout
    assert "Note: the render settings name the camera /cameras/missing, which is not a camera in the file" in out


def test_without_usd_the_command_says_how_to_install_it(stages, monkeypatch):
    kelvin("project", "create", "Shot")
    monkeypatch.setenv("KELVIN_USD_PYTHON", sys.executable)  # Kelvin's own Python has no pxr
    proc = kelvin("--project", "Shot", "scene", "import", str(stages / "shot.usda"), check=False)
    assert proc.returncode == 1 and "pip install usd-core" in proc.stderr and "usd_python" in proc.stderr
    monkeypatch.setenv("KELVIN_USD_PYTHON", str(stages / "no-such-python"))
    proc = kelvin("--project", "Shot", "scene", "import", str(stages / "shot.usda"), check=False)
    assert proc.returncode == 1 and "does not exist" in proc.stderr and "pip install usd-core" in proc.stderr

"""The Blender add-on in a real bpy session (issue 32): installed from the zip `kelvin scene addon`
writes — as an Extension (blender_manifest.toml, Blender 4.2+) and as a legacy add-on (bl_info) —
it sends with the command of the Kelvin that wrote it, never holds Blender up (a save returns
while the send is still under way: the send is made to wait on an event), says sent / sending /
failed in its panel's status line, and sends the latest scene once more when a save came mid-send.

Blender's Python comes from KELVIN_BLENDER_PYTHON or ./.venv-blender (see tests/support/blender.py)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.support.blend_scene import EXPECTED
from tests.support.cli import kelvin
from tests.support.blender import BLENDER, needs_blender

ROOT = Path(__file__).resolve().parent.parent

SESSION = """
import json, os, subprocess, sys, threading, time
import bpy
out = {{}}
bpy.ops.wm.open_mainfile(filepath={forest!r})
if {extension!r}:
    bpy.ops.extensions.package_install_files(filepath={zipped!r}, repo="user_default", enable_on_install=True)
    name = "bl_ext.user_default.kelvin_sync"
else:
    bpy.ops.preferences.addon_install(filepath={zipped!r}, overwrite=True)
    bpy.ops.preferences.addon_enable(module="kelvin_sync")
    name = "kelvin_sync"
addon = sys.modules[name]
sending = sys.modules[name + ".sending"]
prefs = bpy.context.preferences.addons[name].preferences
out["default_command"] = prefs.kelvin
prefs.project = "Forest"
gate, started = threading.Event(), threading.Event()

def held(*args, **kwargs):  # the kelvin command, made to wait until the test lets it go
    started.set()
    gate.wait(120)
    return subprocess.run(*args, **kwargs)

sending.run = held
out["before"] = addon.SENDER.status.line()
bpy.context.scene.cycles.samples = 2222
out["button"] = list(bpy.ops.kelvin.send())
out["button_sending"] = started.wait(60) and not addon.SENDER.done.is_set()
prefs.keep_in_sync = True
bpy.context.scene.cycles.samples = 3333
t0 = time.perf_counter()
bpy.ops.wm.save_as_mainfile(filepath={saved!r})  # a save while the button's send is still held
out["save_s"] = time.perf_counter() - t0
out["save_returned_mid_send"] = not addon.SENDER.done.is_set()
out["while_held"] = addon.SENDER.status.line()
gate.set()
out["finished"] = addon.SENDER.done.wait(240)
out["after"] = addon.SENDER.status.line()
out["state"] = addon.SENDER.status.state
prefs.kelvin = {missing!r}
bpy.ops.kelvin.send()
addon.SENDER.done.wait(60)
out["failed"] = addon.SENDER.status.line()
print("RESULT " + json.dumps(out))
"""


def _session(tmp_path: Path, forest: Path, zipped: Path, extension: bool) -> dict:
    script = tmp_path / "session.py"
    script.write_text(SESSION.format(forest=str(forest), zipped=str(zipped), extension=extension,
                                     saved=str(tmp_path / "saved.blend"), missing=str(tmp_path / "no-kelvin")),
                      encoding="utf-8")
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path / "blender-user")}
    env.pop("PYTHONPATH", None)  # the add-on runs Kelvin through its command, never by import
    done = subprocess.run([BLENDER, str(script)], capture_output=True, text=True, timeout=480, cwd=tmp_path, env=env)
    line = next((x for x in done.stdout.splitlines() if x.startswith("RESULT ")), None)
    assert line is not None, done.stdout[-3000:] + done.stderr[-3000:]
    return json.loads(line[len("RESULT "):])


def test_kelvin_scene_addon_writes_an_extension_and_a_legacy_add_on_that_know_this_kelvin(tmp_path):
    zipped = tmp_path / "kelvin_sync.zip"
    out = kelvin("scene", "addon", "--out", str(zipped)).stdout
    this = str(Path(sys.executable).parent / "kelvin")
    assert f"it runs {this}" in out and "Get Extensions" in out
    with zipfile.ZipFile(zipped) as z:
        names = set(z.namelist())
        assert {"kelvin_sync/__init__.py", "kelvin_sync/blender_manifest.toml", "kelvin_sync/scene_reader.py",
                "kelvin_sync/sending.py", "kelvin_sync/kelvin_command.json"} <= names
        assert json.loads(z.read("kelvin_sync/kelvin_command.json")) == {"kelvin": this}
        manifest = z.read("kelvin_sync/blender_manifest.toml").decode()
        assert 'id = "kelvin_sync"' in manifest and 'type = "add-on"' in manifest and 'blender_version_min = "4.2.0"' in manifest
        assert "bl_info = {" in z.read("kelvin_sync/__init__.py").decode()


@needs_blender
@pytest.mark.parametrize("extension", [True, False], ids=["extension", "legacy"])
def test_the_add_on_sends_in_the_background_and_says_how_it_went(tmp_path, forest, extension):
    kelvin("project", "create", "Forest")
    zipped = tmp_path / "kelvin_sync.zip"
    kelvin("scene", "addon", "--out", str(zipped))
    got = _session(tmp_path, forest, zipped, extension)
    assert got["default_command"] == str(Path(sys.executable).parent / "kelvin")  # no path typed by the artist
    assert got["before"] == "Not sent yet"
    assert got["button"] == ["FINISHED"] and got["button_sending"]  # the button returned; its send goes on
    assert got["save_returned_mid_send"]  # the save returned while the send was still held
    assert got["while_held"] == "Sending to Kelvin … (a newer save waits)"
    assert got["finished"] and got["state"] == "sent"
    assert got["after"].startswith("Sent at ") and got["after"].endswith(f": {len(EXPECTED)} settings of Scene sent")
    assert got["failed"].startswith("Failed at ") and "the kelvin command was not found" in got["failed"]
    history = json.loads(kelvin("--project", "Forest", "settings", "history", "max samples", "--engine", "cycles",
                                "--json").stdout)[0]["history"]
    sent = [(e["value"], e["note"]) for e in history if e["by"] == "scene"]
    # the button's scene, then the save's (sent once the button's send was done): each exactly once
    assert sent == [(2222, "forest.blend · scene 'Scene'"), (3333, "saved.blend · scene 'Scene'")]

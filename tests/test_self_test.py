"""``kelvin --self-test`` from the source tree (the bundle's run is in test_bundle.py): every check
passes on a sound install, a broken install fails with the part named, and nothing of the artist's
is touched. Plus the pieces the installers lean on: the report's verdict, the icon files, the
Debian package names the desktop check suggests."""
from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from app.self_test import FAIL, INFO, OK, WARN, Result, report
from app.ui.desktop_check import debian_package

ROOT = Path(__file__).resolve().parent.parent


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_self_test(cwd: Path, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "app", "--self-test"], cwd=cwd, env=dict(os.environ),
                          capture_output=True, text=True, timeout=timeout)


def checks(stdout: str) -> dict[str, str]:
    """{check name: status} from the report's lines ("  ok    memory          LanceDB …")."""
    out = {}
    for line in stdout.splitlines():
        if line.startswith("  "):
            status, rest = line.split(None, 1)
            out[rest.split("  ")[0].strip()] = status
    return out


def test_self_test_passes_from_source_and_leaves_no_trace(tmp_path):
    config, data = Path(os.environ["KELVIN_CONFIG_DIR"]), Path(os.environ["KELVIN_DATA_DIR"])
    result = run_self_test(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Kelvin 0.1.0 self-test · Python")
    found = checks(result.stdout)
    assert list(found) == ["resources", "settings rules", "memory", "model client", "window", "desktop",
                           "GPU (NVML)", "your model server"]
    for name in ("resources", "settings rules", "memory", "model client", "window", "GPU (NVML)"):
        assert found[name] == OK, result.stdout
    assert found["desktop"] in (OK, WARN)  # X11 libraries missing here is told, not failed
    assert found["your model server"] == INFO and "not reachable at http://127.0.0.1:9" in result.stdout
    assert "read Octane GI clamp = 10 (applied)" in result.stdout
    assert "a question answered and rendered" in result.stdout
    assert lines[-1].startswith("all 8 checks passed in")
    assert result.stderr == ""  # Qt's own chatter stays out of the report
    assert not data.exists() and not config.exists()  # the artist's data and settings untouched


def test_a_broken_install_fails_and_names_the_part(tmp_path):
    build = _module("kelvin_build", ROOT / "installer" / "build.py")
    stage = build.stage(tmp_path / "stage")  # Kelvin as pip lays it out, outside the checkout
    (stage / "app" / "resources" / "prompts" / "system.md").write_text("")
    (stage / "app" / "resources" / "icons" / "kelvin.svg").unlink()
    result = run_self_test(stage)
    assert result.returncode == 1
    found = checks(result.stdout)
    assert found["resources"] == FAIL and "prompts/system.md is empty" in result.stdout
    assert found["window"] == FAIL and "icon" in result.stdout
    assert found["memory"] == OK  # one broken part does not hide the others
    assert result.stdout.splitlines()[-1].startswith("FAILED: resources, window (6 of 8 checks passed")


def test_the_verdict_is_failure_when_any_check_failed():
    lines: list[str] = []
    ok = [Result("resources", OK, "fine", 0.01), Result("your Ollama", INFO, "not running", 0.0),
          Result("desktop", WARN, "libxcb-cursor.so.0 missing", 0.0)]
    assert report(ok, 1.0, lines.append) == 0
    assert lines[-1] == "all 3 checks passed in 1.0 s; see the warning for desktop"
    lines.clear()
    assert report(ok + [Result("memory", FAIL, "LanceDB would not load", 0.5)], 2.0, lines.append) == 1
    assert lines[-1] == "FAILED: memory (3 of 4 checks passed in 2.0 s)"
    assert "  FAIL  memory       LanceDB would not load  [0.50 s]" in lines


@pytest.mark.parametrize("soname, package", [
    ("libxcb-cursor.so.0", "libxcb-cursor0"), ("libxcb-icccm.so.4", "libxcb-icccm4"),
    ("libxkbcommon-x11.so.0", "libxkbcommon-x11-0"), ("libEGL.so.1", "libegl1"),
    ("libxcb-render-util.so.0", "libxcb-render-util0"), ("libfontconfig.so.1.12.0", "libfontconfig1"),
    ("not-a-library", "not-a-library")])
def test_the_desktop_check_names_the_debian_package(soname, package):
    assert debian_package(soname) == package


def test_icons_for_the_installers_are_real_images(qapp, tmp_path):
    from PySide6.QtGui import QImage

    icons = _module("kelvin_icons", ROOT / "installer" / "icons.py")
    made = icons.make(tmp_path)
    png = QImage(str(made["png"]))
    assert (png.width(), png.height()) == (256, 256) and png.hasAlphaChannel()
    assert png.pixelColor(2, 2).alpha() == 0 and png.pixelColor(128, 40).alpha() == 255  # rounded corner, disc
    data = made["ico"].read_bytes()
    reserved, kind, count = struct.unpack_from("<HHH", data)
    assert (reserved, kind, count) == (0, 1, len(icons.ICO_SIZES))
    for i, size in enumerate(icons.ICO_SIZES):
        w, h, _, _, planes, bits, length, offset = struct.unpack_from("<BBBBHHII", data, 6 + 16 * i)
        assert (w or 256, h or 256, planes, bits) == (size, size, 1, 32)
        image = QImage.fromData(data[offset:offset + length], "PNG")
        assert (image.width(), image.height()) == (size, size)

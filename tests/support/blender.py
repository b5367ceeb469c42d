"""Blender's Python for the scene tests: where it is, a mark for tests that need it, and .blend files
made by real Blender (tests/support/blend_scene.py run inside bpy).

Blender's Python comes from KELVIN_BLENDER_PYTHON, else where the README installs it
(~/.kelvin-blender; .ci/run follows the README), else ./.venv-blender (bpy needs numpy<2, so it
lives apart from Kelvin's environment)."""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
BUILDER = ROOT / "tests" / "support" / "blend_scene.py"


def _blender_python() -> str:
    """KELVIN_BLENDER_PYTHON, else where the README installs bpy (~/.kelvin-blender), else ./.venv-blender."""
    from app.services.blender import installed_python

    for chosen in (os.environ.get("KELVIN_BLENDER_PYTHON"), str(installed_python()),
                   str(ROOT / ".venv-blender" / "bin" / "python")):
        if chosen and Path(chosen).exists():
            return chosen
    return ""


BLENDER = _blender_python()
needs_blender = pytest.mark.skipif(not BLENDER, reason="Blender's Python (bpy) is not installed here: "
                                                        "python3.11 -m venv ~/.kelvin-blender && "
                                                        "~/.kelvin-blender/bin/pip install bpy (see README)")


def make_blend(path: Path, *extra: str) -> Path:
    done = subprocess.run([BLENDER, str(BUILDER), str(path), *extra], capture_output=True, text=True, timeout=180,
                          cwd=ROOT)
    assert done.returncode == 0 and path.exists(), done.stderr[-2000:]
    return path

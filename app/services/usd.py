"""Reading a USD stage's render settings with Pixar's USD (``usd-core``), in a separate process.

USD's Python module is ~200 MB and brings its own libraries, so Kelvin never imports ``pxr``: it runs
the reader (``app/usd/usd_reader.py``) with a Python that has it — the ``usd_python`` setting, else
this Python if it has ``pxr`` — and reads the JSON it writes. Every failure is one plain sentence
(:class:`app.core.render_settings.scene.SceneError`); nothing is written to the ledger before the whole scene is read.
"""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import resources
from pathlib import Path

from app.core.render_settings.scene import SceneError
from app.durable import read_regular
from app.services.reader_process import MAX_ANSWER_BYTES, run_reader

SUFFIXES = (".usd", ".usda", ".usdc", ".usdz")
READ_TIMEOUT_S = 120
INSTALL = ("Pixar's USD module is not installed. Install it into a Python of its own: python3 -m venv ~/.kelvin-usd && "
           "~/.kelvin-usd/bin/pip install usd-core — then set usd_python = \"~/.kelvin-usd/bin/python\" in kelvin.toml "
           "(or KELVIN_USD_PYTHON). Houdini's own Python works too: usd_python = \"/path/to/hython\".")


def reader_path() -> Path:
    return Path(str(resources.files("app.usd").joinpath("usd_reader.py")))


def python(setting: str = "") -> str:
    """The Python that runs the reader (raises SceneError with the install steps when there is none)."""
    chosen = os.path.expanduser(setting.strip()) if setting.strip() else ""
    if chosen:
        exe = shutil.which(chosen) or (chosen if os.path.isfile(chosen) else "")
        if not exe:
            raise SceneError(f"usd_python is {setting!r}, which does not exist. {INSTALL}")
        return exe
    if importlib.util.find_spec("pxr") is not None:  # found, never imported here
        return sys.executable
    raise SceneError(INSTALL)


def read_usd(path: str | os.PathLike, scene: str = "", setting: str = "", timeout: float = READ_TIMEOUT_S) -> dict:
    """The scene format read from a USD file (raises SceneError: missing, damaged, not USD, no render
    settings, several and none chosen, no USD module)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SceneError(f"{p} does not exist")
    if p.is_dir():
        raise SceneError(f"{p} is a folder, not a USD file")
    if not os.access(p, os.R_OK):
        raise SceneError(f"{p} cannot be read (locked, or no permission)")
    exe = python(setting)
    with tempfile.TemporaryDirectory(prefix="kelvin-usd-") as tmp:
        out = Path(tmp) / "scene.json"
        argv = [exe, str(reader_path()), str(p.resolve()), "--out", str(out)] + (["--scene", scene] if scene else [])
        try:
            code, said = run_reader(argv, timeout)
        except subprocess.TimeoutExpired:
            raise SceneError(f"USD took more than {timeout:.0f} s to read {p.name}; it was stopped (with what it "
                             "started) and nothing was imported") from None
        except OSError as exc:
            raise SceneError(f"USD's Python could not be started ({exc.strerror or exc}). {INSTALL}") from None
        if not out.exists():
            tail = said.strip().splitlines()[-1:] or ["no output"]
            raise SceneError(f"USD stopped without reading {p.name} (exit {code}: {tail[0][:200]})")
        try:
            data = json.loads(read_regular(out, MAX_ANSWER_BYTES).decode("utf-8"))
        except (ValueError, RecursionError, OSError):  # not JSON, nested past reading, or absurdly large
            raise SceneError(f"USD's answer for {p.name} was not readable; nothing was imported") from None
    if isinstance(data, dict) and data.get("error"):
        if data["error"] == "no-usd":
            raise SceneError(INSTALL)
        raise SceneError(str(data.get("message") or data["error"]))
    return data

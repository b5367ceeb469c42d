"""Reading a .blend file's render settings with Blender, in a separate process.

Blender is heavy (~0.8 GB, its own numpy), so Kelvin never imports ``bpy``: it runs the reader
(``app/blender/kelvin_sync/scene_reader.py``, the same file the add-on uses) with a Python that has
``bpy`` — the ``blender_python`` setting, else this Python if it has one, else ``~/.kelvin-blender``
(where the install steps put it), else a ``blender`` executable on the PATH — and reads the JSON it
writes. Every failure is one plain sentence
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

READ_TIMEOUT_S = 180  # a huge production file takes a while to open
INSTALL = ("Blender's Python module is not installed. Install it into its own Python 3.11 (it needs numpy<2, so "
           "keep it apart from Kelvin's): python3.11 -m venv ~/.kelvin-blender && ~/.kelvin-blender/bin/pip install "
           "bpy — then set blender_python = \"~/.kelvin-blender/bin/python\" in kelvin.toml (or "
           "KELVIN_BLENDER_PYTHON). A Blender you already have works too: blender_python = \"/path/to/blender\".")


def installed_python() -> Path:
    """Where the README's steps install Blender's Python (``~/.kelvin-blender``)."""
    home = Path.home() / ".kelvin-blender"
    return home / "Scripts" / "python.exe" if os.name == "nt" else home / "bin" / "python"


def reader_path() -> Path:
    return Path(str(resources.files("app.blender").joinpath("kelvin_sync", "scene_reader.py")))


def command(setting: str = "") -> list[str]:
    """How to run the reader: [python] or [blender, --background, …]. Raises SceneError with the
    install steps when there is no Blender."""
    chosen = os.path.expanduser(setting.strip()) if setting.strip() else ""
    if chosen:
        exe = shutil.which(chosen) or (chosen if os.path.isfile(chosen) else "")
        if not exe:
            raise SceneError(f"blender_python is {setting!r}, which does not exist. {INSTALL}")
        return _blender(exe) if Path(exe).name.lower().startswith("blender") else [exe]
    if importlib.util.find_spec("bpy") is not None:  # found, never imported here
        return [sys.executable]
    if installed_python().is_file():  # where the install steps put it
        return [str(installed_python())]
    exe = shutil.which("blender")
    if exe:
        return _blender(exe)
    raise SceneError(INSTALL)


def _blender(exe: str) -> list[str]:
    # --disable-autoexec: Python in the file (registered text blocks, scripted drivers, load handlers)
    # never runs, whatever the artist's preferences say (the reader opens with use_scripts=False too)
    return [exe, "--background", "--factory-startup", "--disable-autoexec", "--python-exit-code", "1", "--python"]


def read_blend(path: str | os.PathLike, scene: str = "", setting: str = "", timeout: float = READ_TIMEOUT_S) -> dict:
    """The scene format read from a .blend file (raises SceneError: missing, damaged, locked, newer,
    no such scene, no Blender)."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SceneError(f"{p} does not exist")
    if p.is_dir():
        raise SceneError(f"{p} is a folder, not a .blend file")
    if not os.access(p, os.R_OK):
        raise SceneError(f"{p} cannot be read (locked, or no permission)")
    cmd = command(setting)
    reader = str(reader_path())
    with tempfile.TemporaryDirectory(prefix="kelvin-scene-") as tmp:
        out = Path(tmp) / "scene.json"
        args = [str(p.resolve()), "--out", str(out)] + (["--scene", scene] if scene else [])
        argv = cmd + [reader] + (["--"] if cmd[1:2] == ["--background"] else []) + args
        try:
            code, said = run_reader(argv, timeout)
        except subprocess.TimeoutExpired:
            raise SceneError(f"Blender took more than {timeout:.0f} s to read {p.name}; it was stopped (with what it "
                             "started) and nothing was imported") from None
        except OSError as exc:
            raise SceneError(f"Blender could not be started ({exc.strerror or exc}). {INSTALL}") from None
        if not out.exists():
            tail = said.strip().splitlines()[-1:] or ["no output"]
            raise SceneError(f"Blender stopped without reading {p.name} (exit {code}: {tail[0][:200]})")
        try:
            data = json.loads(read_regular(out, MAX_ANSWER_BYTES).decode("utf-8"))
        except (ValueError, RecursionError, OSError):  # not JSON, nested past reading, or absurdly large
            raise SceneError(f"Blender's answer for {p.name} was not readable; nothing was imported") from None
    if isinstance(data, dict) and data.get("error"):
        if data["error"] == "no-blender":
            raise SceneError(INSTALL)
        raise SceneError(str(data.get("message") or data["error"]))
    return data

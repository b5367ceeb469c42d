"""``kelvin scene import|diff|addon``: render settings read from the scene itself.

A .blend file is read by Blender in a separate process (app.services.blender), a .usd/.usda/.usdc
stage by Pixar's USD in a separate process (app.services.usd); a scene-format .json file (or ``-``:
JSON on stdin, what the Blender add-on sends) is read as it is. The whole scene is checked before
anything is written; its values go into the ledger in one journal append.
"""
from __future__ import annotations

import json
import sys
import zipfile
from pathlib import Path

from app.core.records import now_ms
from app.core.render_settings.scene import MAX_SETTINGS, Scene, SceneError, difference_line, read

EXIT_OK, EXIT_ERROR = 0, 1

ENGINE_NAMES = {"cycles": "Cycles", "eevee": "EEVEE", "workbench": "Workbench", "vray": "V-Ray", "renderman": "RenderMan"}
MAX_JSON_BYTES = 4 * 1024 * 1024  # a scene is a few KB; megabytes are junk


def scene(args, settings, memory) -> int:
    from app.services.settings_ledger import SettingsLedger

    ledger = SettingsLedger(memory)
    found = load(args.file, args.scene, settings, ledger.catalogue)
    if args.scene_command == "import":
        done = ledger.import_scene(found, args.project)
        diffs = ledger.scene_differences(found, args.project)
        if args.json:
            print(json.dumps({**done, "scene": found.scene, "file": found.file, "engine": found.engine,
                              "notes": list(found.notes), "differences": [_diff_json(d, q) for d, q in diffs]},
                             ensure_ascii=False, indent=1))
            return EXIT_OK
        print(f"Imported {done['settings']} settings from {found.source}"
              + (f" ({ENGINE_NAMES.get(found.engine, found.engine.capitalize())})" if found.engine else "")
              + (f", and kept {done['candidates']} Kelvin has no name for (kelvin settings list --candidates)"
                 if done["candidates"] else "") + ".")
        for note in found.notes:
            print(f"Note: {note}.")
        _print_diffs(diffs, "The scene differs from what was decided:")
        return EXIT_OK
    diffs = ledger.scene_differences(found, args.project)
    if args.json:
        print(json.dumps({"scene": found.scene, "file": found.file, "differences": [_diff_json(d, q) for d, q in diffs]},
                         ensure_ascii=False, indent=1))
        return EXIT_OK
    if not diffs:
        print(f"{found.source} matches what was decided ({len(found.values)} settings compared; settings nobody "
              "decided are not differences).")
        return EXIT_OK
    _print_diffs(diffs, f"{found.source} differs from what was decided:")
    return EXIT_OK


def load(file: str, scene_name: str, settings, catalogue) -> Scene:
    """The scene from a .blend (through Blender), a scene-format .json, or stdin ("-")."""
    if file == "-":
        raw = sys.stdin.buffer.read(MAX_JSON_BYTES + 1)
        return _from_json(raw, "the JSON on stdin", catalogue)
    path = Path(file).expanduser()
    if path.suffix.lower() == ".json":
        if not path.is_file():
            raise SceneError(f"{path} does not exist")
        with path.open("rb") as fh:
            return _from_json(fh.read(MAX_JSON_BYTES + 1), str(path), catalogue)
    from app.services.usd import SUFFIXES, read_usd

    if path.suffix.lower() in SUFFIXES:  # Houdini's Solaris, and every USD pipeline
        return read(read_usd(path, scene_name, settings.usd_python), catalogue)
    from app.services.blender import read_blend

    return read(read_blend(path, scene_name, settings.blender_python), catalogue)


def _from_json(raw: bytes, what: str, catalogue) -> Scene:
    if len(raw) > MAX_JSON_BYTES:
        raise SceneError(f"{what} is over {MAX_JSON_BYTES // 1024 // 1024} MB: a scene is a few KB "
                         f"(at most {MAX_SETTINGS:,} settings)")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SceneError(f"{what} is not JSON ({str(exc)[:80]})") from None
    except RecursionError:
        raise SceneError(f"{what} is nested too deeply to be a scene (a scene is a flat list of settings)") from None
    return read(data, catalogue)


def _print_diffs(diffs, title: str) -> None:
    if not diffs:
        return
    now = now_ms()
    print(title)
    for d, quote in diffs:
        print(f"  {difference_line(d, now, quote)}")


def _diff_json(d, quote: str) -> dict:
    return {"setting": d.name, "engine": d.key[0] or None, "parameter": d.key[1], "scope": d.key[2] or None, "scene": d.scene,
            "decided": d.decided, "decided_at": d.decided_at_ms, "by": d.by, "source_id": d.source_id or None,
            "quote": quote or None, "note": d.note or None, "driven": d.driven or None}


def addon(out: str) -> int:
    """Write the add-on as a zip Blender installs — an Extension (blender_manifest.toml, Blender 4.2
    and later) and a legacy add-on (bl_info) in one — with this Kelvin's command as its default."""
    from app.services.blender import reader_path

    folder = reader_path().parent
    target = Path(out).expanduser()
    if target.is_dir():
        target = target / "kelvin_sync.zip"
    kelvin = this_kelvin()
    try:
        with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as z:
            for f in sorted([*folder.glob("*.py"), folder / "blender_manifest.toml"]):
                z.write(f, f"kelvin_sync/{f.name}")
            z.writestr("kelvin_sync/kelvin_command.json", json.dumps({"kelvin": kelvin}, ensure_ascii=False))
    except OSError as exc:
        sys.stderr.write(f"kelvin: {target} could not be written ({exc.strerror or exc})\n")
        return EXIT_ERROR
    print(f"Wrote {target} (it runs {kelvin}). In Blender 4.2 or later: Edit → Preferences → Get Extensions → "
          "Install from Disk…; in an older Blender: Edit → Preferences → Add-ons → Install from Disk…. Pick it and "
          "turn on \"Kelvin: send render settings\"; the Send to Kelvin button is in Render Properties.")
    return EXIT_OK


def this_kelvin() -> str:
    """The path of this Kelvin's command, for the add-on to run: the installed bundle's program, the
    ``kelvin`` script beside this Python (a from-source install), or the one on the PATH."""
    if getattr(sys, "frozen", False):
        return sys.executable
    here = Path(sys.executable).parent
    for name in ("kelvin", "kelvin.exe"):
        for folder in (here, here / "Scripts"):
            if (folder / name).is_file():
                return str((folder / name).absolute())
    import shutil

    return shutil.which("kelvin") or "kelvin"

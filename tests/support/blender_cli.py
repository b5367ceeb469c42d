"""Blender's command line, on top of Blender's Python module, for the path where Kelvin runs a
``blender`` program (no Blender program is installed on the test machines; bpy is). Run with
Blender's Python::

    python blender_cli.py --background --factory-startup [--disable-autoexec] --python-exit-code 1 \\
        --python SCRIPT -- ARGS…

It records the arguments it was given (``$KELVIN_BLENDER_ARGV``), does what Blender does with the ones
Kelvin passes — ``--disable-autoexec`` turns off running the Python a .blend carries; without it,
scripts run as they do for an artist whose preferences allow it — and runs SCRIPT with ARGS after
``--`` as Blender's ``--python`` does."""
from __future__ import annotations

import json
import os
import runpy
import sys


def main(argv: list[str]) -> int:
    if os.environ.get("KELVIN_BLENDER_ARGV"):
        with open(os.environ["KELVIN_BLENDER_ARGV"], "w", encoding="utf-8") as fh:
            json.dump(argv, fh)
    import bpy

    bpy.context.preferences.filepaths.use_scripts_auto_execute = "--disable-autoexec" not in argv
    script = argv[argv.index("--python") + 1]
    rest = argv[argv.index("--"):] if "--" in argv else []
    sys.argv = [script, *rest]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        return int(exc.code or 0)
    except Exception:  # noqa: BLE001 — --python-exit-code 1: a failing script fails Blender
        import traceback

        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""The bundle's entry point: what the Kelvin executable runs (the same ``main`` as ``kelvin``).

A Windows build without a console has no stdout or stderr (``sys.stdout is None``); anything that
prints (argparse, a warning, logging's last resort) would raise there, so both go to the null
device. The desktop app logs to ``<data>/logs/kelvin.log`` and shows its own dialogs; for the
terminal commands and ``--self-test`` the console build ``kelvin-cli`` sits beside it.
"""
import os
import sys

if sys.stdout is None or sys.stderr is None:  # windowed build on Windows
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 (lives as long as the process)
    sys.stdout = sys.stdout or sink
    sys.stderr = sys.stderr or sink

from app.cli import main  # after the streams exist

if __name__ == "__main__":
    sys.exit(main())

"""Kelvin's commands run inside a private user (and mount) namespace, in **one** interpreter.

Some conditions need a namespace to set up — a read-only bind mount, a small full tmpfs, files owned by
another account — and used to cost a ``python -m app`` process per command inside it (3–4 s each on a
2-core machine). :func:`in_namespace` runs ``unshare`` once: a bash ``setup`` (mounts, exports; exit
77 if the machine cannot), then one Python process that runs each step through
:func:`tests.support.cli.kelvin` (each command with its own streams, exit status and logging, as
``python -m app`` gives them) and keeps its answer in a folder; :func:`step` reads one back.

A step is ``[name, *argv]``, or ``["fill", path]``: write zeros into ``path`` until the disk is full.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.cli import ROOT

DRIVER = r"""
import json, os
from pathlib import Path
from tests.support.cli import kelvin

out = Path(os.environ["OUT"])
for name, *args in json.loads(os.environ["STEPS"]):
    if name == "fill":
        with open(args[0], "wb", buffering=0) as filler:
            try:
                while True:
                    filler.write(bytes(4096))
            except OSError:
                pass
        continue
    proc = kelvin(*args, check=False)
    (out / f"{name}.out").write_text(proc.stdout)
    (out / f"{name}.err").write_text(proc.stderr)
    (out / f"{name}.rc").write_text(f"{proc.returncode}\n")
"""


def in_namespace(tmp_path: Path, steps: list[list[str]], setup: str = "", mounts: bool = True,
                 timeout: float = 600, **env: str) -> Path:
    """Run ``steps`` after ``setup`` inside ``unshare -r`` (``-rm`` with ``mounts``); the answers' folder."""
    out = tmp_path / "out"
    out.mkdir()
    script = f'set -u\n{setup}\nexec "$PY" -c "$DRIVER"\n'
    proc = subprocess.run(["unshare", "-rm" if mounts else "-r", "bash", "-c", script], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout,
                          env={**os.environ, "OUT": str(out), "PY": sys.executable, "DRIVER": DRIVER,
                               "STEPS": json.dumps(steps), **env})
    if proc.returncode == 77:
        pytest.skip("no mount namespace here")
    assert proc.returncode == 0, proc.stderr
    return out


def step(out: Path, name: str) -> subprocess.CompletedProcess:
    return subprocess.CompletedProcess([name], int((out / f"{name}.rc").read_text()), (out / f"{name}.out").read_text(),
                                       (out / f"{name}.err").read_text())

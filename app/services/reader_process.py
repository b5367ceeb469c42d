"""A scene reader (Blender's Python, USD's) run as a process of its own, in a process group of its own:
at its timeout the whole group is ended, so a reader that hangs — or anything it started — never
stays behind (issue 31, for Blender and USD alike)."""
from __future__ import annotations

import os
import signal
import subprocess

MAX_ANSWER_BYTES = 16 * 2**20  # the reader's JSON answer: a few kB per scene


def run_reader(argv: list[str], timeout: float) -> tuple[int, str]:
    """Run the reader in a process group of its own; at ``timeout`` the whole group is ended (SIGTERM,
    then SIGKILL): a reader that never returns leaves nothing running behind it. Returns the exit
    status and the tail of what it printed."""
    group = {"start_new_session": True} if os.name != "nt" else \
        {"creationflags": getattr(subprocess, "CREATE_NEW_PROCESS_GROUP", 0)}
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                          env={**os.environ, "PYTHONNOUSERSITE": "1"}, **group) as proc:
        try:
            said, _ = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            _end_group(proc)
            raise
        return proc.returncode, said[-4000:].decode("utf-8", "replace")


def _end_group(proc: subprocess.Popen) -> None:
    """End the reader and everything it started: SIGTERM to its group, a moment, then SIGKILL."""
    if os.name == "nt":
        proc.kill()
    else:
        _signal_group(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        _signal_group(proc.pid, signal.SIGKILL)  # whatever of the group is left
    try:
        proc.communicate(timeout=10)
    except (subprocess.TimeoutExpired, ValueError, OSError):
        pass


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass  # gone already

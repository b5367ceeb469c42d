"""Helper processes a test starts (Kelvin's command line, the Ollama-protocol server): started and
stopped so that no test can hang on them.

A process started from a suite run in the background (``nohup … &``) inherits "ignore SIGINT", so a
helper is never stopped with Ctrl+C's signal: :func:`stop` sends SIGTERM, waits a bounded time,
then SIGKILL — and every wait has a timeout.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent.parent
OLLAMA_SERVER = "tests.support.ollama_server"


def stop(proc: subprocess.Popen, timeout: float = 15.0) -> int:
    """End a helper: SIGTERM, then SIGKILL if it has not gone within ``timeout`` s. Returns its exit status."""
    if proc.poll() is None:
        try:
            proc.send_signal(signal.SIGTERM)
            return proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
        except ProcessLookupError:
            pass
    return proc.wait(timeout=timeout)


@contextmanager
def helper(argv: list[str], **popen) -> Iterator[subprocess.Popen]:
    """A process for the length of a ``with`` block, stopped by :func:`stop` however the block ends."""
    proc = subprocess.Popen(argv, cwd=popen.pop("cwd", ROOT), **popen)
    try:
        yield proc
    finally:
        stop(proc)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


@contextmanager
def ollama_server(*args: str) -> Iterator[str]:
    """The Ollama-protocol test server in a process of its own (``--port 0``); yields its address."""
    with helper([sys.executable, "-m", OLLAMA_SERVER, "--port", "0", *args], stdout=subprocess.PIPE, text=True,
                env={**os.environ, "PYTHONWARNINGS": "error"}) as proc:
        line = proc.stdout.readline()  # "fake Ollama … on http://127.0.0.1:PORT with …"
        if " on " not in line:
            raise RuntimeError(f"the test server did not start: {line!r}")
        yield line.split(" on ")[1].split(" with ")[0]

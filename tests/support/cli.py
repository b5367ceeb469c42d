"""Kelvin's command line as a test drives it.

:func:`kelvin` runs ``app.cli.main(argv)`` **in this process** with its own standard input, output
and error, and hands back what a finished process would (``returncode``, ``stdout``, ``stderr``):
the same contract as ``python -m app …``, without the 2–4 s each new interpreter costs on a busy
machine. What only a real process shows — a kill, a signal, a pipe whose reader leaves, the exit
status of the entry point itself, another Kelvin beside an open window — is driven through
:func:`kelvin_process` (``python -m app`` in a process of its own) or :mod:`tests.support.processes`.

Run in-process, a command must leave the test process as it found it: the signal handlers it
installs (SIGTERM/SIGHUP become a clean unwind in the CLI), the logging it configures (the root's
handler, every logger's level), the working directory and the standard streams are all put back
after each call.
"""
from __future__ import annotations

import io
import json
import logging
import os
import signal
import subprocess
import sys
import traceback
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parent.parent.parent
_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _stream(data: bytes = b"") -> io.TextIOWrapper:
    """A text stream over bytes, with ``.buffer`` as a real pipe has (``scene import -`` reads bytes)."""
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8", errors="replace", newline=None,
                            write_through=True)


def _text(stream: io.TextIOWrapper) -> str:
    stream.flush()
    raw = stream.buffer.getvalue()
    # what subprocess.run(text=True) gives: decoded with the locale's codec, universal newlines
    return raw.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def _loggers() -> dict[str, logging.Logger]:
    return {name: logger for name, logger in logging.Logger.manager.loggerDict.items()
            if isinstance(logger, logging.Logger)}


def _logger_levels() -> dict[str, int]:
    return {name: logger.level for name, logger in _loggers().items()}


@contextmanager
def _as_its_own_command(stdin, stdout, stderr) -> Iterator[None]:
    """Give one call of ``main`` the process to itself, and take back everything it changed."""
    handlers = {sig: signal.getsignal(sig) for sig in _SIGNALS}
    root = logging.getLogger()
    root_handlers, root_level = root.handlers[:], root.level
    levels = _logger_levels()  # `kelvin chat` quiets kelvin.memory for the rest of its process
    streams = sys.stdin, sys.stdout, sys.stderr
    cwd = os.getcwd()
    root.handlers = []  # so that the CLI's logging.basicConfig writes "kelvin: …" to its own stderr
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(cwd)
        sys.stdin, sys.stdout, sys.stderr = streams
        for handler in root.handlers:
            if handler not in root_handlers:
                handler.close()
        root.handlers, root.level = root_handlers, root_level
        for name, logger in _loggers().items():
            logger.setLevel(levels.get(name, logging.NOTSET))
        for sig, handler in handlers.items():
            signal.signal(sig, handler)


def kelvin(*args: str, input: str | bytes | None = None, check: bool = True) -> subprocess.CompletedProcess:
    """``kelvin ARGS`` run in-process; ``returncode``/``stdout``/``stderr`` as ``python -m app ARGS``
    would give them (an uncaught exception is a traceback on stderr and status 1, as Python's own).
    With ``check``, a non-zero status fails the test with the command's stderr."""
    from app.cli import main

    data = input.encode("utf-8") if isinstance(input, str) else (input or b"")
    stdin, stdout, stderr = _stream(data), _stream(), _stream()
    with _as_its_own_command(stdin, stdout, stderr):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors, --help, --version
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if exc.code is not None and not isinstance(exc.code, int):
                stderr.write(f"{exc.code}\n")
        except Exception:  # noqa: BLE001 — a bug: printed and exit 1, as the interpreter does (pytest's own stops pass)
            stderr.write(traceback.format_exc())
            code = 1
    proc = subprocess.CompletedProcess(["kelvin", *args], code or 0, _text(stdout), _text(stderr))
    if check and proc.returncode != 0:
        raise AssertionError(f"kelvin {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def kelvin_process(*args: str, input: str | None = None, check: bool = True, timeout: float = 120,
                   env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """``python -m app ARGS`` in a process of its own, for what only a process shows (the entry
    point's exit status, environment read at start-up, a display or none)."""
    proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          input=input, timeout=timeout, env=os.environ.copy() if env is None else env)
    if check and proc.returncode != 0:
        raise AssertionError(f"kelvin {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc

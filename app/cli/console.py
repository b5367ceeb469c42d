"""Standard output as a command line uses it: a reader that goes away (`kelvin memory list | head
-2`) ends the command quietly, with the shell's usual status, and is never taken for a damaged store;
text from memory printed without control characters; JSON one object a line; progress on stderr."""
from __future__ import annotations

import json
import os
import sys
import time

EXIT_READER_GONE = 141  # 128 + SIGPIPE: what a shell shows for a command whose reader left


class ReaderGone(Exception):
    """Standard output's reader went away (``kelvin memory list | head -2``): nothing is wrong with
    Kelvin or its memory; the command ends quietly. Not an OSError, so that it is never taken for a
    damaged store (and a broken pipe to Ollama, which is an OSError, is never taken for this)."""


class Output:
    """Standard output that turns its own broken pipe into ``ReaderGone``."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            raise ReaderGone() from None

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            raise ReaderGone() from None

    def __getattr__(self, name):
        return getattr(self._stream, name)


def silence_stdout() -> None:
    """Point standard output at the null device, so that what is still buffered for a reader that
    left, and Python's own flush at exit, go nowhere (the recipe in Python's signal docs)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.__stdout__.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


def reader_gone() -> int:
    """End a command whose reader left: quietly, with the shell's usual status."""
    silence_stdout()
    return EXIT_READER_GONE


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def shown(text: str) -> str:
    """Text from memory as the terminal may print it: no escape sequences or other control characters
    (an imported message must not move the cursor, retitle the window or clear the screen)."""
    from app.core.records import clean_output

    return clean_output(text)


def short(text: str, n: int = 160) -> str:
    one = " ".join(shown(text).split())
    return one if len(one) <= n else one[: n - 1] + "…"


def progress(label: str):
    """A progress callback ``(done, total)`` that writes "label done / total" on stderr: on one line
    at most twice a second in a terminal, a line each time otherwise."""
    tty = sys.stderr.isatty()
    state = {"last": 0.0}

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - state["last"] < 0.5:
            return
        state["last"] = now
        start = "\r" if tty else ""
        end = "\n" if (done >= total or not tty) else ""
        sys.stderr.write(f"{start}{label} {done:,} / {total:,}{end}")
        sys.stderr.flush()

    return report

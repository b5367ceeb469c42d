"""Files the artist hands Kelvin (an import, a GPU trace, a list of queries), read line by line in
bounded pieces, with a limit on a line and on the whole: no file or device can hang Kelvin or fill
its memory (``/dev/zero`` has no line end, ``/dev/urandom`` no end at all). Every problem is one
sentence naming the file and, where it helps, the line.

Lines end at ``\\n`` only (a ``\\r`` before it is dropped): U+2028, U+2029 and U+0085 inside a line
are characters, as in JSON.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Iterator

BLOCK = 1 << 20


class InputProblem(ValueError):
    """A file Kelvin was asked to read cannot be used; nothing was done with it."""


def _size(n: int) -> str:
    return f"{n / 2**30:,.0f} GB" if n >= 2**30 else f"{n / 2**20:,.0f} MB" if n >= 2**20 else f"{n / 1024:,.0f} kB"


def _open(path: Path, what: str):
    try:
        fh = open(path, "rb", buffering=0)  # noqa: SIM115 — closed by the caller's ``with``
    except FileNotFoundError:
        raise InputProblem(f"{path}: no such file") from None
    except IsADirectoryError:
        raise InputProblem(f"{path} is a folder, not {what}") from None
    except OSError as exc:
        why = "no permission to read it" if exc.errno in (errno.EACCES, errno.EPERM) else (exc.strerror or str(exc))
        raise InputProblem(f"{path}: cannot read it ({why})") from None
    if stat.S_ISDIR(os.fstat(fh.fileno()).st_mode):
        fh.close()
        raise InputProblem(f"{path} is a folder, not {what}")
    return fh


def lines(path: Path, what: str, max_bytes: int, max_line: int) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line of ``path`` (``what`` it should be, for the messages: "a .jsonl
    file"), decoded as UTF-8 (a byte-order mark at the start is dropped). Raises :class:`InputProblem`
    for a file that is missing, unreadable, not UTF-8, with a line over ``max_line`` bytes, or over
    ``max_bytes`` in all — having read at most that much."""
    path = Path(path)
    with _open(path, what) as fh:
        pending, lineno, total = b"", 0, 0
        while True:
            try:
                block = fh.read(BLOCK)
            except OSError as exc:
                raise InputProblem(f"{path}: reading it failed ({exc.strerror or exc})") from None
            total += len(block)
            if total > max_bytes:
                raise InputProblem(f"{path} is larger than {_size(max_bytes)}, more than {what} Kelvin reads at once "
                                   "(split it, or is it the right file?)")
            if not block:
                break
            _binary(path, lineno, pending, block)
            pieces = (pending + block).split(b"\n")
            pending = pieces.pop()
            if len(pending) > max_line:
                raise InputProblem(f"{path} line {lineno + len(pieces) + 1} is longer than {_size(max_line)} "
                                   f"without a line end: not {what}")
            for raw in pieces:
                lineno += 1
                yield lineno, _decode(path, lineno, raw, max_line, what)
        if pending:
            yield lineno + 1, _decode(path, lineno + 1, pending, max_line, what)


def _binary(path: Path, lineno: int, pending: bytes, block: bytes) -> None:
    """Refuse a file whose bytes are not UTF-8 anywhere in what was read, before any of its lines is used
    (a sequence cut by the end of the block is finished by the next): random bytes whose first line
    happens to decode are still said to be binary, on the line where they stop being text."""
    data = pending + block
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.reason == "unexpected end of data" and exc.start >= len(data) - 3:
            return  # (the rest of the character comes with the next block)
        where = lineno + data.count(b"\n", 0, exc.start) + 1
        raise InputProblem(f"{path} line {where}: not UTF-8 text (is it a binary file?)") from None


def _decode(path: Path, lineno: int, raw: bytes, max_line: int, what: str) -> str:
    if len(raw) > max_line:
        raise InputProblem(f"{path} line {lineno} is longer than {_size(max_line)}: not {what}")
    try:
        text = raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
    except UnicodeDecodeError:
        raise InputProblem(f"{path} line {lineno}: not UTF-8 text (is it a binary file?)") from None
    return text[:-1] if text.endswith("\r") else text

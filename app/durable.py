"""Writing files so that a crash leaves the old version or the new one, never half of either, and
so that nothing is ever written through a symbolic link.

Used by every writer of a file a person reads or Kelvin depends on: the journal, the Markdown
domain files, the settings ledger, the master brief, kelvin.toml, the logs. A link planted inside
the data folder (``journal/LOCK`` pointing at ``~/.bashrc``, a domain file pointing elsewhere)
must never make Kelvin truncate or append to a file outside it: appends and locks open with
``O_NOFOLLOW``, replacements rename over the link itself, and :func:`refuse_links` checks the
folders on the way down.
"""
from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_BINARY = getattr(os, "O_BINARY", 0)


class UnsafePath(OSError):
    """A path Kelvin will not write through (a symbolic link inside the data folder)."""

    def __init__(self, path: Path):
        super().__init__(errno.ELOOP, f"{path} is a symbolic link; Kelvin writes only to real files and folders "
                                      "inside its data folder (remove or replace the link)")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def refuse_links(path: Path, root: Path | None = None) -> None:
    """Raise :class:`UnsafePath` if ``path``, or any folder between ``root`` and it, is a symbolic link.
    ``root`` itself may be one (a data folder the artist moved to another disk)."""
    parts = [path]
    if root is not None:
        try:
            rel = path.relative_to(root)
        except ValueError:
            rel = None
        if rel is not None:
            parts = [root.joinpath(*rel.parts[: i + 1]) for i in range(len(rel.parts))]
    for p in parts:
        if p.is_symlink():
            raise UnsafePath(p)


def _open_fd(path: Path, flags: int, mode: int = 0o644) -> int:
    if not _NOFOLLOW and path.is_symlink():  # Windows: no O_NOFOLLOW; check first
        raise UnsafePath(path)
    try:
        return os.open(path, flags | _NOFOLLOW | _BINARY, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP or (exc.errno == errno.EMLINK and path.is_symlink()):
            raise UnsafePath(path) from None
        raise


def open_append(path: Path):
    """``path`` opened for appending, unbuffered (created if missing), never through a symbolic link.
    Write with :func:`write_all`."""
    return os.fdopen(_open_fd(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab", buffering=0)


def write_all(fh, data: bytes, sync: bool = True) -> None:
    """Append ``data`` to an unbuffered file whole, or not at all: a write that fails half-way (a
    full disk) is cut back to where it began, so the file never ends in half a line."""
    start = os.lseek(fh.fileno(), 0, os.SEEK_END)
    try:
        view = memoryview(data)
        while view:
            view = view[fh.write(view):]
        if sync:
            os.fsync(fh.fileno())
    except OSError:
        try:
            os.ftruncate(fh.fileno(), start)
        except OSError:
            pass
        raise


def open_lockfile(path: Path):
    """A lock file, created if missing, opened for reading and writing, never through a link."""
    return os.fdopen(_open_fd(path, os.O_RDWR | os.O_CREAT), "r+b")


def create_new(path: Path, data: bytes) -> None:
    """Write a new file that must not exist yet (``O_EXCL``: a link in its place is refused too)."""
    fd = _open_fd(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def fsync_dir(folder: Path) -> None:
    """Make a rename or a new file in ``folder`` durable (a no-op on Windows, which has no such call)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, text: str, sync_dir: bool = False) -> None:
    """Replace ``path`` with ``text``: written to a temp file beside it, fsync'd, renamed over it
    (over a link, the link itself is replaced; what it pointed at is left alone)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if sync_dir:
        fsync_dir(path.parent)


def append_durably(path: Path, text: str) -> None:
    """Append ``text`` to ``path`` and fsync it before returning (never through a link). A write
    that fails half-way (a full disk) is cut back, so the file never ends in half a text."""
    with open_append(path) as fh:
        write_all(fh, text.encode("utf-8"))

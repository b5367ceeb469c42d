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
import stat
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


class NotRegularFile(OSError):
    """A path in the data folder that is not a regular file (a FIFO, a device, a socket, a link):
    Kelvin neither reads nor writes it (opening a FIFO would wait for ever; a device has no end)."""

    def __init__(self, path: Path, what: str):
        super().__init__(errno.EINVAL, f"{path} is {what}, not a regular file; Kelvin reads and writes only regular "
                                       "files in its data folder (remove it, or move it out of the data folder)")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def _kind(mode: int) -> str:
    for test, what in ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISLNK, "a symbolic link"),
                       (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def check_regular(path: Path) -> bool:
    """True if ``path`` is a regular file, False if there is nothing there; :class:`NotRegularFile` for
    anything else (a link is not followed)."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return False
    if not stat.S_ISREG(mode):
        raise NotRegularFile(path, _kind(mode))
    return True


def open_regular(path: Path):
    """``path`` opened for reading in binary, only if it is a regular file: never through a link, and a
    FIFO is opened without waiting for a writer and then refused. Raises FileNotFoundError if absent."""
    if not _NOFOLLOW and path.is_symlink():  # Windows: no O_NOFOLLOW; check first
        raise UnsafePath(path)
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _BINARY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafePath(path) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(path, _kind(mode))
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """A small file of the data folder, whole (at most ``limit`` bytes: beyond, :class:`TooLarge`)."""
    with open_regular(path) as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise TooLarge(path, limit)
    return data


class TooLarge(OSError):
    """A file larger than Kelvin reads for its kind (a settings file of gigabytes is not a settings file)."""

    def __init__(self, path: Path, limit: int):
        size = f"{limit / 2**20:,.0f} MB" if limit >= 2**20 else f"{limit / 1024:,.0f} kB"
        super().__init__(errno.EFBIG, f"{path} is larger than {size}, more than a file of its kind "
                                      "holds; Kelvin did not read it (is it the right file?)")
        self.path = path

    def __str__(self) -> str:
        return str(self.strerror)


def refuse_links_within(folder: Path) -> None:
    """Raise :class:`UnsafePath` if ``folder`` or anything inside it, at any depth, is a symbolic link
    (a folder another library writes into as it pleases: LanceDB's tables, versions and data files).
    Links are not followed on the way down."""
    refuse_links(folder)
    if not folder.is_dir():
        return
    for parent, dirs, files in os.walk(folder, followlinks=False):
        for name in (*dirs, *files):
            if os.path.islink(os.path.join(parent, name)):
                raise UnsafePath(Path(parent) / name)


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

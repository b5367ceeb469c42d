"""Writing files so that a crash leaves the old version or the new one, never half of either.

Used by every writer of a file a person reads or Kelvin depends on: the Markdown domain files, the
master brief, kelvin.toml, the journal's directory entries."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
    """Replace ``path`` with ``text``: written to a temp file beside it, fsync'd, renamed over it."""
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
    """Append ``text`` to ``path`` and fsync it before returning."""
    with open(path, "a", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())

"""Room on the disk: a write the disk cannot hold is refused before anything of it is journaled."""
from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from app.memory.journal import JournalError


class DiskFull(JournalError):
    """The disk cannot hold a write; nothing of it was written."""


# What a message costs on disk, measured at 100k messages (docs/benchmarks.md §4): the journal, the
# Markdown and the index each hold about the text again (≈4.2× an import file right after the
# import, old index versions included), and a 384-d vector ≈ 3.9 kB per message with its index.
DISK_PER_TEXT_BYTE = 4.5
DISK_PER_MESSAGE = 1_000
DISK_PER_VECTOR = 4_000
DISK_MARGIN = 1 * 2**20  # LanceDB's manifests and index files for one more version


def disk_needed(texts: Sequence[str], vectors: bool) -> int:
    """Bytes a write of these texts takes on disk, generously (journal, Markdown, index)."""
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    return int(DISK_PER_TEXT_BYTE * size + len(texts) * (DISK_PER_MESSAGE + (DISK_PER_VECTOR if vectors else 0))
               + DISK_MARGIN)


def _size(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n >= 2**20 else f"{n / 1024:,.0f} kB"


def check_room(folder: Path, items: Sequence[tuple[str, dict]], vectors: bool) -> None:
    """Refuse a write the disk cannot hold before anything of it is journaled. ``vectors``: whether
    the project's embedder makes vectors (generous: whether the index holds vectors yet or not)."""
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    texts = [str(d.get("text", "")) for _op, d in items]
    need = disk_needed(texts, vectors)
    if need > free:
        raise DiskFull(f"not enough free space in {folder.parent} for this: it needs about {_size(need)}, "
                       f"{_size(free)} are free; nothing was written (free some space and try again)")

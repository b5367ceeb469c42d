"""How far each projection of a project's journal has caught up (``journal/projections.json``), and
the name a project's folder carries (``project.json``)."""
from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from app.durable import NotRegularFile, UnsafePath, read_regular

log = logging.getLogger("kelvin.store")

PROJECT_META = "project.json"  # the project's name and its current conversation (app.services.projects)
MAX_META_BYTES = 1 << 20


@dataclass
class Projections:
    """How far each projection has caught up with the journal, what built the vectors, the day
    rollovers projected so far, and a bound on the oldest live Markdown block."""

    markdown_seq: int = 0
    index_seq: int = 0
    embedder: str = ""
    # [seq, cutoff_ms, day] of every day.rollover, in journal order; None: not known here (read from
    # the journal when needed). Replaced, never changed in place: searches read it from other threads.
    rollovers: list[list] | None = None
    # no live Markdown block was said before this (a lower bound; None: not known), so the check at
    # the day's first turn reads no file
    live_since_ms: int | None = None
    # a rebuild began and has not finished (a kill mid-reindex): the next open finishes it
    rebuilding: bool = False
    # the highest event number any projection has seen: new events are numbered above it, even if
    # the journal lost its tail
    seen_seq: int = 0
    # the layout of the index (app.memory.index.INDEX_FORMAT); an older one is rebuilt once
    index_format: int = 1
    # the index's newest version when the positions above were saved: an index found at an older
    # version was restored from an older copy (a backup, a sync tool) and holds less than index_seq says
    index_version: int = 0
    # replies seen streaming (reply.part) with no whole message yet: id → [first part's seq, pid, start]
    unfinished: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> "Projections":
        try:
            data = json.loads(read_regular(path, MAX_META_BYTES * 16))
            rolls = data.get("rollovers")
            rollovers = [[int(r[0]), int(r[1]), str(r[2])] for r in rolls] if isinstance(rolls, list) else None
            since = data.get("live_since_ms")
            return cls(int(data["markdown_seq"]), int(data["index_seq"]), str(data.get("embedder", "")),
                       rollovers, int(since) if since is not None else None, bool(data.get("rebuilding", False)),
                       int(data.get("seen_seq") or 0), int(data.get("index_format") or 1),
                       int(data.get("index_version") or 0),
                       {str(k): [int(v[0]), int(v[1]), float(v[2])] for k, v in (data.get("unfinished") or {}).items()})
        except FileNotFoundError:
            return cls()
        except (UnsafePath, NotRegularFile):
            raise  # a link or a FIFO in its place: said as such, never read through nor written over
        except (ValueError, KeyError, TypeError, IndexError, OSError, RecursionError):
            log.warning("%s is unreadable; the projections will be replayed from the journal", path)
            return cls()

    def save(self, path: Path) -> None:
        self.seen_seq = max(self.seen_seq, self.index_seq, self.markdown_seq)
        fd, tmp = tempfile.mkstemp(prefix=".projections.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.__dict__, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


def stored_name(folder: Path) -> str | None:
    """The name a project's folder was created or renamed with (its ``project.json``), or None."""
    try:
        data = json.loads(read_regular(folder / PROJECT_META, MAX_META_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        return None  # unreadable: the folder's own name stands (app.services.projects says why)
    name = data.get("name") if isinstance(data, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() and len(name) <= 200 else None

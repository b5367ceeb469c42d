"""A shared project's local side of the team: where it is on the studio's server and how far this
Kelvin has got with it (``journal/team.json``), and which of its own events the server has
ordered (``journal/acks.jsonl``). A project without ``team.json`` is personal and never leaves
the machine.

The local journal stays the log and the outbox. Three marks say where this Kelvin stands:

* ``cursor`` — the server's sequence pulled and *settled*: every event the server ordered up to
  it is in the local journal and in the projections, in the server's order;
* ``settled_at`` — a position in the local journal before which every event is settled, so a
  settlement reads only what came after (this Kelvin's events not yet ordered, and the pulls since);
* ``pushed_at`` — a position before which every event of this Kelvin's own is on the server.

An event's place in the shared order is its server sequence (``ss`` in the journal line for a
pulled event, ``acks.jsonl`` for one of this Kelvin's once the server took it); this Kelvin's
events not yet ordered come after all of them, in journal order (``TENTATIVE`` + their number).
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from app.durable import append_durably
from app.memory.journal import Entry

log = logging.getLogger("kelvin.team")

TEAM_FILE = "team.json"
ACKS_FILE = "acks.jsonl"
TENTATIVE = 1 << 40  # the place of an event the server has not ordered yet: after every ordered one


@dataclass
class TeamFile:
    folder: Path  # the project's journal folder
    server_project: str  # the project's id on the server (a UUID)
    name: str  # its name on the server
    namespace: str  # what the ids of events from before ids were made from (app.memory.journal.Journal.identity)
    author: str  # who shared it: the author of its events from before it was shared
    origin: str  # the Kelvin that shared it
    cursor: int = 0
    settled_at: list = field(default_factory=lambda: ["", 0])  # [segment, offset]
    pushed_at: list = field(default_factory=lambda: ["", 0])
    _acks: dict[str, int] | None = field(default=None, repr=False, compare=False)

    # ---- the file ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, folder: Path) -> "TeamFile | None":
        try:
            data = json.loads((folder / TEAM_FILE).read_text(encoding="utf-8"))
            return cls(folder, str(data["server_project"]), str(data["name"]), str(data["namespace"]),
                       str(data.get("author") or ""), str(data.get("origin") or ""), int(data.get("cursor") or 0),
                       _position(data.get("settled_at")), _position(data.get("pushed_at")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError) as exc:
            log.warning("%s is unreadable (%s); the project is treated as personal until it is shared again",
                        folder / TEAM_FILE, exc)
            return None

    def save(self) -> None:
        data = {k: v for k, v in asdict(self).items() if k not in ("folder", "_acks")}
        fd, tmp = tempfile.mkstemp(prefix=".team.", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.folder / TEAM_FILE)

    # ---- what the server has ordered of this Kelvin's own -------------------------------------------
    @property
    def acks(self) -> dict[str, int]:
        if self._acks is None:
            acks: dict[str, int] = {}
            try:
                with (self.folder / ACKS_FILE).open(encoding="utf-8") as fh:
                    for line in fh:
                        uid, _, ss = line.strip().partition(" ")
                        if uid and ss.isdigit():
                            acks[uid] = int(ss)  # a torn last line is left out: that event is pushed again
            except FileNotFoundError:
                pass
            self._acks = acks
        return self._acks

    def add_acks(self, pairs: dict[str, int]) -> None:
        """Record durably where the server ordered some of this Kelvin's events (before anything
        relies on it: a kill before this only means the same events are pushed again, changing
        nothing on the server)."""
        new = {u: s for u, s in pairs.items() if self.acks.get(u) != s}
        if new:
            append_durably(self.folder / ACKS_FILE, "".join(f"{u} {s}\n" for u, s in new.items()))
            self.acks.update(new)

    # ---- events in the shared order ------------------------------------------------------------------
    def position(self, e: Entry) -> int:
        """An event's place in the shared order."""
        if e.ss:
            return e.ss
        return self.acks.get(e.uid) or TENTATIVE + e.seq

    def settled(self, e: Entry) -> bool:
        return self.position(e) <= self.cursor

    def shared_view(self, e: Entry) -> Entry:
        """The event as the team knows it: an event from before the project was shared gets its
        sharer as author; its place in the shared order in ``ss`` (``TENTATIVE`` + its number while
        the server has not ordered it)."""
        by, kv = e.by or self.author, e.kv or self.origin
        ss = self.position(e)
        return e if (by, kv, ss) == (e.by, e.kv, e.ss) else replace(e, by=by, kv=kv, ss=ss)


def _position(value) -> list:
    if isinstance(value, list) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int):
        return value
    return ["", 0]

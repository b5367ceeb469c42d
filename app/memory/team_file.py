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
from dataclasses import dataclass, field, replace
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
    _acks_read: tuple[int, int] = field(default=(0, 0), repr=False, compare=False)  # acks.jsonl's inode, bytes read

    # ---- the file ----------------------------------------------------------------------------------
    @classmethod
    def load(cls, folder: Path, previous: "TeamFile | None" = None) -> "TeamFile | None":
        """The team file as it is on disk now (another Kelvin process on this machine may have moved
        it on). ``previous``: this process's last copy, whose acks are read on from where it stopped
        instead of from the start."""
        try:
            data = json.loads((folder / TEAM_FILE).read_text(encoding="utf-8"))
            team = cls(folder, str(data["server_project"]), str(data["name"]), str(data["namespace"]),
                       str(data.get("author") or ""), str(data.get("origin") or ""), int(data.get("cursor") or 0),
                       _position(data.get("settled_at")), _position(data.get("pushed_at")))
        except FileNotFoundError:
            return None
        except (ValueError, KeyError, TypeError, OSError) as exc:
            log.warning("%s is unreadable (%s); the project is treated as personal until it is shared again",
                        folder / TEAM_FILE, exc)
            return None
        if previous is not None and previous._acks is not None and previous.server_project == team.server_project:
            team._acks, team._acks_read = dict(previous._acks), previous._acks_read
            team.read_acks()
        return team

    def save(self) -> None:
        data = {k: getattr(self, k) for k in ("server_project", "name", "namespace", "author", "origin", "cursor",
                                              "settled_at", "pushed_at")}
        fd, tmp = tempfile.mkstemp(prefix=".team.", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.folder / TEAM_FILE)

    # ---- what the server has ordered of this Kelvin's own -------------------------------------------
    @property
    def acks(self) -> dict[str, int]:
        """Which of this Kelvin's events the server has ordered, and where (read once, then on as
        lines are added: :meth:`read_acks`)."""
        if self._acks is None:
            self.read_acks()
        return self._acks  # type: ignore[return-value]

    def read_acks(self) -> None:
        """Read acks.jsonl on from where this process stopped. A line not yet whole (another process
        appending it right now, or a kill mid-line) is read next time: that event is at worst pushed
        again, which changes nothing on the server."""
        known_ino, start = self._acks_read
        try:
            with (self.folder / ACKS_FILE).open("rb") as fh:
                ino = os.fstat(fh.fileno()).st_ino
                if self._acks is None or ino != known_ino:
                    self._acks, start = {}, 0
                fh.seek(start)
                for raw in fh:
                    if not raw.endswith(b"\n"):
                        break
                    start += len(raw)
                    uid, _, ss = raw.decode("utf-8", "replace").strip().partition(" ")
                    if uid and ss.isdigit():
                        self._acks[uid] = int(ss)
                self._acks_read = (ino, start)
        except FileNotFoundError:
            self._acks, self._acks_read = {}, (0, 0)

    def add_acks(self, pairs: dict[str, int]) -> None:
        """Record durably where the server ordered some of this Kelvin's events (before anything
        relies on it: a kill before this only means the same events are pushed again, changing
        nothing on the server)."""
        new = {u: s for u, s in pairs.items() if self.acks.get(u) != s}
        if new:
            append_durably(self.folder / ACKS_FILE, "".join(f"{u} {s}\n" for u, s in new.items()))
            self.read_acks()  # the lines just written (and no other: this runs under the write lock)

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

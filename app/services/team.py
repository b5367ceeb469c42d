"""Team memory: a project shared through the studio's PostgreSQL, kept in step in the background.

``share`` puts a project on the server (on purpose; personal projects never leave the machine),
``join`` brings a shared one to this Kelvin, ``sync`` does one round — send what the server does not
have yet, then fetch and settle what the team added (app.services.team_sync runs those rounds in the
background wherever a project is open). The network is never touched on the writer thread or the UI thread: the
local parts of a round (reading the outbox, recording what the server took, settling a pull) run on
the memory's writer (app.services.commit_queue), in order with every other write.

Offline is normal: every write lands in the local journal first; a round that cannot reach the
server says so (:class:`TeamStatus`) and the next one sends what waited.
"""
from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Callable

from app.core.records import RecordError, check_name, now_ms
from app.durable import open_lockfile
from app.memory.journal import Entry
from app.memory.team_file import TeamFile
from app.memory.team_server import ServerProject, TeamServer, TeamServerError, where
from app.memory.team_settle import settle
from app.services.memory import MemoryService

log = logging.getLogger("kelvin.team")

PUSH_BATCH = 2000
PULL_BATCH = 5000


@dataclass(frozen=True)
class TeamStatus:
    project: str
    shared: bool
    state: str  # "personal", "synced", "sending", "offline", "refused"
    waiting: int = 0  # this Kelvin's events the server does not have yet
    since_ms: int = 0  # offline since
    problem: str = ""  # why it is offline or refused, in one sentence
    synced_ms: int = 0  # the last round that reached the server

    def words(self) -> str:
        """The header's words: "synced", "3 waiting to send", "offline since 10:42 · 3 waiting to send",
        "server refused: …"."""
        if not self.shared:
            return "personal project"
        waiting = f"{self.waiting:,} waiting to send" if self.waiting else ""
        if self.state == "offline":
            since = datetime.fromtimestamp(self.since_ms / 1000).strftime("%H:%M") if self.since_ms else "now"
            return " · ".join(x for x in (f"offline since {since}", waiting) if x)
        if self.state == "refused":
            return f"server refused: {self.problem}"
        return waiting or "synced"

    def to_json(self) -> dict:
        return {"project": self.project, "shared": self.shared, "state": self.state, "waiting": self.waiting,
                "since_ms": self.since_ms or None, "problem": self.problem or None, "synced_ms": self.synced_ms or None,
                "words": self.words()}


@dataclass(frozen=True)
class Round:
    pushed: int
    pulled: int  # the team's events new to this Kelvin
    waiting: int
    rebased: int = 0  # settlements where the team's events came before this Kelvin's tentative ones


class SyncBusy(RuntimeError):
    """Another Kelvin process on this machine is syncing the project right now."""


class _SyncLock:
    """One sync of a project at a time on this machine (the window's, a command's), so the events
    made here reach the server in the order they were journaled, and one round's pull is settled by
    that round alone."""

    def __init__(self, path: Path, wait_s: float = 0.0):
        self.path, self.wait_s, self._fh = path, wait_s, None

    def __enter__(self):
        fh = open_lockfile(self.path)
        deadline = time.monotonic() + self.wait_s
        while not _try_lock(fh):
            if time.monotonic() >= deadline:
                fh.close()
                raise SyncBusy("another Kelvin process on this machine is syncing this project right now; what it "
                               "sends and fetches is this project's, so nothing waits — try again in a moment")
            time.sleep(0.05)
        self._fh = fh
        return self

    def __exit__(self, *exc) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


def _try_lock(fh) -> bool:
    try:
        if os.name == "nt":
            import msvcrt

            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


class Team:
    """Sharing, joining and syncing projects with the studio's server (``team_server``)."""

    def __init__(self, memory: MemoryService):
        self.memory = memory
        self.setting = memory.settings.team_server
        self._server: TeamServer | None = None
        self._status: dict[str, TeamStatus] = {}
        self._lock = threading.Lock()  # one round at a time in this process

    @property
    def configured(self) -> bool:
        return bool(self.setting.strip())

    def server(self) -> TeamServer:
        if not self.configured:
            raise TeamServerError("no studio server is set: set team_server in kelvin.toml (a libpq connection "
                                  "string or service name; see README, Team memory)", "refused")
        if self._server is None:
            self._server = TeamServer(self.setting)
        return self._server

    def where(self) -> str:
        return where(self.setting)

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None

    # ---- sharing and joining -------------------------------------------------------------------------
    def share(self, project: str | None = None, as_name: str | None = None) -> ServerProject:
        """Put a personal project on the server and send all of it (the first round)."""
        store = self.memory.store(project)
        store.refresh()  # (shared from another Kelvin process on this machine)
        if store.team is not None:
            raise RecordError(f"{store.name!r} is shared already (kelvin team status)")
        if not store.exists():
            raise RecordError(f"there is no project {store.name!r} to share")
        name = check_name(as_name or store.name, "project")
        server = self.server()
        server.ensure_schema()
        there = server.find(name)
        if there is not None:
            raise RecordError(f"the studio's server already has a project called {there.name!r} (shared by "
                              f"{there.created_by or 'someone'}); join it with `kelvin team join {there.name!r}`, or "
                              "share this one under another name (--as NAME)")
        by, kv = self.memory.me()
        shared = server.create_project(str(uuid.uuid4()), name, by)

        def become_shared():
            with store.writing():
                if store.team is not None:  # shared by another Kelvin process on this machine meanwhile
                    raise RecordError(f"{store.name!r} is shared already (kelvin team status)")
                team = TeamFile(store.journal.folder, shared.id, shared.name, str(store.journal.namespace), by, kv)
                team.save()
                store.load_team()
                store.rebuild_ledger()  # its entries named and placed as a shared project's

        self.memory.writer.call(become_shared).result()
        self.sync(store.name, wait_s=store.lock_wait_s)  # (the window may be sending it already)
        return shared

    def join(self, name: str, local_name: str | None = None) -> str:
        """Bring a shared project to this Kelvin: a local project that follows the server's (its
        whole memory pulled, searchable here, offline too). Returns the local project's name."""
        server = self.server()
        server.check_version()
        there = server.find(name)
        if there is None:
            known = ", ".join(p.name for p in server.projects()[:12]) or "none yet"
            raise RecordError(f"the studio's server has no project called {name!r} (shared projects: {known})")
        local = check_name(local_name or there.name, "project")
        store = self.memory.store(local)
        if store.exists():
            if store.team is not None and store.team.server_project == there.id:
                self.sync(local, wait_s=store.lock_wait_s)
                return local
            raise RecordError(f"a project called {store.name!r} exists on this machine already; join under another "
                              "name (--as NAME)")

        def become_member():
            with store.writing():
                TeamFile(store.journal.folder, there.id, there.name, str(store.journal.namespace), "", "").save()
                store.load_team()
                store.rebuild_ledger()  # its files as a shared project's (settings.md even while it is empty)

        self.memory.writer.call(become_member).result()
        from app.services.projects import Projects

        Projects(self.memory).ensure(local)
        self.sync(local, wait_s=store.lock_wait_s)
        return local

    # ---- a round ------------------------------------------------------------------------------------
    def sync(self, project: str | None = None, progress: Callable[[int, int], None] | None = None,
             wait_s: float = 0.0) -> Round:
        """Send what waits, then fetch and settle what the team added. Raises TeamServerError (the
        status says it too) when the server cannot be used; SyncBusy when another process on this
        machine is syncing the project and went on longer than ``wait_s`` (the background rounds
        wait for none: the round going on sends and fetches for every process here)."""
        store = self.memory.store(project)
        store.refresh()  # (shared or joined by another Kelvin process on this machine)
        if store.team is None:
            raise RecordError(f"{store.name!r} is a personal project (share it with `kelvin team share`)")
        with self._lock, _SyncLock(store.journal.folder / "SYNC", wait_s):
            try:
                outcome = self._round(store, progress)
            except TeamServerError as exc:
                self._note(store, exc, self.memory.writer.call(lambda: self._waiting(store)).result()[0])
                raise
            self._note(store, None, outcome.waiting)
            return outcome

    def _round(self, store, progress) -> Round:
        server = self.server()
        writer = self.memory.writer
        # Each local step below runs under the project's write lock, which first catches this process
        # up with what the others on this machine wrote: their events go out with this round's, and
        # what an earlier round of theirs sent and settled (acks.jsonl, team.json) is neither sent
        # nor settled again. Between the steps the others write freely; no other process syncs the
        # project meanwhile (SYNC), so the cursor a pull starts from stays this round's.
        pushed = 0
        refused: TeamServerError | None = None
        while True:
            batch, scanned = writer.call(lambda: self._outbox(store)).result()[0]
            if not batch:
                writer.call(lambda: self._advance_pushed(store, scanned, {})).result()  # noqa: B023 — run at once
                break
            try:
                places = server.push(store.team.server_project, batch)
            except TeamServerError as exc:
                if exc.kind != "read_only":
                    raise
                refused = exc  # a reader still pulls
                break
            writer.call(lambda: self._advance_pushed(store, scanned, places)).result()  # noqa: B023 — run at once
            pushed += len(batch)
            if len(batch) < PUSH_BATCH:
                break
        pulled = rebased = 0
        # this Kelvin's own events come back in one settlement (a big project just shared, a long
        # time offline): each settlement applies what is still tentative again, so many small ones
        # would cost the backlog over and over
        batch = max(PULL_BATCH, pushed + PULL_BATCH)
        while True:
            rows, last = server.pull(store.team.server_project, store.team.cursor, batch)
            if rows:
                done = writer.call(lambda: self._settle(store, rows)).result()[0]  # noqa: B023 — run at once
                pulled += done.appended
                rebased += done.rebased
                if progress is not None:
                    progress(rows[-1].ss, last)
            if not rows or rows[-1].ss >= last:
                break
        waiting = writer.call(lambda: self._waiting(store)).result()[0]
        if refused is not None:
            self._note(store, refused, waiting)
            raise refused
        return Round(pushed, pulled, waiting, rebased)

    @staticmethod
    def _outbox(store) -> tuple[list[Entry], list[tuple[Entry, str, int]]]:
        """The events made on this machine (by any Kelvin process here) the server has not taken yet
        (a batch, in journal order), and every event read from ``pushed_at`` to the batch's end (to
        move the mark on)."""
        with store.writing():
            team = store.team
            batch, scanned = [], []
            for e, seg, pos in store.journal.read_from(*team.pushed_at):
                scanned.append((e, seg, pos))
                if not e.ss and e.uid not in team.acks:
                    batch.append(replace(team.shared_view(e), ss=0))  # an old line: its sharer as author
                    if len(batch) >= PUSH_BATCH:
                        break
            return batch, scanned

    @staticmethod
    def _advance_pushed(store, scanned: list[tuple[Entry, str, int]], places: dict[str, int]) -> None:
        with store.writing():
            team = store.team
            team.add_acks({u: s for u, s in places.items()})
            mark = team.pushed_at
            for e, seg, pos in scanned:
                if not e.ss and e.uid not in team.acks:
                    break
                mark = [seg, pos]
            if mark != team.pushed_at:
                team.pushed_at = mark
                team.save()

    @staticmethod
    def _settle(store, rows: list[Entry]):
        with store.writing():
            return settle(store, rows, rows[-1].ss)

    @staticmethod
    def _waiting(store) -> int:
        """What waits to be sent (a count for the header; read without the lock, as a reader)."""
        store.refresh()
        team = store.team
        if team is None:
            return 0
        return sum(1 for e, _s, _p in store.journal.read_from(*team.pushed_at) if not e.ss and e.uid not in team.acks)

    # ---- what the header and `team status` say -------------------------------------------------------
    def _note(self, store, problem: TeamServerError | None, waiting: int | None = None) -> None:
        old = self._status.get(store.name)
        if waiting is None:
            waiting = old.waiting if old is not None else 0
        if problem is None:
            status = TeamStatus(store.name, True, "synced", waiting, synced_ms=now_ms())
        elif problem.kind in ("refused", "read_only", "newer"):
            status = TeamStatus(store.name, True, "refused", waiting, problem=str(problem),
                                synced_ms=old.synced_ms if old else 0)
        else:
            since = old.since_ms if old is not None and old.state == "offline" else now_ms()
            status = TeamStatus(store.name, True, "offline", waiting, since, str(problem),
                                old.synced_ms if old else 0)
        self._status[store.name] = status

    def status(self, project: str | None = None) -> TeamStatus:
        store = self.memory.store(project)
        store.refresh()
        if store.team is None:
            return TeamStatus(store.name, False, "personal")
        known = self._status.get(store.name)
        if known is not None:
            return known
        waiting = self.memory.writer.call(lambda: self._waiting(store)).result()[0] if store.exists() else 0
        return TeamStatus(store.name, True, "sending" if waiting else "synced", waiting)

    def recount(self, project: str | None = None) -> TeamStatus:
        """The status with what waits to be sent counted again here (no server asked: between two
        rounds, after this Kelvin wrote while offline)."""
        store = self.memory.store(project)
        known = self.status(project)
        if not known.shared:
            return known
        waiting = self.memory.writer.call(lambda: self._waiting(store)).result()[0]
        status = replace(known, waiting=waiting, state="sending" if known.state == "synced" and waiting else known.state)
        self._status[store.name] = status
        return status

    def is_shared(self, project: str | None = None) -> bool:
        store = self.memory.store(project)
        store.refresh()  # (shared or joined from a terminal while the window is open)
        return store.team is not None

"""The background rounds of a shared project, wherever it is open (the window): woken by the
server's NOTIFY, by this Kelvin's own writes, by another Kelvin process on this machine writing the
project (a command in a terminal, the Blender add-on: the journal's end moved), and by a poll;
backing off while the server is away (the writes are then only counted for the header). On a
thread of its own: never the UI thread, never the memory's writer. Where two processes here run
rounds (the window and ``kelvin chat``), one round at a time goes on; the other process's is
skipped, as that round sends and fetches for both.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from app.memory.journal import StoreLocked
from app.memory.team_server import Listener, TeamServerError
from app.services.background import NamedPool
from app.services.team import SyncBusy, Team, TeamStatus

log = logging.getLogger("kelvin.team")

POLL_S = 5.0  # a poll besides NOTIFY (a listener that lost its connection, a missed word)
LOOK_S = 0.25  # how often a waiting round looks whether another process here wrote the project
GATHER_S = 0.15  # news waits this long for more (a teammate's turn is two events, an import many; a busy
# studio's NOTIFYs come in bursts): one round fetches them together instead of one round each
BUSY_S = 1.0  # another process here holds the project (a long import, its own round): try again after
BACKOFF_S = (1.0, 2.0, 5.0, 10.0, 30.0)


class TeamSync:
    """The background rounds for the project open in this process (the window's), on a thread of
    their own; ``on_change(status, pulled)`` is told after every round (from that thread)."""

    def __init__(self, team: Team, on_change: Callable[[TeamStatus, int], None] = lambda s, n: None):
        self.team = team
        self.on_change = on_change
        self.project: str | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._rounds = NamedPool("kelvin-team")  # one thread: the sync loop, from the first follow() to stop()
        self._following = False
        self._listener = Listener(team.setting) if team.configured else None
        self.rounds = 0  # rounds that reached the server
        self.rebased = 0  # rounds whose settlement put the team's events before this Kelvin's tentative ones
        self._journal_end = None  # the journal's end when the last round began (another process's write moves it)
        team.memory.on_written.append(self._written)

    def follow(self, project: str) -> None:
        """Keep ``project`` in step from now on (a personal project: nothing to do)."""
        self.project = project
        self._wake.set()
        if not self._following and self.team.configured:
            self._following = True
            self._rounds.submit(self._run)

    def _written(self, project: str) -> None:
        if project == self.project:
            self._wake.set()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._wake.set()
        if self._following:
            self._rounds.wait(timeout)
        if self._listener is not None:
            self._listener.close()
        if self._written in self.team.memory.on_written:
            self.team.memory.on_written.remove(self._written)

    def _run(self) -> None:
        failures = 0
        next_round = 0.0  # while the server is away, this Kelvin's writes are counted, not sent, until then
        followed = None
        while not self._stop.is_set():
            project = self.project
            self._wake.clear()
            if project != followed:
                followed, next_round = project, 0.0
            shared = project is not None and self.team.is_shared(project)
            self._journal_end = self._end_of(project) if shared else None  # what is written after goes out
            if shared and time.monotonic() < next_round:
                try:
                    self.on_change(self.team.recount(project), 0)
                except Exception:  # only a count for the header
                    log.debug("counting what waits failed", exc_info=True)
            elif shared:
                pause = POLL_S
                busy = False
                try:
                    done = self.team.sync(project)
                    self.rounds += 1
                    self.rebased += done.rebased
                    failures = 0
                    self.on_change(self.team.status(project), done.pulled)
                except (SyncBusy, StoreLocked):  # another process here is in a round, or writing at length
                    busy = True
                except TeamServerError:
                    pause = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                    failures += 1
                    self.on_change(self.team.status(project), 0)
                except Exception:  # a bug must not stop the team's rounds; said in the log
                    log.exception("a team sync round failed")
                    pause = BACKOFF_S[-1]
                next_round = time.monotonic() + (pause if failures else 0.0)
                if busy:
                    self._stop.wait(BUSY_S)
                    continue
            wait = POLL_S if not failures else max(0.05, next_round - time.monotonic())
            self._wait(wait, project)

    def _end_of(self, project: str | None):
        try:
            return self.team.memory.store(project).journal.mark() if project else None
        except Exception:  # noqa: BLE001 — a look only
            return None

    def _wait(self, pause: float, project: str | None) -> None:
        """Until the server has news for the project, this Kelvin wrote, or ``pause`` ran out — then
        :data:`GATHER_S` more, unless stopping, so that what comes in a burst makes one round."""
        if self._until_news(pause, project):
            self._stop.wait(GATHER_S)

    def _until_news(self, pause: float, project: str | None) -> bool:
        deadline = time.monotonic() + pause
        store = self.team.memory.store(project) if project else None
        wanted = store.team.server_project if store is not None and store.team is not None else None
        while not self._stop.is_set():
            if self._wake.is_set():
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if wanted is not None and self._journal_end is not None and store.journal.mark() != self._journal_end:
                return True  # another Kelvin process here wrote the project: what it wrote goes out now
            if self._listener is not None and wanted is not None:
                news = self._listener.wait(min(left, LOOK_S))
                if news is None:
                    self._wake.wait(min(left, LOOK_S))
                elif wanted in news:
                    return True
            else:
                self._wake.wait(min(left, LOOK_S))
        return False

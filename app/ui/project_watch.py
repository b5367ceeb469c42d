"""Noticing, within a second, that another Kelvin process wrote the window's project: a turn asked
with ``kelvin chat --once`` in a terminal, an import, ``kelvin settings set``, a scene sent from
Blender.

Every ``INTERVAL_MS`` a worker on its own one-thread pool asks the memory service for the project's
change mark (the journal's end and projections.json: two ``stat`` calls, never on the UI thread,
which must not wait on a disk), and :attr:`ProjectWatch.written` fires when it moved. The window's
own writes move it too; the window tells those apart by the message ids it already shows. A check
still running when the next tick comes (a disk that hangs) is not doubled.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.ui.worker import Pools

INTERVAL_MS = 400  # a change shows within about this, plus the time to read it


class ProjectWatch(QObject):
    written = Signal(str)  # the project something was written to (by any Kelvin process)

    def __init__(self, pools: Pools, parent=None):
        super().__init__(parent)
        self.pools = pools
        self._memory = None
        self._project = ""
        self._mark: tuple | None = None  # None: not read yet for this project
        self._checking = False
        self._timer = QTimer(self, objectName="projectWatch", interval=INTERVAL_MS, timeout=self._tick)

    def follow(self, memory, project: str) -> None:
        """Watch ``project`` from now on (what was seen of the one before is forgotten)."""
        self._memory, self._project, self._mark = memory, project, None
        if not self._timer.isActive():
            self._timer.start()
        self._tick()

    def stop(self) -> None:
        self._timer.stop()
        self._memory = None

    def _tick(self) -> None:
        if self._checking or self._memory is None:
            return
        self._checking = True
        memory, project = self._memory, self._project
        self.pools.run(self.pools.watch, lambda report: memory.changes(project),
                       returned=lambda mark: self._seen(project, mark), errored=lambda exc: None,
                       finished=self._done)

    def _done(self) -> None:
        self._checking = False

    def _seen(self, project: str, mark: tuple) -> None:
        if project != self._project or self._memory is None:
            return
        before, self._mark = self._mark, mark
        if before is not None and mark != before:
            self.written.emit(project)

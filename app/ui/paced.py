"""Work on the UI thread done a slice at a time, so that the window never stops answering.

Some of the window's own work cannot leave the UI thread — laying text into the transcript's
document, measuring a table's columns — and a big piece of it (forty messages written elsewhere
arriving at once, a whole transcript drawn again) took 50-190 ms in one go on a 2-core machine:
a frozen window for that long (docs/benchmarks.md §17, "Stop 39"). :class:`Paced` runs a step
function until a slice of time is spent, then lets the event loop paint and take keys before it
goes on, on its next turn (a zero-time timer), until the step says nothing remains.

``step()`` does one piece and returns True while more remains; at least one piece is done per
slice, so the work always advances. :meth:`start` is called again whenever more work is wanted
(it runs a slice now if none is running); :meth:`finish` does what is left at once, for the rare
caller that must have it all now; ``done`` is told when the last piece is done.
"""
from __future__ import annotations

import time
from typing import Callable

from PySide6.QtCore import QObject, QTimer

SLICE_S = 0.008  # UI-thread time per turn of the event loop: well inside a 16 ms frame on a quiet machine


class Paced(QObject):
    def __init__(self, step: Callable[[], bool], done: Callable[[], None] | None = None, parent=None,
                 slice_s: float = SLICE_S, name: str = "paced"):
        super().__init__(parent)
        self._step, self._done, self.slice_s = step, done, slice_s
        self._running = False  # a slice is being run now (a step that starts more work must not nest)
        self._more = QTimer(self, singleShot=True, interval=0, objectName=name)
        self._more.timeout.connect(self._slice)

    @property
    def busy(self) -> bool:
        """Work remains for a later turn of the event loop."""
        return self._more.isActive()

    def start(self) -> None:
        """Do a slice of the work now; what does not fit in it goes on at the event loop's next turn."""
        if not self._running:
            self._slice()

    def finish(self) -> None:
        """Do everything that remains now."""
        self._more.stop()
        while self._step():
            pass
        self._over()

    def cancel(self) -> None:
        self._more.stop()

    def _slice(self) -> None:
        self._more.stop()
        self._running = True
        try:
            end = time.perf_counter() + self.slice_s
            more = self._step()
            while more and time.perf_counter() < end:
                more = self._step()
        finally:
            self._running = False
        if more:
            self._more.start()
        else:
            self._over()

    def _over(self) -> None:
        if self._done is not None:
            self._done()

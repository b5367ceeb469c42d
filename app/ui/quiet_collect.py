"""Full garbage collections at moments the artist cannot feel.

A full (generation-2) collection holds the GIL for as long as it walks every object it tracks, so
it freezes the window from whichever thread runs it. Python starts one by itself after enough
allocations — that is, at the busiest moment: in the middle of a burst of commits, right after the
memory browser listed 100,000 rows. Measured on a 2-core machine, it was the last tick over 50 ms
in ``bench/ui_stall.py`` (16-30 ms of collecting on top of the burst's own work; docs/benchmarks.md
§17, "Stop 40").

:class:`QuietCollector` takes the full collections over: Python's own are made ten times rarer
(``gc.set_threshold``'s third number, :data:`AUTO_FULL_AFTER`; they remain as a backstop), and the
window runs one itself

* shortly after the artist leaves the memory browser (its listing and searches are the largest
  garbage the window makes, and the view just switched has painted), and
* every :data:`LOOK_MS` while the artist is not typing and the window waits for no work (a search,
  a listing: their results will want the UI thread when they come), once :data:`QUIET_FULL_AFTER` younger
  collections have promoted objects since the last full one (``gc.get_count()[2]``) — so an idle
  window does not collect at all, and a busy one about as often as Python would.

The objects alive at start-up are frozen (``app.ui.app.start_services``), so a full collection walks
only what the window made since: 5-30 ms on the UI thread between two events.
"""
from __future__ import annotations

import gc
import time

from typing import Callable

from PySide6.QtCore import QObject, QTimer

AUTO_FULL_AFTER = 100  # Python's default is 10 younger (generation-1) collections
QUIET_FULL_AFTER = 5  # the window's own: after this many, at the next quiet moment
LOOK_MS = 2000
TYPING_S = 1.0  # a key typed this recently: not now
AFTER_SWITCH_MS = 300  # a view switch: once the new view has painted


class QuietCollector(QObject):
    def __init__(self, busy: Callable[[], bool] = lambda: False, parent=None):
        super().__init__(parent)
        self.busy = busy  # the window waits for work from its pools
        self.typed_at = 0.0
        self.collected = 0  # full collections run by the window (tests, the bench)
        self._before: tuple[int, int, int] | None = None
        self._look = QTimer(self, interval=LOOK_MS, timeout=self._quiet_moment)
        self._soon = QTimer(self, singleShot=True, interval=AFTER_SWITCH_MS, timeout=self._after_switch)

    def start(self) -> None:
        if self._before is None:
            self._before = gc.get_threshold()
            gen0, gen1, _ = self._before
            gc.set_threshold(gen0, gen1, AUTO_FULL_AFTER)
        self._look.start()

    def stop(self) -> None:
        """Python's own thresholds back (the window closes; tests open many windows in one process)."""
        self._look.stop()
        self._soon.stop()
        if self._before is not None:
            gc.set_threshold(*self._before)
            self._before = None

    def typing(self, *_args) -> None:
        """Connected to the text fields the artist types in."""
        self.typed_at = time.monotonic()

    def soon(self) -> None:
        """A moment the artist will not feel is coming (a view was left): collect once it has painted."""
        if self._before is not None:
            self._soon.start()

    def _after_switch(self) -> None:
        if self.busy():
            self._soon.start()  # the new view's work first
        else:
            self.collect(1)

    def _quiet_moment(self) -> None:
        if time.monotonic() - self.typed_at >= TYPING_S and not self.busy():
            self.collect(QUIET_FULL_AFTER)

    def collect(self, pending: int) -> bool:
        """A full collection now if at least ``pending`` younger collections promoted objects since the
        last full one; True if it ran."""
        if gc.get_count()[2] < pending:
            return False
        gc.collect()
        self.collected += 1
        return True

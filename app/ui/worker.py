"""The one worker primitive: run a function off the UI thread and hear about it through signals.

``Worker(fn, *args)`` runs ``fn(report, *args)`` on a :class:`QThreadPool`; ``report(value)``
(called from the worker's thread) arrives on the UI thread as ``yielded(value)``, the return value
as ``returned(value)``, an exception as ``errored(exc)``; ``finished`` comes last, always. Token
streaming is ``report`` called per token. Workers never touch a widget; the signals cross into the
UI thread by Qt's queued connections. ``abort()`` sets a flag the function may poll
(``worker.aborted``) — the services have their own cancel (``Conversation.cancel``).

Kelvin keeps one single-thread pool per scarce resource (:class:`Pools`): the model (one inference
at a time), the memory (searches and edits, in order), downloads (a model pull takes minutes and
must not hold up anything else), a general one for start-up work, and one that looks whether another
Kelvin process wrote the project (app.ui.project_watch).
"""
from __future__ import annotations

import logging
import sys
import threading
import weakref
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

log = logging.getLogger("kelvin.ui")


class _Signals(QObject):
    started = Signal()
    yielded = Signal(object)
    returned = Signal(object)
    errored = Signal(object)
    finished = Signal()


class Worker(QRunnable):
    def __init__(self, fn: Callable[..., Any], *args, **kwargs):
        super().__init__()
        self.setAutoDelete(False)  # Python owns it: the signals stay valid until the UI is done with them
        self.signals = _Signals()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self._abort = threading.Event()
        self.done = threading.Event()

    @property
    def aborted(self) -> bool:
        return self._abort.is_set()

    def abort(self) -> None:
        self._abort.set()

    def run(self) -> None:
        s = self.signals
        s.started.emit()
        try:
            value = self._fn(s.yielded.emit, *self._args, **self._kwargs)
        except Exception as exc:  # handed to the UI, which shows it
            log.debug("worker failed", exc_info=True)
            s.errored.emit(exc)
        else:
            s.returned.emit(value)
        finally:
            self.done.set()
            s.finished.emit()


class Pools:
    """One thread per scarce resource; :meth:`wait` on quit so nothing is cut off mid-write."""

    made: "weakref.WeakSet[Pools]" = weakref.WeakSet()  # every live set of pools (tests check none is left busy)

    def __init__(self):
        self.model = self._pool("model")
        self.memory = self._pool("memory")
        self.download = self._pool("download")
        self.general = self._pool("general")
        self.watch = self._pool("watch")  # the cheap look at whether another Kelvin process wrote
        self._running: set[Worker] = set()
        Pools.made.add(self)

    def busy(self) -> int:
        """Workers queued or running."""
        return len(self._running)

    @staticmethod
    def _pool(name: str) -> QThreadPool:
        pool = QThreadPool()
        pool.setObjectName(f"kelvin-{name}")
        pool.setMaxThreadCount(1)
        return pool

    def run(self, pool: QThreadPool, fn: Callable[..., Any], *, yielded=None, returned=None, errored=None,
            finished=None) -> Worker:
        """Run ``fn(report)`` on ``pool`` with the given slots connected; a failure nobody expected
        (no ``errored``) goes to the crash dialog."""
        w = Worker(fn)
        for signal, slot in ((w.signals.yielded, yielded), (w.signals.returned, returned),
                             (w.signals.errored, errored or unexpected), (w.signals.finished, finished)):
            if slot is not None:
                signal.connect(slot)
        return self.start(pool, w)

    def start(self, pool: QThreadPool, worker: Worker) -> Worker:
        self._running.add(worker)
        worker.signals.finished.connect(lambda: self._running.discard(worker))
        pool.start(worker)
        return worker

    def wait(self, ms: int = 30_000) -> bool:
        for w in list(self._running):
            w.abort()
        return all(p.waitForDone(ms) for p in (self.model, self.memory, self.download, self.general, self.watch))


def unexpected(exc: BaseException) -> None:
    """A worker failed where no failure was expected: a bug, for the crash dialog (app.ui.crash)."""
    sys.excepthook(type(exc), exc, exc.__traceback__)

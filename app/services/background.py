"""A named pool for the services' background jobs: :class:`NamedPool`.

The window runs its work on Qt's pools (app.ui.worker); the services are Qt-free and also serve the
command line, so their own background jobs — a summary or a model pass after a reply — go through
this pool instead of a bare ``threading.Thread``. Its threads carry the pool's name (what a log line,
a crash report and the tests' leak check see), are daemon threads (a job never holds up the process's
exit: each job has its own stop, and its owner waits for it on close), and live only while there is
work: an idle pool holds no thread. Qt-free.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable

class NamedPool:
    """Run jobs on at most ``threads`` daemon threads named ``name``, in the order they came.

    ``submit(fn, *args)`` returns a :class:`~concurrent.futures.Future`. A job handles its own
    expected failures; what escapes it is a bug: kept in the future and reported as a bare thread's
    would be, through ``threading.excepthook`` (the window's crash dialog, else stderr). :meth:`wait` waits (bounded) until no job is queued or
    running and every thread has ended; never call it from one of the pool's own jobs."""

    def __init__(self, name: str, threads: int = 1):
        self.name, self.threads = name, threads
        self._lock = threading.Lock()
        self._queue: deque[tuple[Future, Callable[..., Any], tuple, dict]] = deque()
        self._live = 0  # threads that have not yet found the queue empty
        self._started: list[threading.Thread] = []

    def submit(self, fn: Callable[..., Any], /, *args, **kwargs) -> Future:
        fut: Future = Future()
        with self._lock:
            self._queue.append((fut, fn, args, kwargs))
            if self._live < self.threads:
                self._live += 1
                thread = threading.Thread(target=self._work, name=self.name, daemon=True)
                self._started = [t for t in self._started if t.is_alive()] + [thread]
                thread.start()
        return fut

    @property
    def busy(self) -> bool:
        """A job is queued or running."""
        with self._lock:
            return self._live > 0

    def wait(self, timeout: float | None = None) -> bool:
        """True once nothing is queued or running and the pool's threads have ended; False if
        ``timeout`` seconds passed first."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with self._lock:
                threads = [t for t in self._started if t.is_alive()]
                if not threads and self._live == 0:
                    return True
            for t in threads:
                t.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if deadline is not None and time.monotonic() >= deadline:
                with self._lock:
                    return self._live == 0 and not any(t.is_alive() for t in self._started)

    def _work(self) -> None:
        while True:
            with self._lock:
                if not self._queue:
                    self._live -= 1
                    return
                fut, fn, args, kwargs = self._queue.popleft()
            if not fut.set_running_or_notify_cancel():
                continue
            try:
                value = fn(*args, **kwargs)
            except BaseException as exc:  # noqa: BLE001 — kept in the future, and reported as a thread's
                fut.set_exception(exc)
                threading.excepthook(threading.ExceptHookArgs((type(exc), exc, exc.__traceback__,
                                                                threading.current_thread())))
            else:
                fut.set_result(value)

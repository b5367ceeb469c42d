"""CommitQueue: the single writer. Every write to the journal, Markdown and index goes through it.

``submit()`` returns a Future at once; one thread applies work in submission order. Runs of
work for the same project are grouped so one fsync and one index write cover many commits
(group commit). When nothing has arrived for a moment the queue runs idle upkeep — filling in
missing vectors, compacting the index — in small steps, so a new commit never waits long.
``close()`` drains everything accepted before it stops: no accepted turn is dropped.
"""
from __future__ import annotations

import logging
import queue
import threading
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Callable, Sequence

from app.services.background import NamedPool

log = logging.getLogger("kelvin.commit")

MAX_GROUP = 4000  # events written in one journal append / index add


@dataclass
class Work:
    project: str
    items: list[tuple[str, dict]]
    future: Future = field(default_factory=Future)


_STOP = object()


class CommitQueue:
    idle_after_s = 1.5  # quiet time before upkeep starts
    idle_every_s = 30.0  # while idle with nothing left to do, look again this often (an embedder may be back)

    def __init__(self, apply: Callable[[str, list[tuple[str, dict]]], list],
                 idle: Callable[[], bool] | None = None):
        """``apply(project, items)`` writes and returns one result per item (or raises);
        ``idle()`` does one small step of upkeep and returns True while more remains."""
        self._apply = apply
        self._idle = idle
        self._q: queue.Queue = queue.Queue()
        self._closed = False
        self._lock = threading.Lock()
        self._writer = NamedPool("kelvin-writer")  # one thread: the writer loop, until close()
        self._writer.submit(self._run)

    def submit(self, project: str, items: Sequence[tuple[str, dict]]) -> Future:
        work = Work(project, list(items))
        with self._lock:
            if self._closed:
                raise RuntimeError("the commit queue is closed")
            self._q.put(work)
        return work.future

    def call(self, fn: Callable[[], object]) -> Future:
        """Run ``fn`` on the writer thread, in order with the commits (for opening or rebuilding
        a project, which must not interleave with writes)."""
        work = Work("", [("__call__", {"fn": fn})])
        with self._lock:
            if self._closed:
                raise RuntimeError("the commit queue is closed")
            self._q.put(work)
        return work.future

    def flush(self, timeout: float | None = None) -> None:
        """Wait until everything submitted so far is written (errors stay on their futures)."""
        self.call(lambda: None).result(timeout)

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self, timeout: float | None = None) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._q.put(_STOP)
        self._writer.wait(timeout)

    # ---- the writer thread -------------------------------------------------------------------------
    def _run(self) -> None:
        idle_pending = True
        while True:
            if self._idle is None:
                timeout = None
            else:
                timeout = self.idle_after_s if idle_pending else self.idle_every_s
            try:
                first = self._q.get(timeout=timeout)
            except queue.Empty:
                idle_pending = self._run_idle()
                continue
            batch = [first]
            items = 0 if first is _STOP else len(first.items)  # counted as they come: a burst of
            while batch[-1] is not _STOP and items < MAX_GROUP:  # thousands is not summed again each time
                try:
                    batch.append(work := self._q.get_nowait())
                except queue.Empty:
                    break
                items += 0 if work is _STOP else len(work.items)
            stop = batch[-1] is _STOP
            self._write([w for w in batch if w is not _STOP])
            if stop:
                return
            idle_pending = True

    def _run_idle(self) -> bool:
        try:
            return bool(self._idle())  # type: ignore[misc]
        except Exception:  # upkeep must never take the writer down
            log.exception("background upkeep failed; it will be retried")
            return False

    def _write(self, batch: list[Work]) -> None:
        i = 0
        while i < len(batch):
            work = batch[i]
            if work.items and work.items[0][0] == "__call__":
                self._settle([work], lambda: [work.items[0][1]["fn"]()])  # noqa: B023 — run at once
                i += 1
                continue
            group = [work]
            while (i + len(group) < len(batch) and batch[i + len(group)].project == work.project
                   and batch[i + len(group)].items[0][0] != "__call__"):
                group.append(batch[i + len(group)])
            items = [it for w in group for it in w.items]
            self._settle(group, lambda: self._apply(work.project, items))  # noqa: B023 — run at once
            i += len(group)

    @staticmethod
    def _settle(group: list[Work], fn: Callable[[], list]) -> None:
        try:
            results = fn()
        except BaseException as exc:  # noqa: BLE001 — handed to every waiting caller
            for w in group:
                w.future.set_exception(exc)
            return
        if len(group) == 1:
            group[0].future.set_result(results)
            return
        # several commits written together: each caller gets the results for its own items
        pool: dict[tuple, deque] = {}
        for r in results:
            pool.setdefault((r.op, r.data.get("id")), deque()).append(r)
        for w in group:
            mine = [pool[k].popleft() for k in ((op, d.get("id")) for op, d in w.items) if pool.get(k)]
            w.future.set_result(mine)

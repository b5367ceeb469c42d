"""The single writer groups what waits for it (one fsync and one index write for many commits), a group
growing no further once it holds ``MAX_GROUP`` items, and each caller gets its own results — also when thousands of
commits queue up behind a slow write (counted as they come: summing the group again for each one
held the GIL for a quadratic time in a burst, and the window waited for it)."""
from __future__ import annotations

import threading
from types import SimpleNamespace

from app.services import commit_queue
from app.services.commit_queue import CommitQueue


def test_a_burst_behind_a_slow_write_is_written_in_groups_that_stop_at_max_group(monkeypatch):
    monkeypatch.setattr(commit_queue, "MAX_GROUP", 10)
    writing, release, groups = threading.Event(), threading.Event(), []

    def apply(project, items):
        groups.append(len(items))
        if len(groups) == 1:
            writing.set()
            release.wait(10)  # the first write is slow: the burst queues up behind it
        return [SimpleNamespace(op=op, data=data) for op, data in items]

    q = CommitQueue(apply)
    try:
        first = q.submit("p", [("add", {"id": "first"})])
        assert writing.wait(10)
        burst = [q.submit("p", [("add", {"id": f"m{i}"}), ("add", {"id": f"m{i}b"})]) for i in range(40)]
        release.set()
        assert [r.data["id"] for r in first.result(10)] == ["first"]
        for i, f in enumerate(burst):
            assert [r.data["id"] for r in f.result(10)] == [f"m{i}", f"m{i}b"]  # its own, in its order
    finally:
        q.close(10)
    assert groups[0] == 1 and sum(groups) == 81
    assert groups[1:] == [10] * 8  # two items a commit: five commits a group, none more

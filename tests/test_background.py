"""The services' named pool (app.services.background): jobs in order on one named thread that lives
only while there is work, a bounded wait, and a job's bug reported as a bare thread's would be."""
from __future__ import annotations

import threading

import pytest

from app.services.background import NamedPool


def pool_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name and t.is_alive()]


def test_jobs_run_in_order_on_one_named_daemon_thread_that_ends_when_idle():
    pool = NamedPool("kelvin-test-pool")
    gate, seen = threading.Event(), []

    def job(n: int) -> int:
        gate.wait(5)
        seen.append((n, threading.current_thread().name, threading.current_thread().daemon))
        return n * 10

    futures = [pool.submit(job, n) for n in range(3)]
    assert pool.busy and len(pool_threads("kelvin-test-pool")) == 1  # one thread for three jobs
    assert not pool.wait(0.1)  # bounded: the jobs wait for the gate
    gate.set()
    assert pool.wait(5) and not pool.busy
    assert [f.result(0) for f in futures] == [0, 10, 20]
    assert seen == [(n, "kelvin-test-pool", True) for n in range(3)]
    assert pool_threads("kelvin-test-pool") == []  # an idle pool holds no thread
    assert pool.submit(job, 4).result(5) == 40 and pool.wait(5)  # and starts one again when needed


def test_a_job_that_raises_is_reported_as_a_threads_exception_and_kept_in_its_future(monkeypatch):
    reported = []
    monkeypatch.setattr(threading, "excepthook", lambda args: reported.append((args.exc_type, args.thread.name)))
    pool = NamedPool("kelvin-test-pool")

    def broken():
        raise ZeroDivisionError("a bug in a background job")

    fut = pool.submit(broken)
    with pytest.raises(ZeroDivisionError):
        fut.result(5)
    assert pool.wait(5) and reported == [(ZeroDivisionError, "kelvin-test-pool")]
    assert pool.submit(lambda: "still works").result(5) == "still works"
    assert pool.wait(5)


def test_a_cancelled_job_never_runs():
    pool = NamedPool("kelvin-test-pool")
    started, gate, ran = threading.Event(), threading.Event(), []
    first = pool.submit(lambda: started.set() or gate.wait(5))
    second = pool.submit(ran.append, "second")
    assert started.wait(5) and second.cancel() and not first.cancel()  # queued: cancellable; running: not
    gate.set()
    assert pool.wait(5) and ran == [] and first.result(0) is True

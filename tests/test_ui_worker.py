"""The UI's one worker primitive (app.ui.worker): results reach the UI thread as signals, in order."""
from __future__ import annotations

import threading

from app.ui.worker import Pools, Worker


def test_a_worker_reports_yields_then_returns_on_the_ui_thread(qtbot):
    ui_thread = threading.current_thread()
    seen, threads = [], []

    def stream(report, words):
        threads.append(threading.current_thread())
        for w in words:
            report(w)
        return " ".join(words)

    pools = Pools()
    w = Worker(stream, ["GI", "clamp", "10"])
    w.signals.yielded.connect(lambda v: (seen.append(("yielded", v)), threads.append(threading.current_thread())))
    w.signals.returned.connect(lambda v: seen.append(("returned", v)))
    with qtbot.waitSignal(w.signals.finished, timeout=5000):
        pools.start(pools.model, w)
    assert seen == [("yielded", "GI"), ("yielded", "clamp"), ("yielded", "10"), ("returned", "GI clamp 10")]
    assert threads[0] is not ui_thread and all(t is ui_thread for t in threads[1:])
    assert pools.wait(5000)


def test_an_exception_arrives_as_errored_and_finished_still_comes(qtbot):
    pools = Pools()
    w = Worker(lambda report: 1 / 0)
    with qtbot.waitSignal(w.signals.errored, timeout=5000) as blocker:
        pools.start(pools.memory, w)
    assert isinstance(blocker.args[0], ZeroDivisionError)
    qtbot.waitUntil(w.done.is_set, timeout=5000)
    assert pools.wait(5000)


def test_one_thread_per_resource_runs_work_in_order_and_quitting_aborts_it(qtbot):
    pools = Pools()
    order, started = [], threading.Event()

    def job(report, n, worker_box):
        me = worker_box[n]
        if me.aborted:
            order.append(f"{n} skipped")
            return
        started.set()
        while not me.aborted:  # cooperative: polls its flag
            me.done.wait(0.01)
        order.append(f"{n} stopped")

    box = {}
    for n in range(3):
        box[n] = Worker(job, n, box)
    for n in range(3):
        pools.start(pools.model, box[n])
    assert started.wait(5)
    assert pools.wait(5000)  # quitting aborts every worker and waits for the pools
    assert order == ["0 stopped", "1 skipped", "2 skipped"]

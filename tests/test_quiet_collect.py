"""Full garbage collections at moments the artist cannot feel (app/ui/quiet_collect.py,
docs/benchmarks.md §17 "Stop 40"): the window makes Python's own full collections rarer while it is
open and runs them itself — after the memory browser is left, and when nobody is typing — on the UI
thread, between two events. A real window on real services; the collections are seen through
``gc.callbacks``."""
from __future__ import annotations

import gc
import threading

import pytest

from app.ui import quiet_collect
from tests.support.window import open_browser


@pytest.fixture
def full_collections():
    """The threads that ran a full (generation-2) collection, in order, while the test ran."""
    seen = []

    def note(phase, info):
        if phase == "stop" and info["generation"] == 2:
            seen.append(threading.get_ident())

    gc.callbacks.append(note)
    yield seen
    gc.callbacks.remove(note)


def _promote(rounds: int) -> list:
    """Objects that live through younger collections: each generation-1 collection counts towards the
    next full one (``gc.get_count()[2]``)."""
    keep = []
    while gc.get_count()[2] < rounds:
        keep.append([[i] for i in range(5000)])
    return keep


def test_the_window_takes_over_full_collections_and_gives_them_back_when_closed(qtbot, window, server):
    before = gc.get_threshold()
    w = window(server)
    assert gc.get_threshold() == (before[0], before[1], quiet_collect.AUTO_FULL_AFTER)
    assert quiet_collect.AUTO_FULL_AFTER > before[2]  # Python's own: rarer, still there
    w.close()
    assert gc.get_threshold() == before


def test_leaving_the_memory_browser_collects_on_the_ui_thread_once_the_chat_painted(qtbot, window, server,
                                                                                 full_collections):
    w = window(server)
    open_browser(qtbot, w)
    keep = _promote(1)
    ran = w.collector.collected
    full_collections.clear()
    w.show_view(0)
    qtbot.waitUntil(lambda: w.collector.collected == ran + 1, timeout=5000)
    assert threading.get_ident() in full_collections
    assert gc.get_count()[2] == 0
    assert w.views.currentWidget() is w.chat
    del keep


def test_no_collection_while_the_artist_types_and_one_at_the_next_quiet_moment(qtbot, window, server,
                                                                               full_collections):
    w = window(server)
    keep = _promote(quiet_collect.QUIET_FULL_AFTER)
    qtbot.keyClicks(w.chat.composer, "why are my glass caustics so noisy")
    ran = w.collector.collected
    w.collector._quiet_moment()  # the timer's look, right after typing: not now
    assert w.collector.collected == ran and gc.get_count()[2] >= quiet_collect.QUIET_FULL_AFTER
    full_collections.clear()
    qtbot.waitUntil(lambda: w.collector.collected > ran, timeout=4 * quiet_collect.LOOK_MS)
    assert threading.get_ident() in full_collections
    assert w.chat.composer.toPlainText() == "why are my glass caustics so noisy"
    del keep


def test_no_collection_while_the_window_waits_for_its_work(qtbot, window, server):
    """A search or a listing running in the pools: its result will want the UI thread when it comes."""
    from app.ui.worker import Worker

    w = window(server)
    release = threading.Event()
    w.pools.start(w.pools.general, Worker(lambda report: release.wait(10)))
    keep = _promote(quiet_collect.QUIET_FULL_AFTER)
    ran = w.collector.collected
    w.collector._quiet_moment()
    assert w.collector.collected == ran
    release.set()
    qtbot.waitUntil(lambda: w.pools.busy() == 0, timeout=5000)
    w.collector._quiet_moment()
    assert w.collector.collected == ran + 1
    del keep


def test_an_idle_window_with_nothing_promoted_does_not_collect(qtbot, window, server):
    w = window(server)
    gc.collect()
    ran = w.collector.collected
    assert w.collector.collect(quiet_collect.QUIET_FULL_AFTER) is False
    w.collector._quiet_moment()
    assert w.collector.collected == ran

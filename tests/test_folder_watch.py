"""The window's watch on folders another process writes (app/ui/folder_watch.py): a change is heard once
a burst settles, and once stopped (the window closing) a change the watcher had already queued starts
nothing — a .ci/run saw the settle timer left ticking after a window closed while its writer drained."""
from __future__ import annotations

from app.ui.folder_watch import FolderWatch


def test_a_change_is_heard_and_after_stop_a_queued_one_starts_nothing(qtbot, tmp_path):
    watch = FolderWatch([tmp_path], settle_ms=20)
    with qtbot.waitSignal(watch.changed, timeout=5000):
        (tmp_path / "kitchen").mkdir()  # a project made from the terminal
    watch.stop()
    watch._watcher.directoryChanged.emit(str(tmp_path))  # what inotify had queued before the stop
    assert not watch._settle.isActive()


def test_a_project_listing_still_on_its_way_when_the_window_closes_watches_nothing(qtbot, window, tmp_path):
    """The window closes while the switcher's listing runs on the memory pool: its answer arrives
    after the watch was stopped (the close waits for the pools and delivers their last signals) and
    must not watch the project folders again — a later write there would start a timer after close."""
    from tests.support.ollama_server import OllamaTestServer

    with OllamaTestServer() as srv:
        w = window(srv, data_dir=str(tmp_path / "data"))
        w.services.memory.commit("a first note", project="Kitchen")[1].result()
        folder = w.services.memory.store("Kitchen").folder
        w.projects.fill()  # the listing, in flight
        w.close()
        assert not (w.projects.data_watch._watcher.directories() or w.projects.data_watch._watcher.files())
        (folder / "later").mkdir()  # another process writes after the close
        qtbot.wait(50)  # (what inotify queued is delivered; nothing is watched, so nothing is)
        assert not w.projects.data_watch._settle.isActive()

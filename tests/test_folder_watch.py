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

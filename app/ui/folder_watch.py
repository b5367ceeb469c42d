"""Hear when something changes on disk that another process may write: a folder gaining or losing
entries, a file written. A reusable piece of the window: the project list watches the data folder
(a project made with `kelvin project create` while the window is open appears in the switcher);
anything else that must follow another Kelvin process's writes (a project's journal, its ledger)
can watch its own paths the same way.

Built on QFileSystemWatcher (inotify, FSEvents, ReadDirectoryChangesW), debounced: a burst of
changes — a folder and the files made in it — is one :attr:`FolderWatch.changed`, emitted once the
burst has been quiet for ``settle_ms``. A path that does not exist yet is watched from its nearest
existing parent and taken up as soon as it appears; one that goes is watched again when it comes
back. Lives on the UI thread; the watcher itself costs no thread of Kelvin's."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QFileSystemWatcher, QObject, QTimer, Signal

SETTLE_MS = 250


class FolderWatch(QObject):
    changed = Signal()

    def __init__(self, paths=(), settle_ms: int = SETTLE_MS, parent=None):
        super().__init__(parent)
        self._wanted: list[Path] = []
        self._watcher = QFileSystemWatcher(self)
        self._watcher.directoryChanged.connect(self._seen)
        self._watcher.fileChanged.connect(self._seen)
        self._settle = QTimer(self, singleShot=True, interval=settle_ms, timeout=self._settled)
        self.watch(paths)

    def watch(self, paths) -> None:
        """Watch these paths (folders or files) besides those watched already."""
        for p in paths:
            p = Path(p)
            if p not in self._wanted:
                self._wanted.append(p)
        self._follow()

    def stop(self) -> None:
        self._settle.stop()
        watched = self._watcher.files() + self._watcher.directories()
        if watched:
            self._watcher.removePaths(watched)
        self._wanted = []

    def _follow(self) -> None:
        """Each wanted path, or its nearest existing parent until it exists."""
        want = set()
        for p in self._wanted:
            q = p
            while not q.exists() and q.parent != q:
                q = q.parent
            want.add(str(q))
        have = set(self._watcher.files() + self._watcher.directories())
        if want - have:
            self._watcher.addPaths(sorted(want - have))
        stale = have - want
        if stale:
            self._watcher.removePaths(sorted(stale))

    def _seen(self, _path: str) -> None:
        if self._wanted:  # (a change queued before stop() arrives after it: nothing is watched now)
            self._settle.start()

    def _settled(self) -> None:
        self._follow()  # a path made or gone meanwhile
        self.changed.emit()

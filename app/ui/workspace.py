"""What the window's presenters share: the services (once they are up), the project the window is
on, the pools that run work off the UI thread, and where a passing word goes (the status bar).

Every presenter reads the current project from here and follows :attr:`Workspace.project_changed`;
an answer that lands for another project than :attr:`Workspace.project` is dropped by the presenter
that asked for it. Lives on the UI thread only."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.ui.worker import Pools


class Workspace(QObject):
    attached = Signal(object)  # the services are up
    project_changed = Signal(str, bool)  # the project now, and whether a new day's first look greets
    said = Signal(str, int)  # a passing word for the status bar, and how long it stays (ms; 0: until the next)

    def __init__(self, settings, pools: Pools | None = None, parent=None):
        super().__init__(parent)
        self.settings = settings
        self.pools = pools or Pools()
        self.services = None
        self.project = settings.project

    def attach(self, services) -> None:
        self.services = services
        self.attached.emit(services)

    def detach(self) -> None:
        self.services = None

    def set_project(self, name: str, greet: bool = False) -> None:
        self.project = name
        self.project_changed.emit(name, greet)

    def say(self, text: str, ms: int = 4000) -> None:
        self.said.emit(text, ms)

    @property
    def conversation(self):
        return self.services.conversation if self.services is not None else None

"""The window's side of the projects: the header's switcher lists them; a switch, a new project or a
rename runs on the model's worker (after a reply in progress, which is stopped and kept) with the
command line's rules; the project the window is on is remembered as ``project`` in kelvin.toml, so
the next start — window or command line — opens on it."""
from __future__ import annotations

import logging

from PySide6.QtCore import QObject, Signal

from app.ui.folder_watch import FolderWatch
from app.ui.project_switcher import ProjectSwitcher
from app.ui.workspace import Workspace

log = logging.getLogger("kelvin.ui")


class ProjectsPresenter(QObject):
    changing = Signal()  # a switch is on its way (the chat takes no question meanwhile)
    refused = Signal(str)  # a switch did not happen: why, in a sentence (a new project's or a rename's
    #                        refusal is said in the name dialog, asked again)

    def __init__(self, box: ProjectSwitcher, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.box = box
        self.workspace = workspace
        box.show_projects([], workspace.project)
        box.switch_requested.connect(self.switch_project)
        box.create_requested.connect(self.create_project)
        box.rename_requested.connect(self.rename_project)
        workspace.project_changed.connect(lambda name, greet: self.fill())
        workspace.attached.connect(self._attached)
        self.stop_reply = lambda reason: None  # the chat's: a reply streaming for the project before stops
        self.data_watch = FolderWatch(parent=self)  # the data folder: projects made elsewhere appear
        self._watching = False
        self.data_watch.changed.connect(self.fill)

    def _attached(self, services) -> None:
        self._watching = True
        self.data_watch.watch([services.memory.data_dir])

    def stop(self) -> None:
        self._watching = False  # (a listing still on its way when the window closes watches nothing again)
        self.data_watch.stop()

    def project_now(self, name: str, greet: bool = False) -> None:
        """``name`` is the current project: every view shows it from now on; what lands for the one
        before is dropped. ``greet``: a new day's first look says Kelvin resumes from the brief."""
        self.workspace.set_project(name, greet)

    def fill(self) -> None:
        ws = self.workspace
        if ws.services is None:
            return
        c, current, data = ws.conversation, ws.project, ws.services.memory.data_dir

        def look(report):
            folders = [d for d in data.iterdir() if d.is_dir()] if data.is_dir() else []
            return [p.name for p in c.projects.list()], folders

        def seen(found) -> None:
            names, folders = found
            if self._watching:
                self.data_watch.watch(folders)  # a project folder whose journal is still being made
            if current == ws.project:
                self.box.show_projects(names, ws.project)

        ws.pools.run(ws.pools.memory, look, returned=seen)

    def switch_project(self, name: str) -> None:
        """Switch to ``name`` (a reply streaming for the project before is stopped, and kept)."""
        self._change(lambda c: c.switch_project(name), f"Switched to {name}", ("switch", name))

    def create_project(self, name: str) -> None:
        def create(c) -> None:
            c.projects.create(name)  # a name that folds to an existing project's folder is refused, plainly
            c.switch_project(name)

        self._change(create, f"Created {name}", ("create", name))

    def rename_project(self, new: str) -> None:
        old = self.workspace.project
        self._change(lambda c: c.rename_project(new), f"Renamed {old} to {new}", ("rename", new))

    def _change(self, change, said: str, asked: tuple[str, str]) -> None:
        ws = self.workspace
        if ws.services is None:
            return
        c = ws.conversation
        self.stop_reply("switched project")
        self.changing.emit()

        def run(report) -> str:
            change(c)
            remember_project(c.project)
            return c.project

        def done(name: str) -> None:
            self.project_now(name, greet=True)
            ws.say(said, 4000)

        def failed(exc) -> None:
            self.box.show_projects([], ws.project)
            self.fill()
            why = str(exc)[:1].upper() + str(exc)[1:]
            self.refused.emit(why if asked[0] == "switch" else "")  # the chat takes questions again
            if asked[0] != "switch":
                self.box.ask_again(asked[0], asked[1], why.rstrip(".") + ": choose another name.")

        ws.pools.run(ws.pools.model, run, returned=done, errored=failed)  # after the reply (one model thread)


def remember_project(name: str) -> None:
    """The next start (window or command line) opens on this project, unless told otherwise."""
    from app.config import ConfigError, save_setting

    try:
        save_setting("project", name)
    except (ConfigError, OSError) as exc:
        log.warning("the current project could not be saved in kelvin.toml: %s", exc)

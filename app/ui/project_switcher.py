"""The header's project switcher: every project, then "New project…" and "Rename …".

It asks, it does not do: :attr:`switch_requested`, :attr:`create_requested` and
:attr:`rename_requested` go to the window, which runs them with the command line's rules (names
that fold to one folder are one project; a clash is said plainly) and calls :meth:`show_projects`
with the result. While a request is out the box shows the current project, never a half-made
choice.
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QInputDialog, QLineEdit

NEW, RENAME, SHARE = "\x00new", "\x00rename", "\x00share"  # item data of the actions (no project is named so)


class ProjectSwitcher(QComboBox):
    switch_requested = Signal(str)
    create_requested = Signal(str)
    rename_requested = Signal(str)
    share_requested = Signal(str)  # put the project on the studio's server (offered where one is set)

    def __init__(self, parent=None):
        super().__init__(parent, objectName="project")
        self.setMinimumWidth(160)
        self.setToolTip("The project Kelvin remembers for: switch, start a new one, or rename this one")
        self.current = ""
        self.can_share = False  # a studio server is set and the current project is personal
        self.activated.connect(self._picked)

    def show_projects(self, names: list[str], current: str) -> None:
        self.current = current
        self.blockSignals(True)
        self.clear()
        for name in sorted(dict.fromkeys([*names, current]), key=str.lower):
            self.addItem(name, name)
        self.insertSeparator(self.count())
        self.addItem("New project …", NEW)
        self.addItem(f"Rename “{current}” …", RENAME)
        if self.can_share:
            self.addItem(f"Share “{current}” with the team …", SHARE)
        self.setCurrentIndex(self.findData(current))
        self.blockSignals(False)

    def _picked(self, index: int) -> None:
        what = self.itemData(index)
        self.setCurrentIndex(self.findData(self.current))  # the box shows the current one until the window says
        if what == NEW:
            name = self._ask("New project", "Name of the new project:", "")
            if name:
                self.create_requested.emit(name)
        elif what == RENAME:
            name = self._ask("Rename the project", f"New name for “{self.current}”:", self.current)
            if name and name != self.current:
                self.rename_requested.emit(name)
        elif what == SHARE:
            self.share_requested.emit(self.current)
        elif isinstance(what, str) and what != self.current:
            self.switch_requested.emit(what)

    def ask_again(self, kind: str, name: str, why: str) -> None:
        """A new project or a rename was refused (``why``, a sentence): the same question again, with
        the reason where the artist is looking and the name they typed, to change."""
        if kind == "create":
            new = self._ask("New project", f"{why}\nName of the new project:", name)
            if new:
                self.create_requested.emit(new)
        else:
            new = self._ask("Rename the project", f"{why}\nNew name for “{self.current}”:", name)
            if new and new != self.current:
                self.rename_requested.emit(new)

    def _ask(self, title: str, label: str, text: str) -> str:
        name, ok = QInputDialog.getText(self, title, label, QLineEdit.EchoMode.Normal, text)
        return " ".join(name.split()) if ok else ""

"""The brief: the project's live master brief, rendered; the archive of every brief before it; and
one button, "End of day", that writes a new one (progress per domain, cancellable) and shows it.
The view draws and emits; the window runs the brief on the model's worker."""
from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QProgressBar, QPushButton,
                               QSplitter, QTextBrowser, QVBoxLayout, QWidget)

from app.ui.markdown import render

BRIEF_CSS = """
h1 { font-size: 14pt; } h2 { font-size: 12pt; color: #e0914f; margin-top: 10px; } h3 { font-size: 10pt; }
table { border-collapse: collapse; } th, td { border: 1px solid #3a3f47; padding: 2px 6px; }
em { color: #9aa0aa; } a { color: #e0914f; }
"""


class BriefView(QWidget):
    end_of_day = Signal()
    cancel = Signal()
    wanted = Signal()  # the view is shown: what is the brief now?

    def __init__(self, parent=None):
        super().__init__(parent)
        self.page = QTextBrowser(objectName="brief")
        self.page.setOpenLinks(False)
        self.page.setOpenExternalLinks(False)
        self.page.document().setDefaultStyleSheet(BRIEF_CSS)
        self.archive = QListWidget(objectName="briefArchive")
        self.archive.setToolTip("Every brief written before, newest first")
        self.archive.currentItemChanged.connect(self._pick)
        self.button = QPushButton("End of day", objectName="endOfDay")
        self.button.setToolTip("Summarise the day into the master brief; the old one goes to the archive")
        self.button.clicked.connect(self.end_of_day)
        self.stop_button = QPushButton("Cancel", objectName="cancelBrief", enabled=False)
        self.stop_button.setToolTip("Stop; the previous brief stays as it is")
        self.stop_button.clicked.connect(self.cancel)
        self.progress = QProgressBar(objectName="briefProgress", textVisible=True)
        self.progress.hide()
        self.status = QLabel("", objectName="briefStatus", wordWrap=True)
        top = QHBoxLayout()
        top.addWidget(self.button)
        top.addWidget(self.stop_button)
        top.addWidget(self.progress, 1)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.page)
        split.addWidget(self.archive)
        split.setSizes([600, 140])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addLayout(top)
        layout.addWidget(self.status)
        layout.addWidget(split, 1)
        self._live = ""
        self.show_brief("", [])

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.wanted.emit()

    def show_brief(self, text: str, archive: list[tuple[str, str]]) -> None:
        self._live = text
        self.archive.blockSignals(True)
        self.archive.clear()
        live = QListWidgetItem("Current brief")
        live.setData(Qt.ItemDataRole.UserRole, text)
        self.archive.addItem(live)
        for head, body in reversed(archive):
            item = QListWidgetItem(head)
            item.setData(Qt.ItemDataRole.UserRole, body)
            self.archive.addItem(item)
        self.archive.setCurrentRow(0)
        self.archive.blockSignals(False)
        self._show(text)

    def _show(self, text: str) -> None:
        if text.strip():
            self.page.setHtml(render(text)[0])
        else:
            self.page.setHtml("<h2>No brief yet</h2><p>At the end of the day, <b>End of day</b> summarises what was "
                              "decided, tried and left open, with the current settings from the ledger. Tomorrow "
                              "Kelvin starts from it.</p>")

    def _pick(self, item, _previous=None) -> None:
        if item is not None:
            self._show(item.data(Qt.ItemDataRole.UserRole) or "")

    def running(self, on: bool) -> None:
        self.button.setEnabled(not on)
        self.stop_button.setEnabled(on)
        self.progress.setVisible(on)
        if on:
            self.progress.setRange(0, 0)
            self.status.setText("Starting the brief …")

    def step(self, done: int, total: int, what: str) -> None:
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(done)
        self.status.setText(what)

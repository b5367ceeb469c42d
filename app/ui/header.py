"""The window's header: the project switcher and the mode on the left; a shared project's team state
(app.ui.team_state), Ollama's and the VRAM guard's state, Setup… and an always-on-top switch on the right.

Where one row would not fit (or below NARROW_PX, a sidebar beside the 3D app) it turns compact: the
states shrink to a coloured dot and a word ("● Ollama", "● GPU"; all of it in the tooltip), Setup…
and On top go into a "⋯" menu, and the right group takes a second row if even that does not fit
beside the project and the mode. The right group never holds the window wide: its width is not a
minimum, and the row is split before it would be cut."""
from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontMetrics
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QMenu, QToolButton, QVBoxLayout, QWidget

from app.ui.project_switcher import ProjectSwitcher

NARROW_PX = 640  # narrower than this, the window is a sidebar: a compact header
HEALTH_COLOURS = {"ok": "#7fc98a", "warn": "#f0b43c", "bad": "#e06c5a", "": "#9aa0aa"}  # the chips' palette


def _first_word(text: str) -> str:
    return text.split()[0].rstrip(":") if text.strip() else ""


class Header(QWidget):
    setup_wanted = Signal()
    on_top_toggled = Signal(bool)

    def __init__(self, parent=None):
        super().__init__(parent, objectName="header")
        self.project_box = ProjectSwitcher()
        self.mode_box = QComboBox(objectName="mode")
        self.ollama_label = QLabel("Ollama: …", objectName="ollama", textFormat=Qt.TextFormat.RichText)
        self.gpu_label = QLabel("", objectName="gpu", textFormat=Qt.TextFormat.RichText)
        self.team_label = QLabel("", objectName="team", textFormat=Qt.TextFormat.RichText)  # a shared project's
        self.team_label.hide()
        self.on_top = QToolButton(objectName="ontop", text="On top", checkable=True)
        self.on_top.setToolTip("Keep Kelvin above other windows")
        self.on_top.toggled.connect(self.on_top_toggled)
        self.setup_button = QToolButton(objectName="setupButton", text="Setup…")
        self.setup_button.setToolTip("What Kelvin needs (Ollama, models, GPU, data folder), and the fix for "
                                     "what is missing")
        self.setup_button.clicked.connect(lambda: self.setup_wanted.emit())
        # a narrow window's menu for the rest: Setup… and On top, which take the header's room there
        self.more = QToolButton(objectName="more", text="⋯", popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more.setToolTip("Setup and Keep on top")
        more_menu = QMenu(self.more)
        more_menu.addAction("Setup…", lambda: self.setup_wanted.emit())
        self._on_top_action = more_menu.addAction("Keep Kelvin on top")
        self._on_top_action.setCheckable(True)
        self._on_top_action.toggled.connect(self.on_top.setChecked)
        self.on_top.toggled.connect(self._on_top_action.setChecked)
        self.more.setMenu(more_menu)
        self.more.hide()
        self.header_right = QWidget(objectName="headerRight")
        self.header_right.setMinimumWidth(1)  # its width asks for a wide window, never forces one
        right = QHBoxLayout(self.header_right)
        right.setContentsMargins(0, 0, 0, 0)
        for w in (self.team_label, self.gpu_label, self.ollama_label, self.setup_button, self.on_top, self.more):
            right.addWidget(w)
        self._top = QHBoxLayout()
        for w in (self.project_box, self.mode_box):
            self._top.addWidget(w)
        self._top.addStretch(1)
        self._top.addWidget(self.header_right)
        self._second = QHBoxLayout()
        self._second.addStretch(1)
        rows = QVBoxLayout(self)
        rows.setContentsMargins(8, 6, 8, 0)
        rows.setSpacing(4)
        rows.addLayout(self._top)
        rows.addLayout(self._second)
        self._narrow: bool | None = None

    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self.fit(self.width())

    def fit(self, width: int) -> None:
        left = sum(w.sizeHint().width() for w in (self.project_box, self.mode_box)) + 3 * 12 + 16
        states = [w for w in (self.team_label, self.gpu_label, self.ollama_label) if not w.isHidden()]
        full = left + sum(QFontMetrics(w.font()).horizontalAdvance(w.property("full") or w.text()) + 28
                          for w in states) + 140
        compact = width < max(NARROW_PX, full)
        if compact != self._narrow:
            self._narrow = compact
            for label in (self.team_label, self.gpu_label, self.ollama_label):
                self._show_state(label)
            self.setup_button.setVisible(not compact)
            self.on_top.setVisible(not compact)
            self.more.setVisible(compact)
        small = sum(QFontMetrics(w.font()).horizontalAdvance("● " + _first_word(w.property("full") or "")) + 16
                    for w in states) + self.more.sizeHint().width() + 12
        two_rows = compact and width < left + small
        if two_rows == (self._second.indexOf(self.header_right) >= 0):
            return
        if two_rows:
            self._top.removeWidget(self.header_right)
            self._second.addWidget(self.header_right)
        else:
            self._second.removeWidget(self.header_right)
            self._top.addWidget(self.header_right)

    def set_state(self, label: QLabel, text: str, tip: str | None = None, health: str = "") -> None:
        """A header label's state: all of it at full width, a dot in its colour and its first word
        when narrow. ``health`` is "ok", "warn", "bad" or "" (not known, or not watched)."""
        label.setProperty("full", text)
        label.setProperty("health", health)
        if tip is not None:
            label.setProperty("tip", tip)
        self._show_state(label)

    def _show_state(self, label: QLabel) -> None:
        full = label.property("full") or ""
        tip = label.property("tip") or ""
        dot = f'<span style="color:{HEALTH_COLOURS.get(label.property("health") or "", HEALTH_COLOURS[""])}">●</span>'
        if self._narrow:
            word = _first_word(full)
            label.setText(f"{dot} {word}" if word else "")
            label.setToolTip("\n".join(x for x in (full, tip) if x))
        else:
            label.setText(f"{dot} {html.escape(full)}" if full else "")
            label.setToolTip(tip)

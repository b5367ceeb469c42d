"""The tray icon: its colour is the VRAM guard's state; its menu shows the window, frees the VRAM,
quits; its balloons carry Kelvin's notifications. Where the desktop has no tray (or the tray
cannot show messages), notifications go to the window's banner instead."""
from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction, QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

STATE_COLOURS = {"normal": "#7fc98a", "yielding": "#f0b43c", "yielded": "#e07a2f", "recovering": "#f0b43c",
                 "off": "#6b717c"}


def state_icon(state: str) -> QIcon:
    pix = QPixmap(64, 64)
    pix.fill(Qt.GlobalColor.transparent)
    p = QPainter(pix)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    p.setBrush(QColor("#1e2024"))
    p.setPen(Qt.PenStyle.NoPen)
    p.drawRoundedRect(2, 2, 60, 60, 14, 14)
    p.setBrush(QColor(STATE_COLOURS.get(state, "#6b717c")))
    p.drawEllipse(14, 14, 36, 36)
    p.end()
    return QIcon(pix)


class Tray(QObject):
    show_window = Signal()
    free_now = Signal()
    end_of_day = Signal()
    quit = Signal()
    keep_running_changed = Signal(bool)  # closing the window leaves Kelvin in the tray

    def __init__(self, parent=None):
        super().__init__(parent)
        self.available = QSystemTrayIcon.isSystemTrayAvailable()
        self.icon = QSystemTrayIcon(state_icon("off"), self)
        self.icon.setToolTip("Kelvin")
        menu = QMenu()
        for text, signal in (("Show Kelvin", self.show_window), ("Free VRAM now", self.free_now),
                             ("End of day", self.end_of_day), ("Quit", self.quit)):
            action = QAction(text, menu)
            action.triggered.connect(signal)
            menu.addAction(action)
            if text == "Free VRAM now":
                self.keep_running = QAction("Keep running in the tray when closed", menu, checkable=True)
                self.keep_running.toggled.connect(self.keep_running_changed)
                menu.addAction(self.keep_running)
        self.free_action = next(a for a in menu.actions() if a.text() == "Free VRAM now")
        self._menu = menu
        self.icon.setContextMenu(menu)
        self.icon.activated.connect(lambda reason: self.show_window.emit()
                                    if reason == QSystemTrayIcon.ActivationReason.Trigger else None)
        self.state = "off"
        self.project = ""
        self.gpu = ""  # what the tooltip says of the GPU
        if self.available:
            self.icon.show()

    @property
    def can_notify(self) -> bool:
        return self.available and self.icon.isVisible() and QSystemTrayIcon.supportsMessages()

    def set_state(self, state: str, reason: str = "") -> None:
        self.state = state
        self.icon.setIcon(state_icon(state))
        self.gpu = f"GPU: {state}" + (f" — {reason}" if reason else "")
        self._tooltip()

    def set_project(self, name: str) -> None:
        self.project = name
        self._tooltip()

    def set_gpu(self, watched: bool, why: str = "") -> None:
        """Without a GPU to watch, the GPU action says why instead of silently doing nothing."""
        self.free_action.setEnabled(watched)
        self.free_action.setText("Free VRAM now" if watched else "Free VRAM now — no NVIDIA GPU to free")
        if not watched:
            self.icon.setIcon(state_icon("off"))
            self.gpu = f"GPU: not watched ({why})" if why else "GPU: not watched"
            self._tooltip()

    def _tooltip(self) -> None:
        self.icon.setToolTip("\n".join(x for x in (f"Kelvin — {self.project}" if self.project else "Kelvin", self.gpu) if x))

    def notify(self, title: str, text: str) -> bool:
        """True if the tray showed it; False: the caller shows it in the window."""
        if not self.can_notify:
            return False
        self.icon.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 8000)
        return True

    def hide(self) -> None:
        self.icon.hide()

"""The tray icon: Kelvin's thermometer, its column in the colour of Kelvin's state (the worst of the
model's and the VRAM guard's: app.ui.icon); its tooltip says both in words; its menu shows the
window, frees the VRAM, writes the brief, quits; its balloons carry Kelvin's notifications where the
window is not in front. Where the desktop has no tray (or the tray cannot show messages),
notifications go to the window's banner instead."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu, QSystemTrayIcon

from app.ui.icon import kelvin_icon, worst


class Tray(QObject):
    show_window = Signal()
    free_now = Signal()
    end_of_day = Signal()
    quit = Signal()
    keep_running_changed = Signal(bool)  # closing the window leaves Kelvin in the tray
    health_changed = Signal(str)  # the icon's state now: "ok", "warn", "bad" or "" (the window's icon follows)

    def __init__(self, parent=None):
        super().__init__(parent)
        self.available = QSystemTrayIcon.isSystemTrayAvailable()
        self.icon = QSystemTrayIcon(kelvin_icon(""), self)
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
        self.health = ""
        self.project = ""
        self.model = ""  # what the tooltip says of Ollama and the model
        self.model_health = ""
        self.gpu = ""  # … and of the GPU
        self.gpu_health = ""
        self.cannot = ""  # why the guard cannot unload Kelvin's model on this server ("" when it can)
        if self.available:
            self.icon.show()

    @property
    def can_notify(self) -> bool:
        return self.available and self.icon.isVisible() and QSystemTrayIcon.supportsMessages()

    def set_model(self, words: str, tip: str, health: str) -> None:
        """Ollama and the chat model, as the header says them."""
        self.model, self.model_health = words + (f" — {tip}" if health != "ok" and tip else ""), health
        self._show()

    def set_gpu_state(self, words: str, reason: str, health: str) -> None:
        """The VRAM guard's state, in the header's words."""
        self.gpu, self.gpu_health = words + (f" — {reason}" if reason else ""), health
        self._show()

    def set_project(self, name: str) -> None:
        self.project = name
        self._show()

    def set_gpu(self, watched: bool, why: str = "") -> None:
        """Without a GPU to watch, the GPU action says why instead of silently doing nothing."""
        self.free_action.setEnabled(watched)
        self.free_action.setText("Free VRAM now" if watched else "Free VRAM now — no NVIDIA GPU to free")
        if not watched:
            self.gpu, self.gpu_health = (f"GPU: not watched ({why})" if why else "GPU: not watched"), ""
            self._show()

    def set_unload_problem(self, cannot: str) -> None:
        """A model server that cannot unload on request: the menu and the tooltip say Free VRAM cannot free it."""
        self.cannot = cannot
        if self.free_action.isEnabled():
            self.free_action.setText("Free VRAM now — the model server keeps its model loaded" if cannot
                                     else "Free VRAM now")
        self.free_action.setToolTip(cannot)
        self._show()

    def _show(self) -> None:
        health = worst(self.model_health, self.gpu_health)
        if health != self.health:
            self.health = health
            self.icon.setIcon(kelvin_icon(health))
            self.health_changed.emit(health)
        cannot = "Kelvin cannot unload its model on this model server" if self.cannot else ""
        lines = [f"Kelvin — {self.project}" if self.project else "Kelvin", self.model, self.gpu, cannot]
        self.icon.setToolTip("\n".join(x for x in lines if x))

    def notify(self, title: str, text: str) -> bool:
        """True if the tray showed it; False: the caller shows it in the window."""
        if not self.can_notify:
            return False
        self.icon.showMessage(title, text, QSystemTrayIcon.MessageIcon.Information, 8000)
        return True

    def hide(self) -> None:
        self.icon.hide()

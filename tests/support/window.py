"""What a test does at the window as an artist would: type a message and send it, open the memory
view. The window itself is the ``window`` fixture (tests/conftest.py)."""
from __future__ import annotations

from PySide6.QtCore import Qt


def send(qtbot, w, text: str) -> None:
    """Type ``text`` into the message box and press Enter."""
    qtbot.keyClicks(w.chat.composer, text)
    qtbot.keyClick(w.chat.composer, Qt.Key.Key_Return)


def open_browser(qtbot, w) -> None:
    """Ctrl+K: the memory view, where past messages are browsed."""
    qtbot.keyClick(w.chat.transcript, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert w.views.currentWidget() is w.memory

"""The Setup panel in a window 400 px wide beside a DCC: every row fits, nothing scrolls sideways
and no text is cut at the right edge (the model server's kinds have long names). A real window."""
from __future__ import annotations

from PySide6.QtWidgets import QScrollArea, QWidget

from tests.support.ollama_server import OllamaTestServer


def test_the_setup_panel_fits_a_400_px_window(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        w.resize(400, 900)
        w.show_setup(check=False)
        panel = w._setup()
        qtbot.waitUntil(lambda: panel.isVisible() and w.width() == 400, timeout=5_000)
        scroll = panel.findChild(QScrollArea)
        body = scroll.widget()
        qtbot.waitUntil(lambda: body.width() <= scroll.viewport().width(), timeout=5_000)
        assert scroll.horizontalScrollBar().maximum() == 0
        assert body.minimumSizeHint().width() <= scroll.viewport().width()
        chooser = panel.findChild(QWidget, "serverChooser")
        assert chooser is not None and chooser.geometry().right() <= body.width()

"""The window from a 360 px sidebar beside the 3D app to a full screen (issue 23, first part): every
view at 360, 480, 900 and 1600 px wide, with real services — the window takes the width asked for,
and no visible widget is clipped by its parent, squeezed below its own minimum or overlaps another."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QTextDocumentFragment

from tests.support.layout_check import problems


@pytest.mark.parametrize("width", [360, 480, 900, 1600])
def test_every_view_fits_from_a_sidebar_to_a_full_screen(qtbot, window, server, width):
    w = window(server)
    qtbot.waitUntil(lambda: (w.header.ollama_label.property("full") or w.header.ollama_label.text()).startswith("Ollama "),
                    timeout=15_000)  # the header says what it will say all day
    for view in range(w.tabs.count()):
        w.tabs.setCurrentIndex(view)
        pages = getattr(w.views.currentWidget(), "pages", None)  # the memory view's Messages and Settings
        for page in range(pages.count() if pages is not None else 1):
            if pages is not None:
                pages.setCurrentIndex(page)
            w.resize(width, 900)

            def fits(view=view, page=page):
                assert w.width() == width, f"view {view}: the window would not be {width} px wide"
                assert problems(w) == [], f"view {view}, page {page}, {width} px"

            qtbot.waitUntil(fits, timeout=5000)  # once the layout has followed the new width


def test_a_narrow_window_has_a_compact_header_that_still_says_everything(qtbot, window, server):
    w = window(server)
    qtbot.waitUntil(lambda: (w.header.ollama_label.property("full") or "").startswith("Ollama "), timeout=15_000)
    full = w.header.ollama_label.property("full")
    w.resize(1600, 900)
    qtbot.waitUntil(lambda: QTextDocumentFragment.fromHtml(w.header.ollama_label.text()).toPlainText() == f"● {full}",
                    timeout=5000)  # the header has followed the new width
    shown = QTextDocumentFragment.fromHtml(w.header.ollama_label.text()).toPlainText()
    assert shown == f"● {full}" and w.header.setup_button.isVisible() and w.header.on_top.isVisible() and not w.header.more.isVisible()
    assert "#7fc98a" in w.header.ollama_label.text()  # a green dot: Ollama answers
    assert w.header.header_right.geometry().top() < w.header.project_box.geometry().bottom()  # one row
    w.resize(360, 900)
    qtbot.waitUntil(lambda: QTextDocumentFragment.fromHtml(w.header.ollama_label.text()).toPlainText() == "● Ollama",
                    timeout=5000)
    assert QTextDocumentFragment.fromHtml(w.header.ollama_label.text()).toPlainText() == "● Ollama"
    assert full in w.header.ollama_label.toolTip() and "#7fc98a" in w.header.ollama_label.text()
    assert not w.header.setup_button.isVisible() and not w.header.on_top.isVisible() and w.header.more.isVisible()
    items = [a.text() for a in w.header.more.menu().actions()]
    assert items == ["Setup…", "Keep Kelvin on top"]  # the rest, in the ⋯ menu
    w.header.more.menu().actions()[1].trigger()
    assert w.header.on_top.isChecked()  # one switch, whichever way it is reached
    w.header.on_top.setChecked(False)
    assert not w.header.more.menu().actions()[1].isChecked()
    server.stop()  # Ollama goes away: the dot turns red, the tooltip says why
    w.status.check_ollama()
    qtbot.waitUntil(lambda: "#e06c5a" in w.header.ollama_label.text(), timeout=10_000)
    assert "not running" in w.header.ollama_label.toolTip()
    w.resize(1600, 900)
    qtbot.waitUntil(lambda: "not running" in w.header.ollama_label.text() and w.header.setup_button.isVisible(),
                    timeout=5000)  # and back


def test_at_full_screen_the_transcript_keeps_a_readable_line_in_the_middle(qtbot, window, server):
    from app.ui.chat_view import LINE_CHARS

    w = window(server)
    transcript = w.chat.transcript
    for width in (400, 1600, 400):
        w.resize(width, 900)

        def readable(width=width):
            fmt = transcript.document().rootFrame().frameFormat()
            text_px = transcript.viewport().width() - fmt.leftMargin() - fmt.rightMargin()
            if width == 400:
                assert fmt.leftMargin() == 0  # a sidebar: every pixel for the text
            else:
                assert fmt.leftMargin() == fmt.rightMargin() > 100  # centred
                assert abs(text_px - transcript.fontMetrics().averageCharWidth() * LINE_CHARS) <= 2

        qtbot.waitUntil(readable, timeout=5000)  # once the layout has followed the new width


@pytest.mark.parametrize("scale", ["1", "1.5"])
def test_nothing_clips_at_100_and_150_percent_scaling(scale):
    """A fresh process per scale (Qt reads the factor when it starts): every view at a sidebar's
    width and a full screen's, in device-independent pixels."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "QT_SCALE_FACTOR": scale, "QT_QPA_PLATFORM": "offscreen"}
    proc = subprocess.run([sys.executable, "-m", "tests.support.layout_check", "360", "480", "1600"], cwd=root,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]

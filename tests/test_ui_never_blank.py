"""The chat is never blank and never too wide (issue 33): whatever happened while it was hidden —
another tab, a sidebar's width or a full screen's, minimised and restored, another font or screen —
when it is shown again its text fills the width a sidebar has, or keeps a readable line at full
screen; and what was asked meanwhile is there. A real window, real services, read back from its
pixels."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QApplication

from app.ui.chat_view import LINE_CHARS
from tests.support.seen import ink

SIZES = {"full": (1600, 900), "sidebar": (400, 900), "middle": (900, 900)}


def _seed(w, n: int = 4) -> None:
    for i in range(n):
        w.chat.add("user", f"Question {i}: the fog in the forest shot is too dense, what about the lights? " * 2)
        w.chat.add("assistant", f"Answer {i}: lower the fog density and raise the key light; " * 12)


def _step(qtbot, w, step: str) -> None:
    """One thing that happens to the window; returns once it has happened and the events it caused
    have been delivered."""
    if step in SIZES:
        w.resize(*SIZES[step])
        done = lambda: w.width() == max(SIZES[step][0], w.minimumWidth())  # noqa: E731 — no narrower than it can be
    elif step.startswith("tab:"):
        view = ["chat", "memory", "gpu", "brief"].index(step[4:])
        w.show_view(view)
        done = lambda: w.views.currentIndex() == view and w.views.currentWidget().isVisible()  # noqa: E731
    elif step == "minimise":
        w.showMinimized()
        done = w.isMinimized
    elif step == "restore":
        w.showNormal()
        done = lambda: not w.isMinimized()  # noqa: E731
    else:  # "font": another screen's or scale's font, as a hidden chat would get it
        font = QFont(w.chat.transcript.font())
        font.setPointSizeF(font.pointSizeF() * 1.4)
        w.chat.transcript.setFont(font)
        done = lambda: w.chat.transcript.font().pointSizeF() == font.pointSizeF()  # noqa: E731
    qtbot.waitUntil(done, timeout=5000)
    QApplication.processEvents()


def assert_seen_whole(qtbot, w) -> None:
    """The transcript as the artist sees it: text drawn, inside the view, as wide as the view in a
    sidebar and about LINE_CHARS characters at full screen, with nothing to scroll sideways."""
    view = w.chat.transcript.viewport()
    measure = w.chat.transcript.fontMetrics().averageCharWidth() * LINE_CHARS

    def whole():
        width = view.width()
        left, right, inked = ink(view)
        assert inked > 2000, "the chat is blank"
        assert w.chat.transcript.horizontalScrollBar().maximum() == 0, "the chat scrolls sideways"
        assert 0 <= left and right < width
        if width > measure + 40:
            assert right - left <= measure + 16, f"lines {right - left} px long in a {width} px view"
            assert abs((left + right) / 2 - width / 2) < width * 0.1  # in the middle
        else:
            assert right - left >= width * 0.7, f"a {right - left} px column in a {width} px sidebar"

    qtbot.waitUntil(whole, timeout=3000)  # once what the window was asked to do has been drawn


@pytest.mark.parametrize("steps", [
    ["full", "tab:memory", "sidebar", "tab:chat"],  # the blank chat of issue 33
    ["sidebar", "tab:brief", "full", "tab:chat"],  # and the 1,600-px lines
    ["full", "tab:gpu", "sidebar", "tab:memory", "middle", "full", "sidebar", "tab:chat"],
    ["full", "minimise", "sidebar", "restore"],
    ["sidebar", "tab:memory", "font", "full", "tab:chat"],
])
def test_the_chat_is_never_blank_nor_too_wide_whatever_happened_while_hidden(qtbot, window, server, steps):
    w = window(server)
    _seed(w)
    for step in steps:
        _step(qtbot, w, step)
    assert w.views.currentWidget() is w.chat and w.chat.isVisible()
    assert_seen_whole(qtbot, w)


def test_what_was_asked_while_the_chat_was_hidden_is_there_when_it_comes_back(qtbot, window, server):
    w = window(server)
    _seed(w, 2)
    w.resize(1600, 900)
    qtbot.waitUntil(lambda: w.width() == 1600, timeout=5000)
    w.show_view(1)
    w.resize(400, 900)
    server.queue_reply("Lower the **fog density** to 0.02.")
    w.turns.ask("and the fog density?")  # from the tray's or the self-test's side: the chat is hidden
    qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
    w.show_view(0)
    assert_seen_whole(qtbot, w)
    bar = w.chat.transcript.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.value() == bar.maximum(), timeout=5000)  # on the latest: the answer is in view
    doc = w.chat.transcript.document()
    block = doc.find("fog density to 0.02").block()
    rect = doc.documentLayout().blockBoundingRect(block)
    assert rect.width() <= w.chat.transcript.viewport().width()
    assert rect.bottom() - bar.value() <= w.chat.transcript.viewport().height()  # inside the view

"""The chat is never blank and never too wide (issue 33): whatever happened while it was hidden —
another tab, a sidebar's width or a full screen's, minimised and restored, another font or screen —
when it is shown again its text fills the width a sidebar has, or keeps a readable line at full
screen; and what was asked meanwhile is there. A real window, real services, read back from its
pixels."""
from __future__ import annotations

import pytest
from PySide6.QtGui import QFont

from app.ui.chat_view import LINE_CHARS
from tests.support.ollama_server import OllamaTestServer
from tests.support.seen import ink
from tests.test_ui_window import window  # noqa: F401 — the fixture

SIZES = {"full": (1600, 900), "sidebar": (400, 900), "middle": (900, 900)}


@pytest.fixture
def server():
    with OllamaTestServer() as srv:
        yield srv


def _seed(w, n: int = 4) -> None:
    for i in range(n):
        w.chat.add("user", f"Question {i}: the fog in the forest shot is too dense, what about the lights? " * 2)
        w.chat.add("assistant", f"Answer {i}: lower the fog density and raise the key light; " * 12)


def _step(qtbot, w, step: str) -> None:
    if step in SIZES:
        w.resize(*SIZES[step])
    elif step.startswith("tab:"):
        w.show_view(["chat", "memory", "gpu", "brief"].index(step[4:]))
    elif step == "minimise":
        w.showMinimized()
    elif step == "restore":
        w.showNormal()
    elif step == "font":  # another screen's or scale's font, as a hidden chat would get it
        font = QFont(w.chat.transcript.font())
        font.setPointSizeF(font.pointSizeF() * 1.4)
        w.chat.transcript.setFont(font)
    qtbot.wait(40)


def assert_seen_whole(qtbot, w) -> None:
    """The transcript as the artist sees it: text drawn, inside the view, as wide as the view in a
    sidebar and about LINE_CHARS characters at full screen, with nothing to scroll sideways."""
    view = w.chat.transcript.viewport()
    width = view.width()
    measure = w.chat.transcript.fontMetrics().averageCharWidth() * LINE_CHARS
    qtbot.waitUntil(lambda: ink(view)[2] > 2000, timeout=3000)  # not blank
    left, right, _ = ink(view)
    assert w.chat.transcript.horizontalScrollBar().maximum() == 0, "the chat scrolls sideways"
    assert 0 <= left and right < width
    if width > measure + 40:
        assert right - left <= measure + 16, f"lines {right - left} px long in a {width} px view"
        assert abs((left + right) / 2 - width / 2) < width * 0.1  # in the middle
    else:
        assert right - left >= width * 0.7, f"a {right - left} px column in a {width} px sidebar"


@pytest.mark.parametrize("steps", [
    ["full", "tab:memory", "sidebar", "tab:chat"],  # the blank chat of issue 33
    ["sidebar", "tab:brief", "full", "tab:chat"],  # and the 1,600-px lines
    ["full", "tab:gpu", "sidebar", "tab:memory", "middle", "full", "sidebar", "tab:chat"],
    ["full", "minimise", "sidebar", "restore"],
    ["sidebar", "tab:memory", "font", "full", "tab:chat"],
])
def test_the_chat_is_never_blank_nor_too_wide_whatever_happened_while_hidden(qtbot, window, server, steps):  # noqa: F811
    w = window(server)
    _seed(w)
    for step in steps:
        _step(qtbot, w, step)
    assert w.views.currentWidget() is w.chat and w.chat.isVisible()
    assert_seen_whole(qtbot, w)


def test_what_was_asked_while_the_chat_was_hidden_is_there_when_it_comes_back(qtbot, window, server):  # noqa: F811
    w = window(server)
    _seed(w, 2)
    w.resize(1600, 900)
    qtbot.wait(40)
    w.show_view(1)
    w.resize(400, 900)
    server.queue_reply("Lower the **fog density** to 0.02.")
    w.turns.ask("and the fog density?")  # from the tray's or the self-test's side: the chat is hidden
    qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
    w.show_view(0)
    qtbot.wait(60)
    assert_seen_whole(qtbot, w)
    bar = w.chat.transcript.verticalScrollBar()
    assert bar.value() == bar.maximum()  # on the latest: the answer is in view
    doc = w.chat.transcript.document()
    block = doc.find("fog density to 0.02").block()
    rect = doc.documentLayout().blockBoundingRect(block)
    assert rect.width() <= w.chat.transcript.viewport().width()
    assert rect.bottom() - bar.value() <= w.chat.transcript.viewport().height()  # inside the view

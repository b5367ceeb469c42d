"""The window answers while it works (docs/benchmarks.md §17, "Stop 39"): a page of messages written
elsewhere, a whole transcript drawn again and the settings table's columns go in a slice of time at a
time, the event loop running between the slices, and what is drawn in the end is what one draw in a
single go gives; a search typed in the memory browser does not read the project's settings again
unless something was written. A real window on real services, or the real view; the slice is set to
nothing so that each slice is one piece and the tests do not depend on the machine's speed."""
from __future__ import annotations

from PySide6.QtCore import QTimer

from app.core.records import Message
from app.ui.chat_view import ChatView
from app.ui.settings_view import CURRENT_COLUMNS, SettingsPanel
from tests.support.window import open_browser
from tests.test_ui_settings_narrow import _rows

ANSWER = ("Try **GI clamp** 10 against fireflies:\n\n- **samples**: 512\n- **denoiser**: on\n\n"
          "```text\nGI clamp      10\nsamples       512\n```\n\n| setting | value |\n|---|---|\n| GI clamp | 10 |\n")


def _turns(n: int, start_ms: int = 1_763_800_000_000) -> list[Message]:
    return [Message(id=f"m{i:03d}", project="default", conversation_id="c", role="user" if i % 2 == 0 else "assistant",
                    speaker="", text=f"question {i}: GI clamp?" if i % 2 == 0 else f"answer {i}. {ANSWER}",
                    ts_ms=start_ms + i * 60_000) for i in range(n)]


class Turns:
    """At each turn of the event loop (a zero-time timer): the entries in the transcript's document,
    and the entries it has."""

    def __init__(self, chat: ChatView):
        self.chat, self.drawn = chat, []
        self.timer = QTimer(interval=0, timeout=lambda: self.drawn.append((len(chat._starts), len(chat.entries))))
        self.timer.start()

    def stop(self) -> list[tuple[int, int]]:
        self.timer.stop()
        return self.drawn


def _at_once(chat: ChatView) -> str:
    """The transcript drawn again in a single go: what the sliced draw must have made."""
    chat._render()
    chat._drawing.finish()
    return chat.transcript.toHtml()


def test_a_page_written_elsewhere_goes_in_a_slice_at_a_time_and_the_window_answers_between(qtbot, window, server):
    w = window(server)
    w.chat._drawing.slice_s = 0.0  # one entry a slice
    memory = w.services.memory
    memory.commit("the first question", project="default")
    memory.flush()
    qtbot.waitUntil(lambda: len(w.chat.entries) == 1 and not w.chat.drawing, timeout=10_000)
    turns = Turns(w.chat)
    for m in _turns(30, start_ms=memory.list("default")[-1].ts_ms + 1000):  # a terminal beside the window
        memory.commit(m.text, role=m.role, project="default", ts_ms=m.ts_ms)
    memory.flush()
    qtbot.waitUntil(lambda: len(w.chat.entries) == 31 and not w.chat.drawing, timeout=15_000)
    drawn = turns.stop()
    # the event loop ran while the page was half in the document (drawn in one go, it never is)
    assert [(d, n) for d, n in drawn if 1 < d < n], "the page went in without the window answering between its entries"
    text = w.chat.transcript.toPlainText()
    assert text.index("the first question") < text.index("question 0: GI clamp?") < text.index("answer 29.")
    assert w.chat.transcript.toHtml() == _at_once(w.chat)


def test_tokens_and_chips_arriving_while_the_transcript_is_drawn_land_where_they_belong(qtbot):
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(700, 600)
    chat.show()
    qtbot.waitExposed(chat)
    chat._drawing.slice_s = 0.0
    chat.set_history(_turns(24), more=True)
    assert chat.drawing and len(chat._starts) < 24  # the rest follows on the next turns
    chat.add("user", "and the caustics?")
    said = chat.add("assistant", "", "streaming")
    for word in "Caustics **off** for the glass, filter glossy 1.0.".split(" "):
        chat.append(word + " ")
    chat.finish("Caustics **off** for the glass, filter glossy 1.0.", "complete", ["a note from Tuesday"])
    assert said in chat.entries
    qtbot.waitUntil(lambda: not chat.drawing, timeout=10_000)
    text = chat.transcript.toPlainText()
    assert text.index("question 0: GI clamp?") < text.index("answer 23.") < text.index("and the caustics?") \
        < text.index("Caustics off for the glass")
    assert "writing …" not in text and "What Kelvin looked at (1)" in text
    assert "↑ Earlier messages" in text.splitlines()[0]
    assert chat.transcript.toHtml() == _at_once(chat)


def test_earlier_messages_drawn_a_slice_at_a_time_leave_the_artist_where_they_were_reading(qtbot):
    chat = ChatView()
    qtbot.addWidget(chat)
    chat.resize(700, 500)
    chat.show()
    qtbot.waitExposed(chat)
    turns = _turns(60)
    chat.set_history(turns[30:], more=True)
    chat._drawing.finish()
    bar = chat.transcript.verticalScrollBar()
    qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=5000)
    bar.setValue(bar.minimum() + 40)  # reading near the top
    reading = chat.transcript.cursorForPosition(chat.transcript.viewport().rect().center()).block().text()
    chat._drawing.slice_s = 0.0
    chat.prepend_history(turns[:30], more=False)
    assert chat.drawing
    qtbot.waitUntil(lambda: not chat.drawing, timeout=10_000)
    qtbot.wait(50)  # the layout settles
    assert chat.transcript.cursorForPosition(chat.transcript.viewport().rect().center()).block().text() == reading
    assert chat.transcript.toPlainText().index("question 0: GI clamp?") < chat.transcript.toPlainText().index(reading)


def test_the_settings_columns_are_fitted_one_a_slice_as_wide_as_in_one_go(qtbot):
    panel = SettingsPanel()
    qtbot.addWidget(panel)
    panel.resize(1200, 500)
    panel.show()
    qtbot.waitExposed(panel)
    panel._fitting.slice_s = 0.0
    panel.show_current(_rows())
    assert panel.fitting  # the other columns follow on the next turns
    qtbot.waitUntil(lambda: not panel.fitting, timeout=5000)
    sliced = [panel.table.columnWidth(c) for c in range(len(CURRENT_COLUMNS) - 1)]  # (the last one stretches)
    panel.table.resizeColumnsToContents()
    assert sliced == [panel.table.columnWidth(c) for c in range(len(CURRENT_COLUMNS) - 1)]
    assert panel.table.columnWidth(1) > 74  # "Max secondary ray intensity" whole: wider than the default


def test_a_search_typed_reads_the_settings_again_only_once_something_was_written(qtbot, window, server):
    w = window(server)
    memory, ledger = w.services.memory, w.services.conversation.ledger
    memory.commit("In Octane, set GI clamp to 25", ts_ms=1_763_800_000_000)
    memory.flush()
    reads = []
    current = ledger.current
    ledger.current = lambda *a, **k: reads.append(a) or current(*a, **k)  # counted, and read for real
    open_browser(qtbot, w)
    panel = w.memory.settings
    qtbot.waitUntil(lambda: panel.current.rowCount() == 1 and w.pools.busy() == 0, timeout=10_000)
    assert len(reads) == 1
    for text in ("gi clamp", "octane fireflies"):
        w.memory.search.setText(text)
        w.memory.refresh()  # what the debounce does
        qtbot.waitUntil(lambda: w.pools.busy() == 0, timeout=10_000)
    assert len(reads) == 1  # nothing was written: the settings shown are still the settings
    memory.commit("ok, GI clamp 10 it is", ts_ms=1_763_800_060_000)  # a terminal beside the window
    memory.flush()
    w.memory.search.setText("clamp")
    w.memory.refresh()
    qtbot.waitUntil(lambda: panel.current.rowCount() == 1 and panel.current.index(0, 2).data() == "10", timeout=10_000)
    assert len(reads) >= 2


def test_the_windows_services_come_up_with_the_settings_rules_built_and_a_short_gil_switch(server):
    """The start-up worker builds the settings rules: left to the writer, importing and compiling
    their patterns with the first message stored held the GIL the window needed for 40-70 ms. And the
    window's thread waits 1 ms, not 5, before a thread holding the GIL is asked to let go."""
    import gc
    import sys

    from app.config import load
    from app.ui.app import UI_SWITCH_S, start_services

    before = sys.getswitchinterval()
    services = start_services(load({"ollama_host": server.host, "vram_guard": False}))
    try:
        assert services.memory._extractor is not None
        assert services.memory.extractor.extract  # the one the writer and the ledger use
        assert services.memory._trust is not False  # the ledger's trust model: read (or known missing)
        assert abs(sys.getswitchinterval() - UI_SWITCH_S) < 1e-6 and UI_SWITCH_S < before
    finally:
        gc.unfreeze()  # (what start_services set for the app's lifetime)
        sys.setswitchinterval(before)
        services.close()

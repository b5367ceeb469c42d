"""The desktop window (issue 6, first part): a real window, real services on a temp store, the
Ollama-protocol test server through the real client; keys typed, signals waited for."""
from __future__ import annotations

import re

from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication

from app.core.commands import Mode
from app.config import load
from app.ui.main_window import MainWindow
from tests.support.ollama_server import OllamaTestServer
from tests.support.window import open_browser, send


def said(label) -> str:
    """What a header label tells: its text, and its tooltip (all of it, in a narrow window)."""
    return label.text() + "\n" + label.toolTip()


def test_enter_sends_the_reply_streams_in_and_the_turn_is_stored(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        srv.queue_reply("Raise the **key light** by one stop.")
        streamed = []
        w.chat.composer.setFocus()
        qtbot.keyClicks(w.chat.composer, "The hero is too dark")
        qtbot.keyClick(w.chat.composer, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)  # a new line, not sent
        assert w.chat.composer.toPlainText() == "The hero is too dark\n" and w.turns.turn is None
        qtbot.keyClicks(w.chat.composer, "what now?")
        qtbot.keyClick(w.chat.composer, Qt.Key.Key_Return)
        w.turns.turn.signals.yielded.connect(streamed.append)
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        assert "".join(streamed) == "Raise the **key light** by one stop." and len(streamed) > 1
        assert [(e.role, e.status) for e in w.chat.entries] == [("user", ""), ("assistant", "")]
        html = w.chat.transcript.toHtml()
        assert "key light" in html and "The hero is too dark" in html and w.chat.composer.toPlainText() == ""
        memory = w.services.memory
        memory.flush()
        stored = [(m.role, m.text) for m in memory.list(limit=5)]
        assert ("user", "The hero is too dark\nwhat now?") in stored
        assert ("assistant", "Raise the **key light** by one stop.") in stored


def test_esc_stops_a_reply_and_keeps_what_was_written(qtbot, window):
    with OllamaTestServer(delay_s=0.25) as srv:
        w = window(srv)
        srv.queue_reply("one two three four five six seven eight nine ten")
        send(qtbot, w, "long answer please")
        qtbot.waitUntil(lambda: "one" in w.chat.entries[-1].text, timeout=10_000)
        qtbot.keyClick(w.chat.composer, Qt.Key.Key_Escape)  # the window's shortcut, from where the artist types
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        last = w.chat.entries[-1]
        assert last.status == "cancelled" and last.text.startswith("one") and "ten" not in last.text
        assert re.search(r"Kelvin · \d\d:\d\d · stopped", w.chat.transcript.toPlainText())


def test_sigterm_quits_the_window_properly_and_keeps_the_partial_reply(qtbot, window):
    import os
    import signal

    from app.memory.journal import Journal
    from app.ui.app import quit_on_signals

    with OllamaTestServer(delay_s=0.25) as srv:
        w = window(srv)
        folder = w.services.memory.store().folder
        undo = quit_on_signals(w)
        try:
            srv.queue_reply("one two three four five six seven eight nine ten")
            send(qtbot, w, "long answer please")
            qtbot.waitUntil(lambda: "two" in w.chat.entries[-1].text, timeout=10_000)
            os.kill(os.getpid(), signal.SIGTERM)  # a logout, `kill`, a session manager
            qtbot.waitUntil(lambda: not w.isVisible() and w.services is None, timeout=10_000)
        finally:
            undo()
    replies = [e.data for e in Journal(folder / "journal").read() if e.op == "message.add" and e.data["role"] == "assistant"]
    assert len(replies) == 1 and replies[0]["status"] == "cancelled"
    assert replies[0]["text"].startswith("one two") and "ten" not in replies[0]["text"]


def test_model_output_is_shown_not_run_and_code_can_be_copied(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        srv.queue_reply('<script>alert(1)</script> <img src=x onerror=alert(2)> [site](https://example.com)\n\n'
                        "```python\nnode.parm('maxsamples').set(1024)\n```")
        send(qtbot, w, "show me the code")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        text = w.chat.transcript.toPlainText()
        assert "<script>alert(1)</script>" in text  # shown as text …
        html = w.chat.transcript.toHtml()
        assert "<script" not in html and "<img" not in html  # … never as markup
        assert w.chat.transcript.openLinks() is False  # links are shown, not followed
        w.chat._anchor(QUrl("copy:1.0"))
        assert QGuiApplication.clipboard().text() == "node.parm('maxsamples').set(1024)\n"


def test_what_kelvin_looked_at_folds_out_under_the_answer(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        for text in ("We set the Octane GI clamp to 10 for the forest shot.", "The fog looks great now."):
            w.services.memory.commit(text, project=w.services.conversation.project, conversation_id="yesterday")
        w.services.memory.flush()
        send(qtbot, w, "what GI clamp did we settle on?")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        answer = w.chat.entries[-1]
        assert any("Octane GI clamp = 10" in line for line in answer.looked_at)
        assert any("GI clamp to 10 for the forest shot" in line for line in answer.looked_at)
        assert "What Kelvin looked at" in w.chat.transcript.toPlainText()
        assert "forest shot" not in w.chat.transcript.toPlainText()  # folded until opened
        w.chat._anchor(QUrl("look:1"))
        assert "forest shot" in w.chat.transcript.toPlainText()


def test_the_mode_box_and_slash_commands_agree(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        w.header.mode_box.setCurrentIndex(1)
        w.header.mode_box.activated.emit(1)
        assert w.services.conversation.mode is Mode.CPU
        send(qtbot, w, "/mode recall")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        assert w.services.conversation.mode is Mode.RECALL and w.header.mode_box.currentData() == "recall"


def test_the_window_remembers_its_size_and_always_on_top(qtbot, tmp_path):
    state = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    w = MainWindow(load({}), state)
    qtbot.addWidget(w)
    w.resize(640, 700)
    w.header.on_top.setChecked(True)
    w.show_view(2)
    w.close()
    again = MainWindow(load({}), QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    assert (again.width(), again.height()) == (640, 700) and again.header.on_top.isChecked()
    assert again.windowFlags() & Qt.WindowType.WindowStaysOnTopHint
    assert again.views.currentWidget() is again.gpu  # the last view
    again.close()


def test_closing_can_leave_kelvin_in_the_tray_and_quit_really_quits(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        w.tray.available = True  # the offscreen platform has no tray; the choice is the window's, tested here
        w.tray.keep_running.setChecked(True)
        assert w.state.value("close_to_tray", False, type=bool)
        w.close()
        assert not w.isVisible() and w.services is not None  # still committing, still watching the GPU
        w.tray.show_window.emit()
        qtbot.waitUntil(w.isVisible, timeout=5000)
        w.tray.quit.emit()
        assert not w.isVisible() and w.services is None  # the writer drained, the pools done
        w.tray.keep_running.setChecked(False)


def test_the_gpu_view_plots_the_guard_shows_its_decisions_and_the_buttons_reach_it(qtbot, window):
    from pathlib import Path

    from app.gpu.trace import read_trace
    from app.services.gpu_guard import GpuGuard

    with OllamaTestServer() as srv:
        w = window(srv)
        guard = GpuGuard(w.settings, source=None, conversation=w.services.conversation, synchronous=True)
        w.guard_watch.attach_guard(guard)
        trace = read_trace(Path(__file__).parent / "traces" / "octane_render_start.jsonl")
        try:
            for s in trace[:40]:  # 20 s: the render starts at 10 s
                guard.step(s)
            qtbot.waitUntil(lambda: len(w.gpu.plot.points) == 40, timeout=5000)
            t, renderers, kelvin, others, total = w.gpu.plot.points[25]  # 12.5 s: rendering, Kelvin gone
            assert (renderers, kelvin, total) == (trace[25].processes[0].used_mb, 0, 24_564)
            assert w.gpu.events.count() == 2 and "normal → yielding: a render started in Cinema 4D" in w.gpu.events.item(1).text()
            assert "GPU: yielded to render" in said(w.header.gpu_label) and w.gpu.state.text().startswith("<b>Kelvin is off")
            assert not w.tray.can_notify and w.banner.isVisible()  # no tray here: the banner tells
            assert "Render detected in Cinema 4D" in w.banner.text()
            assert w.services.conversation.mode is Mode.CPU and w.header.mode_box.currentData() == "cpu"
            qtbot.mouseClick(w.gpu.resume_button, Qt.MouseButton.LeftButton)
            guard.step(trace[40])
            assert w.services.conversation.mode is Mode.GPU  # the artist resumed during the render
            qtbot.mouseClick(w.gpu.free_button, Qt.MouseButton.LeftButton)
            guard.step(trace[41])
            qtbot.waitUntil(lambda: "GPU: yielded to render" in said(w.header.gpu_label), timeout=5000)
            w.gpu.plot.grab()  # paints without error
        finally:
            guard.stop()


def test_without_a_gpu_the_gpu_view_says_so_and_nothing_clickable_does_nothing(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        w.guard_watch.attach_guard(None, "no NVIDIA driver is installed on this machine")
        w.show_view(2)
        assert w.gpu.state.text() == "<b>Nothing to watch on this machine</b>"
        assert "no NVIDIA driver is installed on this machine" in w.gpu.nothing.text()
        assert w.gpu.nothing.isVisible() and not w.gpu.watching.isVisible()  # no empty chart, no dead buttons
        assert not w.gpu.free_button.isVisible() and not w.gpu.resume_button.isVisible()
        assert "GPU: not watched" in said(w.header.gpu_label) and "no NVIDIA driver" in w.header.gpu_label.toolTip()
        assert not w.tray.free_action.isEnabled() and "no NVIDIA GPU" in w.tray.free_action.text()
        assert "GPU: not watched (no NVIDIA driver is installed on this machine)" in w.tray.icon.toolTip()
        told = []
        w.tray.available = True  # a desktop with a tray: closing leaves Kelvin there, and says so truthfully
        w.tray.notify = lambda title, text: told.append(text) or True
        w.tray.keep_running.setChecked(True)
        w.close()
        assert told == ["It saves your turns in the background. Quit from the tray menu."]
        assert not w.isVisible()
        w.tray.available = False


def test_the_memory_browser_lists_searches_and_filters_with_rows_fetched_a_page_at_a_time(qtbot, window, qtmodeltester):
    from app.ui.memory_view import PAGE, IdRole, MarkedRole

    with OllamaTestServer() as srv:
        w = window(srv)
        memory, project = w.services.memory, w.services.conversation.project
        for i in range(PAGE + 30):  # more than a page
            text = f"Octane note {i}: GI clamp {i}" if i % 2 else f"Redshift note {i}: the key light is too warm"
            memory.commit(text, project=project, ts_ms=1_763_800_000_000 + i * 1000)
        memory.flush()
        qtbot.keyClick(w.chat.transcript, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
        assert w.views.currentWidget() is w.memory and w.memory.search.hasFocus()
        model = w.memory.model
        qtbot.waitUntil(lambda: model.rowCount() == PAGE + 30, timeout=10_000)
        qtbot.waitUntil(lambda: model.index(0, 4).data() != "…", timeout=10_000)
        assert model.index(0, 4).data() == "Octane note 129: GI clamp 129"  # newest first
        assert len(model.cache) == PAGE  # only the page that was looked at
        assert model.index(PAGE + 5, 4).data() == "…"  # a row further down: asked for, not there yet
        qtbot.waitUntil(lambda: model.index(PAGE + 5, 4).data() != "…", timeout=10_000)
        assert model.index(PAGE + 5, 0).data(IdRole) == model.ids[PAGE + 5]
        qtmodeltester.check(model)
        # search as you type (debounced), whole messages ranked
        qtbot.keyClicks(w.memory.search, "GI clamp 17")
        qtbot.waitUntil(lambda: w.memory.count.text() == f"{(PAGE + 30) // 2} matches for “GI clamp 17”, best first",
                        timeout=10_000)
        assert model.rowCount() == (PAGE + 30) // 2  # the matches, not the whole project
        assert model.index(0, 4).data() == "Octane note 17: GI clamp 17"
        mark = '<b style="color:#e0914f">{}</b>'.format
        assert model.index(0, 4).data(MarkedRole) == f"Octane note {mark(17)}: {mark('GI')} {mark('clamp')} {mark(17)}"
        w.memory.table.viewport().grab()  # the marked preview paints
        # a filter narrows the list
        w.memory.search.clear()
        box = w.memory.filters["engine"]
        box.setCurrentIndex(box.findData("redshift"))
        box.activated.emit(box.currentIndex())
        qtbot.waitUntil(lambda: model.rowCount() == (PAGE + 30) // 2, timeout=10_000)
        qtbot.waitUntil(lambda: model.index(0, 3).data() == "redshift", timeout=10_000)


def _markdown(memory, project=None) -> str:
    return "".join(p.read_text(encoding="utf-8") for p in memory.store(project).book.files())


def test_a_message_is_edited_in_place_deleted_and_both_undone_through_the_journal(qtbot, window, qtmodeltester):
    from app.memory.journal import Journal
    from app.ui.memory_view import TEXT_COLUMN

    with OllamaTestServer() as srv:
        w = window(srv)
        memory = w.services.memory
        for i, text in enumerate(("Octane GI clamp 25 this morning", "Octane GI clamp 10, final",
                                  "Rim light 2 stops over")):
            memory.commit(text, ts_ms=1_763_800_000_000 + i * 60_000)
        memory.flush()
        open_browser(qtbot, w)
        model, table = w.memory.model, w.memory.table
        qtbot.waitUntil(lambda: model.rowCount() == 3 and model.index(1, TEXT_COLUMN).data() != "…", timeout=10_000)
        assert model.index(1, TEXT_COLUMN).data() == "Octane GI clamp 10, final"
        original = model.cache[model.ids[1]]

        # double-click opens the whole text; Shift+Enter breaks the line, Enter keeps the edit
        table.setFocus()
        table.setCurrentIndex(model.index(1, TEXT_COLUMN))
        qtbot.keyClick(table, Qt.Key.Key_F2)
        editor = QApplication.focusWidget()
        assert editor.toPlainText() == "Octane GI clamp 10, final"
        editor.selectAll()
        qtbot.keyClicks(editor, "Octane GI clamp 12, final")
        qtbot.keyClick(editor, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
        qtbot.keyClicks(editor, "(client)")
        with qtbot.waitSignal(w.memory.model.dataChanged, timeout=10_000):
            qtbot.keyClick(editor, Qt.Key.Key_Return)
        assert memory.show(original.id).text == "Octane GI clamp 12, final\n(client)"
        assert "Octane GI clamp 12, final" in _markdown(memory) and "clamp 10, final" not in _markdown(memory)
        assert model.index(1, TEXT_COLUMN).data() == "Octane GI clamp 12, final (client)"
        assert w.memory.undo_button.isEnabled() and w.memory.undo_label.text() == "Edited 1 message."

        # Delete removes the selected rows; Undo (Ctrl+Z) puts them back whole, in their place
        table.selectRow(0)
        table.setFocus()
        with qtbot.waitSignal(model.rowsRemoved, timeout=10_000):
            qtbot.keyClick(table, Qt.Key.Key_Delete)
        gone_id = [m for m in memory.list(limit=10)]
        assert [m.text for m in gone_id] == ["Octane GI clamp 25 this morning", "Octane GI clamp 12, final\n(client)"]
        assert model.rowCount() == 2 and "Rim light" not in _markdown(memory)
        qtmodeltester.check(model)
        qtbot.keyClick(table, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
        qtbot.waitUntil(lambda: model.rowCount() == 3, timeout=10_000)
        assert w.memory.undo_label.text() == "Restored 1 message."
        assert "Rim light 2 stops over" in _markdown(memory)
        # and the edit, undone: the text as it was
        w.memory.undo_button.click()
        qtbot.waitUntil(lambda: w.memory.undo_label.text() == "Edit undone.", timeout=10_000)
        assert memory.show(original.id).text == "Octane GI clamp 10, final"
        assert not w.memory.undo_button.isEnabled()
        ops = [e.op for e in Journal(memory.store().folder / "journal").read()]
        assert ops[3:] == ["message.edit", "message.delete", "message.restore", "message.edit"]


def test_the_browser_filters_by_date_and_project(qtbot, window):
    from datetime import datetime, timedelta

    from PySide6.QtCore import QDate

    with OllamaTestServer() as srv:
        w = window(srv)
        memory = w.services.memory
        now = datetime.now().astimezone()
        old = int((now - timedelta(days=20)).timestamp() * 1000)
        memory.commit("Three weeks ago: Redshift bounces 4", ts_ms=old)
        memory.commit("Today: Redshift bounces 6", ts_ms=int(now.timestamp() * 1000))
        memory.commit("Other project: camera at 35mm", project="perfume")
        memory.flush()
        w.projects.fill()
        open_browser(qtbot, w)
        model, view = w.memory.model, w.memory
        qtbot.waitUntil(lambda: model.rowCount() == 2, timeout=10_000)
        view.dates.setCurrentIndex(view.dates.findText("last 7 days"))
        view.dates.activated.emit(view.dates.currentIndex())
        qtbot.waitUntil(lambda: model.rowCount() == 1, timeout=10_000)
        qtbot.waitUntil(lambda: model.index(0, 4).data() == "Today: Redshift bounces 6", timeout=10_000)
        # a range of dates: only the day three weeks ago
        view.dates.setCurrentIndex(view.dates.findData("range"))
        view.dates.activated.emit(view.dates.currentIndex())
        assert view.date_from.isVisible() and view.date_to.isVisible()
        day = QDate.currentDate().addDays(-20)
        view.date_from.setDate(day.addDays(-1))
        view.date_to.setDate(day)
        qtbot.waitUntil(lambda: model.rowCount() == 1 and model.index(0, 4).data() == "Three weeks ago: Redshift bounces 4",
                        timeout=10_000)
        # the browser shows the window's current project, and only that one
        view.dates.setCurrentIndex(0)
        view.dates.activated.emit(0)
        w.projects.switch_project("perfume")
        qtbot.waitUntil(lambda: w.project == "perfume" and model.rowCount() == 1
                        and model.index(0, 4).data() == "Other project: camera at 35mm", timeout=10_000)
        assert w.services.conversation.project == "perfume" and w.windowTitle() == "Kelvin — perfume"


def test_the_settings_table_shows_current_values_history_and_takes_corrections(qtbot, window, qtmodeltester):
    from app.ui.settings_view import KeyRole

    with OllamaTestServer() as srv:
        w = window(srv)
        memory = w.services.memory
        for i, text in enumerate(("In Octane, set GI clamp to 25", "ok, GI clamp 10 it is",
                                  "we went with 1024 max samples")):
            memory.commit(text, ts_ms=1_763_800_000_000 + i * 60_000)
        memory.flush()
        w.resize(1200, 800)  # every column (a window under 640 px keeps the name, the decision, the file's value)
        open_browser(qtbot, w)
        panel = w.memory.settings
        w.memory.pages.setCurrentWidget(panel)
        qtbot.waitUntil(lambda: panel.current.rowCount() == 2 and not panel.current.narrow, timeout=10_000)
        qtmodeltester.check(panel.current)
        rows = {panel.current.index(r, 1).data(): r for r in range(2)}
        row = rows["GI clamp"]
        assert [panel.current.index(row, c).data() for c in (0, 2, 3, 5, 6)] == ["Octane", "10", "", "chat", "25"]
        panel.table.selectRow(row)
        qtbot.waitUntil(lambda: panel.history.rowCount() == 2, timeout=10_000)
        qtmodeltester.check(panel.history)
        assert [panel.history.index(r, 1).data() for r in range(2)] == ["25", "10"]
        assert panel.history.index(1, 4).data() == "ok, GI clamp 10 it is"
        # a correction typed in the table goes through the ledger and wins
        with qtbot.waitSignal(panel.current.modelReset, timeout=10_000):
            panel.current.setData(panel.current.index(row, 2), "12")
        qtbot.waitUntil(lambda: panel.history.rowCount() == 3, timeout=10_000)
        key = panel.current.index(row, 0).data(KeyRole)
        now = w.services.conversation.ledger.current_of(key)
        assert (now.entry.value, now.entry.by) == (12, "artist")
        assert panel.history.index(2, 3).data() == "you"
        panel.current.setData(panel.current.index(row, 2), "lots")  # not a number: said, nothing changes
        qtbot.waitUntil(lambda: "Not changed" in panel.count.text(), timeout=10_000)
        assert w.services.conversation.ledger.current_of(key).entry.value == 12
        panel.unset_button.click()
        qtbot.waitUntil(lambda: panel.current.rowCount() == 1, timeout=10_000)
        assert w.services.conversation.ledger.current_of(key) is None


def test_settings_the_turn_stated_become_chips_the_artist_confirms_corrects_or_turns_down(qtbot, window, monkeypatch):
    from PySide6.QtWidgets import QInputDialog

    with OllamaTestServer() as srv:
        w = window(srv)
        ledger = w.services.conversation.ledger
        srv.queue_reply("Try a GI clamp of 8 in Octane, and keep max samples at 2048.")
        send(qtbot, w, "In Octane we went with a GI clamp of 25. Too noisy, what now?")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        answer = w.chat.entries[-1]
        qtbot.waitUntil(lambda: len(answer.chips) >= 2, timeout=10_000)
        found = {(c.entry.parameter, c.entry.value, c.entry.status) for c in answer.chips}
        assert ("gi_clamp", 25, "applied") in found and ("gi_clamp", 8, "proposed") in found
        html = w.chat.transcript.toHtml()
        assert "Octane GI clamp 8" in html and "chip:menu:" in html  # the setting opens its menu

        def chip(value, status):
            n = next(n for n, c in enumerate(answer.chips) if c.entry.value == value and c.entry.status == status)
            return f"chip:{{}}:{w.chat.entries.index(answer)}.{n}", answer.chips[n]

        key = ("octane", "gi_clamp")
        assert ledger.current_of(key).entry.value == 25
        # ✓ use the proposal: applied, by the artist
        url, proposed = chip(8, "proposed")
        with qtbot.waitSignal(w.chat.chip_action, timeout=5000) as sig:
            w.chat._anchor(QUrl(url.format("confirm")))
        assert sig.args[0] == "confirm" and sig.args[1] is proposed
        qtbot.waitUntil(lambda: proposed.answer == "used", timeout=10_000)
        now = ledger.current_of(key)
        assert (now.entry.value, now.entry.by, now.previous.value) == (8, "artist", 25)
        assert re.search(r"GI clamp 8 · used \d\d:\d\d", w.chat.transcript.toPlainText())
        w.chat._anchor(QUrl(url.format("reject")))  # a chip that was answered takes no second answer
        assert proposed.answer == "used"
        # ✎ correct the value Kelvin read as applied: the right one wins, the misread one leaves the history
        url, applied = chip(25, "applied")
        monkeypatch.setattr(QInputDialog, "getText", staticmethod(lambda *a, **k: ("6", True)))
        w.chat._anchor(QUrl(url.format("correct")))
        qtbot.waitUntil(lambda: applied.answer == "corrected to 6", timeout=10_000)
        history = ledger.book().history(*key)
        assert ledger.current_of(key).entry.value == 6 and all(e.id != applied.entry.id for e in history)
        # ✗ not this: the max samples the model mentioned is taken out
        other = [c for c in answer.chips if c.entry.parameter == "max_samples"]
        assert len(other) == 1
        n = answer.chips.index(other[0])
        w.chat._anchor(QUrl(f"chip:reject:{w.chat.entries.index(answer)}.{n}"))
        qtbot.waitUntil(lambda: other[0].answer == "turned down", timeout=10_000)
        assert all(e.id != other[0].entry.id for e in ledger.book().history("octane", "max_samples"))


def test_a_value_kelvin_is_unsure_of_is_asked_on_the_chip_and_marked_in_the_settings_tab(qtbot, window, monkeypatch):
    """Issue 30: an unsure reading is never shown as decided — the chip asks "256 or 128 for brute-force
    rays?", the Settings tab says "to confirm", and ✓ on the chip decides. The shipped status model is
    used with its threshold raised so that every reading of the turn is unsure."""
    from dataclasses import replace as with_

    import app.services.memory as memory_service
    from app.ui.settings_view import TO_CONFIRM

    shipped = memory_service.load_status_model()
    assert shipped is not None
    monkeypatch.setattr(memory_service, "load_status_model", lambda: with_(shipped, sure=1.01))
    with OllamaTestServer() as srv:
        w = window(srv)
        srv.queue_reply("Then keep it; the blotches at 128 are the light cache, not the rays.")
        send(qtbot, w, "Redshift, the atrium. No, keep brute force rays at 256, it was blotchy at 128.")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        answer = w.chat.entries[-1]  # the turn's settings are chips under its answer
        qtbot.waitUntil(lambda: any(c.question for c in answer.chips), timeout=10_000)
        text = w.chat.transcript.toPlainText()
        assert "256 or 128 for brute-force rays?" in text
        asked = [c for c in answer.chips if c.question]
        assert {c.entry.value for c in asked} == {256, 128} and all(c.status == "to_confirm" for c in asked)
        ledger = w.services.conversation.ledger
        cur = ledger.current_of(("redshift", "brute_force_rays"))
        assert cur.unsure and cur.decision is None  # nothing asserted
        # the Settings tab marks it
        open_browser(qtbot, w)
        panel = w.memory.settings
        w.memory.pages.setCurrentWidget(panel)
        qtbot.waitUntil(lambda: panel.current.rowCount() == 1, timeout=10_000)
        cell = panel.current.index(0, 2)
        said = "256 or 128\nto confirm" if panel.current.narrow else "256 or 128 — to confirm"  # (narrow: under the values)
        assert cell.data() == said and cell.data(Qt.ItemDataRole.ForegroundRole) == TO_CONFIRM
        assert "1 to confirm: 256 or 128 for brute-force rays?" in panel.count.text()
        # ✓ on the chip of 256 decides it, by the artist
        chip = next(c for c in answer.chips if c.entry.value == 256)
        w.chat._anchor(QUrl(f"chip:confirm:{w.chat.entries.index(answer)}.{answer.chips.index(chip)}"))
        qtbot.waitUntil(lambda: not ledger.current_of(("redshift", "brute_force_rays")).unsure, timeout=10_000)
        now = ledger.current_of(("redshift", "brute_force_rays"))
        assert (now.decision.value, now.decision.by) == (256, "artist")


def test_end_of_day_writes_the_brief_with_progress_shows_it_and_cancel_keeps_the_old_one(qtbot, window):
    from app.services.brief import BRIEF_FILE

    with OllamaTestServer(delay_s=0.01) as srv:
        w = window(srv)
        memory = w.services.memory
        for i, text in enumerate(("Octane: set the GI clamp to 25", "ok, GI clamp 10 it is",
                                  "Camera: we went with a focal length of 35mm")):
            memory.commit(text, ts_ms=int(__import__("time").time() * 1000) - 600_000 + i * 1000)
        memory.flush()
        qtbot.keyClick(w.chat.composer, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
        assert w.views.currentWidget() is w.brief
        qtbot.waitUntil(lambda: "No brief yet" in w.brief.page.toPlainText(), timeout=5000)
        for reply in ("### What worked\n- camera: 35mm.", "### What worked\n- GI clamp 10.",
                      "## Where the project stands\nThe GI clamp is 10; 99 frames left.\n## Open questions\n- none"):
            srv.queue_reply(reply)
        steps = []
        w.brief.step = lambda d, t, s, f=w.brief.step: (steps.append((d, t, s)), f(d, t, s))
        w.brief.button.click()
        assert w.brief.stop_button.isEnabled() and w.brief.progress.isVisible()
        qtbot.waitUntil(lambda: w.briefing.cancel_event is None, timeout=20_000)
        assert [s for _, _, s in steps][:2] == ["Summarising camera", "Summarising optimization"]
        assert steps[-1][0] == steps[-1][1]  # the bar reaches the end
        shown = w.brief.page.toPlainText()
        assert "Master brief" in shown and "Current settings" in shown and "99 ⚠" in shown
        assert w.brief.archive.count() == 2 and "numbers to check: 99" in w.brief.status.text()
        path = memory.store().folder / BRIEF_FILE
        before = path.read_bytes()
        # a second run (something was said since: with nothing new it writes nothing), cancelled as it
        # starts: the brief stays as it was
        memory.commit("One more thing: the client liked the morning fog.")
        memory.flush()
        srv.queue_reply("### What worked\n" + "- a long note\n" * 300)
        w.brief.button.click()
        qtbot.waitUntil(lambda: bool(steps) and steps[-1][2].startswith("Summarising"), timeout=10_000)
        w.brief.stop_button.click()
        qtbot.waitUntil(lambda: w.briefing.cancel_event is None, timeout=20_000)
        assert "previous brief is unchanged" in w.brief.status.text() and path.read_bytes() == before
        assert w.brief.button.isEnabled() and not w.brief.progress.isVisible()


def test_a_list_read_again_keeps_the_selected_rows_and_delete_deletes_them(qtbot, window):
    """A write here or elsewhere reads the memory list again; the rows the artist selected stay
    selected (by id), so a Delete pressed a moment later deletes them instead of nothing (seen in a
    .ci/run: the list re-read between the selection and the key)."""
    from app.ui.memory_view import TEXT_COLUMN

    with OllamaTestServer() as srv:
        w = window(srv)
        memory = w.services.memory
        for i, text in enumerate(("first note", "second note", "third note")):
            memory.commit(text, ts_ms=1_763_800_000_000 + i * 60_000)
        memory.flush()
        open_browser(qtbot, w)
        model, table, view = w.memory.model, w.memory.table, w.memory
        qtbot.waitUntil(lambda: model.rowCount() == 3 and model.index(1, TEXT_COLUMN).data() == "second note",
                        timeout=10_000)
        table.setFocus()
        table.selectRow(1)
        chosen = model.ids[1]
        memory.commit("a fourth, written elsewhere", ts_ms=1_763_800_000_000 + 5 * 60_000)
        memory.flush()
        ids = [m.id for m in memory.list(limit=10)][::-1]  # newest first, as the browser lists them
        view.show_results(ids, {}, "")  # the list read again, nothing of it loaded yet
        assert [model.ids[i.row()] for i in table.selectionModel().selectedRows()] == [chosen]
        assert model.ids[table.currentIndex().row()] == chosen
        with qtbot.waitSignal(model.rowsRemoved, timeout=10_000):
            qtbot.keyClick(table, Qt.Key.Key_Delete)
        assert "second note" not in [m.text for m in memory.list(limit=10)]

"""One current project in the window (issue 20): every view follows it, nothing of another project
is ever shown or editable after a switch, the transcript is the project's and comes back after a
restart, no internal id reaches the artist. A real window, real services on a temp store, the
Ollama-protocol test server through the real client."""
from __future__ import annotations

import re
import time

from PySide6.QtCore import QModelIndex, QPoint, QSettings, QSize, Qt, QUrl
from PySide6.QtWidgets import QAbstractItemView, QApplication, QComboBox, QLabel, QLineEdit, QListWidget, QWidget

from app.config import load
from app.ui.app import build_services
from app.ui.main_window import MainWindow
from tests.support.ollama_server import OllamaTestServer
from tests.support.window import open_browser, send

ID_LIKE = re.compile(r"\b[mkct]_[0-9a-f]{6,}\b|chip:\w+:\d|look:\d|copy:\d")


def seed(w, project: str, n: int, word: str = "note") -> None:
    memory = w.services.memory
    for i in range(n):
        memory.commit(f"{project} {word} {i}: Octane GI clamp {i % 30}", project=project,
                      ts_ms=1_763_800_000_000 + i * 1000)
    memory.flush()


class Seen:
    """Every row the memory table shows, whenever it changes, with the project the window was on."""

    def __init__(self, w):
        self.w, self.rows = w, []
        model = w.memory.model
        for signal in (model.modelReset, model.dataChanged, model.rowsRemoved):
            signal.connect(self.look)

    def look(self, *_) -> None:
        model = self.w.memory.model
        for r in range(model.rowCount()):
            text = model.index(r, 4).data()
            if text and text != "…":
                self.rows.append((self.w.project, text))

    def foreign(self) -> list:
        return [(p, t) for p, t in self.rows if not t.startswith(p)]


def test_a_switch_with_a_search_typed_shows_only_the_new_project(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 30)
        seed(w, "perfume", 5)
        seen = Seen(w)
        open_browser(qtbot, w)
        qtbot.keyClicks(w.memory.search, "GI clamp")
        qtbot.waitUntil(lambda: w.memory.count.text() == "30 matches for “GI clamp”, best first", timeout=10_000)
        w.projects.switch_project("perfume")
        qtbot.waitUntil(lambda: w.memory.count.text() == "5 matches for “GI clamp”, best first", timeout=10_000)
        assert w.memory.model.rowCount() == 5 and w.windowTitle() == "Kelvin — perfume"
        qtbot.waitUntil(lambda: w.memory.settings.count.text().startswith("1 settings"), timeout=10_000)
        w.projects.switch_project("default")  # and back: the counts are this project's, not 0
        qtbot.waitUntil(lambda: w.memory.count.text() == "30 matches for “GI clamp”, best first", timeout=10_000)
        qtbot.waitUntil(lambda: w.memory.settings.count.text().startswith("1 settings"), timeout=10_000)
        assert seen.rows and seen.foreign() == []


def test_a_page_landing_after_a_switch_is_dropped(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 350)
        seed(w, "perfume", 3)
        seen = Seen(w)
        open_browser(qtbot, w)
        qtbot.waitUntil(lambda: w.memory.model.rowCount() == 353 - 3, timeout=10_000)
        w.pools.run(w.pools.memory, lambda report: time.sleep(0.8))  # the memory worker is busy for a moment
        w.memory.table.scrollToBottom()  # asks for the last page: it waits behind the sleep
        qtbot.waitUntil(lambda: bool(w.memory.model._asked), timeout=5000)
        w.projects.switch_project("perfume")  # lands before that page does
        qtbot.waitUntil(lambda: w.project == "perfume" and w.memory.model.rowCount() == 3, timeout=10_000)
        qtbot.waitUntil(lambda: w.pools.busy() == 0, timeout=10_000)  # the old page has landed by now
        QApplication.sendPostedEvents()  # and what it sent the window has been delivered
        QApplication.processEvents()
        assert [w.memory.model.index(r, 4).data() for r in range(3)] == [f"perfume note {i}: Octane GI clamp {i}"
                                                                       for i in (2, 1, 0)]
        assert seen.foreign() == []


def test_a_switch_while_a_reply_streams_stops_it_keeps_it_and_shows_nothing_of_it(qtbot, window):
    with OllamaTestServer(delay_s=0.15) as srv:
        w = window(srv)
        seed(w, "perfume", 2)
        srv.queue_reply(" ".join(f"word{i}" for i in range(60)))
        send(qtbot, w, "a long answer please")
        qtbot.waitUntil(lambda: "word2" in w.chat.entries[-1].text, timeout=10_000)
        w.projects.switch_project("perfume")
        qtbot.waitUntil(lambda: w.project == "perfume" and not w.chat.composer.isReadOnly(), timeout=10_000)
        qtbot.waitUntil(lambda: w.pools.busy() == 0, timeout=10_000)  # the old reply's stream has ended
        QApplication.sendPostedEvents()  # and every token it still sent has been delivered
        QApplication.processEvents()
        shown = w.chat.transcript.toPlainText()
        assert "word" not in shown and "a long answer" not in shown
        assert [e.text for e in w.chat.entries] == ["perfume note 0: Octane GI clamp 0", "perfume note 1: Octane GI clamp 1"]
        w.projects.switch_project("default")
        qtbot.waitUntil(lambda: w.project == "default" and not w.chat.composer.isReadOnly(), timeout=10_000)
        roles = [(e.role, e.status) for e in w.chat.entries]
        assert roles == [("user", ""), ("assistant", "cancelled")]  # the question and the stopped reply, kept
        assert w.chat.entries[1].text.startswith("word0") and "switched project" in w.chat.entries[1].text


def test_the_transcript_and_the_view_come_back_after_a_restart(qtbot, tmp_path):
    with OllamaTestServer() as srv:
        settings = load({"ollama_host": srv.host})
        state = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
        w = MainWindow(settings, state)
        qtbot.addWidget(w)
        w.show()
        w.attach(build_services(settings, gpu=False))
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly(), timeout=10_000)
        for q in ("first question about the fog", "second question about the glass"):
            srv.queue_reply(f"answer to: {q}")
            w.turns.ask(q)
            qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        w.show_view(1)  # quit on the memory view
        w.quit()
        again = MainWindow(load({"ollama_host": srv.host}), QSettings(str(tmp_path / "window.ini"),
                                                                   QSettings.Format.IniFormat))
        qtbot.addWidget(again)
        again.show()
        assert again.views.currentWidget() is again.memory
        again.attach(build_services(load({"ollama_host": srv.host}), gpu=False))
        qtbot.waitUntil(lambda: again.memory.count.text() == "4 messages, newest first", timeout=10_000)
        assert again.memory.model.rowCount() == 4
        qtbot.waitUntil(lambda: len(again.chat.entries) >= 4, timeout=10_000)
        assert [(e.role, e.text) for e in again.chat.entries[:4]] == [
            ("user", "first question about the fog"), ("assistant", "answer to: first question about the fog"),
            ("user", "second question about the glass"), ("assistant", "answer to: second question about the glass")]
        again.quit()


def test_earlier_messages_are_a_scroll_away(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 95, "turn")
        w.projects.project_now("default")
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly() and bool(w.chat.entries), timeout=10_000)
        assert len(w.chat.entries) == 40 and w.chat.more_above
        assert w.chat.entries[-1].text.startswith("default turn 94")
        assert "Earlier messages" in w.chat.transcript.toPlainText()
        bar = w.chat.transcript.verticalScrollBar()
        qtbot.waitUntil(lambda: bar.maximum() > 0, timeout=10_000)  # laid out: there is somewhere to scroll

        def scrolled_up_to(n: int) -> bool:  # the artist keeps scrolling to the top until more come
            if len(w.chat.entries) < n:
                bar.triggerAction(bar.SliderAction.SliderToMinimum)
            return len(w.chat.entries) == n

        qtbot.waitUntil(lambda: scrolled_up_to(80), timeout=10_000)
        qtbot.waitUntil(lambda: scrolled_up_to(95) and not w.chat.more_above, timeout=10_000)
        qtbot.waitUntil(lambda: not w.chat.drawing, timeout=10_000)  # 95 entries go in a slice of time at a time
        assert [e.text.split(":")[0] for e in w.chat.entries] == [f"default turn {i}" for i in range(95)]
        assert "Earlier messages" not in w.chat.transcript.toPlainText()
        assert w.chat.transcript.toPlainText().count("— ") >= 1  # the day line


def test_only_the_artists_scrolling_loads_earlier_messages(qtbot, window):
    """A redrawn transcript starts at the top for a moment: that must not load the history page after
    page (it did, and with 100k messages the window never settled)."""
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 95, "turn")
        w.projects.project_now("default")
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly() and bool(w.chat.entries), timeout=10_000)
        for _ in range(3):
            w.chat._render()  # the whole transcript drawn again
            w.chat.transcript.verticalScrollBar().setValue(0)  # moved by the program, not the artist
            QApplication.processEvents()  # what the move set off has started…
            qtbot.waitUntil(lambda: w.pools.busy() == 0, timeout=10_000)  # …and ended (a page would be in now)
        assert len(w.chat.entries) == 40 and w.pools.busy() == 0


def test_closing_in_the_middle_of_drawing_the_transcript_stops_the_drawing(qtbot, window):
    """Quitting while the transcript is still being drawn a slice at a time (a page that came with the
    workers' last signals) leaves no drawing going on in the closed window."""
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 40, "turn")
        w.projects.project_now("default")
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly() and len(w.chat.entries) == 40, timeout=10_000)
        w.chat._drawing.slice_s = 0.0  # one entry per turn of the event loop: still drawing when the close comes
        w.chat._render()
        assert w.chat.drawing
        w.quit()
        assert not w.chat.drawing and not w.isVisible()


def test_the_transcript_opens_on_the_latest_and_leaves_an_artist_reading_above_where_they_are(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 30, "turn")
        w.show_view(1)  # loaded while the chat is hidden (Kelvin reopened on the memory view)
        w.projects.project_now("default")
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly() and len(w.chat.entries) == 30, timeout=10_000)
        w.show_view(0)
        bar = w.chat.transcript.verticalScrollBar()
        qtbot.waitUntil(lambda: bar.maximum() > 0 and bar.value() == bar.maximum(), timeout=5000)
        qtbot.wait(100)  # the layout settles
        bar.triggerAction(bar.SliderAction.SliderPageStepSub)  # the artist pages up to read
        qtbot.waitUntil(lambda: bar.value() < bar.maximum() and w.chat.jump.isVisible(), timeout=5000)  # taken as read
        reading = bar.value()
        assert reading < bar.maximum()
        w.chat.add("notice", "something new below")
        qtbot.waitUntil(lambda: "something new below" in w.chat.transcript.toPlainText(), timeout=5000)
        QApplication.processEvents()  # and what its drawing set off has run
        assert bar.value() == reading  # not yanked down


def test_projects_are_made_renamed_and_switched_from_the_switcher(qtbot, window, monkeypatch):
    with OllamaTestServer() as srv:
        w = window(srv)
        box = w.header.project_box
        names = iter(["Nike Spring"])
        monkeypatch.setattr(box, "_ask", lambda title, label, text: next(names))
        box.activated.emit(box.findData("\x00new"))
        qtbot.waitUntil(lambda: w.project == "Nike Spring" and box.currentText() == "Nike Spring", timeout=10_000)
        assert w.windowTitle() == "Kelvin — Nike Spring" and "Nike Spring" in w.tray.icon.toolTip()
        from app.config import config_file

        assert 'project = "Nike Spring"' in config_file().read_text(encoding="utf-8")  # the next start opens on it
        asked = []
        answers = iter(["nike  SPRING", ""])  # folds to the same folder; then, told so, the artist gives up
        monkeypatch.setattr(box, "_ask", lambda title, label, text: asked.append((label, text)) or next(answers))
        box.activated.emit(box.findData("\x00new"))
        qtbot.waitUntil(lambda: len(asked) == 2, timeout=10_000)
        assert "already exists" in asked[1][0] and asked[1][1] == "nike  SPRING"  # said in the dialog, asked again
        assert w.project == "Nike Spring"
        monkeypatch.setattr(box, "_ask", lambda title, label, text: "Nike Summer")
        box.activated.emit(box.findData("\x00rename"))
        qtbot.waitUntil(lambda: w.project == "Nike Summer" and box.findText("Nike Spring") < 0, timeout=10_000)
        assert [box.itemText(i) for i in range(box.count())][:2] == ["default", "Nike Summer"]
        box.activated.emit(box.findData("default"))
        qtbot.waitUntil(lambda: w.project == "default", timeout=10_000)


def test_slash_project_moves_the_whole_window(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "perfume", 2)
        send(qtbot, w, "/project perfume")
        qtbot.waitUntil(lambda: w.project == "perfume" and w.windowTitle() == "Kelvin — perfume", timeout=10_000)
        qtbot.waitUntil(lambda: len(w.chat.entries) == 2 and not w.chat.composer.isReadOnly(), timeout=10_000)
        # the switcher follows once the project list (read on the memory pool) is back
        qtbot.waitUntil(lambda: w.header.project_box.currentText() == "perfume", timeout=10_000)
        assert "Project: " not in w.chat.transcript.toPlainText()


def test_esc_on_the_memory_view_does_not_stop_the_reply(qtbot, window):
    with OllamaTestServer(delay_s=0.1) as srv:
        w = window(srv)
        srv.queue_reply("one two three four five six seven eight")
        send(qtbot, w, "count for me")
        qtbot.waitUntil(lambda: "two" in w.chat.entries[-1].text, timeout=10_000)
        open_browser(qtbot, w)
        qtbot.keyClick(w.memory.search, Qt.Key.Key_Escape)
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
        assert w.chat.entries[-1].status == "" and w.chat.entries[-1].text.endswith("eight")


def test_the_mode_shown_is_the_mode_in_use(qtbot, window):
    srv = OllamaTestServer().start()
    try:
        w = window(srv)
        w.status.check_ollama()
        qtbot.waitUntil(lambda: w.header.mode_box.currentText() == "GPU", timeout=10_000)
    finally:
        srv.stop()
    w.status.check_ollama()
    qtbot.waitUntil(lambda: w.header.mode_box.currentText() == "Memory only", timeout=10_000)
    assert "Ollama is not running" in w.header.mode_box.toolTip()
    assert w.header.mode_box.count() == 3  # one mode without a model, however it came to be
    send(qtbot, w, "what GI clamp?")
    qtbot.waitUntil(lambda: w.turns.turn is None, timeout=10_000)
    assert w.chat.entries[-1].status == "recall" and w.header.mode_box.currentText() == "Memory only"


def test_no_internal_id_reaches_the_artist(qtbot, window):
    with OllamaTestServer() as srv:
        w = window(srv)
        seed(w, "default", 3)
        srv.queue_reply("Keep the **GI clamp at 10**.")
        send(qtbot, w, "Set GI clamp to 10 in Octane, the fireflies are gone")
        qtbot.waitUntil(lambda: w.turns.turn is None and bool(w.chat.entries[-1].chips), timeout=10_000)
        for command in ("/remember the client wants warm light #preference", "/memories", "/new",
                        "/project perfume", "/project default"):
            send(qtbot, w, command)
            qtbot.waitUntil(lambda: w.turns.turn is None and not w.chat.composer.isReadOnly(), timeout=10_000)
        said = []
        w.statusBar().messageChanged.connect(said.append)
        w.chat.transcript.highlighted.emit(QUrl("chip:correct:3.0"))  # the mouse over a chip's link
        for view in range(4):
            w.show_view(view)
            qtbot.wait(300)
        w.show_view(1)
        w.memory.pages.setCurrentIndex(1)
        qtbot.waitUntil(lambda: w.memory.settings.current.rowCount() > 0, timeout=10_000)
        w.memory.settings.table.selectRow(0)
        qtbot.wait(300)
        texts = [w.windowTitle(), w.chat.transcript.toPlainText(), *said, w.statusBar().currentMessage()]
        for widget in w.findChildren(QWidget):
            texts += [widget.toolTip(), widget.statusTip(), widget.whatsThis()]
            if isinstance(widget, (QLabel, QLineEdit)):
                texts.append(widget.text())
            if isinstance(widget, QComboBox):
                texts += [widget.itemText(i) for i in range(widget.count())]
            if isinstance(widget, QAbstractItemView) and widget.model() is not None:
                m, root = widget.model(), QModelIndex()
                columns = 1 if isinstance(widget, QListWidget) else m.columnCount(root)
                for r in range(min(m.rowCount(root), 50)):
                    for c in range(columns):
                        for role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.ToolTipRole):
                            texts.append(str(m.index(r, c).data(role) or ""))
        texts += [w.tray.icon.toolTip(), *[a.text() for a in w.tray._menu.actions()]]
        leaks = sorted({m.group(0) for t in texts for m in ID_LIKE.finditer(t or "")})
        assert leaks == []
        assert any("Use this value" in s or "Correct this value" in s for s in said)


def test_the_window_comes_back_where_it_was_and_never_off_screen(qtbot, tmp_path):
    state = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    w = MainWindow(load({}), state)
    qtbot.addWidget(w)
    w.resize(430, 700)
    w.move(120, 90)
    w.show()
    qtbot.waitExposed(w)
    where = (w.pos(), w.size())
    w.close()
    again = MainWindow(load({}), QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(again)
    again.show()
    assert (again.pos(), again.size()) == where
    again.close()
    state = QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat)
    state.setValue("pos", QPoint(9000, 7000))  # the monitor it was on is gone
    state.setValue("size", QSize(430, 700))
    state.sync()
    lost = MainWindow(load({}), QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(lost)
    area = QApplication.primaryScreen().availableGeometry()
    assert area.contains(lost.pos()) and lost.size() == QSize(430, 700)


def test_kelvin_app_without_a_display_prints_the_fallback(monkeypatch):
    import os

    from tests.support.cli import kelvin_process

    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    outs = []
    for args in (["app"], []):  # the entry point itself, where there is no display
        proc = kelvin_process(*args, env=env, check=False, timeout=60)
        outs.append((proc.returncode, proc.stdout))
    (rc_app, out_app), (rc_bare, out_bare) = outs
    assert out_app == out_bare and "no display to open the window on" in out_app and "kelvin chat" in out_app
    assert (rc_app, rc_bare) == (1, 0)



"""Everything by keyboard (issue 33): Tab and Shift+Tab leave the message box (Ctrl+Tab types a tab),
each view's shortcut puts the cursor where the work is, the project switcher has its key, F1 and ?
show every key, and the focused part always wears a ring in the theme. A real window, keys typed
into whatever has the focus, as a person's keyboard would."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QShortcut
from PySide6.QtWidgets import QApplication

from app.ui.app import stylesheet
from app.ui.shortcuts import VIEW_KEYS, WINDOW_KEYS, native
from tests.support.seen import has_colour

RING = "#ffb36b"


def focused():
    return QApplication.focusWidget()


def press(qtbot, key, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    """A key, where the keyboard's focus is."""
    qtbot.keyClick(focused(), key, modifier)


def test_tab_leaves_the_message_box_and_ctrl_tab_types_a_tab(qtbot, window, server):
    w = window(server)
    composer = w.chat.composer
    composer.setFocus()
    qtbot.keyClicks(composer, "GI clamp")
    press(qtbot, Qt.Key.Key_Tab)
    assert focused() is w.chat.send_button and composer.toPlainText() == "GI clamp"
    press(qtbot, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert focused() is composer
    press(qtbot, Qt.Key.Key_Backtab, Qt.KeyboardModifier.ShiftModifier)
    assert focused() is w.chat.transcript  # the answers above, to read and to reach their links
    composer.setFocus()
    composer.moveCursor(composer.textCursor().MoveOperation.End)
    press(qtbot, Qt.Key.Key_Tab, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClicks(composer, "10")
    assert composer.toPlainText() == "GI clamp\t10" and focused() is composer


def test_each_views_key_puts_the_cursor_where_the_work_is(qtbot, window, server):
    w = window(server)
    press(qtbot, Qt.Key.Key_2, Qt.KeyboardModifier.ControlModifier)
    assert w.views.currentWidget() is w.memory and focused() is w.memory.search
    qtbot.keyClicks(focused(), "fog")
    assert w.memory.search.text() == "fog"
    press(qtbot, Qt.Key.Key_4, Qt.KeyboardModifier.ControlModifier)
    assert w.views.currentWidget() is w.brief and focused() is w.brief.button
    press(qtbot, Qt.Key.Key_3, Qt.KeyboardModifier.ControlModifier)
    assert w.views.currentWidget() is w.gpu and focused() is w.gpu.events  # no GPU here: nothing to free
    press(qtbot, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
    assert w.views.currentWidget() is w.chat and focused() is w.chat.composer
    qtbot.keyClicks(focused(), "typed right after Ctrl+1")
    assert w.chat.composer.toPlainText() == "typed right after Ctrl+1"
    press(qtbot, Qt.Key.Key_K, Qt.KeyboardModifier.ControlModifier)
    assert focused() is w.memory.search and w.memory.search.selectedText() == "fog"  # typing replaces it


def test_ctrl_p_opens_the_project_switcher_and_the_keys_choose_one(qtbot, window, server):
    w = window(server)
    w.services.memory.commit("a note", project="perfume")
    w.services.memory.flush()
    w.projects.fill()
    box = w.header.project_box
    qtbot.waitUntil(lambda: box.findData("perfume") >= 0, timeout=10_000)
    press(qtbot, Qt.Key.Key_P, Qt.KeyboardModifier.ControlModifier)
    qtbot.waitUntil(lambda: box.view().isVisible(), timeout=5000)
    assert focused() in (box, box.view())
    view = box.view()
    view.setCurrentIndex(box.model().index(box.findData("perfume"), 0))
    qtbot.keyClick(view, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.project == "perfume" and not w.chat.composer.isReadOnly(), timeout=10_000)
    assert w.windowTitle() == "Kelvin — perfume"


def test_f1_and_question_mark_show_every_key_and_question_mark_still_types_in_a_text_field(qtbot, window, server):
    w = window(server)
    w.chat.composer.setFocus()
    qtbot.keyClicks(w.chat.composer, "why?")
    assert w.chat.composer.toPlainText() == "why?" and w.keys_sheet is None  # a question mark, typed
    w.chat.transcript.setFocus()  # reading the answers: not a text field
    qtbot.keyClicks(focused(), "?")
    qtbot.waitUntil(lambda: w.keys_sheet is not None and w.keys_sheet.isVisible(), timeout=5000)
    listed = w.keys_sheet.keys()
    bound = {s.key().toString(s.key().SequenceFormat.NativeText) for s in w.findChildren(QShortcut)
             if not s.key().isEmpty()}
    assert bound and bound <= set(listed), bound - set(listed)  # every key the window answers to is on the sheet
    for keys, _ in VIEW_KEYS:
        assert native(keys) in listed
    assert len(listed) == len(WINDOW_KEYS) + len(VIEW_KEYS)
    w.keys_sheet.close()
    w.activateWindow()
    qtbot.waitUntil(lambda: QApplication.activeWindow() is w, timeout=5000)
    w.show_view(1)
    w.memory.table.setFocus()
    press(qtbot, Qt.Key.Key_F1)
    qtbot.waitUntil(lambda: w.keys_sheet.isVisible(), timeout=5000)
    w.keys_sheet.close()


def test_the_focused_part_always_wears_a_ring_in_the_theme(qtbot, window, server):
    app = QApplication.instance()
    app.setStyleSheet(stylesheet())
    try:
        w = window(server)
        w.resize(900, 800)
        qtbot.waitUntil(lambda: w.width() == 900, timeout=5000)
        for widget in (w.chat.send_button, w.chat.composer, w.header.mode_box, w.header.project_box):
            w.chat.transcript.setFocus()

            def unringed(widget=widget):
                assert not has_colour(widget, RING), f"{widget.objectName()} ringed without the focus"

            def ringed(widget=widget):
                assert focused() is widget and has_colour(widget, RING, at_least=40), widget.objectName()

            qtbot.waitUntil(unringed, timeout=5000)
            widget.setFocus(Qt.FocusReason.TabFocusReason)
            qtbot.waitUntil(ringed, timeout=5000)
        w.show_view(1)
        w.memory.table.setFocus(Qt.FocusReason.TabFocusReason)
        qtbot.waitUntil(lambda: has_colour(w.memory.table, RING, at_least=40), timeout=5000)
    finally:
        app.setStyleSheet("")

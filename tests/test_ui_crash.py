"""The crash path (issue 6): an exception nobody planned for, from any thread, is logged to
<data>/logs/kelvin.log and reaches one crash dialog with its traceback; never a silent dead window."""
from __future__ import annotations

import logging
import sys
import threading
from logging.handlers import RotatingFileHandler

import pytest
from PySide6.QtCore import QSettings, Qt, QUrl
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QApplication, QPushButton

from app.config import load
from app.ui import crash
from app.ui.crash import SENTENCE, CrashDialog, install_excepthooks, setup_logging


@pytest.fixture
def app_log(tmp_path):
    made = setup_logging(load({}))  # the data folder is tmp_path/data (conftest)
    yield made
    made.close()


@pytest.fixture
def reporter(qtbot, app_log):
    before = (sys.excepthook, threading.excepthook)
    r = install_excepthooks(app_log)
    yield r
    r.uninstall()
    assert (sys.excepthook, threading.excepthook) == before
    for d in dialogs():
        d.close()


def dialogs() -> list[CrashDialog]:
    return [w for w in QApplication.topLevelWidgets() if isinstance(w, CrashDialog) and w.isVisible()]


def shown(qtbot, reporter, n: int = 1) -> CrashDialog:
    qtbot.waitUntil(lambda: len(reporter.reports) >= n and reporter.dialog is not None
                    and reporter.dialog.isVisible(), timeout=5000)
    return reporter.dialog


def test_the_log_file_is_made_at_start_not_at_import(tmp_path, app_log):
    assert app_log.path == tmp_path / "data" / "logs" / "kelvin.log" and app_log.path.is_file()
    handler = app_log.handler
    assert isinstance(handler, RotatingFileHandler) and (handler.maxBytes, handler.backupCount) == (1_000_000, 3)
    logging.getLogger("kelvin.ui").info("the window painted")
    logging.getLogger("httpx").info("HTTP Request: GET /api/tags")  # others' chatter stays out
    text = app_log.path.read_text(encoding="utf-8")
    assert "kelvin.ui [MainThread] the window painted" in text and "HTTP Request" not in text
    assert app_log.tail(1).endswith("the window painted")
    app_log.close()
    assert handler not in logging.getLogger().handlers
    assert logging.getLogger("kelvin").level == logging.NOTSET  # put back as it was


def test_the_log_tail_is_the_files_last_lines_and_read_without_the_disk(app_log):
    """The crash dialog may open on the UI thread: its log tail comes from memory, as the file has it."""
    kelvin = logging.getLogger("kelvin.ui")
    for i in range(260):
        kelvin.info("tile %d rendered", i)
    try:
        raise ValueError("a traceback is several lines")
    except ValueError:
        kelvin.exception("a failure with its traceback")
    app_log.handler.flush()
    written = app_log.path.read_text(encoding="utf-8").splitlines()
    app_log.path.unlink()  # not read again: the tail is what was written, kept as it was written
    assert app_log.tail().splitlines() == written[-200:]
    assert app_log.tail(3).splitlines() == written[-3:] and written[-1].startswith("ValueError")


def test_an_unwritable_data_folder_logs_to_the_temp_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(crash.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "not-a-folder").write_text("a file where the data folder should be")
    made = setup_logging(load({"data_dir": str(tmp_path / "not-a-folder")}))
    try:
        assert made.path == tmp_path / "tmp" / "kelvin-logs" / "kelvin.log" and made.path.is_file()
    finally:
        made.close()


def test_an_exception_in_a_thread_shows_the_dialog_with_the_traceback_and_is_logged(qtbot, reporter, app_log):
    def render_callback():
        raise ValueError("the GI clamp went negative")

    t = threading.Thread(target=render_callback, name="kelvin-test-render")
    t.start()
    t.join()
    d = shown(qtbot, reporter)
    assert d.sentence.text() == SENTENCE
    assert "ValueError: the GI clamp went negative" in d.summary.text() and "kelvin-test-render" in d.summary.text()
    assert not d.details.isVisible()  # folded until asked for
    qtbot.mouseClick(d.toggle, Qt.MouseButton.LeftButton)
    assert d.details.isVisible()
    details = d.details.toPlainText()
    assert "Traceback (most recent call last)" in details and 'raise ValueError("the GI clamp went negative")' in details
    assert "in render_callback" in details
    logged = app_log.path.read_text(encoding="utf-8")
    assert "unexpected error in thread kelvin-test-render" in logged
    assert 'raise ValueError("the GI clamp went negative")' in logged  # the whole traceback, in the file
    tail = details.split("---- the last 200 lines of ")[1]  # … and the log's tail in the dialog
    assert str(app_log.path) in tail and "unexpected error in thread kelvin-test-render" in tail


def test_a_qt_slot_that_raises_goes_through_sys_excepthook_to_the_dialog(qtbot, reporter, app_log):
    button = QPushButton("Free VRAM now")
    qtbot.addWidget(button)

    def free_vram():
        raise RuntimeError("NVML went away")

    button.clicked.connect(free_vram)
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)  # PySide6 hands the slot's exception to sys.excepthook
    d = shown(qtbot, reporter)
    assert "RuntimeError: NVML went away" in d.summary.text() and "MainThread" in d.summary.text()
    assert "in free_vram" in d.details.toPlainText()
    assert "RuntimeError: NVML went away" in app_log.path.read_text(encoding="utf-8")


def test_a_burst_of_five_makes_one_dialog_with_all_five(qtbot, reporter):
    def fail(n):
        raise KeyError(f"render layer {n}")

    threads = [threading.Thread(target=fail, args=(n,), name=f"kelvin-test-burst-{n}") for n in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    d = shown(qtbot, reporter, 5)
    QApplication.sendPostedEvents()  # anything the threads still had queued would show now
    QApplication.processEvents()
    assert dialogs() == [d] and len(d.reports) == 5 == len(reporter.reports)
    assert sorted(r.summary for r in d.reports) == [f"KeyError: 'render layer {n}'" for n in range(5)]
    listed = d.details_text().split("---- the last 200 lines of ")[0]  # the log's tail has them again
    assert listed.count("Traceback (most recent call last)") == 5
    assert "… and 2 more" in d.summary.text()
    qtbot.mouseClick(d.keep_button, Qt.MouseButton.LeftButton)  # Keep going: the next problem is a new dialog
    assert dialogs() == []
    reporter.report(ValueError, ValueError("later"), None)
    qtbot.waitUntil(lambda: dialogs() != [] and dialogs()[0] is not d, timeout=5000)
    assert [r.summary for r in dialogs()[0].reports] == ["ValueError: later"]


def test_copy_open_the_log_folder_and_quit(qtbot, reporter, app_log, monkeypatch):
    opened, quits = [], []
    monkeypatch.setattr(QDesktopServices, "openUrl", staticmethod(lambda url: opened.append(url) or True))
    monkeypatch.setattr(QGuiApplication, "quit", staticmethod(lambda: quits.append("app")))
    reporter.quit_requested.connect(lambda: quits.append("window"))
    try:
        {}["missing"]
    except KeyError:
        reporter.report(*sys.exc_info())
    d = shown(qtbot, reporter)
    qtbot.mouseClick(d.copy_button, Qt.MouseButton.LeftButton)
    clip = QGuiApplication.clipboard().text()
    assert "KeyError: 'missing'" in clip and 'in test_copy_open_the_log_folder_and_quit' in clip
    assert d.copy_button.text() == "Copied"
    qtbot.mouseClick(d.log_button, Qt.MouseButton.LeftButton)
    assert opened == [QUrl.fromLocalFile(str(app_log.path.parent))]
    qtbot.mouseClick(d.quit_button, Qt.MouseButton.LeftButton)
    assert quits == ["window", "app"] and not d.isVisible()  # the window closes properly first, then the app


def test_a_worker_error_nobody_handles_reaches_the_dialog(qtbot, reporter, tmp_path):
    from app.ui.main_window import MainWindow

    w = MainWindow(load({}), QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)

    def fetch(report):
        raise OSError(28, "No space left on device")

    w.pools.run(w.pools.memory, fetch)  # no errored= given: nobody expects it
    d = shown(qtbot, reporter)
    assert "No space left on device" in d.summary.text() and "in fetch" in d.details.toPlainText()
    w.close()


def test_uninstall_puts_back_the_previous_hooks_even_when_installed_twice(app_log):
    before = (sys.excepthook, threading.excepthook)
    r = install_excepthooks(app_log)
    r.install()  # a second install keeps the first previous hooks
    assert sys.excepthook != before[0] and threading.excepthook != before[1]
    r.uninstall()
    r.uninstall()
    assert (sys.excepthook, threading.excepthook) == before

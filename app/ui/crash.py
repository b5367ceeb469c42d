"""When something goes wrong that nobody planned for: Kelvin's log file and the crash dialog.

:func:`setup_logging` opens ``<data folder>/logs/kelvin.log`` (rotating, ~1 MB x 3); the app calls
it at start, never at import. :func:`install_excepthooks` routes every uncaught exception into that
log and into one :class:`CrashDialog` on the UI thread: exceptions on the UI thread (a Qt slot that
raises goes through ``sys.excepthook``), in any Python thread (``threading.excepthook``), and worker
errors nobody handled (the window hands them to ``sys.excepthook``). Expected problems never come
here: the views say those in plain words.
"""
from __future__ import annotations

import html
import logging
import sys
import tempfile
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from logging.handlers import RotatingFileHandler
from pathlib import Path

from PySide6.QtCore import QObject, Qt, QtMsgType, QUrl, Signal, qInstallMessageHandler
from PySide6.QtGui import QDesktopServices, QFontDatabase, QGuiApplication
from PySide6.QtWidgets import (QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QToolButton, QVBoxLayout,
                               QWidget)

from app.durable import refuse_links

log = logging.getLogger("kelvin.crash")

LOG_NAME = "kelvin.log"
LOG_BYTES, LOG_BACKUPS = 1_000_000, 3
TAIL_LINES, TAIL_BYTES = 200, 256 * 1024
MAX_SHOWN = 20  # tracebacks kept in one dialog; more are counted, not listed
SENTENCE = "Something went wrong inside Kelvin. Your conversation and memory are saved."


# ---- the log file ------------------------------------------------------------------------------
@dataclass
class AppLog:
    """The open log file (``path`` None when no folder could be written)."""

    path: Path | None
    handler: logging.Handler | None = None
    _undo: list = field(default_factory=list)

    @property
    def folder(self) -> Path | None:
        return self.path.parent if self.path else None

    def tail(self, lines: int = TAIL_LINES) -> str:
        """The last ``lines`` lines this Kelvin wrote to its log, as the file has them — kept in memory
        as they are written, so a crash on the UI thread never waits on the disk to show them."""
        recent = getattr(self.handler, "recent", None)
        if self.path is None or recent is None:
            return ""
        with self.handler.lock:  # the writing thread appends under the handler's lock
            text = "\n".join(recent)
        return "\n".join(text[-TAIL_BYTES:].splitlines()[-lines:])

    def close(self) -> None:
        """Detach the handler and put the loggers back as they were (tests, and the app's exit)."""
        if self.handler is not None:
            logging.getLogger().removeHandler(self.handler)
            self.handler.close()
            self.handler = None
        for undo in reversed(self._undo):
            undo()
        self._undo.clear()


class _LogFile(RotatingFileHandler):
    """The log file, which also keeps the last lines it wrote (for the crash dialog, read from any thread)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.recent: deque[str] = deque(maxlen=TAIL_LINES)  # one record each (a traceback is one)
        self._last: logging.LogRecord | None = None

    def format(self, record: logging.LogRecord) -> str:  # called by emit, under the handler's lock
        text = super().format(record)
        if record is not self._last:  # (the rollover check formats each record once more)
            self._last = record
            self.recent.append(text)
        return text


def _open_handler(folder: Path) -> RotatingFileHandler:
    folder.mkdir(parents=True, exist_ok=True)
    for path in (folder, *(folder / f"{LOG_NAME}{suffix}" for suffix in ("", *(f".{i}" for i in range(1, LOG_BACKUPS + 1))))):
        refuse_links(path)  # a planted link must not make the log append to (or rotate) a file elsewhere
    handler = _LogFile(folder / LOG_NAME, maxBytes=LOG_BYTES, backupCount=LOG_BACKUPS, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s [%(threadName)s] %(message)s"))
    return handler


def setup_logging(settings, level: int = logging.INFO) -> AppLog:
    """Log Kelvin's own lines at ``level`` (and everyone's warnings) to ``<data>/logs/kelvin.log``.
    A data folder that cannot be written falls back to the temp folder. The console keeps the level
    it had: only the file gets the extra detail."""
    handler = None
    for folder in (settings.data_path() / "logs", Path(tempfile.gettempdir()) / "kelvin-logs"):
        try:
            handler = _open_handler(folder)
            break
        except OSError as exc:
            log.warning("no log file in %s: %s", folder, exc)
    if handler is None:
        return AppLog(None)
    handler.setLevel(level)
    root, kelvin = logging.getLogger(), logging.getLogger("kelvin")
    app_log = AppLog(Path(handler.baseFilename), handler)
    if kelvin.getEffectiveLevel() > level:
        console_level = root.getEffectiveLevel()
        for h in root.handlers:
            if h.level == logging.NOTSET:
                h.setLevel(console_level)
                app_log._undo.append(lambda h=h: h.setLevel(logging.NOTSET))
        old = kelvin.level
        kelvin.setLevel(level)
        app_log._undo.append(lambda: kelvin.setLevel(old))
    root.addHandler(handler)
    log.info("Kelvin starts; log at %s", app_log.path)
    return app_log


_QT_LEVELS = {QtMsgType.QtDebugMsg: logging.DEBUG, QtMsgType.QtInfoMsg: logging.INFO,
              QtMsgType.QtWarningMsg: logging.WARNING, QtMsgType.QtCriticalMsg: logging.ERROR,
              QtMsgType.QtFatalMsg: logging.CRITICAL}


def route_qt_messages() -> None:
    """Qt's own warnings go to the log (logger ``kelvin.qt``) instead of a console nobody sees."""
    qt_log = logging.getLogger("kelvin.qt")

    def handler(kind, context, message) -> None:
        qt_log.log(_QT_LEVELS.get(kind, logging.WARNING), "%s", message)

    qInstallMessageHandler(handler)


# ---- the hooks ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class CrashReport:
    summary: str  # "ZeroDivisionError: division by zero"
    thread: str
    traceback: str
    log_tail: str
    when: str


class CrashReporter(QObject):
    """Owns the hooks and the one dialog. Hooks may fire on any thread: the report crosses into
    the UI thread through ``crashed`` (always queued, so a hook returns at once)."""

    crashed = Signal(object)  # CrashReport
    quit_requested = Signal()

    def __init__(self, app_log: AppLog | None = None):
        super().__init__()
        self.app_log = app_log or AppLog(None)
        self.dialog: CrashDialog | None = None
        self.reports: deque[CrashReport] = deque(maxlen=100)  # the latest, for tests and a look in a debugger
        self._previous: tuple | None = None
        self.crashed.connect(self._show, Qt.ConnectionType.QueuedConnection)

    def install(self) -> CrashReporter:
        if self._previous is None:
            self._previous = (sys.excepthook, threading.excepthook)
            sys.excepthook, threading.excepthook = self._sys_hook, self._thread_hook
        return self

    def uninstall(self) -> None:
        """Put the previous hooks back (where nobody replaced ours meanwhile)."""
        if self._previous is None:
            return
        if sys.excepthook == self._sys_hook:
            sys.excepthook = self._previous[0]
        if threading.excepthook == self._thread_hook:
            threading.excepthook = self._previous[1]
        self._previous = None

    def _sys_hook(self, exc_type, exc, tb) -> None:
        if issubclass(exc_type, KeyboardInterrupt):  # Ctrl+C in the terminal: not a crash
            return (self._previous[0] if self._previous else sys.__excepthook__)(exc_type, exc, tb)
        self.report(exc_type, exc, tb)

    def _thread_hook(self, args: threading.ExceptHookArgs) -> None:
        if issubclass(args.exc_type, SystemExit):  # as threading's own hook: a thread may exit so
            return
        self.report(args.exc_type, args.exc_value, args.exc_traceback, args.thread.name if args.thread else "")

    def report(self, exc_type, exc, tb, thread: str = "") -> None:
        """Log an unexpected exception and show it; from any thread, never raises."""
        try:
            thread = thread or threading.current_thread().name
            log.error("unexpected error in thread %s", thread, exc_info=(exc_type, exc, tb))
            text = "".join(traceback.format_exception(exc_type, exc, tb))
            summary = "".join(traceback.format_exception_only(exc_type, exc)).strip().splitlines()[-1]
            self.crashed.emit(CrashReport(summary, thread, text, self.app_log.tail(), time.strftime("%H:%M:%S")))
        except Exception:  # noqa: BLE001 — a hook that raises would hide the first error: stderr is left
            traceback.print_exception(exc_type, exc, tb, file=sys.__stderr__)

    def _show(self, report: CrashReport) -> None:
        try:
            self.reports.append(report)
            if self.dialog is None or not self.dialog.isVisible():  # a burst makes one dialog
                if self.dialog is not None:
                    self.dialog.deleteLater()
                self.dialog = CrashDialog(self.app_log)
                self.dialog.quit_requested.connect(self._quit)
            self.dialog.add(report)
            self.dialog.show()
            self.dialog.raise_()
            self.dialog.activateWindow()
        except Exception:  # raising here would come back through the hook, forever
            log.exception("the crash dialog could not be shown")

    def _quit(self) -> None:
        self.quit_requested.emit()
        app = QGuiApplication.instance()
        if app is not None:
            app.quit()


def install_excepthooks(app_log: AppLog | None = None) -> CrashReporter:
    """Route uncaught exceptions from every thread into the log and the crash dialog. Keep the
    returned reporter; ``reporter.uninstall()`` puts the previous hooks back."""
    return CrashReporter(app_log).install()


# ---- the dialog --------------------------------------------------------------------------------
class CrashDialog(QDialog):
    """What happened, in one sentence; the traceback and the log's tail folded under Details."""

    quit_requested = Signal()

    def __init__(self, app_log: AppLog, parent: QWidget | None = None):
        super().__init__(parent)
        self.app_log = app_log
        self.reports: list[CrashReport] = []
        self.more = 0
        self._last_tail = ""
        self.setObjectName("crash")
        self.setWindowTitle("Kelvin — something went wrong")
        self.sentence = QLabel(SENTENCE, objectName="crashSentence", wordWrap=True)
        self.summary = QLabel(objectName="crashSummary", wordWrap=True)
        self.summary.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.advice = QLabel("Keep going closes this message; if Kelvin acts strangely afterwards, quit and "
                             "start it again. To report it, copy the details.", objectName="crashAdvice", wordWrap=True)
        self.toggle = QToolButton(objectName="crashToggle", text="Details", checkable=True)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self._fold)
        self.details = QPlainTextEdit(objectName="crashDetails", readOnly=True)
        self.details.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.details.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        self.details.hide()

        self.copy_button = QPushButton("Copy details", clicked=self.copy_details)
        self.log_button = QPushButton("Open log folder", clicked=self.open_log_folder)
        self.log_button.setEnabled(app_log.folder is not None)
        self.log_button.setToolTip(str(app_log.path) if app_log.path else "Kelvin could not write a log file")
        self.keep_button = QPushButton("Keep going", clicked=self.close)
        self.keep_button.setDefault(True)
        self.quit_button = QPushButton("Quit", clicked=self._quit)
        buttons = QHBoxLayout()
        for b in (self.copy_button, self.log_button):
            buttons.addWidget(b)
        buttons.addStretch(1)
        for b in (self.keep_button, self.quit_button):
            buttons.addWidget(b)

        layout = QVBoxLayout(self)
        for w in (self.sentence, self.summary, self.advice, self.toggle):
            layout.addWidget(w)
        layout.addWidget(self.details, 1)
        layout.addLayout(buttons)
        self.resize(560, 260)

    def add(self, report: CrashReport) -> None:
        """One more exception: listed in the same dialog (a burst is one message, not a stack)."""
        if len(self.reports) < MAX_SHOWN:
            self.reports.append(report)
        else:
            self.more += 1
        count = len(self.reports) + self.more
        lines = [f"<b>{html.escape(r.summary)}</b> <span style='color:#9aa0aa'>(thread {html.escape(r.thread)}, "
                 f"{r.when})</span>" for r in self.reports[:3]]
        if count > 3:
            lines.append(f"… and {count - 3} more of the same moment")
        self.summary.setText("<br>".join(lines))
        self._last_tail = report.log_tail
        self.details.setPlainText(self.details_text())

    def details_text(self) -> str:
        parts = [f"[{r.when}] in thread {r.thread}\n{r.traceback.rstrip()}" for r in self.reports]
        if self.more:
            parts.append(f"({self.more} more not listed; they are in the log)")
        where = self.app_log.path or "no log file"
        parts.append(f"---- the last {TAIL_LINES} lines of {where} ----\n{self._last_tail}")
        return "\n\n".join(parts)

    def copy_details(self) -> None:
        QGuiApplication.clipboard().setText(self.details_text())
        self.copy_button.setText("Copied")

    def open_log_folder(self) -> None:
        if self.app_log.folder is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.app_log.folder)))

    def _fold(self, open_: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if open_ else Qt.ArrowType.RightArrow)
        self.details.setVisible(open_)
        self.resize(self.width(), 560 if open_ else 260)

    def _quit(self) -> None:
        self.close()
        self.quit_requested.emit()

"""The Qt half of ``kelvin --self-test`` (see app/self_test.py): the real window, opened the way
``kelvin`` opens it, on the offscreen platform, with a throw-away data folder and a stand-in Ollama.
Whether the window can open on the artist's desktop at all is :mod:`app.ui.desktop_check`."""
from __future__ import annotations

import sys
import time
from pathlib import Path

from PySide6 import __version__ as pyside_version
from PySide6.QtCore import QSettings, qInstallMessageHandler, qVersion
from PySide6.QtWidgets import QApplication

START_TIMEOUT_S = 90.0  # LanceDB's first import on a cold disk takes a few seconds; a broken one never ends
QUESTION = "Self-test: what GI clamp are we using?"


def _wait(app: QApplication, done, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        app.processEvents()
        time.sleep(0.01)
    return True


def check_window(settings, scratch: Path) -> tuple[str, str]:
    """Open the main window, wait for its services, ask one question through it, read the answer."""
    from app.ui.app import app_icon, open_window

    app = QApplication.instance() or QApplication(sys.argv[:1])
    icon = app_icon()
    app.setWindowIcon(icon)
    if icon.isNull():
        return "FAIL", "the window icon (icons/kelvin.svg) did not load: Qt's SVG support is missing"
    qt_said: list[str] = []  # Qt's own chatter (offscreen has no window manager) is not the report's
    previous = qInstallMessageHandler(lambda kind, context, message: qt_said.append(message))
    t0 = time.monotonic()
    window = open_window(settings, app, QSettings(str(scratch / "window.ini"), QSettings.Format.IniFormat))
    try:
        if not _wait(app, lambda: window.services is not None or not window.chat.composer.isEnabled()
                     and "could not" in window.chat.transcript.toPlainText(), START_TIMEOUT_S):
            return "FAIL", f"the window's services did not start within {START_TIMEOUT_S:.0f} s"
        if window.services is None:
            return "FAIL", f"the window could not start its services: {window.statusBar().currentMessage()}"
        started = time.monotonic() - t0
        if not _wait(app, lambda: not window.chat.composer.isReadOnly(), START_TIMEOUT_S):
            return "FAIL", "the window never became ready for a question (the transcript did not load)"
        window.turns.ask(QUESTION)
        if not _wait(app, lambda: window.turns.turn is None, 60):
            return "FAIL", "the window's question got no answer within 60 s"
        shown = window.chat.transcript.toPlainText()
        if "wired up" not in shown:
            return "FAIL", "the stand-in's answer did not reach the chat"
        if "**memory**" in shown or "memory" not in shown:  # the stand-in's **memory**, rendered bold
            return "FAIL", "the answer's Markdown was not rendered"
        shot = window.grab()
        if shot.isNull() or shot.width() < 200:
            return "FAIL", "the window painted nothing"
        size = f"{shot.width()}×{shot.height()}"
    finally:
        window.quit()  # closes the services (drains the writer) and waits for the worker pools
        app.processEvents()
        qInstallMessageHandler(previous)
    return "ok", (f"Qt {qVersion()} (PySide6 {pyside_version}), {app.platformName()}: window {size} painted, "
                  f"services up in {started:.1f} s, a question answered and rendered")

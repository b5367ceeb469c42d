"""``kelvin app``: the desktop window. The window paints first; then the heavy parts (LanceDB, the
memory store, the VRAM guard) start on a worker and are handed to it when ready. Started before the
first paint, their imports (a second or more, holding the GIL) would hold the paint up."""
from __future__ import annotations

import gc
import logging
import os
import sys
from dataclasses import dataclass
from importlib import resources

from PySide6.QtCore import QSettings, QTimer
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from app.ui import first_paint, markdown
from app.ui.icon import kelvin_icon
from app.ui.crash import install_excepthooks, route_qt_messages, setup_logging
from app.ui.main_window import MainWindow
from app.ui.worker import Worker

log = logging.getLogger("kelvin.ui")
START_ANYWAY_MS = 2000  # a window that never paints (started minimised) still gets its services
WINDOW_LOCK_PATIENCE = 10  # the window's writes wait up to 10 × lock_wait_s for another process's write


@dataclass
class Services:
    """What the window drives; built off the UI thread."""

    memory: object
    conversation: object
    guard: object | None
    gpu_problem: str = ""
    team: object | None = None  # the shared projects' background rounds (None: no studio server set)

    def close(self) -> None:
        if self.team is not None:
            self.team.stop()
            self.team.team.close()
        if self.guard is not None:
            self.guard.stop()
        self.conversation.close()
        self.memory.close()


def build_services(settings, gpu: bool = True) -> Services:
    from app.core.commands import Mode
    from app.services.conversation import Conversation
    from app.services.memory import MemoryService

    memory = MemoryService(settings)
    memory.lock_patience = WINDOW_LOCK_PATIENCE  # a turn asked during another process's long import waits
    try:
        conversation = Conversation(settings, memory, mode=Mode.parse(settings.mode))
    except BaseException:
        memory.close()
        raise
    guard, problem = None, "the VRAM guard is switched off in Kelvin's settings"
    if gpu and settings.vram_guard:
        from app.gpu.nvml import NvmlSampler
        from app.services.gpu_guard import GpuGuard

        sampler = NvmlSampler()
        first = sampler.sample()
        if first.gpus:
            guard = GpuGuard(settings, sampler, conversation=conversation, embedder=memory.embedder,
                             log_path=settings.data_path() / "gpu_events.jsonl").start()
            problem = ""
        else:
            sampler.close()
            problem = first.error
    team = None
    if settings.team_server.strip():
        from app.services.team import Team
        from app.services.team_sync import TeamSync

        team = TeamSync(Team(memory))
    return Services(memory, conversation, guard, problem, team)


# how long a thread that wants the GIL waits before the one holding it is asked to let go (Python's
# default: 5 ms). The window's thread needs it for every slot it runs; while the writer and the
# searches work in Python beside it, a 5 ms wait per slot added up to 20-40 ms late ticks (p99 of
# bench/ui_stall.py's commits phase 22-37 ms at 5 ms, 7-8 ms at 1 ms, docs/benchmarks.md §17)
UI_SWITCH_S = 0.001


def start_services(settings) -> Services:
    """What the start-up worker does: the services; markdown-it for the chat (here, not with the
    first reply); the settings rules (here, not by the writer with the first message stored: importing
    and compiling their patterns held the GIL 40-70 ms in one go, and the window waited); then
    ``gc.freeze()``, and a shorter switch interval (:data:`UI_SWITCH_S`). The libraries just loaded leave ~150k objects that live as long as Kelvin does;
    unfrozen, every full garbage collection walks them all — 0.2-0.5 s with the GIL held on a 2-core
    machine, so the window freezes whichever thread collects."""
    markdown.parser()
    services = build_services(settings)
    services.memory.extractor  # noqa: B018 — built now (a property)
    services.memory.trust  # noqa: B018 — and the ledger's trust model read
    gc.freeze()
    sys.setswitchinterval(UI_SWITCH_S)
    return services


def stylesheet() -> str:
    return resources.files("app.resources").joinpath("kelvin.qss").read_text(encoding="utf-8")


def app_icon() -> QIcon:
    """Kelvin's icon (resources/icons/kelvin.svg): the window, the taskbar and the installers'; the
    window colours it with Kelvin's state once it knows it (app.ui.icon)."""
    return kelvin_icon(None)


def window_state() -> QSettings:
    from app.config import config_dir

    return QSettings(str(config_dir() / "window.ini"), QSettings.Format.IniFormat)


def open_window(settings, app: QApplication, state: QSettings | None = None) -> MainWindow:
    app.setStyleSheet(stylesheet())
    window = MainWindow(settings, state if state is not None else window_state())
    window.show()
    worker = Worker(lambda report: start_services(settings))
    worker.signals.returned.connect(window.attach)
    worker.signals.errored.connect(window.failed_to_start)
    if os.environ.get(first_paint.ENV) == "1":  # start-up measurement (bench/ui_startup.py)
        first_paint.exit_after_first_paint(window, worker)
    launched = []

    def launch() -> None:
        if not launched:
            launched.append(worker)
            window.pools.start(window.pools.general, worker)

    first_paint.FirstPaint(window, launch)
    QTimer.singleShot(START_ANYWAY_MS, window, launch)
    return window


def desktop_problem() -> str:
    """Why Qt's X11 platform plugin would not load here (missing system libraries, every one of them,
    with the packages to install), or "". Asked before the QApplication exists: Qt itself aborts
    the process with a message naming only the first missing library."""
    if not sys.platform.startswith("linux") or os.environ.get("QT_QPA_PLATFORM", "xcb") not in ("", "xcb") \
            or not os.environ.get("DISPLAY") or QApplication.instance() is not None:
        return ""
    from app.ui.desktop_check import check_desktop

    status, detail = check_desktop()
    return "" if status == "ok" else detail


def main(settings) -> int:
    from app.memory.project_lock import set_holder

    set_holder("Kelvin's window")  # what a command waiting for a project's lock is told
    problem = desktop_problem()
    if problem:
        sys.stderr.write(f"kelvin: {problem}\n")
        return 1
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Kelvin")
    app.setOrganizationName("Kelvin")
    app.setDesktopFileName("kelvin")  # Wayland/X11: matches kelvin.desktop, so the dock shows Kelvin's icon
    app.setWindowIcon(app_icon())
    app_log = setup_logging(settings)  # <data>/logs/kelvin.log
    route_qt_messages()
    crashes = install_excepthooks(app_log)  # any thread's uncaught exception: logged, and a dialog says so
    window = open_window(settings, app)
    crashes.quit_requested.connect(window.quit)  # the dialog's Quit: close properly (drain the writer)
    undo = quit_on_signals(window)  # SIGTERM, SIGHUP (a logout), Ctrl+C in the terminal: as the tray's Quit
    try:
        return app.exec()
    finally:
        undo()
        crashes.uninstall()
        app_log.close()


def quit_on_signals(window: MainWindow):
    """Quit properly on SIGINT, SIGTERM and SIGHUP: the reply streaming now is stopped and stored as
    stopped, the writer drains. Python runs signal handlers only between bytecodes, never while Qt's
    event loop waits in C++, so the signal's byte is written to a socket Qt watches (set_wakeup_fd)
    and the handler runs as soon as that socket wakes the loop. Returns a function that undoes it."""
    import signal
    import socket

    from PySide6.QtCore import QSocketNotifier

    names = [n for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n)]
    ours, theirs = socket.socketpair()
    for sock in (ours, theirs):
        sock.setblocking(False)
    try:
        old_fd = signal.set_wakeup_fd(theirs.fileno())
    except ValueError:  # not the main thread (tests): nothing to undo
        ours.close(), theirs.close()
        return lambda: None
    previous = {n: signal.signal(getattr(signal, n), lambda signum, frame: window.quit()) for n in names}
    notifier = QSocketNotifier(ours.fileno(), QSocketNotifier.Type.Read, window)

    def drain() -> None:
        try:
            ours.recv(64)  # the handler itself runs as Python gets control back, right after this slot
        except OSError:
            pass

    notifier.activated.connect(drain)

    def undo() -> None:
        notifier.setEnabled(False)
        signal.set_wakeup_fd(old_fd)
        for n, handler in previous.items():
            signal.signal(getattr(signal, n), handler)
        ours.close(), theirs.close()

    return undo

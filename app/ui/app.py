"""``kelvin app``: the desktop window. The window paints first; the heavy parts (LanceDB, the
memory store, the VRAM guard) start on a worker meanwhile and are handed to it when ready."""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass
from importlib import resources

from PySide6.QtCore import QSettings
from PySide6.QtWidgets import QApplication

from app.ui.main_window import MainWindow
from app.ui.worker import Worker

log = logging.getLogger("kelvin.ui")


@dataclass
class Services:
    """What the window drives; built off the UI thread."""

    memory: object
    conversation: object
    guard: object | None
    gpu_problem: str = ""

    def close(self) -> None:
        if self.guard is not None:
            self.guard.stop()
        self.conversation.close()
        self.memory.close()


def build_services(settings, gpu: bool = True) -> Services:
    from app.core.commands import Mode
    from app.services.conversation import Conversation
    from app.services.memory import MemoryService

    memory = MemoryService(settings)
    try:
        conversation = Conversation(settings, memory, mode=Mode.parse(settings.mode))
    except BaseException:
        memory.close()
        raise
    guard, problem = None, "vram_guard is off in the settings"
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
    return Services(memory, conversation, guard, problem)


def stylesheet() -> str:
    return resources.files("app.resources").joinpath("kelvin.qss").read_text(encoding="utf-8")


def window_state() -> QSettings:
    from app.settings import config_dir

    return QSettings(str(config_dir() / "window.ini"), QSettings.Format.IniFormat)


def open_window(settings, app: QApplication) -> MainWindow:
    app.setStyleSheet(stylesheet())
    window = MainWindow(settings, window_state())
    window.show()
    worker = Worker(lambda report: build_services(settings))
    worker.signals.returned.connect(window.attach)
    worker.signals.errored.connect(window.failed_to_start)
    window.pools.start(window.pools.general, worker)
    return window


def main(settings) -> int:
    app = QApplication.instance() or QApplication(sys.argv[:1])
    app.setApplicationName("Kelvin")
    app.setOrganizationName("Kelvin")
    window = open_window(settings, app)  # noqa: F841 — kept alive by this frame while the loop runs
    return app.exec()

"""The window's first paint: :class:`FirstPaint` calls back once it is on screen (the app starts its
services then), and an opt-in start-up measurement: ``KELVIN_FIRST_PAINT_EXIT=1`` in the
environment makes the window report its first paint and then quit.

Right after the window's first paint has been drawn and flushed, one JSON line goes to stdout:
``{"event": "first_paint", "t": time.time(), "heavy_modules": [...]}`` — the heavy libraries
already imported by then (they should all still be missing: they load on the start-up worker).
Once the services are up (or have failed), a second line ``{"event": "ready", "t": …}`` follows and
Kelvin quits the ordinary way, so the services are closed as on any quit. ``bench/ui_startup.py``
uses it; nothing else does.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Callable

from PySide6.QtCore import QEvent, QObject, QTimer
from PySide6.QtWidgets import QWidget

ENV = "KELVIN_FIRST_PAINT_EXIT"
HEAVY = ("lancedb", "pyarrow", "pandas", "numpy", "ollama", "httpx", "pydantic", "pynvml", "markdown_it", "psutil",
         "torch", "sentence_transformers")


def heavy_modules() -> list[str]:
    """The heavy libraries this process has imported so far."""
    return [name for name in HEAVY if name in sys.modules]


class FirstPaint(QObject):
    """Calls ``then()`` once, as soon as ``widget``'s first paint is on screen: a zero timer queued
    from the first paint event runs after the whole window has been painted and flushed."""

    def __init__(self, widget: QWidget, then: Callable[[], None]):
        super().__init__(widget)
        self._widget, self._then = widget, then
        widget.installEventFilter(self)

    def eventFilter(self, obj, event) -> bool:
        if obj is self._widget and event.type() == QEvent.Type.Paint:
            obj.removeEventFilter(self)
            QTimer.singleShot(0, self._then)
        return False


def _say(event: str, **more) -> None:
    sys.stdout.write(json.dumps({"event": event, **more}) + "\n")
    sys.stdout.flush()


def exit_after_first_paint(window, started) -> None:
    """Report ``window``'s first paint, then quit once the start-up worker ``started`` is done."""
    done = {"painted": False, "ready": False}

    def maybe_quit() -> None:
        if done["painted"] and done["ready"]:
            window.quit()

    def painted() -> None:
        t = time.time()
        _say("first_paint", t=t, heavy_modules=heavy_modules())
        done["painted"] = True
        maybe_quit()

    def ready() -> None:
        _say("ready", t=time.time(), attached=window.services is not None)
        done["ready"] = True
        maybe_quit()

    FirstPaint(window, painted)
    started.signals.finished.connect(ready)  # after returned/errored: the window has attached (or said why not)

"""Waiting on a condition, never on a fixed time: polls until it holds or the timeout passes."""
from __future__ import annotations

import time
from typing import Callable


def wait_until(condition: Callable[[], object], timeout: float = 10.0, interval: float = 0.01) -> bool:
    """True as soon as ``condition()`` holds; False once ``timeout`` seconds have passed without it
    (use as ``assert wait_until(…)``). Outside Qt; a test with a window uses ``qtbot.waitUntil``."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(interval)
    return True

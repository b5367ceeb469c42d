"""Test setup: every path points into tmp_path, Qt runs offscreen, no thread outlives its test."""
from __future__ import annotations

import os
import threading

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # without it pytest-qt aborts on a machine with no screen

_ENV_VARS = ("KELVIN_DATA_DIR", "KELVIN_PROJECT", "KELVIN_OLLAMA_HOST", "OLLAMA_HOST", "KELVIN_EMBEDDER",
             "KELVIN_CHAT_MODEL", "KELVIN_EXTRACT_MODEL", "KELVIN_NUM_CTX", "KELVIN_INDEX_URI", "KELVIN_CONFIG_DIR", "KELVIN_OLLAMA_TIMEOUT",
             "KELVIN_MODE", "KELVIN_VRAM_GUARD", "KELVIN_GPU_INTERVAL_MS", "KELVIN_VRAM_MARGIN_MB", "KELVIN_VRAM_RESERVE_MB",
             "KELVIN_VRAM_HOLD_S", "KELVIN_YIELD_MODE", "KELVIN_PRELOAD_AFTER_RENDER", "KELVIN_RENDERER_PROCESSES")


@pytest.fixture(autouse=True)
def _isolated(tmp_path, monkeypatch):
    """Never touch the artist's real data or config, and never reach a real Ollama."""
    for var in _ENV_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("KELVIN_CONFIG_DIR", str(tmp_path / "config"))
    monkeypatch.setenv("KELVIN_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("KELVIN_EMBEDDER", "none")
    monkeypatch.setenv("KELVIN_OLLAMA_HOST", "http://127.0.0.1:9")  # discard port: nothing answers
    yield


@pytest.fixture(autouse=True)
def _no_dangling_threads():
    before = set(threading.enumerate())
    yield
    leaked = []
    for t in set(threading.enumerate()) - before:
        if isinstance(t, threading._DummyThread):  # a Qt pool thread seen from Python; pools are waited for
            continue
        t.join(timeout=2.0)
        if t.is_alive() and t.name.startswith("kelvin"):
            leaked.append(t.name)
    assert not leaked, f"threads left running after the test: {leaked}"


def pytest_collection_modifyitems(items):
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gui)


@pytest.fixture
def make_service(tmp_path):
    """Build MemoryServices on tmp data; all are closed (writer drained) at the end of the test."""
    from app.settings import load
    from app.services.memory import MemoryService

    made = []

    def make(**overrides):
        overrides.setdefault("data_dir", str(tmp_path / "data"))
        svc = MemoryService(load(overrides))
        made.append(svc)
        return svc

    yield make
    for svc in made:
        svc.close()


@pytest.fixture
def service(make_service):
    return make_service()

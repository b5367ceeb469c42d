"""Test setup: every path points into tmp_path, Qt runs offscreen, no thread outlives its test."""
from __future__ import annotations

import gc
import os
import threading

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")  # without it pytest-qt aborts on a machine with no screen


def pytest_configure(config):
    """Byte-compile Kelvin's own code once, before any worker starts (the controller, or a run without
    xdist). Where ``PYTHONDONTWRITEBYTECODE`` is set (this project's machines set it) Python never
    writes a ``.pyc`` on import, so every process the suite starts — each worker, the terminal commands
    run as processes, helpers, the team tests' Kelvins — compiled each module of ``app/`` it imported from
    source again: ~0.3 CPU-s per Kelvin process, ~4 s per worker. compileall writes whatever that variable says, only what is missing or stale;
    the files land in ``__pycache__`` folders git ignores, as any ordinary import would leave them."""
    if hasattr(config, "workerinput"):
        return
    import compileall
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    for part in ("app", "tests/support", "bench"):
        if (root / part).is_dir():  # not where this file is copied into a small suite (test_suite_plan.py)
            compileall.compile_dir(root / part, quiet=1, workers=1)


_ENV_VARS = ("KELVIN_DATA_DIR", "KELVIN_PROJECT", "KELVIN_OLLAMA_HOST", "OLLAMA_HOST", "KELVIN_EMBEDDER",
             "KELVIN_CHAT_MODEL", "KELVIN_EXTRACT_MODEL", "KELVIN_NUM_CTX", "KELVIN_INDEX_URI", "KELVIN_CONFIG_DIR", "KELVIN_OLLAMA_TIMEOUT",
             "KELVIN_MODE", "KELVIN_VRAM_GUARD", "KELVIN_GPU_INTERVAL_MS", "KELVIN_VRAM_MARGIN_MB", "KELVIN_VRAM_RESERVE_MB",
             "KELVIN_VRAM_HOLD_S", "KELVIN_YIELD_MODE", "KELVIN_PRELOAD_AFTER_RENDER", "KELVIN_RENDERER_PROCESSES",
             "KELVIN_USD_PYTHON", "KELVIN_LOCK_WAIT_S", "KELVIN_MODEL_SERVER", "KELVIN_OPENAI_URL",
             "KELVIN_OPENAI_API_KEY", "KELVIN_CPU_NUM_CTX",
             "KELVIN_TEAM_SERVER", "KELVIN_ARTIST", "PGHOST", "PGPORT", "PGUSER", "PGDATABASE", "PGPASSWORD",
             "PGSERVICE", "PGSERVICEFILE", "PGPASSFILE", "PGSSLMODE")


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


@pytest.fixture(autouse=True)
def _no_running_timers_or_workers(request):
    """A GUI test must leave no timer ticking and no worker running once its windows are closed
    (autouse: torn down after pytest-qt has closed the test's widgets)."""
    yield
    if "qtbot" not in request.fixturenames:
        return
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication

    from app.ui.worker import Pools

    app = QApplication.instance()
    for pools in list(Pools.made):
        pools.wait(10_000)
    app.processEvents()
    # The test's closed windows are garbage now, some of them in reference cycles that only a
    # collection frees: collected here, on the UI thread, before the walk below. Two full runs died
    # with "Fatal Python error: Segmentation fault" in that walk; the cause is not established
    # (PySide6 already hands a QObject freed on another thread back to its own thread to delete —
    # checked), and no run has crashed since this collection was added.
    gc.collect()
    # What outlived the collection lives on (the libraries the test imported first: LanceDB, pyarrow,
    # pygments; caches): frozen, as at start-up (pytest_collection_finish), so that the next test's
    # collection walks only what that test made — it walked all of it again, ~0.1 s per GUI test.
    gc.freeze()
    busy = [p for p in Pools.made if any(q.activeThreadCount() for q in (p.model, p.memory, p.general))]
    ticking = [f"{type(w).__name__}.{t.objectName() or 'timer'} ({t.interval()} ms)"
               for w in app.allWidgets() if w.isVisible() or w.parent() is None
               for t in w.findChildren(QTimer) if t.isActive()]
    assert not busy, f"{len(busy)} worker pools still running after the test"
    assert not ticking, f"timers left running after the test: {ticking}"


def _seconds(item) -> float:
    """How long a test takes alone on the project's 2-core machine, as its ``slow`` mark says (0: a few
    seconds at most)."""
    mark = item.get_closest_marker("slow")
    return float(mark.kwargs.get("seconds", 10)) if mark else 0.0


@pytest.hookimpl(wrapper=True)
def pytest_xdist_auto_num_workers(config):
    """``-n auto`` (the README's command): one worker more than pytest-xdist would start (the cores).
    Many tests spend part of their time waiting — on a process they started, a server, a timeout they
    test — and the extra worker fills those waits: on the project's 2-core machine 4:08 with three
    workers against 4:21 with two, back to back (Stop 43; 4:42 against 4:50 at Stop 42), for ~10 % more
    CPU. ``PYTEST_XDIST_AUTO_NUM_WORKERS`` still sets the number exactly."""
    cores = yield
    return cores if os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS") else cores + 1


def pytest_collection_finish(session):
    """Freeze what the imports and the collection left, as Kelvin itself does once it has started
    (``gc.freeze()`` in app/ui/app.py): those objects live all run, and the full collection after each
    GUI test (below) then walks only what tests made — ~0.1 s less per GUI test."""
    gc.freeze()


def pytest_collection_modifyitems(items):
    """Marks GUI tests, and plans the run on the workers (README: ``-n auto``; ``--dist loadfile`` in
    pyproject.toml): a module's tests run on one worker, one after the other, so a module-scoped
    fixture (the real-model tier's llama-server, the bundle, a USD stage written once) is set up
    once per run; and the modules with the most slow work (their ``slow(seconds=)`` marks) go first,
    so that the two workers end together instead of one waiting on a long module started last.
    Only the order changes: every test runs, as it is. (``--dist loadgroup`` would group finer, but
    with pytest 9.2 it silently stops grouping: pytest-xdist issue 1386.)"""
    for item in items:
        if "qtbot" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.gui)
    module_seconds: dict[str, float] = {}
    for item in items:
        module_seconds[item.nodeid.split("::")[0]] = module_seconds.get(item.nodeid.split("::")[0], 0.0) + _seconds(item)
    items.sort(key=lambda item: -module_seconds[item.nodeid.split("::")[0]])  # stable: a module keeps its order


@pytest.fixture
def make_service(tmp_path):
    """Build MemoryServices on tmp data; all are closed (writer drained) at the end of the test."""
    from app.config import load
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


@pytest.fixture(scope="session")
def postgres():
    """One throwaway PostgreSQL 15 cluster for the whole run (tests/support/postgres.py); each
    test that uses it makes its own database. Skipped where PostgreSQL is not installed."""
    from tests.support.postgres import Cluster, available

    why = available()
    if why:
        pytest.skip(why)
    cluster = Cluster().start()
    try:
        yield cluster
    finally:
        cluster.remove()


@pytest.fixture
def server():
    """The Ollama-protocol test server on 127.0.0.1 (tests/support/ollama_server.py), reached through
    the real ``ollama`` client; stopped after the test, which fails if a request raised inside it."""
    from tests.support.ollama_server import OllamaTestServer

    with OllamaTestServer() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
def window(qtbot, tmp_path):
    """``window(server, **config)``: a real MainWindow on real services over tmp data, shown, active
    and ready to type in; closed after the test (the writer drained, the pools waited for)."""
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.config import load
    from app.ui.app import build_services
    from app.ui.main_window import MainWindow

    made = []

    def make(server, **overrides):
        settings = load({"ollama_host": server.host, **overrides})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        qtbot.waitExposed(w)
        w.activateWindow()
        qtbot.waitUntil(lambda: QApplication.activeWindow() is w, timeout=5000)  # shortcuts need an active window
        w.attach(build_services(settings, gpu=False))
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly(), timeout=10_000)  # the transcript is there
        w.chat.composer.setFocus()
        made.append(w)
        return w

    yield make
    for w in made:
        w.close()  # drains the writer, waits for the pools


@pytest.fixture(scope="session")
def forest(tmp_path_factory):
    """forest.blend, made once by real Blender (tests/support/blend_scene.py); read, never written, by
    the tests that use it. Skipped where Blender's Python is not installed."""
    from tests.support.blender import BLENDER, make_blend

    if not BLENDER:
        pytest.skip("no Blender Python")
    return make_blend(tmp_path_factory.mktemp("blend") / "forest.blend")

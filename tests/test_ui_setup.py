"""The setup panel (issue 6): what is missing, said plainly, with the fix. Real parts at the edges:
the Ollama-protocol test server on 127.0.0.1 through the real client, a real kelvin.toml in the
test's config folder, a real detached process for "Start Ollama"."""
from __future__ import annotations

import os
import signal
import socket
import sys
import time
import tomllib
from pathlib import Path

import pytest
from PySide6.QtCore import QSettings, Qt
from PySide6.QtWidgets import QFileDialog

from app.gpu import nvml
from app.config import config_file, load
from app.ui.main_window import MainWindow
from app.ui.setup_panel import INSTALL_URL, NO_GPU, SetupPanel
from app.ui.worker import Pools
from tests.support.ollama_server import ModelSpec, OllamaTestServer

CHAT = "llama3.1:8b"
REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _no_gpu(monkeypatch):
    """The same answer on every machine: no NVIDIA GPU here."""
    monkeypatch.setattr(nvml, "probe", lambda: nvml.Probe(False, "", (), "no NVIDIA driver found (test)"))


@pytest.fixture
def panel(qtbot):
    made = []

    def make(host: str = "http://127.0.0.1:9", **overrides) -> SetupPanel:
        p = SetupPanel(load({"ollama_host": host, **overrides}), Pools())
        qtbot.addWidget(p)
        p.resize(560, 700)
        p.show()
        made.append(p)
        return p

    yield make
    for p in made:
        assert p.pools.wait(10_000)


def look(qtbot, p: SetupPanel) -> dict:
    with qtbot.waitSignal(p.checked, timeout=15_000) as blocker:
        p.refresh()
    return {c.name: c for c in blocker.args[0]}


def idle(qtbot, p: SetupPanel) -> None:
    qtbot.waitUntil(lambda: p._look is None and not p._pulls and p.rows["data"].action.isEnabled(), timeout=15_000)


def click(qtbot, button) -> None:
    assert button.isVisible() and button.isEnabled(), button.text()
    qtbot.mouseClick(button, Qt.MouseButton.LeftButton)


def test_a_missing_chat_model_is_pulled_with_a_progress_bar_and_then_found(qtbot, panel):
    with OllamaTestServer(models={}, available={CHAT: ModelSpec(size=4_700_000_000)}, delay_s=0.05) as srv:
        p = panel(srv.host)
        checks = look(qtbot, p)
        assert checks["Ollama"].status == "ok" and checks["chat model"].status == "fail"
        assert [c.name for c in p.blocking()] == ["chat model"]
        chat = p.rows["chat"]
        assert chat.status == "fail" and f"{CHAT} is not installed" in chat.detail.text()
        assert "Memory only" in chat.hint.text() and chat.action.text() == f"Pull {CHAT}"
        assert "Memory only" in p.summary.text()

        seen = []
        p.pull_progress.connect(lambda *args: seen.append(args))
        click(qtbot, chat.action)
        assert chat.pulling.isVisible() and not chat.action.isVisible()
        # the UI thread is free while it downloads: the bar moves between the ends
        qtbot.waitUntil(lambda: 0 < chat.progress.value() < 100, timeout=10_000)
        assert chat.cancel.isEnabled() and "GB" in chat.step.text()
        with qtbot.waitSignal(p.pull_finished, timeout=15_000) as finished:
            pass
        assert finished.args == [CHAT, "done"]
        assert seen[0] == (CHAT, 0, "pulling manifest") and seen[-1] == (CHAT, 100, "success")
        percents = [s[1] for s in seen]
        assert percents == sorted(percents) and 50 in percents and percents.count(100) == 1
        assert [s[2] for s in seen][-3:] == ["verifying sha256 digest", "writing manifest", "success"]
        assert chat.progress.value() == 100

        qtbot.waitUntil(lambda: chat.status == "ok", timeout=15_000)  # the re-check after the pull
        assert f"{CHAT} (8.0B" in chat.detail.text() and not chat.action.isVisible()
        assert chat.hint.text() == f"{CHAT} is ready." and not chat.pulling.isVisible()
        assert p.blocking() == [] and p.summary.text() == "Everything Kelvin needs is in place."
        assert [b["model"] for b in srv.requests_to("/api/pull")] == [CHAT] and srv.errors == []
        idle(qtbot, p)


def test_a_missing_ollama_embedder_offers_its_pull_too(qtbot, panel):
    with OllamaTestServer(models={CHAT: ModelSpec()}) as srv:
        p = panel(srv.host, embedder="ollama:nomic-embed-text")
        checks = look(qtbot, p)
        assert checks["embedder"].status == "warn" and checks["embedder"].pull == "nomic-embed-text"
        row = p.rows["embedder"]
        assert row.action.text() == "Pull nomic-embed-text" and "full-text only" in row.detail.text()
        assert p.blocking() == [] and "only limits it" in p.summary.text()
        with qtbot.waitSignal(p.pull_finished, timeout=15_000) as finished:
            click(qtbot, row.action)
        assert finished.args == ["nomic-embed-text", "done"]
        qtbot.waitUntil(lambda: row.status == "ok", timeout=15_000)
        idle(qtbot, p)


def test_a_cancelled_pull_stops_without_error_text(qtbot, panel):
    with OllamaTestServer(models={}, available={CHAT: ModelSpec()}, delay_s=0.3) as srv:
        p = panel(srv.host)
        look(qtbot, p)
        chat = p.rows["chat"]
        with qtbot.waitSignal(p.pull_progress, timeout=10_000):
            click(qtbot, chat.action)
        with qtbot.waitSignal(p.pull_finished, timeout=10_000) as finished:
            click(qtbot, chat.cancel)
            assert chat.step.text() == "Stopping …"
        assert finished.args == [CHAT, "cancelled"]
        assert chat.hint.text().startswith("Download stopped.")
        idle(qtbot, p)
        assert not chat.pulling.isVisible()
        said = " ".join([p.summary.text(), *(r.text() for r in p.rows.values())]).lower()
        assert "could not" not in said and "error" not in said and "failed" not in said
        assert chat.hint.text().startswith("Download stopped.")  # still said after the re-check
        assert srv.errors == []


def test_ollama_unreachable_is_said_plainly_with_how_to_install_it(qtbot, panel, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))  # no `ollama` binary anywhere
    p = panel("http://127.0.0.1:9")
    checks = look(qtbot, p)
    assert checks["Ollama"].status == "fail"
    row = p.rows["ollama"]
    assert row.status == "fail" and row.detail.text() == "Ollama is not reachable at http://127.0.0.1:9."
    assert INSTALL_URL in row.hint.text() and "Memory only" in row.hint.text()
    assert row.hint.textFormat() == Qt.TextFormat.PlainText  # the address is text, never opened by itself
    assert not row.action.isVisible()  # nothing to start
    for key in ("chat", "embedder"):
        assert p.rows[key].detail.text() == "Checked once Ollama answers." and not p.rows[key].action.isVisible()
    gpu = p.rows["gpu"]
    assert (gpu.status, gpu.detail.text()) == ("info", NO_GPU)  # no GPU is information, not a failure
    assert p.rows["data"].status == "ok" and p.rows["data"].action.text() == "Choose…"
    assert [c.name for c in p.blocking()] == ["Ollama"] and "Memory only" in p.summary.text()
    with qtbot.waitSignal(p.done, timeout=1000):
        click(qtbot, p.go_on)  # the artist can always go on


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_start_ollama_runs_ollama_serve_detached_on_kelvins_host_and_looks_again(qtbot, panel, tmp_path, monkeypatch):
    bin_dir, said = tmp_path / "bin", tmp_path / "ollama-args.txt"
    bin_dir.mkdir()
    fake = bin_dir / "ollama"  # starts the test server where OLLAMA_HOST says, as `ollama serve` would
    fake.write_text(f'#!/bin/sh\necho "$$ $@ $OLLAMA_HOST" > "{said}"\ncd "{REPO}"\n'
                    f'exec "{sys.executable}" -m tests.support.ollama_server --port "${{OLLAMA_HOST##*:}}" '
                    '--delay 0 >/dev/null 2>&1\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    port = _free_port()
    p = panel(f"http://127.0.0.1:{port}")
    p._recheck.setInterval(300)
    look(qtbot, p)
    row = p.rows["ollama"]
    assert row.status == "fail" and row.action.text() == "Start Ollama" and "starts it in the background" in row.hint.text()
    click(qtbot, row.action)
    assert p.started_ollama and "Starting Ollama" in row.hint.text() and not row.action.isVisible()
    qtbot.waitUntil(said.exists, timeout=10_000)
    pid = int(said.read_text().split()[0])  # the script exec's the server: same pid
    try:
        assert said.read_text().split()[1:] == ["serve", f"127.0.0.1:{port}"]
        qtbot.waitUntil(lambda: row.status == "ok", timeout=20_000)  # looked at again until it answers
        assert "0.12.0-kelvin-test" in row.detail.text() and p.rows["chat"].status == "ok"
        idle(qtbot, p)
    finally:
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)


def test_choosing_a_data_folder_writes_kelvin_toml_and_keeps_the_rest(qtbot, panel, tmp_path, monkeypatch):
    monkeypatch.delenv("KELVIN_DATA_DIR")
    toml = config_file()
    toml.parent.mkdir(parents=True)
    toml.write_text('# my Kelvin\nchat_model = "qwen2.5:7b"\nnum_ctx = 4096\n', encoding="utf-8")
    chosen = tmp_path / "renders" / "kelvin memory"
    chosen.mkdir(parents=True)
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: str(chosen)))
    p = panel()
    look(qtbot, p)
    row = p.rows["data"]
    with qtbot.waitSignal(p.settings_changed, timeout=10_000) as changed:
        click(qtbot, row.action)
    assert changed.args[0].data_dir == str(chosen) and changed.args[0].chat_model == "qwen2.5:7b"
    text = toml.read_text(encoding="utf-8")
    assert tomllib.loads(text) == {"chat_model": "qwen2.5:7b", "num_ctx": 4096, "data_dir": str(chosen)}
    assert text.startswith("# my Kelvin\n")  # the artist's comment stays
    assert load().data_path() == chosen
    assert row.hint.text() == f"Saved: Kelvin keeps its memory in {chosen} after a restart."
    assert list(toml.parent.iterdir()) == [toml]  # no temp file left behind
    idle(qtbot, p)
    look(qtbot, p)
    assert "after a restart" in row.hint.text()  # a re-check keeps saying it


def test_a_data_folder_choice_says_when_the_environment_wins_or_the_folder_is_not_usable(qtbot, panel, tmp_path,
                                                                                          monkeypatch):
    chosen = tmp_path / "elsewhere"
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *args: str(chosen)))
    p = panel()  # KELVIN_DATA_DIR is set (conftest): it wins over kelvin.toml
    look(qtbot, p)
    row = p.rows["data"]
    with qtbot.waitSignal(p.settings_changed, timeout=10_000):
        click(qtbot, row.action)
    assert "started with another data folder set for it from outside the window" in row.hint.text()
    idle(qtbot, p)

    blocker = tmp_path / "a file"
    blocker.write_text("not a folder")
    chosen = blocker / "memory"
    with qtbot.assertNotEmitted(p.settings_changed, wait=200):
        click(qtbot, row.action)
        qtbot.waitUntil(lambda: "Choose another folder" in row.hint.text(), timeout=10_000)
    assert f"{chosen} is not writable" in row.hint.text()
    assert tomllib.loads(config_file().read_text(encoding="utf-8"))["data_dir"] == str(tmp_path / "elsewhere")
    idle(qtbot, p)


def test_the_window_shows_setup_when_the_chat_model_is_missing_and_continue_goes_to_the_chat(qtbot, tmp_path):
    from app.ui.app import build_services

    with OllamaTestServer(models={}) as srv:
        settings = load({"ollama_host": srv.host})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        w.attach(build_services(settings, gpu=False))
        qtbot.waitUntil(lambda: w.views.currentWidget() is w.setup_panel, timeout=15_000)
        assert not w.tabs.isVisible() and w.setup_panel.rows["chat"].status == "fail"
        click(qtbot, w.setup_panel.go_on)
        assert w.views.currentWidget() is w.chat and w.tabs.isVisible()
        assert not w.header.setup_button.isVisible() and w.header.more.isVisible()  # 560 px: a sidebar's header
        w.header.more.menu().actions()[0].trigger()  # "Setup…" in its ⋯ menu brings it back, checked afresh
        assert w.views.currentWidget() is w.setup_panel
        qtbot.waitUntil(lambda: w.setup_panel._look is None, timeout=15_000)
        click(qtbot, w.setup_panel.go_on)
        w.resize(1200, 800)
        qtbot.waitUntil(lambda: w.header.setup_button.isVisible(), timeout=5_000)
        click(qtbot, w.header.setup_button)  # and "Setup…" in a wide window's header
        assert w.views.currentWidget() is w.setup_panel
        qtbot.waitUntil(lambda: w.setup_panel._look is None, timeout=15_000)
        w.close()


def test_the_window_stays_on_the_chat_when_nothing_is_missing(qtbot, tmp_path):
    from app.ui.app import build_services

    with OllamaTestServer() as srv:
        settings = load({"ollama_host": srv.host})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        w.attach(build_services(settings, gpu=False))
        with qtbot.waitSignal(w.setup_panel.checked, timeout=15_000):
            pass
        qtbot.waitUntil(lambda: w.views.currentWidget() is w.chat and w.tabs.isVisible(), timeout=5000)
        w.close()


def test_quitting_mid_pull_stops_the_download(qtbot, panel):
    with OllamaTestServer(models={}, available={CHAT: ModelSpec()}, delay_s=0.3) as srv:
        p = panel(srv.host)
        look(qtbot, p)
        with qtbot.waitSignal(p.pull_progress, timeout=10_000):
            click(qtbot, p.rows["chat"].action)
        started = time.monotonic()
        assert p.pools.wait(5000)  # what the window does on quit: abort every worker, wait for the pools
        assert time.monotonic() - started < 2.0  # the pull saw the abort at its next line, not at the end
        qtbot.waitUntil(lambda: not p._pulls, timeout=5000)
        assert p.rows["chat"].hint.text().startswith("Download stopped.")
        idle(qtbot, p)


def test_a_window_whose_memory_cannot_open_offers_setup(qtbot, tmp_path):
    w = MainWindow(load({}), QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
    qtbot.addWidget(w)
    w.failed_to_start(OSError(13, "Permission denied"))
    assert w.views.currentWidget() is w.setup_panel and w.setup_panel.rows["data"].action.text() == "Choose…"
    qtbot.waitUntil(lambda: w.setup_panel._look is None, timeout=15_000)
    assert "Permission denied" in w.chat.transcript.toPlainText()
    w.close()


def test_start_ollama_is_offered_only_for_this_computer():
    from app.services.setup import ollama_address

    assert ollama_address("http://127.0.0.1:11434") == (True, "127.0.0.1:11434")
    assert ollama_address("localhost") == (True, "localhost:11434")  # the client's defaults: http, port 11434
    assert ollama_address("http://render-box:8080") == (False, "render-box:8080")

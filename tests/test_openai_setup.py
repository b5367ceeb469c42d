"""Choosing the model server: the setting, `kelvin doctor`, the Setup panel (server and chat model
picked and used at once), and the GPU view and tray saying when the server cannot unload. Real
parts: the OpenAI-protocol test server on 127.0.0.1, a real kelvin.toml, a real window."""
from __future__ import annotations

import json
import tomllib

import pytest
from PySide6.QtCore import QSettings, Qt

from tests.support.cli import kelvin
from app.config import ConfigError, config_file, load
from app.gpu import nvml
from app.llm.backend import OllamaBackend
from app.llm.openai_compat import OpenAIBackend
from app.llm.servers import connect
from app.services import doctor
from app.ui.gpu_view import GpuView
from app.ui.setup_panel import SetupPanel
from app.ui.tray import Tray
from app.ui.worker import Pools
from tests.support.ollama_server import OllamaTestServer
from tests.support.openai_server import Model, OpenAITestServer

CHAT = "gemma-3-270m"


def test_the_setting_picks_the_kind_and_its_address(monkeypatch):
    s = load()
    assert (s.model_server, s.model_host) == ("ollama", "http://127.0.0.1:9")  # the tests' discard port
    assert isinstance(connect(s), OllamaBackend)
    monkeypatch.setenv("KELVIN_MODEL_SERVER", "openai")
    monkeypatch.setenv("KELVIN_OPENAI_URL", "http://127.0.0.1:8080/v1")
    s = load()
    backend = connect(s)
    assert isinstance(backend, OpenAIBackend) and backend.host == s.model_host == "http://127.0.0.1:8080/v1"
    backend.close()
    monkeypatch.setenv("KELVIN_MODEL_SERVER", "lmstudio")
    with pytest.raises(ConfigError, match="model_server must be 'ollama' or 'openai'"):
        load()


def test_doctor_checks_an_openai_server_its_model_context_embedder_and_unloading(monkeypatch):
    monkeypatch.setattr(nvml, "probe", lambda: nvml.Probe(False, "", (), "no NVIDIA driver found (test)"))
    with OpenAITestServer(models={CHAT: Model(), "nomic-embed-text-v1.5": Model(kind="embedding")},
                          flavour="llama.cpp", n_ctx=4096) as srv:
        monkeypatch.setenv("KELVIN_MODEL_SERVER", "openai")
        monkeypatch.setenv("KELVIN_OPENAI_URL", srv.url)
        monkeypatch.setenv("KELVIN_CHAT_MODEL", CHAT)
        monkeypatch.setenv("KELVIN_EMBEDDER", "openai:nomic-embed-text-v1.5")
        checks = {c["name"]: c for c in json.loads(kelvin("doctor", "--json").stdout)}
    assert checks["model server"]["status"] == "ok"
    assert checks["model server"]["detail"] == f"llama.cpp's server b0-test at {srv.url} (OpenAI-compatible)"
    chat = checks["chat model"]
    assert chat["status"] == "warn" and "holds 4,096 tokens per request, less than Kelvin's window of 8,192" in chat["detail"]
    assert "Kelvin packs 4,096" in chat["detail"]
    assert checks["embedder"]["status"] == "ok"
    assert checks["unloading"]["status"] == "info" and "started with one model (-m)" in checks["unloading"]["detail"]


def test_doctor_says_plainly_when_the_address_is_no_model_server(monkeypatch):
    with OpenAITestServer() as srv:
        srv.html = True
        settings = load({"model_server": "openai", "openai_url": srv.url})
        with connect(settings) as backend:
            checks = doctor.run(settings, backend)
    assert [c.name for c in doctor.blocking(checks)] == ["model server"]
    assert "not as an OpenAI-compatible server does" in checks[0].detail and "LM Studio" in checks[0].fix


@pytest.fixture(autouse=True)
def _no_gpu(monkeypatch):
    monkeypatch.setattr(nvml, "probe", lambda: nvml.Probe(False, "", (), "no NVIDIA driver found (test)"))


def test_the_setup_panel_switches_to_lm_studio_and_picks_a_model_it_has(qtbot):
    with OpenAITestServer(flavour="lmstudio", models={"qwen2.5-7b-instruct": Model(tools=True),
                                                      "nomic-embed-text-v1.5": Model(kind="embedding")}) as srv:
        p = SetupPanel(load({}), Pools())
        qtbot.addWidget(p)
        p.show()
        with qtbot.waitSignal(p.checked, timeout=15_000):
            p.refresh()
        assert p.rows["ollama"].status == "fail" and p.rows["ollama"].title.text() == "Model server"
        chooser = p.chooser
        chooser.kind.setCurrentIndex(chooser.kind.findData("openai"))
        assert chooser.address.text() == "http://127.0.0.1:1234/v1"  # LM Studio's own, to start from
        chooser.address.setText(srv.url)
        with qtbot.waitSignal(p.server_changed, timeout=15_000) as changed:
            qtbot.mouseClick(chooser.use, Qt.MouseButton.LeftButton)
        assert (changed.args[0].model_server, changed.args[0].openai_url) == ("openai", srv.url)
        saved = tomllib.loads(config_file().read_text(encoding="utf-8"))
        assert (saved["model_server"], saved["openai_url"]) == ("openai", srv.url)
        qtbot.waitUntil(lambda: p._look is None and p.rows["ollama"].status == "ok", timeout=15_000)
        assert "LM Studio" in p.rows["ollama"].detail.text()
        chat = p.rows["chat"]
        assert chat.status == "fail" and "LM Studio has no model llama3.1:8b" in chat.detail.text()
        assert not chat.action.isVisible()  # no Pull: LM Studio downloads models itself …
        assert p.picker.isVisible()  # … but Kelvin can use one it has
        assert [p.picker.models.itemText(i) for i in range(p.picker.models.count())] == [
            "qwen2.5-7b-instruct", "nomic-embed-text-v1.5"]
        with qtbot.waitSignal(p.server_changed, timeout=15_000) as changed:
            qtbot.mouseClick(p.picker.use, Qt.MouseButton.LeftButton)
        assert changed.args[0].chat_model == "qwen2.5-7b-instruct"
        assert tomllib.loads(config_file().read_text(encoding="utf-8"))["chat_model"] == "qwen2.5-7b-instruct"
        qtbot.waitUntil(lambda: p._look is None and chat.status == "ok", timeout=15_000)
        assert "can use memory tools" in chat.detail.text() and not p.picker.isVisible()
        assert p.blocking() == []
        assert p.pools.wait(10_000)


def test_the_window_talks_to_the_new_server_at_once(qtbot, tmp_path):
    from app.ui.app import build_services
    from app.ui.main_window import MainWindow

    with OllamaTestServer() as ollama, OpenAITestServer() as srv:
        settings = load({"ollama_host": ollama.host})
        w = MainWindow(settings, QSettings(str(tmp_path / "window.ini"), QSettings.Format.IniFormat))
        qtbot.addWidget(w)
        w.show()
        w.attach(build_services(settings, gpu=False))
        qtbot.waitUntil(lambda: "Ollama" in (w.header.ollama_label.property("full") or ""), timeout=15_000)
        w.status.use_server(load({"model_server": "openai", "openai_url": srv.url, "chat_model": CHAT}))
        qtbot.waitUntil(lambda: w.services.conversation.backend.kind == "openai", timeout=15_000)
        qtbot.waitUntil(lambda: "llama.cpp's server" in (w.header.ollama_label.property("full") or ""), timeout=15_000)
        assert w.services.conversation.model == CHAT
        srv.queue_reply("Through llama.cpp now.")
        result = w.services.conversation.ask("hello?")
        assert result.text == "Through llama.cpp now." and srv.requests_to("/v1/chat/completions")
        w.close()


def test_the_gpu_view_and_the_tray_say_when_the_guard_cannot_free_the_vram(qtbot):
    view = GpuView(frozenset())
    qtbot.addWidget(view)
    view.show()
    view.set_available(True, "")
    cannot = "LM Studio at http://127.0.0.1:1234/v1 (before 0.4) cannot unload a model when Kelvin asks"
    view.set_unload_problem(cannot)
    assert view.limit.isVisible() and view.limit.text() == f"Kelvin cannot free the VRAM its model holds: {cannot}."
    assert "the server keeps it loaded" in view.free_button.toolTip()
    view.set_unload_problem("")
    assert not view.limit.isVisible()
    tray = Tray()
    tray.set_gpu(True)
    tray.set_unload_problem(cannot)
    assert tray.free_action.text() == "Free VRAM now — the model server keeps its model loaded"
    assert tray.free_action.toolTip() == cannot and "cannot unload its model" in tray.icon.toolTip()
    tray.hide()

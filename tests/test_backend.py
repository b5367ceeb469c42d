"""OllamaBackend through the real ``ollama`` client against the test server (real HTTP, no mocks)."""
from __future__ import annotations

import socket
import threading
import time

import httpx
import ollama
import pytest

from app.llm.backend import ChatChunk, ChatStream, LoadedModel, OllamaBackend, PullProgress, ToolCall
from app.llm.errors import (ModelMissing, NotRunning, OllamaUnavailable, OutOfMemory, ServerError, StreamCut,
                            explain)
from tests.support.ollama_server import ModelSpec, OllamaTestServer, embed_text
from tests.support.waits import wait_until

CHAT, EMBED = "llama3.1:8b", "nomic-embed-text"
USER = [{"role": "user", "content": "How do I reduce fireflies in Cycles?"}]
REPLY = "Clamp indirect light to 10 and raise the filter glossy to 1."
TOOLS = [{"type": "function", "function": {"name": "get_render_settings", "description": "Read settings",
                                            "parameters": {"type": "object", "properties": {
                                                "engine": {"type": "string"}}}}}]


@pytest.fixture
def backend(server):
    with OllamaBackend(server.host, timeout_s=5.0) as b:
        yield b


@pytest.fixture
def dead_host():
    """A port on 127.0.0.1 that nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def stream_threads():
    return [t for t in threading.enumerate() if t.name == "kelvin-model-stream" and t.is_alive()]


# -- chat ------------------------------------------------------------------------------------------
def test_chat_streams_the_reply_in_order_and_ends_with_counts(server, backend):
    server.queue_reply(REPLY)
    with backend.chat(CHAT, USER) as stream:
        chunks = list(stream)
    words = REPLY.split(" ")
    assert [c.text for c in chunks[:-1]] == [words[0]] + [" " + w for w in words[1:]]
    assert "".join(c.text for c in chunks) == REPLY == stream.text
    final = chunks[-1]
    assert final.done and final.done_reason == "stop" and not any(c.done for c in chunks[:-1])
    assert final.eval_count == len(words)
    assert final.prompt_eval_count == len(USER[0]["content"]) // 4
    assert not stream.cancelled

    body = server.requests_to("/api/chat")[-1]
    assert body["options"] == {"num_ctx": 8192}  # no num_gpu unless CPU mode
    assert body["stream"] is True and body["messages"] == USER
    assert "context" not in body and "keep_alive" not in body
    assert not body.get("tools")  # the client always sends "tools": [], which means none


def test_cpu_mode_sends_num_gpu_zero_and_the_model_loads_off_the_gpu(server, backend):
    _, final = backend.complete(CHAT, USER, cpu=True, num_ctx=4096, num_predict=3, keep_alive="10m")
    body = server.requests_to("/api/chat")[-1]
    assert body["options"] == {"num_ctx": 4096, "num_gpu": 0, "num_predict": 3}
    assert body["keep_alive"] == "10m" and "context" not in body
    assert final.done_reason == "length" and final.eval_count == 3
    assert backend.ps() == [LoadedModel(CHAT, 4_920_000_000, 0)]


def test_tool_calls_come_back_as_tool_calls(server, backend):
    server.queue_reply("", tool_calls=[{"name": "get_render_settings", "arguments": {"engine": "octane"}}])
    with backend.chat(CHAT, USER, tools=TOOLS) as stream:
        chunks = list(stream)
    assert [c.tool_calls for c in chunks if c.tool_calls] == [(ToolCall("get_render_settings", {"engine": "octane"}),)]
    assert server.requests_to("/api/chat")[-1]["tools"] == TOOLS

    server.queue_reply("Reading them.", tool_calls=[{"name": "get_render_settings", "arguments": {}}])
    text, final = backend.complete(CHAT, USER, tools=TOOLS)
    assert text == "Reading them."
    assert final.done and final.tool_calls == (ToolCall("get_render_settings", {}),)


def test_complete_returns_the_text_and_the_final_chunk(server, backend):
    server.queue_reply(REPLY)
    text, final = backend.complete(CHAT, USER)
    assert text == REPLY
    assert isinstance(final, ChatChunk) and final.done and final.eval_count == len(REPLY.split())


def test_cancel_on_a_stalled_stream_returns_at_once_and_the_reader_ends(server, backend):
    server.delay_s = 2.0  # the first chunk would take 2 s
    stream = backend.chat(CHAT, USER)
    timer = threading.Timer(0.2, stream.cancel)
    timer.start()
    started = time.monotonic()
    chunks = list(stream)
    took = time.monotonic() - (started + 0.2)
    timer.join()
    assert chunks == [] and stream.cancelled and stream.text == ""
    assert took < 0.5
    assert wait_until(lambda: not stream_threads(), 0.5)  # the socket was shut under the blocked read
    stream.close()


def test_cancel_mid_stream_keeps_the_text_so_far(server, backend):
    server.delay_s = 0.3
    server.queue_reply(REPLY)
    with backend.chat(CHAT, USER) as stream:
        first = next(stream)
        started = time.monotonic()
        stream.cancel()
        assert list(stream) == []
        assert time.monotonic() - started < 0.5
    assert stream.cancelled and stream.text == first.text == REPLY.split()[0]
    assert not stream_threads()


def test_cancel_while_waiting_for_response_headers():
    """Real Ollama sends no headers until the model is loaded: cancel must work then too."""
    with socket.create_server(("127.0.0.1", 0)) as silent, \
            OllamaBackend(f"http://127.0.0.1:{silent.getsockname()[1]}", timeout_s=30.0) as b:
        stream = b.chat(CHAT, USER)  # the kernel completes the connection; nobody ever answers
        time.sleep(0.2)
        threading.Timer(0.05, stream.cancel).start()
        started = time.monotonic()
        assert list(stream) == [] and stream.cancelled
        assert time.monotonic() - started < 0.5
        assert wait_until(lambda: not stream_threads(), 0.5)  # not held until the 30 s read timeout
        stream.close()


def test_close_without_iterating_ends_the_reader(server, backend):
    server.delay_s = 1.0
    stream = backend.chat(CHAT, USER)
    started = time.monotonic()
    stream.close()
    assert time.monotonic() - started < 0.5 and stream.cancelled and not stream_threads()
    assert list(stream) == []


def test_cancel_after_the_end_changes_nothing(server, backend):
    with backend.chat(CHAT, USER) as stream:
        text = "".join(c.text for c in stream)
    stream.cancel()
    assert text == "Echo: " + USER[0]["content"] == stream.text and not stream.cancelled


# -- faults --------------------------------------------------------------------------------------------
def test_vanishing_mid_stream_is_a_stream_cut_with_the_partial_text(server, backend):
    server.queue_reply(REPLY)
    server.vanish_mid_stream, server.vanish_after = True, 3
    stream = backend.chat(CHAT, USER)
    got = []
    with pytest.raises(StreamCut, match="cut off") as info:
        for chunk in stream:
            got.append(chunk.text)
    partial = " ".join(REPLY.split()[:3])
    assert "".join(got) == info.value.partial == stream.text == partial
    assert "partial answer is kept" in str(info.value)
    stream.close()


def test_vanishing_before_any_text_is_a_stream_cut_with_nothing_kept(server, backend):
    server.vanish_mid_stream, server.vanish_after = True, 0
    with backend.chat(CHAT, USER) as stream:
        with pytest.raises(StreamCut, match="try again") as info:
            list(stream)
    assert info.value.partial == "" == stream.text


def test_an_error_line_mid_stream_is_a_stream_cut(server, backend):
    server.queue_reply(REPLY)
    server.stream_error = "llama runner process has terminated: exit status 2"
    with backend.chat(CHAT, USER) as stream:
        with pytest.raises(StreamCut, match="llama runner process has terminated") as info:
            list(stream)
    assert info.value.partial == " ".join(REPLY.split()[:2])


def test_missing_model_is_model_missing(server, backend):
    with pytest.raises(ModelMissing, match="ollama pull mistral:7b") as info:
        backend.complete("mistral:7b", USER)
    assert info.value.model == "mistral:7b"
    server.refuse_next(status=404, error=f"model '{CHAT}' not found", path="/api/chat")
    with pytest.raises(ModelMissing, match="ollama pull"):
        backend.complete(CHAT, USER)
    with pytest.raises(ModelMissing):
        backend.show("mistral:7b")
    with pytest.raises(ModelMissing):
        backend.embed("mxbai-embed-large", ["x"])


def test_out_of_memory_suggests_cpu_mode(server, backend):
    server.refuse_next(status=500, error="model requires more system memory (5.2 GiB) than is available (3.1 GiB)")
    with pytest.raises(OutOfMemory, match="CPU mode") as info:
        backend.complete(CHAT, USER)
    assert "5.2 GiB" in str(info.value) and "smaller model" in str(info.value)
    server.refuse_next(status=500, error="CUDA error: out of memory", path="/api/embed")
    with pytest.raises(OutOfMemory):
        backend.embed(EMBED, ["x"])


def test_other_refusals_are_server_errors_with_the_status(server, backend):
    server.refuse_next(status=500, error="something broke")
    with pytest.raises(ServerError, match="something broke") as info:
        backend.complete(CHAT, USER)
    assert info.value.status == 500
    with pytest.raises(ServerError, match="does not support chat") as info:
        backend.complete(EMBED, USER)  # an embedding model cannot chat
    assert info.value.status == 400


def test_a_slow_server_did_not_answer_in_time(server):
    server.delay_s = 1.0
    with OllamaBackend(server.host, timeout_s=0.2, stream_timeout_s=0.2) as slow:
        with pytest.raises(OllamaUnavailable, match="did not answer in time") as info:
            slow.complete(CHAT, USER)
    assert type(info.value) is OllamaUnavailable
    # a stream may stay silent much longer than a plain call (a model loading, a long prompt on the CPU)
    server.delay_s = 0.4
    with OllamaBackend(server.host, timeout_s=0.2) as patient:
        assert patient.stream_timeout_s >= 600
        text, final = patient.complete(CHAT, [{"role": "user", "content": "hi"}])
        assert text == "Echo: hi" and final.done


@pytest.mark.parametrize("call", [
    lambda b: b.complete(CHAT, USER), lambda b: list(b.chat(CHAT, USER)), lambda b: b.embed(EMBED, ["x"]),
    lambda b: b.ps(), lambda b: b.show(CHAT), lambda b: b.list(), lambda b: b.has_model(CHAT),
    lambda b: b.version(), lambda b: b.unload(CHAT), lambda b: b.pull(CHAT)],
    ids=["complete", "chat", "embed", "ps", "show", "list", "has_model", "version", "unload", "pull"])
def test_a_stopped_server_is_not_running(dead_host, call):
    with OllamaBackend(dead_host, timeout_s=2.0) as b:
        with pytest.raises(NotRunning) as info:
            call(b)
    assert dead_host in str(info.value) and "ollama serve" in str(info.value)
    assert "KELVIN_OLLAMA_HOST" in str(info.value)


def test_a_server_that_stops_mid_session_is_not_running():
    srv = OllamaTestServer().start()
    with OllamaBackend(srv.host, timeout_s=2.0) as b:
        assert b.list()
        srv.stop()
        with pytest.raises(NotRunning):
            b.list()
        with pytest.raises(NotRunning):
            b.complete(CHAT, USER)


def test_explain_maps_transport_errors():
    req = httpx.Request("POST", "http://h/api/chat")
    assert type(explain(ConnectionError("x"), "h", CHAT)) is NotRunning
    assert type(explain(httpx.ConnectTimeout("x", request=req), "h", CHAT)) is NotRunning
    slow = explain(httpx.ReadTimeout("x", request=req), "h", CHAT)
    assert type(slow) is OllamaUnavailable and "did not answer in time" in str(slow)
    cut = explain(httpx.RemoteProtocolError("x", request=req), "h", CHAT, partial="Half")
    assert type(cut) is StreamCut and cut.partial == "Half"
    assert type(explain(ollama.ResponseError("boom"), "h", CHAT, partial="")) is ServerError  # before any text
    assert type(explain(ollama.ResponseError("pull model manifest: file does not exist"), "h", CHAT)) is ModelMissing


# -- models ------------------------------------------------------------------------------------------
def test_embed_returns_the_servers_vectors(server, backend):
    texts = ["GI clamp 10", "maxsubdivs 4"]
    assert backend.embed(EMBED, texts) == [embed_text(t) for t in texts]
    assert backend.embed(EMBED, []) == []
    assert len(server.requests_to("/api/embed")) == 1


def test_unload_is_confirmed_by_ps(server, backend):
    backend.complete(CHAT, USER)
    backend.embed(EMBED, ["x"])
    assert sorted(server.loaded()) == [CHAT, f"{EMBED}:latest"]
    assert {m.name for m in backend.ps()} == {CHAT, f"{EMBED}:latest"}

    assert backend.unload(CHAT) is True
    assert server.loaded() == [f"{EMBED}:latest"]
    assert server.requests_to("/api/generate")[-1] == {"model": CHAT, "stream": False, "keep_alive": 0}
    assert backend.unload(EMBED) is True  # the ":latest" name in ps is the same model
    assert server.loaded() == [] and backend.ps() == []


def test_unload_of_a_model_not_loaded_or_not_installed_is_true_at_once(server, backend):
    started = time.monotonic()
    assert backend.unload(CHAT) is True
    assert backend.unload("mistral:7b") is True
    assert time.monotonic() - started < 0.5
    assert server.requests_to("/api/generate") == []


def test_pull_reports_progress_and_the_model_is_then_listed():
    with OllamaTestServer(available={"qwen2.5:7b": ModelSpec(size=4_700_000_000)}) as srv, \
            OllamaBackend(srv.host, timeout_s=5.0) as b:
        assert not b.has_model("qwen2.5:7b")
        seen: list[PullProgress] = []
        b.pull("qwen2.5:7b", seen.append)
        assert seen[0].status == "pulling manifest" and seen[-1].status == "success"
        weights = [p for p in seen if p.total == 4_700_000_000]
        assert [p.completed for p in weights] == [0, 2_350_000_000, 4_700_000_000]
        assert b.has_model("qwen2.5:7b") and "qwen2.5:7b" in b.list()
        assert srv.errors == []


def test_pull_can_be_cancelled(server, backend):
    cancel = threading.Event()
    seen: list[PullProgress] = []

    def progress(p):
        seen.append(p)
        cancel.set()

    backend.pull("qwen2.5:7b", progress, cancel=cancel)
    assert [p.status for p in seen] == ["pulling manifest"]


def test_show_gives_capabilities_and_details(backend):
    chat = backend.show(CHAT)
    assert chat.capabilities == ("completion", "tools") and chat.supports_tools
    assert (chat.parameter_size, chat.family, chat.context_length) == ("8.0B", "llama", 131072)
    emb = backend.show(EMBED)
    assert emb.capabilities == ("embedding",) and not emb.supports_tools
    assert (emb.parameter_size, emb.family, emb.context_length) == ("137M", "nomic-bert", 2048)


def test_list_and_has_model_know_latest(backend):
    assert backend.list() == [CHAT, f"{EMBED}:latest"]
    assert backend.has_model(EMBED) and backend.has_model(f"{EMBED}:latest")
    assert backend.has_model(CHAT) and not backend.has_model("llama3.1")  # llama3.1 means llama3.1:latest


def test_version(backend):
    assert backend.version() == "0.12.0-kelvin-test"


def test_stream_is_a_chat_stream_on_its_own_thread(server, backend):
    with backend.chat(CHAT, USER) as stream:
        assert isinstance(stream, ChatStream)
        assert list(stream)[-1].done
    assert not stream_threads()


def test_the_pull_meter_gives_one_percent_for_all_layers_never_going_back():
    from app.llm.backend import PullMeter

    with OllamaTestServer(available={"qwen2.5:7b": ModelSpec(size=4_700_000_000)}) as srv, \
            OllamaBackend(srv.host, timeout_s=5.0) as b:
        meter, shown = PullMeter(), []
        b.pull("qwen2.5:7b", lambda p: meter.add(p) and shown.append((meter.percent, p.status)))
    assert [pct for pct, _ in shown] == [0, 0, 50, 99, 99, 99, 99, 100]  # the small second layer does not pull it back
    assert shown[-1] == (100, "success") and shown[0] == (0, "pulling manifest")
    assert (meter.completed, meter.total) == (4_700_000_412, 4_700_000_412)  # both layers, by digest

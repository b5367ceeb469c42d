"""OpenAIBackend against the OpenAI-protocol test server (real HTTP on 127.0.0.1, no mocks): the
wire both ways, cancel, what each kind of server can do with its models, and bad input said in
one plain sentence."""
from __future__ import annotations

import socket
import threading
import time

import pytest

from app.llm.errors import (ContextTooSmall, ModelMissing, ModelServerUnavailable, NotCompatible, NotRunning,
                            ServerError, StreamCut)
from app.llm.model_server import ModelServer, ToolCall
from app.llm.openai_compat import OpenAIBackend, api_root
from app.llm.openai_wire import messages_out
from tests.support.ollama_server import embed_text
from tests.support.openai_server import Model, OpenAITestServer
from tests.support.waits import wait_until

CHAT, EMBED = "gemma-3-270m", "nomic-embed-text-v1.5"
USER = [{"role": "user", "content": "How do I reduce fireflies in Cycles?"}]
REPLY = "Clamp indirect light to 10 and raise the filter glossy to 1."
TOOLS = [{"type": "function", "function": {"name": "recall", "description": "Look up memory",
                                            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}]


@pytest.fixture
def server():
    with OpenAITestServer() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
def backend(server):
    with OpenAIBackend(server.url, timeout_s=5.0) as b:
        yield b


def stream_threads():
    return [t for t in threading.enumerate() if t.name == "kelvin-model-stream" and t.is_alive()]


def test_it_is_a_model_server_that_cannot_pull_or_place_a_request_on_the_cpu(backend):
    assert isinstance(backend, ModelServer)
    assert (backend.kind, backend.can_pull, backend.cpu_mode) == ("openai", False, False)


def test_the_address_is_taken_with_or_without_v1():
    assert api_root("http://127.0.0.1:1234/v1") == ("http://127.0.0.1:1234", "http://127.0.0.1:1234/v1")
    assert api_root("http://127.0.0.1:8080/") == ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1")
    assert api_root("render-box:8000") == ("http://render-box:8000", "http://render-box:8000/v1")


# -- chat ------------------------------------------------------------------------------------------
def test_chat_streams_the_reply_in_order_and_ends_with_the_servers_token_counts(server, backend):
    server.queue_reply(REPLY)
    with backend.chat(CHAT, USER, num_predict=200, num_ctx=4096, cpu=True) as stream:
        chunks = list(stream)
    words = REPLY.split(" ")
    assert [c.text for c in chunks[:-1]] == [words[0]] + [" " + w for w in words[1:]]
    assert stream.text == REPLY
    final = chunks[-1]
    assert final.done and final.done_reason == "stop" and final.eval_count == len(words)
    assert final.prompt_eval_count == len(USER[0]["content"]) // 4 + 4 and final.cached_tokens == 0
    body = server.requests_to("/v1/chat/completions")[-1]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert body["max_tokens"] == 200 and body["messages"] == USER and body["model"] == CHAT
    assert not {"tools", "response_format", "options", "num_ctx", "keep_alive"} & set(body)  # nothing Ollama's


def test_a_reply_cut_by_max_tokens_says_length(server, backend):
    server.queue_reply(REPLY)
    _, final = backend.complete(CHAT, USER, num_predict=3)
    assert final.done_reason == "length" and final.eval_count == 3


def test_cancel_mid_stream_keeps_the_text_so_far_and_the_reader_ends(server, backend):
    server.delay_s = 0.3
    server.queue_reply(REPLY)
    with backend.chat(CHAT, USER) as stream:
        first = next(stream)
        started = time.monotonic()
        stream.cancel()
        assert list(stream) == []
        assert time.monotonic() - started < 0.5
    assert stream.cancelled and stream.text == first.text == REPLY.split()[0]
    assert wait_until(lambda: not stream_threads(), 1.0)


def test_cancel_while_the_server_has_not_answered_yet():
    with socket.create_server(("127.0.0.1", 0)) as silent, \
            OpenAIBackend(f"http://127.0.0.1:{silent.getsockname()[1]}/v1", timeout_s=30.0) as b:
        stream = b.chat(CHAT, USER)  # the kernel completes the connection; nobody ever answers
        time.sleep(0.2)
        threading.Timer(0.05, stream.cancel).start()
        started = time.monotonic()
        assert list(stream) == [] and stream.cancelled
        assert time.monotonic() - started < 0.5
        assert wait_until(lambda: not stream_threads(), 1.0)  # not held until the 30 s read timeout


def test_tool_calls_are_put_together_from_their_fragments(server):
    server.models[CHAT] = Model(tools=True)
    with OpenAIBackend(server.url, timeout_s=5.0) as b:
        server.queue_reply("Looking.", tool_calls=[{"name": "recall", "arguments": {"query": "GI clamp"}}])
        text, final = b.complete(CHAT, USER, tools=TOOLS)
    assert text == "Looking." and final.tool_calls == (ToolCall("recall", {"query": "GI clamp"}),)
    assert server.requests_to("/v1/chat/completions")[-1]["tools"] == TOOLS


def test_kelvins_tool_messages_get_the_ids_an_openai_server_wants():
    sent = messages_out([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [{"function": {"name": "recall", "arguments": {"query": "a"}}},
                                                            {"function": {"name": "recall", "arguments": {"query": "b"}}}]},
        {"role": "tool", "tool_name": "recall", "content": "A"}, {"role": "tool", "tool_name": "recall", "content": "B"}])
    calls = sent[1]["tool_calls"]
    assert [c["id"] for c in calls] == ["call_0", "call_1"] and calls[0]["type"] == "function"
    assert calls[0]["function"] == {"name": "recall", "arguments": '{"query": "a"}'}
    assert [(m["tool_call_id"], m["content"]) for m in sent[2:]] == [("call_0", "A"), ("call_1", "B")]
    assert all("tool_name" not in m for m in sent)


def test_a_json_schema_is_sent_as_response_format(server, backend):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    backend.complete(CHAT, USER, format=schema)
    assert server.requests_to("/v1/chat/completions")[-1]["response_format"] == {
        "type": "json_schema", "json_schema": {"name": "kelvin_answer", "schema": schema, "strict": True}}
    backend.complete(CHAT, USER, format="json")
    assert server.requests_to("/v1/chat/completions")[-1]["response_format"] == {"type": "json_object"}


def test_a_server_that_ignores_stream_is_read_whole(server, backend, caplog):
    server.ignore_stream = True
    server.queue_reply(REPLY)
    backend.show(CHAT)  # as the conversation does first: the server is known by name
    with backend.chat(CHAT, USER) as stream:
        chunks = list(stream)
    assert len(chunks) == 1 and chunks[0].done and chunks[0].text == REPLY == stream.text
    assert chunks[0].prompt_eval_count and chunks[0].eval_count == len(REPLY.split())
    said = [r.getMessage() for r in caplog.records if "instead of streaming" in r.getMessage()]
    assert said == [f"llama.cpp's server at {server.url} sends each reply whole instead of streaming it: Kelvin "
                    "shows it when it is complete (a stop still works, but only from Kelvin's side)"]
    backend.complete(CHAT, USER)  # said once, not with every reply
    assert len([r for r in caplog.records if "instead of streaming" in r.getMessage()]) == 1


# -- faults ------------------------------------------------------------------------------------------
def test_vanishing_mid_stream_is_a_stream_cut_with_the_partial_text(server, backend):
    server.queue_reply(REPLY)
    server.vanish_mid_stream, server.vanish_after = True, 3
    with backend.chat(CHAT, USER) as stream:
        with pytest.raises(StreamCut, match="cut off") as info:
            list(stream)
    assert info.value.partial == stream.text == " ".join(REPLY.split()[:3])
    assert "partial answer is kept" in str(info.value)


def test_an_error_event_mid_stream_is_a_stream_cut(server, backend):
    server.queue_reply(REPLY)
    server.stream_error = "slot died"
    with backend.chat(CHAT, USER) as stream:
        with pytest.raises(StreamCut, match="slot died") as info:
            list(stream)
    assert info.value.partial == " ".join(REPLY.split()[:2])


def test_a_context_smaller_than_the_window_is_said_with_its_size(server, backend):
    server.n_ctx = 2000
    with pytest.raises(ContextTooSmall) as info:
        backend.complete(CHAT, [{"role": "user", "content": "x " * 9000}])
    assert info.value.limit == 2000
    assert str(info.value) == (f"llama.cpp's server at {server.url} holds only 2,000 tokens per request, fewer than "
                               "Kelvin's window; load the model with a larger context (llama-server -c 8192; LM Studio: "
                               "Context Length) or lower num_ctx")
    server.n_ctx = 512
    with pytest.raises(ContextTooSmall, match="fewer than Kelvin's smallest window \\(1,024\\)") as info:
        backend.complete(CHAT, [{"role": "user", "content": "x " * 2000}])
    assert info.value.limit == 512


def test_a_model_that_is_not_loaded_is_model_missing_with_the_fix():
    with OpenAITestServer(flavour="lmstudio", autoload=False) as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        url = srv.url
        b.list()
        with pytest.raises(ModelMissing) as info:
            b.complete(CHAT, USER)
    assert info.value.model == CHAT
    assert str(info.value) == (f"LM Studio at {url} has not loaded the model {CHAT!r} (model is not loaded); "
                               f"load it in LM Studio (or `lms load`), or set chat_model to one it has: "
                               f"{CHAT}, {EMBED}")


def test_a_model_the_server_does_not_have_is_model_missing(server, backend):
    with pytest.raises(ModelMissing, match="does not have the model 'llama3.1:8b'"):
        backend.complete("llama3.1:8b", USER)
    with pytest.raises(ModelMissing, match="models folder"):
        backend.show("llama3.1:8b")


@pytest.mark.parametrize("call", [lambda b: b.list(), lambda b: b.version(), lambda b: b.complete(CHAT, USER),
                                  lambda b: b.embed(EMBED, ["x"])], ids=["list", "version", "chat", "embed"])
def test_a_server_that_is_not_openai_compatible_is_told_plainly(call):
    with OpenAITestServer() as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        srv.html = True  # a web page answers at that address
        with pytest.raises(NotCompatible) as info:
            call(b)
    assert "not as an OpenAI-compatible server does" in str(info.value)


def test_the_model_list_of_a_web_page_names_the_setting_and_the_usual_addresses():
    with OpenAITestServer() as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        url = srv.url
        srv.html = True
        with pytest.raises(NotCompatible) as info:
            b.list()
    assert str(info.value) == (f"The server at {url} answered, but not as an OpenAI-compatible server does "
                               "(GET /v1/models gave no model list); check KELVIN_OPENAI_URL (LM Studio listens on "
                               "http://127.0.0.1:1234, llama.cpp's llama-server on http://127.0.0.1:8080)")


def test_a_stopped_server_is_not_running_with_how_to_start_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with OpenAIBackend(f"http://127.0.0.1:{port}/v1", timeout_s=2.0) as b:
        for call in (b.list, lambda: b.complete(CHAT, USER), lambda: b.embed(EMBED, ["x"])):
            with pytest.raises(NotRunning) as info:
                call()
            assert f"is not reachable at http://127.0.0.1:{port}/v1" in str(info.value)
            assert "lms server start" in str(info.value) and "KELVIN_OPENAI_URL" in str(info.value)


def test_other_refusals_keep_their_status(server, backend):
    server.refuse_next(500, "something broke", path="/v1/chat/completions")
    with pytest.raises(ServerError, match="something broke") as info:
        backend.complete(CHAT, USER)
    assert info.value.status == 500


def test_a_key_is_sent_only_when_set_and_a_refused_key_names_the_setting(server):
    with OpenAIBackend(server.url, timeout_s=5.0, api_key="studio-key") as b:
        b.complete(CHAT, USER)
    assert set(server.keys) == {"Bearer studio-key"}  # the plain calls and the stream alike
    server.keys.clear()
    server.refuse_next(401, "Invalid API Key", path="/v1/chat/completions")
    with OpenAIBackend(server.url, timeout_s=5.0) as b, pytest.raises(ServerError, match="openai_api_key"):
        b.complete(CHAT, USER)
    assert set(server.keys) == {""}


def test_pull_is_refused_in_words():
    with OpenAITestServer(flavour="lmstudio") as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        b.list()
        with pytest.raises(ModelServerUnavailable, match="get 'qwen' in LM Studio itself"):
            b.pull("qwen")


# -- embeddings ----------------------------------------------------------------------------------
def test_embed_returns_the_servers_vectors_in_order(server, backend):
    texts = ["GI clamp 10", "maxsubdivs 4"]
    assert backend.embed(EMBED, texts) == [embed_text(t) for t in texts]
    assert backend.embed(EMBED, []) == []


def test_a_chat_only_server_asked_for_embeddings_says_how_to_serve_them():
    with OpenAITestServer(models={CHAT: Model()}, flavour="llama.cpp") as srv, OpenAIBackend(srv.url, 5.0) as b:
        b.list()
        with pytest.raises(ServerError, match="start it with --embeddings") as info:
            b.embed(CHAT, ["x"])
    assert info.value.status == 501


# -- what each server can do with its models ------------------------------------------------------------
def test_router_mode_loads_lists_and_unloads(server, backend):
    assert backend.version() == "llama.cpp's server" and backend.unload_problem() == ""
    assert backend.ps() == []
    backend.preload(CHAT)
    assert [m.name for m in backend.ps()] == [CHAT]
    assert backend.unload(CHAT) is True and backend.ps() == []
    assert server.requests_to("/models/unload") == [{"model": CHAT}]
    assert backend.unload(CHAT) is True  # not loaded: nothing to do, nothing sent
    assert len(server.requests_to("/models/unload")) == 1
    backend.complete(CHAT, USER)  # the next question loads it again
    assert [m.name for m in backend.ps()] == [CHAT]


def test_router_mode_reports_the_context_of_each_model(server, backend):
    server.n_ctx = 4096
    info = backend.show(CHAT)
    assert info.context_length == 4096 and info.capabilities == ("completion",)
    assert backend.show(EMBED).capabilities == ("embedding",)


def test_one_model_llama_server_cannot_unload_and_says_how_to_get_there():
    with OpenAITestServer(models={CHAT: Model(tools=True)}, flavour="llama.cpp", n_ctx=2048) as srv, \
            OpenAIBackend(srv.url, timeout_s=5.0) as b:
        assert b.version() == "llama.cpp's server b0-test"
        assert [m.name for m in b.ps()] == [CHAT]
        assert b.unload(CHAT) is False
        assert b.unload_problem() == (f"llama.cpp's server at {srv.url} was started with one model (-m), which it "
                                      "keeps in memory until it stops; start it in router mode (llama-server "
                                      "--models-dir FOLDER) so Kelvin can unload the model during a render, or stop "
                                      "the server yourself")
        info = b.show(CHAT)
        assert info.context_length == 2048 and info.supports_tools


def test_lm_studio_unloads_its_instances():
    with OpenAITestServer(flavour="lmstudio") as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        srv.models[CHAT] = Model(tools=True)
        b.preload(CHAT)
        assert b.version() == "LM Studio" and [m.name for m in b.ps()] == [CHAT]
        assert b.show(CHAT).context_length == 8192 and b.show(CHAT).supports_tools
        assert b.show(EMBED).capabilities == ("embedding",)
        assert b.unload(CHAT) is True and b.ps() == []
        assert srv.requests_to("/api/v1/models/unload") == [{"instance_id": CHAT}]


def test_older_lm_studio_cannot_unload_and_asks_for_a_time_to_live():
    with OpenAITestServer(flavour="lmstudio-v0") as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        b.show(CHAT)  # as the conversation does before its first question
        b.complete(CHAT, USER)
        assert srv.requests_to("/v1/chat/completions")[-1]["ttl"] == 300
        assert [m.name for m in b.ps()] == [CHAT] and b.unload(CHAT) is False
        assert "cannot unload a model when Kelvin asks; it unloads a model idle for 5 minutes" in b.unload_problem()


def test_a_plain_openai_server_says_it_cannot_unload():
    with OpenAITestServer(flavour="openai") as srv, OpenAIBackend(srv.url, timeout_s=5.0) as b:
        assert b.version() == "The OpenAI-compatible server" and b.ps() == []
        assert b.unload_problem() == (f"The OpenAI-compatible server at {srv.url} cannot unload a model when Kelvin "
                                      "asks (the OpenAI API has no such call): its model keeps its memory until you "
                                      "stop the server or unload it there")
        assert b.show(CHAT).context_length is None and b.list() == [CHAT, EMBED]

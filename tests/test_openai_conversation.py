"""Kelvin over an OpenAI-compatible server: the turn, tools, the extraction pass, the brief, the VRAM
guard and the embedder work as with Ollama, or say plainly what the server cannot do; bad input
is one sentence, nothing is lost and the memory stays usable. The OpenAI-protocol test server on
127.0.0.1, a real store."""
from __future__ import annotations

import threading

import pytest

from app.core import tools
from app.core.commands import Mode
from app.core.vram import GpuSample, ProcessSample, Sample
from app.llm.embedders import OpenAIEmbedder, from_spec
from app.services.brief import BriefBuilder
from app.services.conversation import Conversation
from app.services.gpu_guard import GpuGuard, replay
from tests.support.openai_server import Model, OpenAITestServer

CHAT = "gemma-3-270m"
EMBED = "nomic-embed-text-v1.5"


@pytest.fixture
def converse(make_service):
    made = []

    def make(server: OpenAITestServer, mode: Mode = Mode.GPU, **overrides):
        overrides.setdefault("chat_model", CHAT)
        svc = make_service(model_server="openai", openai_url=server.url, **overrides)
        conv = Conversation(svc.settings, svc, mode=mode)
        made.append(conv)
        return conv

    yield make
    for conv in made:
        conv.close()


def answers(server) -> list[dict]:
    return [b for b in server.requests_to("/v1/chat/completions")
            if b and b["messages"][0]["content"].startswith("You are Kelvin")]


def test_a_turn_streams_is_stored_and_calibrates_from_the_servers_count(converse):
    with OpenAITestServer() as srv:
        conv = converse(srv)
        srv.queue_reply("Raise the key light by one stop.")
        tokens: list[str] = []
        result = conv.ask("The hero is too dark, what should I do?", tokens.append)
        assert result.status == "complete" and result.text == "Raise the key light by one stop."
        assert "".join(tokens) == result.text and len(tokens) > 1
        body = answers(srv)[-1]
        assert body["stream"] is True and body["messages"][-1]["content"] == "The hero is too dark, what should I do?"
        assert "tools" not in body  # the server does not say the model takes tools: none offered
        conv.memory.flush()
        assert conv.memory.show(result.answer.id).speaker == f"Kelvin ({CHAT})"
        assert result.prompt_tokens and conv.calibration[CHAT].observations == 1


def test_a_context_smaller_than_the_window_is_learned_and_the_window_packed_to_fit(converse):
    with OpenAITestServer(n_ctx=2048) as srv:
        conv = converse(srv)
        big = "Octane log line: the kernel ran out of memory while loading textures. " * 300  # ~5k tokens
        result = conv.ask(big)
        assert result.status == "complete"  # the server's own context came from /models: packed to fit at once
        assert result.window.total <= 2048 and answers(srv)[-1]["max_tokens"] < 2048
        assert result.prompt_tokens < 2048


def test_a_context_limit_learned_from_the_refusal_is_kept_and_the_turn_answered(converse):
    with OpenAITestServer(flavour="openai", n_ctx=1500) as srv:  # says nothing about its context up front
        conv = converse(srv)
        big = "Octane log line: the kernel ran out of memory while loading textures. " * 300
        result = conv.ask(big)
        assert result.status == "complete" and result.text.startswith("Echo:")
        sent = answers(srv)
        assert len(sent) == 2 and sent[-1]["max_tokens"] < 1500  # refused once, packed again, answered
        assert conv.budget_for(Mode.GPU, CHAT).num_ctx == 1500  # and remembered for the next turns
        assert conv.ask("And now?").status == "complete" and len(answers(srv)) == 3


def test_a_context_refusal_without_its_size_tries_half_the_window(converse):
    with OpenAITestServer(flavour="lmstudio") as srv:
        conv = converse(srv)
        srv.refuse_next(400, "The number of tokens to keep from the initial prompt is greater than the context length.",
                        path="/v1/chat/completions")
        result = conv.ask("Octane log: " + "texture cache overflow at frame 12. " * 600)
        assert result.status == "complete" and len(answers(srv)) == 2
        assert result.window.total <= 4096 and conv.budget_for(Mode.GPU, CHAT).num_ctx == 4096


def test_a_context_too_small_for_any_window_answers_from_memory_and_says_why(converse):
    with OpenAITestServer(flavour="openai", n_ctx=512) as srv:
        conv = converse(srv)
        conv.ask("/remember the client wants warm key light")
        result = conv.ask("What does the client want for the key light? " + "Please be thorough. " * 200)
        assert result.status == "recall" and result.error_kind == "context"
        assert result.error == (f"The OpenAI-compatible server at {srv.url} holds only 512 tokens per request, fewer "
                                "than Kelvin's smallest window (1,024); load the model with a larger context "
                                "(llama-server -c 8192; LM Studio: Context Length)")
        assert result.error in result.text.splitlines()[0]
        conv.memory.flush()
        assert conv.memory.show(result.question.id).text.startswith("What does the client want")  # nothing lost


def test_a_model_that_is_not_loaded_answers_from_memory_with_the_fix(converse):
    with OpenAITestServer(flavour="lmstudio", autoload=False) as srv:
        conv = converse(srv)
        result = conv.ask("What GI clamp did we settle on?")
        assert result.status == "recall" and result.error_kind == "model_missing"
        assert f"LM Studio at {srv.url} has not loaded the model '{CHAT}'" in result.error
        assert "load it in LM Studio (or `lms load`)" in result.error
        conv.memory.flush()
        assert conv.memory.show(result.question.id).text == "What GI clamp did we settle on?"


def test_a_server_that_is_not_openai_compatible_answers_from_memory_with_the_fix(converse):
    with OpenAITestServer() as srv:
        srv.html = True
        conv = converse(srv)
        result = conv.ask("Is this thing on?")
        assert result.status == "recall" and result.error_kind == "not_running"
        assert "not as an OpenAI-compatible server does" in result.error and "KELVIN_OPENAI_URL" in result.error
        conv.memory.flush()
        assert conv.memory.show(result.question.id).text == "Is this thing on?"


def test_a_server_that_ignores_stream_still_answers(converse):
    with OpenAITestServer() as srv:
        srv.ignore_stream = True
        conv = converse(srv)
        srv.queue_reply("Use a portal on the window.")
        tokens: list[str] = []
        result = conv.ask("The interior is noisy.", tokens.append)
        assert result.status == "complete" and tokens == ["Use a portal on the window."]


def test_cancel_mid_reply_keeps_the_partial_answer_once(converse):
    with OpenAITestServer(delay_s=0.2) as srv:
        conv = converse(srv)
        srv.queue_reply("Lower the GI clamp to eight and keep the diffuse depth at four for the interior.")
        first = threading.Event()
        box = {}
        asker = threading.Thread(target=lambda: box.update(r=conv.ask("Fireflies?", lambda s: first.set())))
        asker.start()
        assert first.wait(10)
        conv.cancel()
        asker.join(10)
        result = box["r"]
        assert result.status == "cancelled" and result.text and len(result.stored) == 2
        conv.memory.flush()
        replies = [m for m in conv.memory.list(conv.project) if m.role == "assistant"]
        assert len(replies) == 1 and replies[0].status == "cancelled"
        assert replies[0].text.startswith(result.text) and replies[0].text.endswith("[stopped by the artist]")


def test_tools_round_trip_with_call_ids_on_a_model_that_takes_them(converse):
    with OpenAITestServer(models={CHAT: Model(tools=True)}, flavour="lmstudio") as srv:
        conv = converse(srv)
        srv.queue_reply("", tool_calls=[{"name": "save_to_model_memory",
                                         "arguments": {"text": "client wants warm key light", "category": "preference"}}])
        srv.queue_reply("Kept it.")
        result = conv.ask("Remember: the client wants a warm key light.")
        assert result.status == "complete" and result.text == "Kept it."
        assert result.tool_log == ["kept (preference): client wants warm key light"]
        first, second = answers(srv)[-2:]
        assert [t["function"]["name"] for t in first["tools"]] == [s["function"]["name"] for s in tools.SCHEMAS]
        call = next(m for m in second["messages"] if m.get("tool_calls"))["tool_calls"][0]
        result_msg = next(m for m in second["messages"] if m["role"] == "tool")
        assert call["id"] == result_msg["tool_call_id"] and isinstance(call["function"]["arguments"], str)
        conv.memory.flush()
        assert [m.text for m in conv.memory.memories(conv.project)] == ["client wants warm key light"]


def test_the_extraction_pass_asks_for_json_by_schema(converse):
    with OpenAITestServer(models={CHAT: Model(), "extractor": Model()}) as srv:
        conv = converse(srv, extract_model="extractor")
        srv.queue_reply("Set it.")
        srv.queue_reply('{"settings": []}')
        assert conv.ask("Octane: GI clamp 7.5 from now on.").status == "complete"
        assert conv.wait_background(10)
        passes = [b for b in srv.requests_to("/v1/chat/completions") if b["model"] == "extractor"]
        assert passes and passes[0]["response_format"]["type"] == "json_schema"


def test_cpu_mode_sends_the_smaller_window_and_says_the_server_decides_where_it_runs(converse):
    with OpenAITestServer() as srv:
        conv = converse(srv, mode=Mode.CPU, cpu_num_ctx=2048)
        result = conv.ask("Octane log: " + "texture cache overflow at frame 12. " * 400)
        assert result.status == "complete" and result.window.total <= 2048
        said = conv.ask("/mode cpu").text
        assert "2,048-token window" in said and "llama.cpp's server decides itself where its model runs" in said


def test_a_brief_from_start_to_end(converse):
    with OpenAITestServer() as srv:
        conv = converse(srv)
        conv.ask("Octane: set the GI clamp to 7.5 for the forest shot.")
        conv.memory.flush()
        result = BriefBuilder(conv).build()
        assert result.calls >= 2 and result.path.read_text(encoding="utf-8").startswith("# ")
        assert all(b["model"] == CHAT for b in srv.requests_to("/v1/chat/completions"))


# -- the VRAM guard ------------------------------------------------------------------------------------------
OCTANE = [Sample(t, (GpuSample(0, 24_564, used, 99),), (ProcessSample(7, "octane", 0, used - 6_000),))
          for t, used in ((0.0, 6_000), (0.5, 11_000))]
QUIET = [Sample(1 + t * 0.5, (GpuSample(0, 24_564, 1_500, 2),)) for t in range(14)]


def test_the_guard_unloads_through_llama_cpps_router_and_answers_from_memory_meanwhile(converse):
    with OpenAITestServer() as srv:
        conv = converse(srv, vram_hold_s=5)
        notes = []
        guard = GpuGuard(conv.settings, source=None, conversation=conv, synchronous=True,
                         notify=lambda title, text: notes.append(text))
        try:
            assert conv.ask("hello").status == "complete" and srv.loaded == {CHAT}
            events = replay(guard, OCTANE)
            assert [(e.from_state, e.to_state) for e in events] == [("normal", "yielding"), ("yielding", "yielded")]
            assert srv.requests_to("/models/unload") == [{"model": CHAT}] and srv.loaded == set()
            assert conv.mode is Mode.RECALL  # not CPU: its next answer would load the model onto the GPU again
            assert notes[0] == ("Render detected in Octane: Kelvin moved off the GPU (answering from memory: llama.cpp's "
                                f"server cannot keep its model off the GPU for Kelvin), unloaded {CHAT}.")
            assert conv.ask("and the glass?").status == "recall" and srv.loaded == set()
            replay(guard, QUIET)
            assert conv.mode is Mode.GPU and conv.ask("back?").status == "complete" and srv.loaded == {CHAT}
        finally:
            guard.stop()


def test_a_server_that_cannot_unload_is_told_not_pretended(converse):
    with OpenAITestServer(flavour="llama.cpp") as srv:
        conv = converse(srv)
        notes = []
        guard = GpuGuard(conv.settings, source=None, conversation=conv, synchronous=True,
                         notify=lambda title, text: notes.append(text))
        try:
            assert "was started with one model (-m)" in guard.unload_problem()
            events = replay(guard, OCTANE)
            assert events[-1].to_state == "yielded"
            assert events[-1].reason == f"llama.cpp's server keeps {CHAT} loaded: it cannot unload on request"
            assert srv.requests_to("/models/unload") == []
            assert notes[0].startswith("Render detected in Octane: Kelvin stopped using the model (answering from "
                                       "memory: llama.cpp's server cannot keep its model off the GPU for Kelvin), but "
                                       "it cannot free the VRAM: llama.cpp's server at")
        finally:
            guard.stop()


# -- the embedder ----------------------------------------------------------------------------------------------
def test_openai_embeddings_search_by_meaning(make_service):
    with OpenAITestServer() as srv:
        svc = make_service(model_server="openai", openai_url=srv.url, embedder=f"openai:{EMBED}")
        assert isinstance(svc.embedder, OpenAIEmbedder) and svc.embedder.dim() == 64
        svc.commit("Octane GI clamp 7.5 fixed the fireflies on the glass", project="forest")
        svc.flush()
        hits = svc.search("fireflies glass clamp", project="forest")
        assert hits and srv.requests_to("/v1/embeddings")


def test_an_embedding_model_of_another_dimension_is_said_once_and_search_goes_on_by_words(make_service):
    with OpenAITestServer() as srv:
        svc = make_service(model_server="openai", openai_url=srv.url, embedder=f"openai:{EMBED}")
        svc.commit("Octane GI clamp 7.5 fixed the fireflies", project="forest")
        svc.flush()
        svc.close()
        srv.models[EMBED] = Model(kind="embedding", dim=32)  # another model now answers under that name
        again = make_service(model_server="openai", openai_url=srv.url, embedder=f"openai:{EMBED}")
        again.commit("Redshift: raise the unified samples to 512", project="forest")
        again.flush()
        said = [n for n in again.notices if "32-d vectors where the index holds 64-d" in n]
        assert len(said) == 1 and "kelvin memory reindex" in said[0]
        assert [h.message.text for h in again.search("unified samples", project="forest")][:1] == [
            "Redshift: raise the unified samples to 512"]  # nothing lost; found by its words


def test_from_spec_knows_the_openai_embedder():
    e = from_spec("openai:text-embedding-nomic", "http://127.0.0.1:9", openai_url="http://127.0.0.1:1/v1")
    assert isinstance(e, OpenAIEmbedder) and e.spec == "openai:text-embedding-nomic"
    e.close()
    with pytest.raises(ValueError, match="openai:<model>"):
        from_spec("openai:", "http://127.0.0.1:9")


def test_ollamas_cpu_mode_sends_the_cpu_window_too(make_service):
    from tests.support.ollama_server import OllamaTestServer

    with OllamaTestServer() as srv:
        svc = make_service(ollama_host=srv.host, cpu_num_ctx=3072)
        conv = Conversation(svc.settings, svc, mode=Mode.CPU)
        try:
            assert conv.ask("hello").status == "complete"
            options = [b for b in srv.requests_to("/api/chat") if b.get("messages")][-1]["options"]
            assert options == {"num_ctx": 3072, "num_gpu": 0, "num_predict": options["num_predict"]}
            conv.set_mode(Mode.GPU)
            conv.ask("and on the GPU?")
            assert [b for b in srv.requests_to("/api/chat") if b.get("messages")][-1]["options"]["num_ctx"] == 8192
            assert "the model runs on the CPU with a 3,072-token window" in conv.ask("/mode cpu").text
        finally:
            conv.close()

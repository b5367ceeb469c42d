"""The conversation loop against the Ollama-protocol test server, through the real client and a real store."""
from __future__ import annotations

import threading
from datetime import date, timedelta

import pytest

from app.core.commands import Mode
from app.core.records import RecordError
from app.core.tokens import estimate_messages
from app.services.conversation import Conversation
from app.services.projects import Projects
from tests.support.ollama_server import ModelSpec, OllamaTestServer

CHAT = "llama3.1:8b"
SETTING = "Final call for the forest shot: Octane GI clamp 7.5 and max samples 2048, the fireflies are gone."


@pytest.fixture
def server():
    with OllamaTestServer() as srv:
        yield srv


@pytest.fixture
def converse(make_service):
    """Conversations over a fresh store; closed (stream threads joined) before the stores."""
    made = []

    def make(host: str = "http://127.0.0.1:9", mode: Mode = Mode.GPU, projects=None, **overrides):
        svc = make_service(ollama_host=host, **overrides)
        conv = Conversation(svc.settings, svc, mode=mode, projects=projects(svc) if projects else None)
        made.append(conv)
        return conv

    yield make
    for conv in made:
        conv.close()


def chat_bodies(server) -> list[dict]:
    """Bodies of the real answer requests (not load/unload or summary calls)."""
    return [b for b in server.requests_to("/api/chat")
            if b.get("messages") and b["messages"][0]["content"].startswith("You are Kelvin")]


def test_a_turn_streams_commits_and_sends_a_fixed_window(server, converse):
    conv = converse(server.host)
    server.queue_reply("Raise the key light by one stop.")
    tokens: list[str] = []
    result = conv.ask("The hero is too dark, what should I do?", tokens.append)
    assert result.status == "complete" and result.text == "Raise the key light by one stop."
    assert "".join(tokens) == result.text and len(tokens) > 1  # streamed piece by piece
    body = chat_bodies(server)[-1]
    assert "context" not in body  # no KV state carried between calls
    assert body["options"]["num_ctx"] == 8192 and "num_gpu" not in body["options"]
    assert body["messages"][-1] == {"role": "user", "content": "The hero is too dark, what should I do?"}
    conv.memory.flush()
    q, a = conv.memory.show(result.question.id), conv.memory.show(result.answer.id)
    assert (q.role, q.text, q.conversation_id) == ("user", "The hero is too dark, what should I do?", conv.conversation_id)
    assert (a.role, a.text, a.status, a.turn_id) == ("assistant", result.text, "", q.turn_id)
    # the estimate was calibrated from Ollama's prompt_eval_count
    cal = conv.calibration[CHAT]
    assert cal.observations == 1 and result.prompt_tokens == body_tokens(body)
    assert cal.ratio == pytest.approx(result.prompt_tokens / estimate_messages(body["messages"]), rel=0.01)


def body_tokens(body: dict) -> int:
    return max(1, sum(len(m.get("content") or "") for m in body["messages"]) // 4)  # how the test server counts


def test_cpu_mode_keeps_the_model_off_the_gpu(server, converse):
    conv = converse(server.host, mode=Mode.CPU)
    assert conv.ask("hello").status == "complete"
    assert chat_bodies(server)[-1]["options"]["num_gpu"] == 0
    assert server.loads[-1][1].get("num_gpu") == 0


def test_a_setting_from_300_turns_ago_reaches_the_prompt_and_the_window_stays_in_budget(server, converse):
    conv = converse(server.host, num_ctx=4096)
    svc, cid = conv.memory, conv.conversation_id
    topics = ["the rim light looks flat", "try a softer area light", "denoiser smears the fur",
              "switch the kernel to path tracing", "the glass needs more specular depth",
              "camera at 35mm feels wide", "HDRI rotation 90 degrees", "texture cache is full"]
    t0 = 1_763_000_000_000
    svc.commit(SETTING, conversation_id=cid, turn_id="t_0", project=conv.project, ts_ms=t0)
    for i in range(1, 300):
        topic = topics[i % len(topics)]
        svc.commit(f"Turn {i}: {topic}, attempt {i}.", conversation_id=cid, turn_id=f"t_{i}", project=conv.project,
                   ts_ms=t0 + i * 20_000)
        svc.commit(f"Reply {i}: about {topic}, consider option {i % 7}.", role="assistant", conversation_id=cid,
                   turn_id=f"t_{i}", project=conv.project, ts_ms=t0 + i * 20_000 + 5_000)
    svc.flush()
    conv._recent = None  # as after a restart: the window is loaded from memory
    recent_before = [m.text for m in conv.recent()]
    assert recent_before[-1].startswith("Reply 299") and len(recent_before) == 6
    result = conv.ask("Which GI clamp did we end up with for the forest shot?")
    body = chat_bodies(server)[-1]
    system = body["messages"][0]["content"]
    assert SETTING in system  # the exact message, whole
    assert [m["content"] for m in body["messages"][1:7]] == recent_before  # the last 3 turns, verbatim
    assert estimate_messages(body["messages"]) <= 4096 - 1024
    assert result.prompt_tokens <= 4096
    assert any(m.text == SETTING for m in result.recalled)
    # the next turn's window has slid: the question just asked is among the last 3 turns
    conv.ask("thanks")
    body = chat_bodies(server)[-1]
    assert body["messages"][-3]["content"] == "Which GI clamp did we end up with for the forest shot?"


def test_ollama_vanishing_mid_stream_keeps_the_question_and_the_partial_answer(server, converse):
    conv = converse(server.host)
    server.queue_reply("Lower the GI clamp to ten and then raise the samples slowly.")
    server.vanish_mid_stream, server.vanish_after = True, 3
    shown: list[str] = []
    result = conv.ask("fireflies everywhere", shown.append)
    assert result.status == "cut" and result.error_kind == "cut"
    assert "cut off" in result.error and result.text == "Lower the GI"
    conv.memory.flush()
    assert conv.memory.show(result.question.id).text == "fireflies everywhere"
    stored = conv.memory.show(result.answer.id)
    assert stored.status == "cut" and stored.text.startswith("Lower the GI") and "[reply cut off:" in stored.text


def test_killing_the_server_mid_reply(converse):
    srv = OllamaTestServer(delay_s=0.05).start()
    try:
        conv = converse(srv.host)
        srv.queue_reply(" ".join(f"word{i}" for i in range(200)))
        first = threading.Event()
        out = {}
        worker = threading.Thread(target=lambda: out.setdefault("r", conv.ask("long answer please", lambda s: first.set())))
        worker.start()
        assert first.wait(5)
    finally:
        srv.stop()
    worker.join(10)
    result = out["r"]
    assert result.status == "cut" and result.text.startswith("word0")
    assert "partial" in result.error or "cut off" in result.error
    conv.memory.flush()
    assert conv.memory.show(result.answer.id).status == "cut"


def test_cancel_stops_promptly_and_the_partial_reply_is_kept(converse):
    with OllamaTestServer(delay_s=0.3) as srv:
        conv = converse(srv.host)
        srv.queue_reply("one two three four five six seven eight nine ten")
        first = threading.Event()
        out = {}
        worker = threading.Thread(target=lambda: out.setdefault("r", conv.ask("count", lambda s: first.set())))
        worker.start()
        assert first.wait(5)
        conv.cancel()
        worker.join(2.0)  # a reply would need 3 s more
        assert not worker.is_alive()
        result = out["r"]
        assert result.status == "cancelled" and result.text.startswith("one")
        conv.memory.flush()
        stored = conv.memory.show(result.answer.id)
        assert stored.status == "cancelled" and stored.text.endswith("[stopped by the artist]")


def test_no_server_means_recall_mode_with_sources(converse):
    conv = converse()  # the dead port
    conv.memory.commit(SETTING, conversation_id="old", project=conv.project)[1].result()
    result = conv.ask("what GI clamp for the forest shot?")
    assert result.status == "recall" and result.error_kind == "not_running"
    assert result.text.startswith("_Ollama is not reachable at http://127.0.0.1:9")
    assert "ollama serve" in result.text and "Answering from memory" in result.text
    assert "> Final call for the forest shot: Octane GI clamp 7.5" in result.text
    hit = result.recalled[0]
    assert f"`{hit.id}`" in result.text and "lighting.md" in result.text or f"{hit.tags.domain}.md" in result.text
    conv.memory.flush()
    stored = conv.memory.show(result.answer.id)
    assert stored.status == "recall" and stored.speaker == "Kelvin (from memory)"
    # a recall answer quotes other messages: it is not itself retrieved later
    again = conv.ask("what GI clamp for the forest shot?")
    assert result.answer.id not in {m.id for m in again.recalled}


def test_without_fallback_a_failed_reply_is_committed_with_its_status(converse):
    conv = converse()
    result = conv.ask("anyone there?", fallback=False)
    assert result.status == "failed" and not result.answered and "ollama serve" in result.error
    conv.memory.flush()
    assert conv.memory.show(result.question.id).text == "anyone there?"
    assert conv.memory.show(result.answer.id).status == "failed"


def test_recall_mode_by_choice_uses_no_model(server, converse):
    conv = converse(server.host, mode=Mode.RECALL)
    conv.memory.commit(SETTING, project=conv.project)[1].result()
    result = conv.ask("forest shot GI clamp")
    assert result.status == "recall" and result.text.startswith("_Recall mode")
    assert chat_bodies(server) == []


def test_a_missing_model_or_no_memory_falls_back_and_says_why(converse):
    with OllamaTestServer(models={"nomic-embed-text": ModelSpec(kind="embedding")}) as srv:
        conv = converse(srv.host)
        result = conv.ask("hello?")
        assert result.status == "recall" and result.error_kind == "model_missing"
        assert f"ollama pull {CHAT}" in result.error
    with OllamaTestServer() as srv:
        conv = converse(srv.host)
        srv.refuse_next(1, 500, "model requires more system memory (5.2 GiB) than is available (3.1 GiB)",
                        path="/api/chat")
        result = conv.ask("hello?")
        assert result.status == "recall" and result.error_kind == "out_of_memory"


def test_the_model_can_keep_and_recall_memories_with_tools(server, converse):
    conv = converse(server.host)
    server.queue_reply("", tool_calls=[{"name": "save_to_model_memory",
                                        "arguments": {"text": "Client wants a warm key light", "category": "preference"}}])
    server.queue_reply("Noted: warm key light.")
    result = conv.ask("Remember that the client wants a warm key light.")
    assert result.text == "Noted: warm key light." and result.tool_log == ["kept (preference): Client wants a warm key light"]
    first, second = chat_bodies(server)[-2:]
    assert [t["function"]["name"] for t in first["tools"]] == ["save_to_model_memory", "recall"]
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and tool_msg["content"].startswith("saved as k_")
    conv.memory.flush()
    assert [m.text for m in conv.memory.memories(conv.project)] == ["Client wants a warm key light"]
    conv.ask("What colour should the key light be?")
    assert "Client wants a warm key light" in chat_bodies(server)[-1]["messages"][0]["content"]
    # a malformed call is refused with a reason the model sees, and nothing is stored
    server.queue_reply("", tool_calls=[{"name": "save_to_model_memory", "arguments": {"text": ""}}])
    server.queue_reply("Sorry.")
    result = conv.ask("keep nothing")
    assert result.tool_log[0].startswith("refused a save_to_model_memory call")
    assert chat_bodies(server)[-1]["messages"][-1]["content"].startswith("error: text is empty")
    assert len(conv.memory.memories(conv.project)) == 1


def test_a_model_without_tools_gets_none_and_the_artist_has_commands(converse):
    with OllamaTestServer(models={CHAT: ModelSpec(capabilities=["completion"])}) as srv:
        conv = converse(srv.host)
        assert conv.ask("hi").status == "complete"
        assert not chat_bodies(srv)[-1].get("tools")
        kept = conv.ask("/remember renders go to the farm after 6pm #pipeline")
        assert kept.status == "command" and "renders go to the farm" in kept.text
        mem = conv.memory.memories(conv.project)[0]
        assert mem.category == "pipeline"
        assert conv.ask("/forget farm").text == "Forgot: renders go to the farm after 6pm"
        assert conv.memory.memories(conv.project) == []
        assert chat_bodies(srv)[-1]["messages"][-1]["content"] == "hi"  # commands never reach the model


def test_a_huge_paste_is_kept_whole_and_folded_into_a_note_next_turn(server, converse):
    conv = converse(server.host, mode=Mode.CPU)
    paste = "Octane render log\n" + "\n".join(f"frame {i}: 41.{i % 10} s, VRAM 10.{i % 10} GB, rays 2048"
                                               for i in range(4000))
    server.queue_reply("VRAM is stable; the slowdown is the texture cache.")
    first = conv.ask(paste)
    assert first.status == "complete"
    sent = chat_bodies(server)[-1]["messages"][-1]["content"]
    assert len(sent) < len(paste) and f"the whole message is in memory as {first.question.id}" in sent
    conv.ask("so what do I change?")
    body = chat_bodies(server)[-1]
    folded = body["messages"][1]["content"]
    assert len(folded) < 3000 and first.question.id in folded
    assert estimate_messages(body["messages"]) <= 8192 - 1024
    conv.memory.flush()
    assert conv.memory.show(first.question.id).text == paste  # the full text stays in memory


def test_commits_do_not_hold_up_the_next_question(server, converse):
    conv = converse(server.host)
    conv.ask("warm up")
    gate = threading.Event()
    blocked = conv.memory.writer.call(gate.wait)  # the writer is busy (a slow disk, an index build)
    try:
        result = conv.ask("does this wait for the disk?")
        assert result.status == "complete"
        assert not blocked.done()
    finally:
        gate.set()
    conv.memory.flush()
    assert conv.memory.show(result.answer.id) is not None


def test_projects_are_isolated_and_can_be_renamed(server, converse):
    conv = converse(server.host)
    conv.switch_project("Nike / Shot 010")
    conv.ask("Nike uses the orange rim light at 4500K")
    conv.switch_project("Forest chase")
    conv.ask("what rim light temperature?")
    assert "4500K" not in chat_bodies(server)[-1]["messages"][0]["content"]
    conv.switch_project("Nike / Shot 010")
    conv.ask("what rim light temperature?")
    body = chat_bodies(server)[-1]["messages"]
    assert body[1]["content"] == "Nike uses the orange rim light at 4500K"  # back in its conversation
    names = [p.name for p in conv.projects.list()]
    assert {"Nike / Shot 010", "Forest chase"} <= set(names)
    conv.rename_project("Nike Air 010")
    assert conv.project == "Nike Air 010"
    hits = conv.memory.search("orange rim light", project="Nike Air 010")
    assert hits and hits[0].message.project == "Nike Air 010"
    assert "Nike / Shot 010" not in [p.name for p in conv.projects.list()]
    with pytest.raises(RecordError):
        conv.projects.rename("Nike Air 010", "Forest chase")


def test_a_new_day_or_a_new_conversation_starts_clean_but_remembers(server, converse):
    day = {"today": date(2026, 11, 22)}
    conv = converse(server.host, projects=lambda svc: Projects(svc, today=lambda: day["today"]))
    conv.ask("We light the forest with a cold moon at 7000K")
    first_cid = conv.conversation_id
    day["today"] += timedelta(days=1)  # Kelvin stayed open overnight
    conv.ask("what colour temperature is the moon?")
    assert conv.conversation_id != first_cid
    body = chat_bodies(server)[-1]
    assert len(body["messages"]) == 2  # no earlier turns in the window …
    assert "cold moon at 7000K" in body["messages"][0]["content"]  # … but the memory is reachable
    cid = conv.conversation_id
    assert conv.ask("/new").status == "command" and conv.conversation_id != cid and conv.recent() == []

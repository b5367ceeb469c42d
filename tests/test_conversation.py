"""The conversation loop against the Ollama-protocol test server, through the real client and a real store."""
from __future__ import annotations

import json

import threading
from datetime import date, timedelta

import pytest

from app.core import tools
from app.core.commands import Mode
from app.core.records import RecordError
from app.core.tokens import estimate_messages
from app.services.conversation import Conversation
from app.services.projects import Projects
from tests.support.ollama_server import ModelSpec, OllamaTestServer

CHAT = "llama3.1:8b"
SETTING = "Final call for the forest shot: Octane GI clamp 7.5 and max samples 2048, the fireflies are gone."


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
    return [b for b in server.requests_to("/api/chat")  # None: a request cut off while it was sent (a
            if b and b.get("messages") and b["messages"][0]["content"].startswith("You are Kelvin")]  # cancelled summary)


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
    offered = tools.SCHEMA_TOKENS if body.get("tools") else 0  # the schemas are part of the prompt
    assert cal.ratio == pytest.approx(result.prompt_tokens / (estimate_messages(body["messages"]) + offered), rel=0.01)


def body_tokens(body: dict) -> int:
    chars = sum(len(m.get("content") or "") for m in body["messages"])  # how the test server counts
    return max(1, (chars + (len(json.dumps(body["tools"])) if body.get("tools") else 0)) // 4)


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
    assert hit.id not in result.text and f"(in the {hit.tags.domain} notes)" in result.text  # where, never an id
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
        conv = converse(srv.host, project="second")  # the first Kelvin still holds the default project
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


def test_an_empty_reply_is_a_failed_turn_not_a_silent_one(server, converse):
    conv = converse(server.host)
    server.queue_reply("")
    result = conv.ask("anything?")
    assert result.status == "failed" and result.error_kind == "empty" and not result.answered
    conv.memory.flush()
    stored = conv.memory.show(result.answer.id)
    assert stored.status == "failed" and stored.text == "[no reply: the model gave an empty reply]"


def test_an_exception_mid_reply_still_commits_the_turn(server, converse):
    conv = converse(server.host)
    server.queue_reply("Use a dome light with the studio HDRI at 1.2 intensity.")

    def broken_screen(token: str) -> None:
        if "dome" in token:
            raise BrokenPipeError("the terminal went away")

    result = conv.ask("how do I light the packshot?", broken_screen)
    assert result.status == "cut" and result.error_kind == "internal" and "BrokenPipeError" in result.error
    assert result.text == "Use a dome"
    conv.memory.flush()
    assert conv.memory.show(result.question.id).text == "how do I light the packshot?"
    assert conv.memory.show(result.answer.id).status == "cut"
    server.queue_reply("Rotate the HDRI 90 degrees.")
    again = conv.ask("and the reflections?")  # the loop goes on, with the cut turn in the window
    assert again.status == "complete"
    assert any("Use a dome" in m["content"] for m in chat_bodies(server)[-1]["messages"][1:-1])


def test_control_characters_from_the_model_never_reach_the_screen_or_the_store(server, converse):
    conv = converse(server.host)
    server.queue_reply("Set\x1b[2J the\x00 clamp\x9b to 10.\tDone\nok")
    shown: list[str] = []
    result = conv.ask("clamp?", shown.append)
    assert result.text == "Set[2J the clamp to 10.\tDone\nok" == "".join(shown)
    conv.memory.flush()
    assert conv.memory.show(result.answer.id).text == result.text


def test_a_cancel_between_turns_does_not_stop_the_next_one(server, converse):
    conv = converse(server.host)
    conv.cancel()  # e.g. Esc pressed while nothing streams
    server.queue_reply("Fine.")
    assert conv.ask("still there?").status == "complete"


def test_two_kelvins_on_one_project_both_write_and_each_reads_the_other(server, converse):
    first = converse(server.host)
    second = converse(server.host)  # a second Kelvin on the same data folder (a `kelvin chat` beside the window)
    server.queue_reply("Noted: GI clamp 10.")
    server.queue_reply("Noted: max samples 2048.")
    one = first.ask("Octane: GI clamp 10 on the glass shot")
    two = second.ask("Octane max samples 2048 for the glass shot")
    for f in one.stored + two.stored:
        f.result(timeout=30)
    assert first.commit_problems == second.commit_problems == []
    for conv in (first, second):  # each sees both turns, and both settings
        texts = {m.text for m in conv.memory.list(conv.project, limit=0)}
        assert {"Octane: GI clamp 10 on the glass shot", "Octane max samples 2048 for the glass shot"} <= texts
        values = {c.entry.parameter: c.entry.value for c in conv.ledger.current(conv.project)}
        assert values.get("gi_clamp") == 10 and values.get("max_samples") == 2048


def test_a_write_waits_for_another_kelvins_write_then_says_who_holds_the_project(make_service):
    from app.memory.journal import Journal, StoreLocked
    from app.memory.project_lock import set_holder

    svc = make_service(lock_wait_s=0.3)
    svc.commit("first")[1].result(timeout=30)
    holder = Journal(svc.store().journal.folder)
    set_holder("kelvin memory import big.jsonl")
    holder.lock()  # another process in the middle of a long write
    try:
        with pytest.raises(StoreLocked, match=r"another Kelvin process \(pid \d+, kelvin memory import big.jsonl, "
                                              r"for \d+ s\); nothing was written"):
            svc.commit("second")[1].result(timeout=30)
    finally:
        holder.unlock()
        set_holder("")
    svc.commit("third")[1].result(timeout=30)  # the lock is free again: the next write goes through
    assert [m.text for m in svc.list(limit=0)] == ["first", "third"]
    svc.lock_patience = 20  # the window's patience: it waits several periods for a long write elsewhere
    holder.lock()
    threading.Timer(1.0, holder.unlock).start()
    svc.commit("fourth, asked during the other's long write")[1].result(timeout=30)
    assert [m.text for m in svc.list(limit=0)][-1] == "fourth, asked during the other's long write"


def test_a_failing_commit_is_reported_not_swallowed(server, converse):
    conv = converse(server.host)
    server.queue_reply("ok")
    result = conv.ask("before the disk fills")
    for stored in result.stored:
        stored.result(timeout=10)
    assert conv.commit_problems == []
    conv.memory.release(conv.project)  # the project's files go away under the loop (like a lost drive)
    conv.memory.store(conv.project).journal.lock = _refuse  # type: ignore[method-assign]
    server.queue_reply("ok again")
    result = conv.ask("after")
    with pytest.raises(OSError):
        result.stored[0].result(timeout=10)
    assert any("could not be stored" in p for p in conv.commit_problems)


def _refuse(*_, **__):
    raise OSError(28, "No space left on device")


def test_tool_results_are_clipped_and_the_answer_keeps_its_room(server, converse):
    conv = converse(server.host)
    for i in range(6):
        conv.memory.commit(f"Forest shot note {i}: " + " ".join(f"moss{i}-{j} fog density 0.0{j % 9}" for j in range(300)),
                           conversation_id="old", project=conv.project)
    conv.memory.flush()
    server.queue_reply("", tool_calls=[{"name": "recall", "arguments": {"query": "forest fog density"}}])
    server.queue_reply("Fog density 0.03 was the pick.")
    result = conv.ask("what fog density did we use in the forest?")
    assert result.status == "complete" and result.tool_log == ["looked up: forest fog density"]
    first, second = chat_bodies(server)[-2:]
    tool_msg = second["messages"][-1]
    assert tool_msg["role"] == "tool" and "more characters not shown" in tool_msg["content"]
    assert estimate_messages([tool_msg]) <= tools.RESULT_TOKENS + 16
    for body in (first, second):  # what the model counts (the server's tokens) plus the answer fits the window
        assert body_tokens(body) + body["options"]["num_predict"] <= 8192
    assert second["options"]["num_predict"] >= 256


def test_a_long_paste_is_summarised_in_the_background_and_the_note_is_used(server, converse):
    conv = converse(server.host)
    paste = "Redshift log\n" + "\n".join(f"block {i}: 12.{i % 10} s, 3.{i % 7} GB, 4 GI bounces" for i in range(1500))
    server.queue_reply("The GI bounces dominate.")
    server.queue_reply("Redshift log, 1500 blocks, 12 s and 3 GB each, 4 GI bounces.")  # the summary
    conv.ask(paste)
    assert conv.wait_background(10)
    summary_call = server.requests_to("/api/chat")[-1]
    assert summary_call["messages"][0]["content"].startswith("Summarise the message")
    assert summary_call["options"]["num_predict"] == 200
    server.queue_reply("Drop to 2 bounces.")
    conv.ask("what should I change?")
    window = chat_bodies(server)[-1]["messages"]
    assert window[1]["content"].startswith("[summary of a long message")
    assert "1500 blocks, 12 s and 3 GB each" in window[1]["content"]


def _summarising(converse, srv):
    """A conversation busy in the background with a slow summary (20 s) of a pasted log."""
    conv = converse(srv.host)
    paste = "Octane log\n" + "\n".join(f"tile {i}: 0.{i % 10} s" for i in range(3000))
    srv.queue_reply("Tiles are fine.")
    srv.queue_reply(" ".join(f"w{i}" for i in range(100)))
    conv.ask(paste)
    assert conv.busy_in_background
    return conv


def test_switching_to_recall_stops_a_summary_at_once(converse):
    with OllamaTestServer(delay_s=0.2) as srv:
        conv = _summarising(converse, srv)
        conv.set_mode("recall", "render started")
        assert conv.wait_background(2) and conv._notes == {}


def test_a_project_switch_stops_a_summary_first_and_no_note_lands_in_the_new_project(converse):
    """One lock discipline: what changes the conversation's project stops the background job, then
    takes the conversation lock; the summary of the project before never writes into the new one."""
    with OllamaTestServer(delay_s=0.2) as srv:
        conv = _summarising(converse, srv)
        conv.switch_project("Jungle")
        assert not conv.busy_in_background and conv.project == "Jungle" and conv._notes == {}
        conv.new_conversation()
        assert conv.recent() == [] and conv._notes == {}


@pytest.mark.parametrize("content", [
    "{not json", "[1, 2]", '{"name": 7, "conversation": "c_1", "created_ms": "yesterday"}',
    '{"name": "Forest", "conversation": {"id": "../../x\\n", "day": 20261122}, "former_names": "Wood"}',
])
def test_a_hand_edited_project_json_never_stops_kelvin(make_service, content):
    svc = make_service(project="Forest")
    projects = Projects(svc)
    folder = projects.ensure("Forest").folder
    (folder / "project.json").write_text(content, encoding="utf-8")
    info = projects.ensure("Forest")
    assert info.name in ("Forest", "forest") and isinstance(info.created_ms, int)
    cid = projects.conversation("Forest")
    svc.commit("still works", conversation_id=cid, project="Forest")[1].result(timeout=10)
    renamed = projects.rename("Forest", "Forest v2")
    assert renamed.name == "Forest v2" and projects.conversation("Forest v2")


def test_a_project_in_use_by_another_kelvin_is_not_renamed(make_service):
    from app.memory.journal import StoreLocked

    holder = make_service()
    holder.commit("mine", project="Forest")[1].result(timeout=10)
    other = make_service()
    with pytest.raises(StoreLocked):
        Projects(other).rename("Forest", "Jungle")
    assert holder.store("Forest").folder.is_dir() and not (holder.data_dir / "jungle").exists()
    holder.commit("still mine", project="Forest")[1].result(timeout=10)


def test_the_ledger_puts_current_settings_in_the_prompt_and_answers_recall_questions(server, converse):
    from tests.support.ledger_session import commit_session

    conv = converse(server.host, project="forest")
    commit_session(conv.memory)
    server.queue_reply("Keep the clamp at 12 and add a few samples.")
    conv.ask("the rain shot has fireflies too, what GI clamp should I use?")
    system = chat_bodies(server)[-1]["messages"][0]["content"]
    section = system.split("## Current settings (from the settings ledger)\n")[1]
    assert section.startswith("- Octane GI clamp = 12 (set ") and "before: 8" in section
    conv.set_mode("recall")
    answer = conv.ask("what GI clamp are we using?")
    assert answer.status == "recall" and "Octane GI clamp = 12" in answer.text and "before: 8" in answer.text


def test_the_optional_model_pass_adds_what_the_rules_missed_and_nothing_it_invents(converse):
    from tests.support.ollama_server import DEFAULT_MODELS

    with OllamaTestServer(models={**DEFAULT_MODELS, "llama3.2:3b": ModelSpec()}) as server:
        _model_pass(server, converse(server.host, project="forest", extract_model="llama3.2:3b"))


def _model_pass(server, conv):
    server.queue_reply("Noted.")  # the answer
    server.queue_reply(json.dumps({"settings": [  # the model pass over the question
        {"engine": "octane", "parameter": "gi_clamp", "value": 9, "status": "applied"},  # found
        {"engine": "octane", "parameter": "warp_drive", "value": 3, "status": "applied"},  # not in the taxonomy
        {"engine": "octane", "parameter": "max_samples", "value": "lots", "status": "applied"},  # not a value
        {"engine": "any", "parameter": "focal_length", "value": 50, "status": "maybe"}]}))  # not a status
    server.queue_reply("this is not JSON")  # the model pass over the answer: ignored
    conv.ask("For the Octane forest we keep the clamping of GI a notch under ten, at nine.")
    assert conv.wait_background(10)
    conv.memory.flush()
    calls = [b for b in server.requests_to("/api/chat") if b.get("format")]
    assert len(calls) == 2 and calls[0]["model"] == "llama3.2:3b" and calls[0]["format"]["required"] == ["settings"]
    [cur] = conv.ledger.current("forest")
    assert (cur.entry.parameter, cur.entry.value, cur.entry.by) == ("gi_clamp", 9, "model")


def test_each_distinct_fact_enters_the_window_once_and_the_decision_comes_first(server, converse):
    """Issue 31, finding 8: the same question on five days and Kelvin's similar answers to it took the
    retrieved section, a message that merely followed the question matched it through its context, and
    the decision that answers the question was left out."""
    conv = converse(server.host)
    svc, conv_id = conv.memory, "older"
    base = 1_763_000_000_000
    days = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday"]
    for d, day in enumerate(days):
        t = base + d * 86_400_000
        svc.commit(f"What GI clamp did we settle on for the glass, {day}?", conversation_id=f"{conv_id}{d}", ts_ms=t)
        if d == 2:  # the same artist goes on to something else (an exported chat): no answer to the question
            svc.commit("Also the rim light on the bottle is too strong.", conversation_id=f"{conv_id}{d}",
                       ts_ms=t + 500)
        svc.commit(f"I see no decision on the GI clamp for the glass yet; the last value mentioned was {20 + d}.",
                   role="assistant", speaker="Kelvin (llama3.1:8b)", conversation_id=f"{conv_id}{d}", ts_ms=t + 1000)
    svc.commit("Decision: GI clamp 10 on the glass, final for the hero frames.", conversation_id="decided",
               ts_ms=base + 5 * 86_400_000)
    svc.flush()
    server.queue_reply("GI clamp 10.")
    result = conv.ask("What GI clamp did we settle on for the glass?")
    texts = [m.text for m in result.window.recalled]
    assert texts[0] == "Decision: GI clamp 10 on the glass, final for the hero frames."
    assert not [t for t in texts if t.startswith("What GI clamp")]  # the question again, on another day
    assert len([t for t in texts if t.startswith("I see no decision")]) == 1  # similar answers: the best one
    assert "Also the rim light on the bottle is too strong." not in texts  # it answers nothing
    assert result.window.repeats >= 8

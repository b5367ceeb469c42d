"""End of day (issue 7): the master brief against the Ollama-protocol test server through the real
client and a real store — the settings section equals the ledger, the archive grows one entry per
run, a cancel, a vanished Ollama or a killed process leaves the old brief intact, and the next
day's first turn has the brief in its prompt."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.core import brief as plan_
from app.core.commands import Mode
from app.core.records import Message, Tags
from app.services.brief import ARCHIVE_FILE, BRIEF_FILE, BriefBuilder, BriefCancelled, BriefFailed, NothingNew
from app.services.conversation import Conversation
from tests.support.cli import kelvin
from tests.support.ollama_server import OllamaTestServer

ROOT = Path(__file__).resolve().parent.parent
DAY = [  # a day across three domains, with settings applied, changed and rejected
    ("user", "Octane, forest shot. The key light is too cold, what temperature should the sun be?"),
    ("assistant", "Try a sun temperature around 5200K and lift the sky intensity a little."),
    ("user", "ok, sun temperature 5200 K it is, much nicer. The leaves flicker though."),
    ("user", "Camera: we went with a focal length of 35mm and f-stop 2.8 for the close-up."),
    ("assistant", "At f/2.8 the depth of field is shallow; keep the focus on the hero leaf."),
    ("user", "Set the GI clamp to 25 and max samples 4000 for the fireflies."),
    ("assistant", "You could lower the GI clamp to 10; it removes most fireflies."),
    ("user", "ok, GI clamp 10 it is. 14 minutes a frame now."),
]
MAP_REPLY = "### What worked\n- {d}: settled.\n### Open questions\n- {d}: none yet."
REDUCE_REPLY = ("## Where the project stands\nThe forest shot is nearly final: GI clamp 10 and a 5200K sun; "
                "a frame takes 14 minutes, about 37 minutes less than Monday.\n"
                "## What worked\n- optimization: GI clamp 10 removed the fireflies.\n"
                "## Tried and dropped\n- optimization: GI clamp 25 was too noisy.\n"
                "## Open questions\n- lighting: the leaves still flicker.")


@pytest.fixture
def day(make_service):
    """A conversation over a store seeded with the day; closed before the store."""
    made = []

    def make(server: OllamaTestServer, mode: Mode = Mode.GPU, **overrides):
        svc = make_service(ollama_host=server.host, **overrides)
        conv = Conversation(svc.settings, svc, mode=mode)
        base = int(time.time() * 1000) - 3_600_000
        for i, (role, text) in enumerate(DAY):
            svc.commit(text, role=role, project=conv.project, conversation_id=conv.conversation_id, ts_ms=base + i * 60_000)
        svc.flush()
        made.append(conv)
        return conv

    yield make
    for conv in made:
        conv.close()


def queue_day(server: OllamaTestServer, domains: int = 3) -> None:
    for d in range(domains):
        server.queue_reply(MAP_REPLY.format(d=f"domain {d}"))
    server.queue_reply(REDUCE_REPLY)


def table_rows(text: str) -> list[list[str]]:
    part = text.split(f"## {plan_.SETTINGS_TITLE}")[1].split("\n## ")[0]
    return [[c.strip() for c in line.strip("|").split("|")] for line in part.splitlines()
            if line.startswith("| ") and not line.startswith("| Setting")]


def say_more(conv) -> None:
    """A message after the last brief: a brief with nothing said since writes nothing."""
    conv.memory.commit("One more thing: the client liked the morning fog.", project=conv.project,
                       conversation_id=conv.conversation_id)
    conv.memory.flush()


def brief_calls(server) -> list[dict]:
    return [b for b in server.requests_to("/api/chat") if b and b["messages"][0]["content"].startswith(
        ("You write the end-of-day", "You write the master brief", "Merge these partial"))]


# ---- the plan, pure ----------------------------------------------------------------------------------
def _msg(i: int, domain: str, text: str) -> Message:
    return Message(id=f"m{i}", project="p", conversation_id="c", role="user", speaker="", text=text,
                   ts_ms=1_700_000_000_000 + i, tags=Tags(domain=domain))


def test_the_plan_cuts_each_domain_to_fit_the_window_and_leaves_out_recall_answers():
    msgs = [_msg(i, "lighting" if i % 2 else "camera", f"note {i} " + "word " * 300) for i in range(40)]
    msgs.append(Message(id="r", project="p", conversation_id="c", role="assistant", speaker="", text="quoted",
                        ts_ms=1, status="recall", tags=Tags(domain="lighting")))
    p = plan_.plan(msgs, num_ctx=4096)
    assert p.domains == ["lighting", "camera"]  # the fixed domain order
    assert len(p.of("lighting")) > 1 and all(c.parts == len(p.of(c.domain)) for c in p.chunks)
    for c in p.chunks:
        assert plan_.estimate(c.text) <= 4096 - plan_.MAP_ANSWER_TOKENS - plan_.PROMPT_OVERHEAD_TOKENS
    assert sum(len(c.messages) for c in p.chunks) == 40  # every message once, the recall answer not at all
    assert [m.id for c in p.of("camera") for m in c.messages] == [f"m{i}" for i in range(0, 40, 2)]


def test_numbers_nobody_said_are_flagged_and_dates_are_not_numbers():
    sources = ["GI clamp 10, max samples 1,024, f/2.8 at 35mm", "sun 5200 K"]
    written = "GI clamp 10, 1024 samples, f-stop 2.80, sun 5200K, 3 issues; on 2026-11-23 at 14:05 it took 37 minutes at 0.5"
    assert plan_.unsupported(written, sources) == ["37", "0.5"]
    assert plan_.mark("37 minutes, not 370", ["37"]) == "37 ⚠ minutes, not 370"
    assert plan_.sections("intro\n## What Worked:\n- a\n### open questions\n- b")[plan_.SECTIONS[1]] == "- a"


# ---- the brief, end to end -------------------------------------------------------------------------
def test_a_seeded_day_gives_a_brief_whose_settings_are_the_ledger_and_the_archive_grows_per_run(day):
    with OllamaTestServer() as srv:
        conv = day(srv)
        builder = BriefBuilder(conv)
        steps: list[tuple[int, int, str]] = []
        queue_day(srv)
        result = builder.build(progress=lambda d, t, s: steps.append((d, t, s)))
        assert result.domains == ["lighting", "camera", "optimization"] and result.messages == len(DAY)
        assert [s for _, _, s in steps][:3] == ["Summarising lighting", "Summarising camera", "Summarising optimization"]
        assert steps[-1] == (4, 4, "Done") and result.calls == 4
        text = (conv.memory.store().folder / BRIEF_FILE).read_text(encoding="utf-8")
        assert text == result.text
        # the settings section is the ledger, row for row, not the model's words
        ledger = conv.ledger.current()
        rows = table_rows(text)
        assert len(rows) == len(ledger) >= 4
        by_name = {r[0]: r for r in rows}
        assert by_name["Octane GI clamp"][1] == "10" and by_name["Octane GI clamp"][3] == "25"
        assert {r[1] for r in rows} >= {"10", "35mm", "2.8"}
        # the reduce call saw the domain notes and the ledger; a number in no source is flagged
        calls = brief_calls(srv)
        assert len(calls) == 4 and "Settings in force" in calls[-1]["messages"][1]["content"]
        assert "Set the GI clamp to 25" in calls[2]["messages"][1]["content"]  # optimization's chunk holds its messages
        assert result.flagged == ["37"] and "37 ⚠ minutes" in text and "## Numbers to check" in text
        # archived, dated; with nothing said since, a second run writes nothing (issue 31: the README said
        # so, and it wrote a new brief each time)
        assert len(builder.archive()) == 1 and builder.archive()[0][0].startswith("Brief of ")
        for _ in range(3):
            with pytest.raises(NothingNew, match="nothing new since the last brief"):
                builder.build()
        assert len(builder.archive()) == 1 and len(brief_calls(srv)) == 4
        # once something is said, a second run the same day covers the whole day again and adds an entry
        conv.memory.commit("One more thing: the client liked the morning fog.", project=conv.project,
                           conversation_id=conv.conversation_id)
        conv.memory.flush()
        queue_day(srv)
        again = builder.build()
        assert again.messages == len(DAY) + 1 and len(builder.archive()) == 2
        archive = (conv.memory.store().folder / ARCHIVE_FILE).read_text(encoding="utf-8")
        assert archive.count("## Brief of ") == 2 and archive.count("### Current settings") == 2
        # kept as a priority memory (the latest only; the archive has them all)
        briefs = [m for m in conv.memory.memories() if m.category == "brief"]
        assert len(briefs) == 1 and "GI clamp = 10" in briefs[0].text


def test_a_cancel_or_a_vanished_ollama_mid_run_leaves_the_old_brief_and_archive_untouched(day):
    with OllamaTestServer() as srv:
        conv = day(srv)
        builder = BriefBuilder(conv)
        queue_day(srv)
        builder.build()  # the brief that must survive: written at once
        say_more(conv)
        srv.delay_s = 0.05  # from here on the model streams at a model's pace
        folder = conv.memory.store().folder
        before = {n: (folder / n).read_bytes() for n in (BRIEF_FILE, ARCHIVE_FILE, "brief.json")}
        cancel = threading.Event()
        srv.queue_reply(MAP_REPLY.format(d="lighting") + " more words" * 20)

        def stop_when_writing(done, total, what):
            if what.startswith("Summarising camera"):
                cancel.set()

        with pytest.raises(BriefCancelled, match="previous brief is unchanged"):
            builder.build(progress=stop_when_writing, cancel=cancel)
        assert {n: (folder / n).read_bytes() for n in before} == before
        assert not list(folder.glob(".*.tmp"))
        # Ollama gone mid-stream
        srv.vanish_mid_stream = True
        with pytest.raises(BriefFailed, match="could not be written"):
            builder.build()
        assert {n: (folder / n).read_bytes() for n in before} == before


def test_a_killed_brief_process_leaves_the_old_brief_whole(tmp_path, monkeypatch):
    with OllamaTestServer(delay_s=0.02) as srv:
        monkeypatch.setenv("KELVIN_OLLAMA_HOST", srv.host)
        env = os.environ.copy()  # for the brief that is killed: a process of its own
        now = time.time() - 3600
        seed = tmp_path / "day.jsonl"
        seed.write_text("".join(json.dumps({"id": f"d{i}", "role": role, "text": text, "conversation_id": "today",
                                            "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + i * 60))})
                                + "\n" for i, (role, text) in enumerate(DAY)), encoding="utf-8")
        kelvin("memory", "import", str(seed))
        queue_day(srv)
        first = kelvin("brief", "--json")
        out = json.loads(first.stdout)
        assert out["sections"]["Current settings"] and "[4/4] Done" in first.stderr
        folder = Path(out["path"]).parent
        before = {n: (folder / n).read_bytes() for n in (BRIEF_FILE, ARCHIVE_FILE)}
        more = tmp_path / "more.jsonl"  # something said since, so that the next brief has work to do
        more.write_text(json.dumps({"id": "d-more", "text": "One more thing: the client liked the morning fog.",
                                    "conversation_id": "today"}) + "\n", encoding="utf-8")
        kelvin("memory", "import", str(more))
        for d in range(3):
            srv.queue_reply(MAP_REPLY.format(d=d))
        srv.queue_reply(REDUCE_REPLY + " and more" * 400)  # a long last answer: killed while it streams
        proc = subprocess.Popen([sys.executable, "-m", "app", "brief"], cwd=ROOT, env=env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while len(brief_calls(srv)) < 8 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.3)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=30)
        assert len(brief_calls(srv)) == 8
        assert {n: (folder / n).read_bytes() for n in before} == before
        # nothing said since the time asked for: the brief with content stays, nothing is flagged
        calls = len(brief_calls(srv))
        empty = kelvin("brief", "--since", "2099-01-01")
        assert empty.stdout.startswith("nothing new since 1 Jan 2099 00:00: the brief is unchanged")
        assert "Numbers to check" not in empty.stdout and len(brief_calls(srv)) == calls
        assert {n: (folder / n).read_bytes() for n in before} == before


def test_in_recall_mode_the_brief_waits_for_the_render_and_then_runs_on_the_cpu(day):
    with OllamaTestServer() as srv:
        conv = day(srv)
        conv.set_mode(Mode.RECALL, reason="a render started in Octane")
        builder = BriefBuilder(conv)
        steps, outcome = [], {}
        queue_day(srv)
        t = threading.Thread(target=lambda: outcome.setdefault("r", builder.build(progress=lambda d, t, s: steps.append(s))))
        t.start()
        deadline = time.monotonic() + 10
        while not any(s.startswith("Waiting: a render has the GPU") for s in steps) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert brief_calls(srv) == []  # nothing asked of the model while the render has the GPU
        conv.set_mode(Mode.CPU, reason="the render is done")
        t.join(30)
        assert outcome["r"].mode == "cpu"
        assert all(b["options"].get("num_gpu") == 0 for b in brief_calls(srv))
        # chosen by the artist, recall mode is a plain refusal, not a wait
        say_more(conv)
        conv.set_mode(Mode.RECALL, reason="the artist")
        with pytest.raises(BriefFailed, match="recall mode"):
            builder.build()


def test_a_mode_change_mid_call_runs_that_call_again_in_the_new_mode(day):
    with OllamaTestServer(delay_s=0.05) as srv:
        conv = day(srv)
        builder = BriefBuilder(conv)
        srv.queue_reply(MAP_REPLY.format(d="lighting") + " word" * 100)  # long enough to be interrupted
        queue_day(srv)
        outcome = {}
        t = threading.Thread(target=lambda: outcome.setdefault("r", builder.build()))
        t.start()
        deadline = time.monotonic() + 10
        while not brief_calls(srv) and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.2)
        conv.set_mode(Mode.CPU, reason="a render started in Redshift")  # what the VRAM guard does
        t.join(30)
        calls = brief_calls(srv)
        assert "num_gpu" not in calls[0]["options"] and calls[1]["options"]["num_gpu"] == 0
        assert calls[0]["messages"] == calls[1]["messages"]  # the same chunk, again
        assert outcome["r"].calls == 4 and len(calls) == 5


def test_the_next_day_starts_from_the_brief_pinned_and_greeted_without_a_model_call(day, make_service):
    with OllamaTestServer() as srv:
        conv = day(srv)
        queue_day(srv)
        BriefBuilder(conv).build()
        path = conv.memory.store().folder / BRIEF_FILE
        yesterday = time.time() - 86_400
        os.utime(path, (yesterday, yesterday))
        recall = Conversation(conv.settings, conv.memory, mode=Mode.RECALL)
        try:
            before = len(srv.requests_to("/api/chat"))
            hello = recall.greeting()
            assert hello.startswith("Resuming from the brief of ") and "Octane GI clamp = 10" in hello
            assert len(srv.requests_to("/api/chat")) == before  # no model call
            assert recall.greeting() == ""  # once a day
        finally:
            recall.close()
        srv.queue_reply("Good morning.")
        result = conv.ask("Where were we with the fireflies?")
        prompt = "\n".join(m["content"] for m in srv.requests_to("/api/chat")[-1]["messages"])
        assert "## Project brief (pinned)" in prompt and "Master brief" in prompt
        assert result.status == "complete"
        hits = conv.memory.search_memories("master brief forest", k=3)
        assert hits and hits[0][0].category == "brief"

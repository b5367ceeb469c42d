"""`kelvin chat`, `kelvin doctor` and `kelvin project` against the test server (in-process; a real process for the pipe)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.ollama_server import ModelSpec, OllamaTestServer
from tests.support.cli import ROOT, kelvin


@pytest.fixture
def server(server, monkeypatch):
    """The shared test server (tests/conftest.py), where every command of the test reaches it."""
    monkeypatch.setenv("KELVIN_OLLAMA_HOST", server.host)
    return server


def test_once_answers_commits_and_sees_the_last_turns(server):
    server.queue_reply("Use a 2.8 f-stop for a shallow focus.")
    out = kelvin("chat", "--once", "How do I blur the background?")
    assert out.stdout == "Use a 2.8 f-stop for a shallow focus.\n"
    server.queue_reply("Then 4.0 keeps the bottle sharp.")
    turn = json.loads(kelvin("chat", "--once", "--json", "And for the whole bottle in focus?").stdout)
    assert turn["status"] == "complete" and turn["text"] == "Then 4.0 keeps the bottle sharp."
    body = [b for b in server.requests_to("/api/chat") if b.get("messages")][-1]
    assert [m["content"] for m in body["messages"][1:]] == [
        "How do I blur the background?", "Use a 2.8 f-stop for a shallow focus.", "And for the whole bottle in focus?"]
    listed = kelvin("memory", "list", "--json").stdout
    texts = [m["text"] for m in json.loads(listed)]
    assert texts == ["How do I blur the background?", "Use a 2.8 f-stop for a shallow focus.",
                     "And for the whole bottle in focus?", "Then 4.0 keeps the bottle sharp."]


def test_once_cannot_answer_in_the_requested_mode_without_ollama(tmp_path):
    kelvin("memory", "remember", "The client wants a warm key light")
    out = kelvin("chat", "--once", "--mode", "gpu", "what key light?", check=False)
    assert out.returncode == 1 and out.stdout == ""
    assert "Ollama is not reachable at http://127.0.0.1:9" in out.stderr and "--mode recall" in out.stderr
    out = kelvin("chat", "--once", "--mode", "recall", "what key light?")
    assert out.stdout.startswith("_Recall mode: answering from memory, no model._")
    assert "The client wants a warm key light" in out.stdout
    # both questions were kept
    texts = [m["text"] for m in json.loads(kelvin("memory", "list", "--json").stdout)]
    assert texts.count("what key light?") == 2


def test_interactive_chat_with_commands(server):
    server.queue_reply("Try the studio HDRI.")
    script = "\n".join(["/mode cpu", "What HDRI for the bottle?", "/remember the bottle is amber glass #fact",
                        "/memories", "/project Forrest", "/project new Forest", "/projects", "/bogus", "/quit"]) + "\n"
    out = kelvin("chat", input=script)
    assert "Mode: cpu" in out.stdout and "Try the studio HDRI." in out.stdout
    assert "Kept (fact): the bottle is amber glass" in out.stdout
    assert "unknown command /bogus" in out.stdout
    assert "* Forest" in out.stdout and "  default" in out.stdout
    # a name that is no project is never made one by mistake: said, with the nearest, and the way to make it
    assert "there is no project 'Forrest' (/project new Forrest makes it)" in out.stdout
    body = [b for b in server.requests_to("/api/chat") if b.get("messages")][-1]
    assert body["options"]["num_gpu"] == 0


def test_interactive_chat_offers_to_pull_a_missing_model(monkeypatch):
    with OllamaTestServer(models={}, available={"llama3.1:8b": ModelSpec()}) as srv:
        monkeypatch.setenv("KELVIN_OLLAMA_HOST", srv.host)
        out = kelvin("chat", input="hello\ny\nhello again\n/quit\n")
        assert "does not have the model" in out.stdout or "ollama pull" in out.stdout
        assert "llama3.1:8b is ready" in out.stdout
        assert out.stdout.count("Echo: hello again") == 1
        assert "100.0%" in out.stderr


def test_doctor_names_each_problem_and_its_fix(tmp_path, monkeypatch):
    out = kelvin("doctor", check=False)
    assert out.returncode == 1
    assert "[FAIL] Ollama: Ollama is not reachable at http://127.0.0.1:9" in out.stdout
    assert "→ start Ollama (`ollama serve`" in out.stdout
    assert "[info] GPU:" in out.stdout or "[ok  ] GPU:" in out.stdout
    assert "[ok  ] data folder:" in out.stdout
    with OllamaTestServer(models={"nomic-embed-text": ModelSpec(kind="embedding")}) as srv:
        monkeypatch.setenv("KELVIN_OLLAMA_HOST", srv.host)
        monkeypatch.setenv("KELVIN_EMBEDDER", "ollama:nomic-embed-text")
        checks = {c["name"]: c for c in json.loads(kelvin("doctor", "--json", check=False).stdout)}
        assert checks["Ollama"]["status"] == "ok" and "0.12.0-kelvin-test" in checks["Ollama"]["detail"]
        assert checks["chat model"]["status"] == "fail" and "ollama pull llama3.1:8b" in checks["chat model"]["fix"]
        assert checks["embedder"]["status"] == "ok"
        assert checks["memory"]["status"] in ("info", "ok")


def test_project_commands(tmp_path):
    assert "created project 'Nike / Shot 010'" in kelvin("project", "create", "Nike / Shot 010").stdout
    out = kelvin("project", "create", "Nike / Shot 010", check=False)
    assert out.returncode == 1 and "already exists" in out.stderr
    kelvin("--project", "Nike / Shot 010", "memory", "remember", "orange rim light")
    kelvin("project", "rename", "Nike / Shot 010", "Nike Air")
    projects = json.loads(kelvin("project", "list", "--json").stdout)
    assert [p["name"] for p in projects] == ["Nike Air"]
    mems = json.loads(kelvin("--project", "Nike Air", "memory", "memories", "--json").stdout)
    assert [m["text"] for m in mems] == ["orange rim light"]
    out = kelvin("project", "rename", "nope", "x", check=False)
    assert out.returncode == 1 and "there is no project named 'nope'" in out.stderr


def test_once_into_a_pipe_that_closes_keeps_the_whole_turn(monkeypatch):
    with OllamaTestServer(delay_s=0.02) as srv:
        monkeypatch.setenv("KELVIN_OLLAMA_HOST", srv.host)
        words = " ".join(f"step{i}" for i in range(60))
        srv.queue_reply(words)
        proc = subprocess.Popen([sys.executable, "-m", "app", "chat", "--once", "walk me through it"], cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=os.environ.copy())
        assert proc.stdout.read(5) == b"step0"  # like `| head -c 5`
        proc.stdout.close()
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err.decode()
    assert b"Traceback" not in err and b"BrokenPipe" not in err
    texts = [m["text"] for m in json.loads(kelvin("memory", "list", "--json").stdout)]
    assert texts == ["walk me through it", words]


def test_settings_commands(tmp_path):
    rows = [{"text": t, "role": r, "conversation_id": "day1", "timestamp": f"2026-11-20T10:0{i}:00Z", "project": "forest"}
            for i, (r, t) in enumerate([
                ("user", "Forest shot in Octane today. GI clamp is at 25 from yesterday."),
                ("assistant", "You could lower the GI clamp to 8."),
                ("user", "ok, using 8"), ("user", "set the gi clamp to 12"), ("user", "actually make it 15"),
                ("user", "that made it worse, back to 12")])]
    day = tmp_path / "day.jsonl"
    day.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    kelvin("memory", "import", str(day))
    listed = json.loads(kelvin("--project", "forest", "settings", "list", "--json").stdout)
    assert [{k: s[k] for k in ("engine", "parameter", "value", "unit", "status", "domain")} for s in listed] == [
        {"engine": "octane", "parameter": "gi_clamp", "value": 12, "unit": "", "status": "applied",
         "domain": "optimization"}]
    assert listed[0]["set_at"] and listed[0]["source_id"].startswith("m_") and listed[0]["previous"]["value"] == 8
    history = kelvin("--project", "forest", "settings", "history", "gi clamp").stdout
    assert history.startswith("Octane GI clamp: now 12") and history.count("\n") == 8
    out = kelvin("--project", "forest", "settings", "set", "gi clamp", "10", "--engine", "octane")
    assert "Octane GI clamp = 10" in out.stdout
    bad = kelvin("--project", "forest", "settings", "set", "gi clamp", "lots", "--engine", "octane", check=False)
    assert bad.returncode == 1 and "GI clamp takes a number" in bad.stderr
    assert "Octane GI clamp = 10 (set " in kelvin("--project", "forest", "settings", "list").stdout


def test_the_window_holds_each_past_message_once_and_says_how_much_it_retrieved(server, tmp_path):
    asked = "What GI clamp did we settle on for the kitchen?"
    history = [
        {"text": asked, "conversation_id": "mon", "timestamp": "2026-11-16T09:00:00Z"},
        {"text": "GI clamp 10 for the kitchen, the fireflies are gone.", "conversation_id": "mon",
         "role": "assistant", "timestamp": "2026-11-16T09:00:05Z"},
        {"text": asked, "conversation_id": "tue", "timestamp": "2026-11-17T09:00:00Z"},  # asked again
        {"text": "what gi clamp did we settle on for the kitchen", "conversation_id": "wed",
         "timestamp": "2026-11-18T09:00:00Z"},  # and again, in other case and punctuation
    ]
    f = tmp_path / "h.jsonl"
    f.write_text("".join(json.dumps(r) + "\n" for r in history), encoding="utf-8")
    kelvin("memory", "import", str(f))
    server.queue_reply("GI clamp 10.")
    turn = json.loads(kelvin("chat", "--once", "--json", asked).stdout)
    window = turn["window"]
    assert window["repeats_left_out"] >= 3 and window["retrieved_tokens"] > 0
    assert 0 < window["retrieved_share"] < 1
    system = [b for b in server.requests_to("/api/chat") if b.get("messages")][-1]["messages"][0]["content"]
    assert system.count("GI clamp 10 for the kitchen") == 1
    assert "settle on" not in system.casefold()  # the question itself, asked before, is not retrieved again


def test_with_ollama_away_the_chat_says_so_once(monkeypatch):
    monkeypatch.setenv("KELVIN_EMBEDDER", "ollama:nomic-embed-text")  # the embedder is away too
    kelvin("memory", "remember", "The client wants a warm key light")
    out = kelvin("chat", input="what key light?\n/quit\n")
    said = (out.stdout + out.stderr).casefold()
    assert said.count("not reachable") == 1, out.stdout + out.stderr
    assert "warm key light" in out.stdout

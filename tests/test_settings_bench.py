"""bench/settings_extraction.py as the next engineer runs it: on a labelled file, with and without
the optional model pass, against the project's Ollama-protocol server through the real client."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.support.ollama_server import OllamaTestServer

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench" / "settings_extraction.py"

# a session the rules read only partly: the second message names no parameter the rules know
SESSION = [
    {"session": "t01", "role": "user", "text": "Octane, a perfume bottle. GI clamp 25.",
     "expected": [{"engine": "octane", "parameter": "gi_clamp", "value": 25, "unit": "", "status": "applied"}]},
    {"session": "t01", "role": "user", "text": "the slider that tames the fireflies is on twelve now",
     "expected": [{"engine": "octane", "parameter": "gi_clamp", "value": 12, "unit": "", "status": "applied"}]},
    {"session": "t01", "role": "user", "text": "render is 4 minutes a frame",
     "expected": []},
    {"session": "t01", "final": [{"engine": "octane", "parameter": "gi_clamp", "value": 12, "unit": ""}]},
]


def bench(data: Path, *args: str) -> dict:
    out = subprocess.run([sys.executable, str(BENCH), "--data", str(data), "--reps", "0", *args],
                         capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_the_bench_scores_the_rules_alone_and_with_the_model_pass(tmp_path):
    data = tmp_path / "settings_labelled_t.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in SESSION), encoding="utf-8")

    rules = bench(data)
    assert rules["model_pass"] is None
    assert {"tp": 1, "fp": 0, "fn": 1}.items() <= rules["quality"]["mentions_by_status"]["applied"].items()
    assert rules["by_file"]["t"]["applied"] == {"precision": 1.0, "recall": 0.5}
    assert rules["by_file"]["t"]["ledger_final_values"] == {"precision": 0.0, "recall": 0.0}

    with OllamaTestServer() as srv:
        # one reply per message, in order: what the rules found again (not added twice), the
        # setting the rules missed, and a reply that is not the JSON asked for
        srv.queue_reply(json.dumps({"settings": [{"engine": "octane", "parameter": "gi_clamp", "value": 25,
                                                  "status": "applied"}]}))
        srv.queue_reply(json.dumps({"settings": [{"engine": "octane", "parameter": "gi_clamp", "value": "12",
                                                  "status": "applied"},
                                                 {"engine": "octane", "parameter": "warp_drive", "value": 9,
                                                  "status": "applied"}]}))
        srv.queue_reply("I think the render time is 4 minutes.")
        both = bench(data, "--model", "llama3.1:8b", "--host", srv.host)
        chats = srv.requests_to("/api/chat")

    assert {"model": "llama3.1:8b", "calls": 3, "failed": 0, "added": 1, "kept_nothing": 2}.items() \
        <= both["model_pass"].items()
    assert both["by_file"]["t"]["applied"] == {"precision": 1.0, "recall": 1.0}  # the unknown parameter was dropped
    assert both["by_file"]["t"]["ledger_final_values"] == {"precision": 1.0, "recall": 1.0}
    # the app's own request: the JSON schema, a small window, the message and the engine's parameters
    assert len(chats) == 3 and all(c["format"]["required"] == ["settings"] for c in chats)
    assert chats[1]["options"]["num_ctx"] == 4096
    assert "twelve" in chats[1]["messages"][-1]["content"] and "gi_clamp" in chats[1]["messages"][0]["content"]


def test_the_bench_says_so_when_the_model_host_is_down(tmp_path):
    data = tmp_path / "settings_labelled_t.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in SESSION), encoding="utf-8")
    with OllamaTestServer() as srv:
        host = srv.host
    out = bench(data, "--model", "llama3.1:8b", "--host", host)  # the port is closed now
    assert out["model_pass"]["failed"] == 3 and out["model_pass"]["added"] == 0
    assert out["by_file"]["t"]["applied"] == {"precision": 1.0, "recall": 0.5}  # the rules' result stands

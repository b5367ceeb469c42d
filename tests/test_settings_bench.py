"""bench/settings_extraction.py as the next engineer runs it: on a labelled file, with and without
the optional model pass, against the project's Ollama-protocol server through the real client."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

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


@pytest.mark.slow(seconds=14)
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


@pytest.mark.slow(seconds=10)
def test_the_bench_says_so_when_the_model_host_is_down(tmp_path):
    data = tmp_path / "settings_labelled_t.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in SESSION), encoding="utf-8")
    with OllamaTestServer() as srv:
        host = srv.host
    out = bench(data, "--model", "llama3.1:8b", "--host", host)  # the port is closed now
    assert out["model_pass"]["failed"] == 3 and out["model_pass"]["added"] == 0
    assert out["by_file"]["t"]["applied"] == {"precision": 1.0, "recall": 0.5}  # the rules' result stands


# ---- issue 30: scopes, current values, and turned-down values shown as current ------------------------------

SCOPED = [
    {"session": "s01", "role": "user", "text": "Cycles. Key light at 5600K, the fireplace at 1900K.",
     "expected": [{"engine": None, "parameter": "light_temperature", "value": 5600, "unit": "K", "status": "applied",
                   "scope": "key light"},
                  {"engine": None, "parameter": "light_temperature", "value": 1900, "unit": "K", "status": "applied",
                   "scope": "fireplace"}]},
    {"session": "s01", "role": "assistant", "text": "Try clamp indirect 10.",
     "expected": [{"engine": "cycles", "parameter": "clamp_indirect", "value": 10, "unit": "", "status": "proposed",
                   "scope": None}]},
    {"session": "s01", "final": [{"engine": None, "parameter": "light_temperature", "value": 5600, "unit": "K",
                                  "scope": "key"},
                                 {"engine": None, "parameter": "light_temperature", "value": 1900, "unit": "K",
                                  "scope": "the fireplace"}]},
]


def test_scope_names_match_without_articles_possessives_or_a_generic_last_word():
    sys.path.insert(0, str(ROOT / "bench"))
    from ledger_scoring import scope_name

    assert scope_name("Key light") == scope_name("key") == scope_name("the key's") == "key"
    assert scope_name("CAM_hero") == scope_name("cam hero") == "cam hero"
    assert scope_name("the hero frames") == "hero" and scope_name("The glass layer") == "glass"
    assert scope_name("cam") == "cam" and scope_name(None) == scope_name("") == ""
    # two labellers' words for one object: a plural, "stills"/"cut"; the sun's own angles need no scope
    assert scope_name("ceiling pendants") == scope_name("ceiling pendant") == "ceiling pendant"
    assert scope_name("heroes") == scope_name("hero stills") == "hero" and scope_name("glass") == "glass"
    assert scope_name("left strip") != scope_name("right strip")
    from ledger_scoring import scope_of

    assert scope_of("sun_elevation", "sun") == "" and scope_of("light_intensity", "sun") == "sun"


def test_a_proposal_the_ledger_shows_as_current_is_counted_as_floated():
    sys.path.insert(0, str(ROOT / "bench"))
    from ledger_scoring import SessionScore, mention_key

    acc = SessionScore()
    labels = [mention_key(m) for r in SCOPED[:2] for m in r["expected"]]
    final = [mention_key({**f, "status": ""}) for f in SCOPED[2]["final"]]
    have = [("", "light_temperature", 5600, "", "key"), ("cycles", "clamp_indirect", 10, "", "")]
    wrong = acc.session(have, unsure=1, final=final, labels=labels)
    s = acc.summary()
    assert wrong == [{"current": ["cycles", "clamp_indirect", 10, "", ""], "kind": "floated"}]
    assert s["turned_down_or_floated_shown_as_current"] == 1
    assert {"tp": 1, "fp": 1, "fn": 1, "to_confirm": 1}.items() <= s["current_values"].items()


@pytest.mark.slow(seconds=10)
def test_the_bench_compares_scopes_only_in_files_labelled_with_them(tmp_path):
    data = tmp_path / "settings_labelled_s.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in SCOPED), encoding="utf-8")
    out = bench(data)
    q = out["quality"]
    assert set(q["mentions_by_status"]) == {"applied", "proposed", "rejected"}
    assert {"precision", "recall", "to_confirm"} <= set(q["current_values"])
    assert "turned_down_or_floated_shown_as_current" in out["by_file"]["s"]
    sys.path.insert(0, str(ROOT / "bench"))
    from ledger_scoring import file_is_scoped

    rows, final = SCOPED[:2], SCOPED[2]["final"]
    assert file_is_scoped(rows, final)
    plain = [{**r, "expected": [{k: v for k, v in m.items() if k != "scope"} for m in r["expected"]]} for r in rows]
    assert not file_is_scoped(plain, [{k: v for k, v in f.items() if k != "scope"} for f in final])

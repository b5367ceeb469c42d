"""The command-line contract, run as a new process the way an artist or a script runs it."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.memory.journal import Journal

ROOT = Path(__file__).resolve().parent.parent


def kelvin(*args, input=None, check=True, timeout=120):
    proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=ROOT, capture_output=True, text=True,
                          input=input, timeout=timeout, env=os.environ.copy())
    if check and proc.returncode != 0:
        raise AssertionError(f"kelvin {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


SESSION = [
    {"id": "a1", "text": "Set GI clamp to 10 in Octane, the fireflies are gone", "conversation_id": "day1",
     "role": "user", "speaker": "Mara", "timestamp": "2026-11-20T09:00:00Z"},
    {"id": "a2", "text": "Good. Keep max samples at 1024 for previews.", "conversation_id": "day1",
     "role": "assistant", "timestamp": "2026-11-20T09:00:05Z"},
    {"id": "a3", "text": "Redshift maxsubdivs 4 on the rock displacement", "conversation_id": "day2",
     "timestamp": "2026-11-21T10:00:00Z"},
    {"text": "The rim light looks too strong on the bottle", "project": "Perfume", "timestamp": "2026-11-21T11:00:00Z"},
]


def test_import_then_search_json_contract(tmp_path):
    f = write_jsonl(tmp_path / "h.jsonl", SESSION)
    out = kelvin("memory", "import", str(f))
    assert out.stdout.strip() == "imported 4 messages"  # three in the default project, one in Perfume
    hits = json.loads(kelvin("memory", "search", "GI clamp 10", "--json").stdout)
    top = hits[0]
    assert set(top) >= {"id", "project", "conversation_id", "role", "speaker", "text", "timestamp", "score", "tags"}
    assert (top["id"], top["project"], top["conversation_id"], top["role"], top["speaker"]) == \
        ("a1", "default", "day1", "user", "Mara")
    assert top["text"] == SESSION[0]["text"] and top["timestamp"] == "2026-11-20T09:00:00.000Z"
    assert top["tags"] == {"domain": "optimization", "type": "setting", "engine": "octane", "host_app": None, "priority": 1}
    assert json.loads(kelvin("memory", "search", "maxsubdivs 4", "--json", "--k", "1").stdout)[0]["id"] == "a3"
    # the Perfume line went to its own project
    assert json.loads(kelvin("memory", "search", "rim light", "--json").stdout) == []
    both = json.loads(kelvin("memory", "search", "rim light", "--json", "--all-projects").stdout)
    assert [h["project"] for h in both] == ["Perfume"]
    assert json.loads(kelvin("--project", "Perfume", "memory", "search", "rim light", "--json").stdout)[0]["text"] \
        == SESSION[3]["text"]


def test_search_lists_matches_not_the_rest_of_the_project(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    # "firefly" is said as "fireflies" in one message: the stem finds it, and only it is listed
    assert [h["id"] for h in json.loads(kelvin("memory", "search", "firefly", "--json", "--k", "10").stdout)] == ["a1"]
    shown = kelvin("memory", "search", "firefly").stdout
    assert "fireflies are gone" in shown and "maxsubdivs" not in shown and "max samples" not in shown
    assert kelvin("memory", "search", "zebra quokka").stdout.strip() == "no matching messages"
    # --batch gives the best k whatever they are, as the chat's window would get them: a2 is found
    # through its context (the message before it says "fireflies"), and is no match of its own
    queries = tmp_path / "q.txt"
    queries.write_text("firefly\n", encoding="utf-8")
    best = json.loads(kelvin("memory", "search", "--batch", str(queries), "--k", "3", "--json").stdout)
    assert [h["id"] for h in best["hits"]] == ["a1", "a2"]


def test_filters_on_the_command_line(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    by_engine = json.loads(kelvin("memory", "search", "samples GI clamp maxsubdivs", "--json", "--k", "10",
                                  "--engine", "redshift").stdout)
    assert [h["id"] for h in by_engine] == ["a3"]
    since = json.loads(kelvin("memory", "search", "samples GI clamp maxsubdivs", "--json", "--k", "10",
                              "--since", "2026-11-21T00:00:00Z").stdout)
    assert [h["id"] for h in since] == ["a3"]
    until = json.loads(kelvin("memory", "search", "samples GI clamp maxsubdivs", "--json", "--k", "10",
                              "--until", "2026-11-20T23:00:00Z", "--type", "setting").stdout)
    assert sorted(h["id"] for h in until) == ["a1", "a2"]


def test_importing_again_changes_nothing(tmp_path):
    f = write_jsonl(tmp_path / "h.jsonl", SESSION)
    kelvin("memory", "import", str(f))
    again = kelvin("memory", "import", str(f))
    assert "imported 0 messages (4 already stored)" in again.stdout
    assert json.loads(kelvin("memory", "stats", "--json").stdout)["messages"] == 3
    assert json.loads(kelvin("--project", "Perfume", "memory", "stats", "--json").stdout)["messages"] == 1


def test_batch_search_serves_every_query_in_order(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    queries = tmp_path / "q.txt"
    queries.write_text("GI clamp 10\n\nmaxsubdivs 4\nzebra quokka\n", encoding="utf-8")
    lines = kelvin("memory", "search", "--batch", str(queries), "--k", "2", "--json").stdout.splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["query"] for r in rows] == ["GI clamp 10", "maxsubdivs 4", "zebra quokka"]
    assert rows[0]["hits"][0]["id"] == "a1" and rows[1]["hits"][0]["id"] == "a3" and rows[2]["hits"] == []
    assert all(r["took_ms"] >= 0 for r in rows) and len(rows[0]["hits"]) <= 2


def test_list_show_edit_delete_stats_reindex(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    listed = json.loads(kelvin("memory", "list", "--json").stdout)
    assert [m["id"] for m in listed] == ["a1", "a2", "a3"]
    assert json.loads(kelvin("memory", "show", "a2", "--json").stdout)["text"] == SESSION[1]["text"]
    kelvin("memory", "edit", "a2", "--text", "Keep max samples at 2048 for previews.")
    assert json.loads(kelvin("memory", "show", "a2", "--json").stdout)["text"].endswith("2048 for previews.")
    assert "deleted a3" in kelvin("memory", "delete", "a3").stdout
    gone = kelvin("memory", "show", "a3", check=False)
    assert gone.returncode == 1 and "no message 'a3'" in gone.stderr
    stats = json.loads(kelvin("memory", "stats", "--json").stdout)
    assert stats["messages"] == 2 and stats["journal"]["events"] == 5
    out = kelvin("memory", "reindex")
    assert "from the journal: 2 messages" in out.stdout and "reindexed 2 / 2" in out.stderr
    assert [m["id"] for m in json.loads(kelvin("memory", "list", "--json").stdout)] == ["a1", "a2"]
    folder = Path(stats["folder"])
    md = "".join(p.read_text(encoding="utf-8") for p in folder.glob("*.md"))
    assert "2048 for previews" in md and "maxsubdivs" not in md


def test_curated_memories_on_the_command_line():
    out = kelvin("memory", "remember", "Client hates blue rim lights", "--category", "preference")
    mid = out.stdout.split()[-1]
    mems = json.loads(kelvin("memory", "memories", "--json").stdout)
    assert [(m["id"], m["category"], m["text"]) for m in mems] == [(mid, "preference", "Client hates blue rim lights")]
    kelvin("memory", "forget", mid)
    assert json.loads(kelvin("memory", "memories", "--json").stdout) == []


@pytest.mark.parametrize("content, message", [
    (b'{"text": "ok"}\n{"text": ""}\n', "line 2: text is empty"),
    (b'{"text": "ok"}\n{"text": "fine"}\n{not json}\n', "line 3: not valid JSON"),
    (b'{"text": "ok"}\n["a list"]\n', "line 2: expected a JSON object"),
    (b'{"id": "x"}\n', "line 1: the required field 'text' is missing"),
    (b'{"text": "ok", "role": "wizard"}\n', "line 1: role must be one of"),
    (b'{"text": "ok", "timestamp": "last tuesday"}\n', "line 1: timestamp 'last tuesday' is not ISO 8601"),
    (b'{"text": "ok"}\n\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe', "not UTF-8 text"),
    (b'{"text": "nul \\u0000 inside"}\n', "line 1: text looks like binary data"),
    (b"\n\n", "holds no messages"),
])
def test_a_bad_import_says_where_and_imports_nothing(tmp_path, content, message):
    f = tmp_path / "bad.jsonl"
    f.write_bytes(content)
    proc = kelvin("memory", "import", str(f), check=False)
    assert proc.returncode == 1
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(kelvin("memory", "stats", "--json").stdout)["messages"] == 0


def test_expected_problems_are_plain_words_not_tracebacks(tmp_path):
    missing = kelvin("memory", "import", str(tmp_path / "nope.jsonl"), check=False)
    assert missing.returncode == 1 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    usage = kelvin("memory", "search", check=False)
    assert usage.returncode == 2 and "give a search query" in usage.stderr
    bad_time = kelvin("memory", "search", "x", "--since", "soon", check=False)
    assert bad_time.returncode == 1 and "ISO 8601" in bad_time.stderr
    bad_toml = tmp_path / "config"
    bad_toml.mkdir()
    (bad_toml / "kelvin.toml").write_text("embedder = [", encoding="utf-8")
    cfg = kelvin("memory", "list", check=False)
    assert cfg.returncode == 1 and "kelvin.toml is not valid TOML" in cfg.stderr


def test_an_unreachable_ollama_embedder_falls_back_to_full_text(tmp_path, monkeypatch):
    monkeypatch.setenv("KELVIN_EMBEDDER", "ollama:nomic-embed-text")  # KELVIN_OLLAMA_HOST points at a dead port
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    proc = kelvin("memory", "search", "GI clamp 10", "--json")
    assert json.loads(proc.stdout)[0]["id"] == "a1"
    assert "Ollama is not reachable" in proc.stderr and "full text" in proc.stderr
    assert proc.stderr.count("Ollama is not reachable") == 1


def test_odd_project_names_stay_inside_the_data_folder(tmp_path):
    data = tmp_path / "data"
    for name in ("../../escape", "..", "a/b\\c", "CON"):
        kelvin("--project", name, "memory", "remember", "kept safe")
    made = sorted(p.name for p in data.iterdir())
    assert all((data / n).resolve().parent == data.resolve() for n in made)
    assert not (tmp_path / "escape").exists() and not (ROOT.parent / "escape").exists()


def test_a_locked_project_is_reported(tmp_path):
    kelvin("memory", "remember", "first")
    folder = Path(json.loads(kelvin("memory", "stats", "--json").stdout)["folder"])
    holder = Journal(folder / "journal")
    holder.open_for_write()  # another Kelvin holds the project
    try:
        proc = kelvin("memory", "remember", "second", check=False)
        assert proc.returncode == 1 and "another Kelvin process" in proc.stderr
        # reading still works while it is held
        assert len(json.loads(kelvin("memory", "memories", "--json").stdout)) == 1
    finally:
        holder.close()


def test_a_damaged_index_is_explained_and_reindex_repairs_it(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    folder = Path(json.loads(kelvin("memory", "stats", "--json").stdout)["folder"])
    ruined = [f for f in (folder / "memory.lance").rglob("*") if f.is_file() and f.parent.name == "data"]
    assert ruined
    for f in ruined:
        f.write_bytes(b"\x00garbage" * 10)  # the data files are ruined
    broken = kelvin("memory", "search", "GI clamp", "--json", check=False)
    assert broken.returncode == 1 and "Traceback" not in broken.stderr
    assert "kelvin memory reindex" in broken.stderr
    kelvin("memory", "reindex")
    assert json.loads(kelvin("memory", "search", "GI clamp 10", "--json").stdout)[0]["id"] == "a1"


def test_kelvin_info_and_bare_kelvin_without_a_display_say_where_things_are(tmp_path):
    out = kelvin("info").stdout
    assert "Kelvin" in out and str(tmp_path / "data") in out
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    bare = subprocess.run([sys.executable, "-m", "app"], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env)
    assert bare.returncode == 0
    assert "no display to open the window on" in bare.stdout and str(tmp_path / "data") in bare.stdout


# ---- crash safety ---------------------------------------------------------------------------------
def _journaled_ids(folder: Path) -> list[str]:
    return [e.data["id"] for e in Journal(folder / "journal").read() if e.op == "message.add"]


def test_killing_a_large_import_loses_and_doubles_nothing(tmp_path):
    rows = [{"id": f"r{i:05d}", "text": f"render note {i}: Octane GI clamp {i % 40} on shot {i // 100}",
             "conversation_id": f"c{i // 100}", "timestamp": f"2026-11-{1 + i // 4000:02d}T10:00:00Z"}
            for i in range(24_000)]
    f = write_jsonl(tmp_path / "big.jsonl", rows)
    folder = tmp_path / "data" / "default"
    seen = []
    with subprocess.Popen([sys.executable, "-m", "app", "memory", "import", str(f)], cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ.copy()) as proc:
        for line in proc.stderr:  # "imported 2,000 / 24,000": the index and Markdown are part-way
            seen.append(line)
            if line.startswith("imported ") and not line.startswith("imported 24,000"):
                break
        proc.send_signal(signal.SIGKILL)
    assert seen and seen[-1].startswith("imported "), seen
    journaled = _journaled_ids(folder)
    assert len(journaled) == 24_000 == len(set(journaled))  # the journal took the import whole, in one append

    stats = json.loads(kelvin("memory", "stats", "--json").stdout)  # the next start finishes the projections
    listed = json.loads(kelvin("memory", "list", "--limit", "0", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(journaled)  # every message, exactly once
    assert stats["messages"] == 24_000 and stats["chunks"] == 24_000 and stats["projections_behind"] == 0
    md = "".join(p.read_text(encoding="utf-8") for p in folder.glob("*.md") if p.name != "settings.md")
    assert md.count("<!-- kelvin:begin ") == 24_000

    out = kelvin("memory", "import", str(f)).stdout  # importing again stores nothing twice
    assert "imported 0 messages (24,000 already stored)" in out
    assert len(_journaled_ids(folder)) == 24_000


COMMITTER = r"""
import sys
from app.settings import load
from app.services.memory import MemoryService
svc = MemoryService(load())
for i in range(100000):
    msg, fut = svc.commit(f"turn {i}: Redshift brute force rays {i % 64}")
    if i % 7 == 0:
        fut.result()
        print(msg.id, flush=True)  # acknowledged as committed
"""


def test_killing_during_commits_keeps_every_acknowledged_message(tmp_path):
    folder = tmp_path / "data" / "default"
    acked = []
    with subprocess.Popen([sys.executable, "-c", COMMITTER], cwd=ROOT, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True, env=os.environ.copy()) as proc:
        for line in proc.stdout:
            acked.append(line.strip())
            if len(acked) >= 60:
                break
        proc.send_signal(signal.SIGKILL)
    journaled = _journaled_ids(folder)
    assert set(acked) <= set(journaled) and len(set(journaled)) == len(journaled)
    listed = json.loads(kelvin("memory", "list", "--limit", "0", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(journaled)

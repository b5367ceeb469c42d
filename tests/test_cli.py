"""The command-line contract: in-process through ``app.cli.main`` (tests/support/cli.py); as a new process
where only a process shows it (a kill, a reader that leaves, the entry point without a display)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.memory.journal import Journal
from tests.support.cli import ROOT, kelvin, kelvin_process, write_jsonl

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
        kelvin("project", "create", name)
        kelvin("--project", name, "memory", "remember", "kept safe")
    made = sorted(p.name for p in data.iterdir())
    assert all((data / n).resolve().parent == data.resolve() for n in made)
    assert not (tmp_path / "escape").exists() and not (ROOT.parent / "escape").exists()


def test_a_locked_project_is_reported(tmp_path, monkeypatch):
    kelvin("memory", "remember", "first")
    folder = Path(json.loads(kelvin("memory", "stats", "--json").stdout)["folder"])
    holder = Journal(folder / "journal")
    holder.open_for_write()  # another Kelvin in the middle of a write that goes on and on
    monkeypatch.setenv("KELVIN_LOCK_WAIT_S", "1")
    try:
        proc = kelvin("memory", "remember", "second", check=False)
        assert proc.returncode == 1 and "another Kelvin process (pid " in proc.stderr
        assert "(waited 1 s); nothing was written" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
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
    bare = kelvin_process(env=env)  # the entry point itself, where there is no display
    assert bare.returncode == 0
    assert "no display to open the window on" in bare.stdout and str(tmp_path / "data") in bare.stdout


# ---- crash safety ---------------------------------------------------------------------------------
def _journaled_ids(folder: Path) -> list[str]:
    return [e.data["id"] for e in Journal(folder / "journal").read() if e.op == "message.add"]


@pytest.mark.slow(seconds=9)
def test_killing_a_large_import_loses_and_doubles_nothing(tmp_path):
    n = 3_000  # (the import reports every 2,000: killed after the first report, its projections are part-way)
    rows = [{"id": f"r{i:05d}", "text": f"render note {i}: Octane GI clamp {i % 40} on shot {i // 100}",
             "conversation_id": f"c{i // 100}", "timestamp": f"2026-11-{1 + i // 1000:02d}T10:00:00Z"}
            for i in range(n)]
    f = write_jsonl(tmp_path / "big.jsonl", rows)
    folder = tmp_path / "data" / "default"
    seen = []
    with subprocess.Popen([sys.executable, "-m", "app", "memory", "import", str(f)], cwd=ROOT,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=os.environ.copy()) as proc:
        for line in proc.stderr:  # "imported 2,000 / 3,000": the index and Markdown are part-way
            seen.append(line)
            if line.startswith("imported ") and not line.startswith(f"imported {n:,}"):
                break
        proc.send_signal(signal.SIGKILL)
    assert seen and seen[-1].startswith("imported "), seen
    journaled = _journaled_ids(folder)
    assert len(journaled) == n == len(set(journaled))  # the journal took the import whole, in one append

    stats = json.loads(kelvin("memory", "stats", "--json").stdout)  # the next start finishes the projections
    listed = json.loads(kelvin("memory", "list", "--limit", "0", "--json").stdout)
    assert sorted(m["id"] for m in listed) == sorted(journaled)  # every message, exactly once
    assert stats["messages"] == n and stats["chunks"] == n and stats["projections_behind"] == 0
    md = "".join(p.read_text(encoding="utf-8") for p in folder.glob("*.md") if p.name != "settings.md")
    assert md.count("<!-- kelvin:begin ") == n

    out = kelvin("memory", "import", str(f)).stdout  # importing again stores nothing twice
    assert f"imported 0 messages ({n:,} already stored)" in out
    assert len(_journaled_ids(folder)) == n


COMMITTER = r"""
import sys
from app.config import load
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


@pytest.mark.slow(seconds=8)
def test_a_reader_that_leaves_early_is_no_damaged_store(tmp_path):
    """`kelvin memory list | head -2`: the command ends quietly (the shell's 141 or 0), nothing on
    stderr, and the store is as it was."""
    rows = [{"id": f"m{i}", "text": f"GI clamp {i} in Octane for the kitchen shot, take {i} of the evening"}
            for i in range(3000)]
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", rows)))
    for args in (["memory", "list", "--limit", "0"], ["memory", "search", "kitchen", "--k", "3000"],
                 ["memory", "list", "--limit", "0", "--json"]):
        proc = subprocess.Popen([sys.executable, "-m", "app", *args], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=os.environ.copy())
        assert proc.stdout.readline()  # `head -1`: one line, then the reader leaves
        proc.stdout.close()
        err = proc.stderr.read().decode()
        proc.stderr.close()
        assert proc.wait(timeout=120) in (0, 141), (args, err)
        assert err == "", (args, err)
    assert json.loads(kelvin("memory", "stats", "--json").stdout)["messages"] == 3000


def test_filter_values_are_checked_and_case_blind(tmp_path):
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    by_engine = json.loads(kelvin("memory", "search", "GI clamp", "--engine", "Octane", "--json").stdout)
    assert [h["id"] for h in by_engine] == ["a1"]
    listed = json.loads(kelvin("memory", "list", "--domain", "Optimization", "--json").stdout)
    assert "a1" in [m["id"] for m in listed]
    for flag, typo, right in (("--domain", "lightning", "lighting"), ("--type", "settings", "setting"),
                              ("--engine", "houdini", "octane")):
        out = kelvin("memory", "search", "GI", flag, typo, check=False)
        assert out.returncode == 2 and out.stdout == ""
        assert f"{flag} '{typo}' is not one of:" in out.stderr and right in out.stderr
        assert "usage: kelvin memory search" in out.stderr  # the subcommand's usage, not the top level's
        assert "Traceback" not in out.stderr
    out = kelvin("memory", "list", "--domain", "lightning", check=False)
    assert out.returncode == 2 and "usage: kelvin memory list" in out.stderr


def test_an_invalid_setting_is_one_line_naming_it(monkeypatch):
    monkeypatch.setenv("KELVIN_EMBEDDER", "bogus")
    for args in (["doctor"], ["memory", "stats"], ["info"]):
        out = kelvin(*args, check=False)
        assert out.returncode == 1 and "Traceback" not in out.stderr, (args, out.stderr)
        assert out.stderr.startswith("kelvin: embedder (KELVIN_EMBEDDER or kelvin.toml) must be 'ollama:<model>'")
        assert len(out.stderr.strip().splitlines()) == 1


def test_a_note_is_kept_as_a_note_not_as_a_message_id():
    out = kelvin("settings", "set", "gi clamp", "7", "--engine", "octane", "--note", "client review: too noisy")
    assert "by hand: client review: too noisy" in out.stdout
    history = json.loads(kelvin("settings", "history", "gi clamp", "--engine", "octane", "--json").stdout)
    entry = history[0]["history"][-1]
    assert (entry["note"], entry["source_id"], entry["by"]) == ("client review: too noisy", "", "artist")
    assert "by hand: client review: too noisy" in kelvin("settings", "history", "gi clamp", "--engine", "octane").stdout
    below = kelvin("settings", "set", "gi clamp", "-5", "--engine", "octane", check=False)
    assert below.returncode == 1 and "GI clamp takes a number of at least 0 (got '-5')" in below.stderr


def test_a_note_written_before_notes_had_their_own_field_reads_as_a_note():
    from app.core.render_settings.ledger import Entry

    old = {"id": "3.0", "engine": "octane", "parameter": "gi_clamp", "value": 7, "unit": "", "status": "applied",
           "ts_ms": 1, "source_id": "client review", "by": "artist"}
    assert (Entry.from_json(old).note, Entry.from_json(old).source_id) == ("client review", "")
    said = dict(old, by="rules", source_id="m_1")
    assert (Entry.from_json(said).note, Entry.from_json(said).source_id) == ("", "m_1")


def test_a_misspelt_project_is_an_error_never_a_new_project(tmp_path):
    kelvin("project", "create", "Nike Spring")
    data = Path(os.environ["KELVIN_DATA_DIR"])
    before = sorted(p.name for p in data.iterdir())
    for args in (["brief"], ["memory", "search", "GI clamp"], ["memory", "list"], ["settings", "list"],
                 ["project", "new-conversation"], ["chat", "--once", "--mode", "recall", "what clamp?"]):
        out = kelvin("--project", "nike sprng", *args, check=False)
        assert out.returncode == 1 and "Traceback" not in out.stderr, (args, out.stderr)
        assert "there is no project 'nike sprng'; did you mean 'Nike Spring'?" in out.stderr, (args, out.stderr)
    with pytest.MonkeyPatch.context() as m:
        m.setenv("KELVIN_PROJECT", "nike sprng")  # the setting, not the flag: the same
        proc = kelvin("memory", "remember", "x", check=False)
    assert proc.returncode == 1 and "did you mean 'Nike Spring'?" in proc.stderr
    assert sorted(p.name for p in data.iterdir()) == before
    assert [p["name"] for p in json.loads(kelvin("project", "list", "--json").stdout)] == ["Nike Spring"]
    # the project's own name in any spelling that maps to it works; an import may bring a project
    assert kelvin("--project", "nike spring", "memory", "list").returncode == 0
    f = write_jsonl(tmp_path / "h.jsonl", [{"text": "GI clamp 10"}])
    assert kelvin("--project", "Brand New", "memory", "import", str(f)).returncode == 0
    assert "Brand New" in [p["name"] for p in json.loads(kelvin("project", "list", "--json").stdout)]


def test_forget_takes_words_as_the_chat_does_and_all_projects_hits_say_their_project(tmp_path):
    kelvin("memory", "remember", "The client wants warm tungsten light in every shot")
    kelvin("memory", "remember", "Deliver at 3840x2160")
    out = kelvin("memory", "forget", "warm tungsten")
    assert out.stdout.startswith("forgot: The client wants warm tungsten light")
    assert [m["text"] for m in json.loads(kelvin("memory", "memories", "--json").stdout)] == ["Deliver at 3840x2160"]
    none = kelvin("memory", "forget", "purple haze", check=False)
    assert none.returncode == 1 and "no kept memory is 'purple haze'" in none.stderr
    kelvin("memory", "import", str(write_jsonl(tmp_path / "h.jsonl", SESSION)))
    shown = kelvin("memory", "search", "rim light", "--all-projects").stdout
    assert "in Perfume" in shown.splitlines()[0]


def test_every_argument_has_help_and_says_its_default():
    import argparse

    from app.cli import _parser

    missing = []

    def walk(parser, path):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, path + [name])
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                if not action.help:
                    missing.append(" ".join(path + [action.dest]))

    walk(_parser(), ["kelvin"])
    assert missing == []
    assert "how many of the latest (0: all) (default: 20)" in " ".join(
        kelvin("memory", "list", "--help").stdout.split())


@pytest.mark.parametrize("value", ["bogus", "-1"])
def test_any_value_of_any_setting_is_taken_or_refused_in_one_line(value, monkeypatch):
    from tests.conftest import _ENV_VARS

    for var in _ENV_VARS:
        if var in ("KELVIN_DATA_DIR", "KELVIN_CONFIG_DIR"):
            continue
        with monkeypatch.context() as m:
            m.setenv(var, value)
            out = kelvin("memory", "stats", check=False)
        assert out.returncode in (0, 1) and "Traceback" not in out.stderr, (var, value, out.stderr)
        if out.returncode == 1:
            lines = [x for x in out.stderr.splitlines() if x.strip()]
            assert len(lines) == 1 and lines[0].startswith("kelvin: "), (var, value, out.stderr)

"""One identity per project (issue 31, finding 6).

A file whose lines carry no ids, imported with ``--project "Dup test"`` and then ``--project "dup
TEST"`` (one folder), stored every message twice, under both spellings, and brought back a misread
the artist had fixed; ``/project aurora watch`` in the chat made an empty project without a word;
an import whose line named a project too long exited 1 yet kept the other lines.
"""
from __future__ import annotations

import json

import pytest

from app.core.commands import parse
from app.core.records import RecordError, stable_id
from app.memory.journal import Journal
from tests.support.cli import kelvin, write_jsonl

LINES = [{"text": f"line {i}: Octane GI clamp {10 + i} on the glass", "conversation_id": "d1",
          "timestamp": f"2026-11-20T09:00:{i:02d}Z"} for i in range(18)]


def _events(tmp_path, folder: str) -> list:
    return [e for e in Journal(tmp_path / "data" / folder / "journal").read() if e.op == "message.add"]


def test_one_project_spelt_two_ways_stores_each_message_once_under_one_spelling(tmp_path):
    f = write_jsonl(tmp_path / "export.jsonl", LINES)
    assert kelvin("--project", "Dup test", "memory", "import", str(f)).stdout.strip() == "imported 18 messages"
    again = kelvin("--project", "dup TEST", "memory", "import", str(f))
    assert again.stdout.strip() == "imported 0 messages (18 already stored)"
    assert len(_events(tmp_path, "dup-test")) == 18
    listed = json.loads(kelvin("--project", "DUP-test", "memory", "list", "--limit", "0", "--json").stdout)
    assert len(listed) == 18 and {m["project"] for m in listed} == {"Dup test"}
    assert {e.data["project"] for e in _events(tmp_path, "dup-test")} == {"Dup test"}
    assert [p["name"] for p in json.loads(kelvin("project", "list", "--json").stdout)] == ["Dup test"]


def test_a_misread_fixed_by_hand_does_not_come_back_with_another_import(tmp_path):
    f = write_jsonl(tmp_path / "export.jsonl", LINES)
    kelvin("--project", "Dup test", "memory", "import", str(f))
    first = json.loads(kelvin("--project", "Dup test", "memory", "list", "--limit", "0", "--json").stdout)[0]
    kelvin("--project", "Dup test", "memory", "edit", first["id"], "--text", "line 0: Octane GI clamp 10, fixed")
    for spelling in ("Dup test", "dup TEST", "Dup-Test"):
        assert "imported 0 messages" in kelvin("--project", spelling, "memory", "import", str(f)).stdout
    assert json.loads(kelvin("--project", "Dup test", "memory", "show", first["id"], "--json").stdout)["text"] == \
        "line 0: Octane GI clamp 10, fixed"
    assert len(json.loads(kelvin("--project", "Dup test", "memory", "list", "--limit", "0", "--json").stdout)) == 18


def test_lines_imported_by_an_older_kelvin_under_their_spelling_are_not_imported_again(make_service, tmp_path):
    from app.services.importer import read_jsonl

    svc = make_service()
    items = read_jsonl(write_jsonl(tmp_path / "export.jsonl", LINES[:3]), "Dup test")
    for it in items:  # as an older Kelvin stored them: ids derived from the spelling
        old_id = stable_id("Dup test", "d1", "user", "", LINES[items.index(it)]["timestamp"], it.message.text, 1)
        assert it.aliases() == {old_id} and it.message.id != old_id
        svc.commit(it.message.text, project="Dup test", conversation_id="d1", message_id=old_id, ts_ms=it.message.ts_ms)
    svc.flush()
    report = svc.import_items(read_jsonl(tmp_path / "export.jsonl", "dup TEST"))
    assert (report.total, report.added) == (3, 0)


def test_a_line_whose_project_name_is_too_long_stops_the_import_before_anything_is_written(tmp_path):
    rows = [{"text": "first"}, {"text": "second", "project": "x" * 150}, {"text": "third"}]
    proc = kelvin("memory", "import", str(write_jsonl(tmp_path / "long.jsonl", rows)), check=False)
    assert proc.returncode == 1 and "line 2: project name is too long (150 characters; keep it to 128)" in proc.stderr
    assert not (tmp_path / "data").exists() or not any((tmp_path / "data").iterdir())


def test_slash_project_checks_like_the_flag_and_creates_only_when_asked(make_service):
    from app.services.conversation import Conversation

    svc = make_service()
    conv = Conversation(svc.settings, svc)
    try:
        conv.run_command(parse("/project new Aurora"))
        conv.run_command(parse("/project default"))
        with pytest.raises(RecordError, match=r"there is no project 'aurora watch'; did you mean 'Aurora'\? "
                                              r"\(/project new aurora watch makes it\)"):
            conv.run_command(parse("/project aurora watch"))
        assert conv.project == "default"
        assert sorted(p.name for p in conv.projects.list()) == ["Aurora", "default"]
        assert conv.run_command(parse("/project AURORA")).text == "Project: Aurora"  # any spelling, one project
        with pytest.raises(RecordError, match="already exists"):
            conv.run_command(parse("/project new aurora"))
        assert conv.run_command(parse("/project new aurora watch")).text == "Project: aurora watch (new)"
        assert "* aurora watch" in conv.run_command(parse("/projects")).text
    finally:
        conv.close()

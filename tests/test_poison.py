"""No value can poison a project (issue 31, finding 1).

A scene sent on stdin with ``max_samples`` 0 and then a 400-digit number used to exit 0 and leave
the project broken for good: ``settings list``, ``settings set``, ``brief`` and ``memory reindex``
failed with a traceback on every run, and ``chat --once`` failed with its question not journaled.
Values are now checked against their parameter before they are journaled; a value already in a
journal that a projection cannot take is set aside, reported, and the rest goes on.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.memory.journal import Journal
from tests.support.cli import kelvin

HUGE = int("9" * 400)


def _scene(value) -> str:
    return json.dumps({"format": "kelvin-scene", "version": 1, "app": "a DCC script", "engine": "cycles",
                       "settings": [{"engine": "cycles", "parameter": "max_samples", "value": value}]})


def _journal(tmp_path: Path) -> list:
    return list(Journal(tmp_path / "data" / "default" / "journal").read())


def test_values_are_checked_against_their_parameter_before_the_ledger_holds_them():
    from app.core.render_settings.parameters import ParamSpec, as_candidate, check_value, holdable, same_value

    spec = ParamSpec("cycles", "max_samples", "Max samples", "optimization", "int", min=1, max=1_000_000)
    assert check_value(spec, 1024) == (1024, "")
    for bad in (0, HUGE, 2.5, True, "many", [1, 2], float("inf")):
        with pytest.raises(ValueError):
            check_value(spec, bad)
    assert holdable(HUGE) and holdable(float("nan")) and holdable("\ud800") and holdable({"a": 1})
    assert not holdable(2**63 - 1) and not holdable((8, 16)) and not holdable("AgX")
    text, why = as_candidate(HUGE)
    assert text == "999999999999…99 (400 digits)" and "too large to compare" in why
    assert as_candidate(7.5) == (7.5, "")
    # a comparison never raises, whatever the numbers
    assert not same_value(HUGE, 0) and not same_value(HUGE, 1.0) and same_value(HUGE, HUGE)
    assert not same_value(float("inf"), 1.0) and same_value(1024, 1024.0)


def test_an_absurd_value_from_a_scene_cannot_poison_the_project(tmp_path):
    """The adversarial run's steps: two imports on stdin, then every command that used to fail."""
    for value in (0, HUGE):
        out = kelvin("scene", "import", "-", input=_scene(value))
        assert "kept 1 Kelvin has no name for" in out.stdout and "Traceback" not in out.stderr
    assert "(400 digits)" in out.stdout and len(out.stdout) < 1000  # the note quotes it short
    scene_events = [e.data for e in _journal(tmp_path) if e.op == "setting.scene"]
    assert [e["value"] for e in scene_events] == [0, "999999999999…99 (400 digits)"]  # never the number itself
    listed = json.loads(kelvin("settings", "list", "--candidates", "--json").stdout)
    # what a file holds is never the decision (issue 30): the value is the file's, beside no decided one
    assert [(c["value"], c["in_file"]["value"]) for c in listed] == [(None, "999999999999…99 (400 digits)")]
    kelvin("settings", "set", "max samples", "2048", "--engine", "cycles")
    assert "2048" in kelvin("settings", "list").stdout
    assert kelvin("memory", "reindex").returncode == 0
    state = json.loads((tmp_path / "data" / "default" / "journal" / "projections.json").read_text())
    assert state["rebuilding"] is False
    answer = kelvin("chat", "--once", "--mode", "recall", "what max samples are we using?")
    assert "Traceback" not in answer.stderr
    assert [e.data["text"] for e in _journal(tmp_path) if e.op == "message.add" and e.data["role"] == "user"] == \
        ["what max samples are we using?"]


def test_a_value_set_by_hand_is_checked_before_it_is_journaled(tmp_path):
    kelvin("project", "create", "default")
    bad = kelvin("settings", "set", "max samples", "9" * 400, "--engine", "cycles", check=False)
    assert bad.returncode == 1 and "Traceback" not in bad.stderr
    assert len(bad.stderr.strip().splitlines()) == 1 and "Max samples takes a whole number" in bad.stderr
    assert not [e for e in _journal(tmp_path) if e.op.startswith("setting.")]


def test_a_journal_already_poisoned_is_projected_around_the_bad_event_which_is_reported(tmp_path):
    """Events written by an older Kelvin (or by hand): a 400-digit value, and an event missing its
    parameter. The ledger keeps the first as text and sets the second aside; stats and doctor say so."""
    kelvin("memory", "remember", "the client wants warm key light")  # the project exists, the journal is open
    journal = Journal(tmp_path / "data" / "default" / "journal")
    journal.open_for_write()
    entries = journal.append([
        ("setting.scene", {"engine": "cycles", "parameter": "max_samples", "value": HUGE, "unit": "", "ts_ms": 1,
                           "name": "Max samples", "domain": "optimization", "note": "forest.blend"}),
        ("setting.set", {"engine": "cycles", "value": 7, "ts_ms": 2}),  # no parameter
        ("message.add", {"id": "m-good", "project": "default", "conversation_id": "c1", "turn_id": "", "role": "user",
                         "speaker": "", "text": "Octane GI clamp 10 for the glass", "ts_ms": 3}),
        ("message.add", {"id": "m-bad", "project": "default", "conversation_id": "c1", "role": "user",
                         "speaker": "", "text": "no time on this one", "ts_ms": "yesterday"}),
    ])
    journal.close()
    bad_set, bad_message = entries[1].seq, entries[3].seq
    listed = kelvin("settings", "list", "--candidates", "--json")
    assert "Traceback" not in listed.stderr
    held = {c["parameter"]: c["in_file"]["value"] for c in json.loads(listed.stdout) if c["in_file"]}
    assert held["max_samples_as_sent"] == "999999999999…99 (400 digits)"  # what the file held, as text
    assert "m-good" in kelvin("memory", "search", "GI clamp", "--json").stdout
    stats = json.loads(kelvin("memory", "stats", "--json").stdout)
    said = " / ".join(stats["set_aside"])
    assert f"event {bad_set} could not be applied (the settings ledger: KeyError" in said
    assert f"event {bad_message} could not be applied (the index and Markdown" in said
    assert (tmp_path / "data" / "default" / "journal" / f"unapplied-{bad_set}.json").is_file()
    assert kelvin("memory", "reindex").returncode == 0  # succeeds, and sets nothing aside twice
    assert len(json.loads(kelvin("memory", "stats", "--json").stdout)["set_aside"]) == 2
    doctor = kelvin("doctor", check=False).stdout
    assert f"event {bad_set} could not be applied" in doctor
    (tmp_path / "data" / "default" / "journal" / f"unapplied-{bad_set}.json").unlink()  # dealt with
    assert len(json.loads(kelvin("memory", "stats", "--json").stdout)["set_aside"]) == 1

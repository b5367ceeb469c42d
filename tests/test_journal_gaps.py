"""A journal whose numbers prove it whole, and projections checked against what they hold (issue 31,
findings 3 and 4).

A segment deleted from the middle of the journal used to go unnoticed ("every checksum good") and
``memory reindex`` dropped its messages from the index and the Markdown, though the index held them.
An index restored from an older copy hid what came after it, with "projections behind: 0". Now a
gap is found when the journal is opened, recorded, reported by ``stats`` and ``doctor`` until the
artist removes its record, and rescued from the index, the Markdown and the ledger.
"""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.memory import completeness, journal as journal_mod
from app.memory.journal import Journal
from app.services.settings_ledger import SettingsLedger


def _fill(svc, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        svc.commit(f"render note {i}: Redshift unified samples {i % 64} on shot {i // 50}", message_id=f"r{i:04d}",
                   conversation_id=f"c{i // 50}", ts_ms=1_700_000_000_000 + i * 1000)
        if i % 10 == 9:
            svc.flush()  # (the writer batches commits: a new segment begins at an append)
    svc.flush()


@pytest.fixture
def small_segments(monkeypatch):
    monkeypatch.setattr(journal_mod, "SEGMENT_BYTES", 20_000)  # a new segment every ~80 messages


def _md_ids(folder: Path) -> set[str]:
    import re

    text = "".join(p.read_text(encoding="utf-8") for p in folder.rglob("*.md") if p.name != "settings.md")
    return set(re.findall(r"<!-- kelvin:begin (\S+) -->", text))


def test_a_segment_deleted_from_the_middle_is_found_reported_and_rescued(make_service, small_segments):
    svc = make_service()
    _fill(svc, 300)
    folder = svc.store().folder
    svc.close()
    segs = Journal(folder / "journal").segments()
    assert len(segs) >= 3
    middle = segs[1]
    first, last = int(middle.stem), int(segs[2].stem) - 1
    middle.unlink()
    gap = completeness.unexplained(Journal(folder / "journal"))
    assert [(g.first, g.last, g.count) for g in gap] == [(first, last, last - first + 1)]

    svc = make_service()  # a reader: stats finds it, the writer records it and takes back what the index holds
    stats = svc.stats()
    assert stats["messages"] == 300
    said = " / ".join(stats["set_aside"])
    assert f"events {first:,}–{last:,} were missing from the journal" in said
    assert f"{last - first + 1:,} message(s) the index or the Markdown still held were journaled again" in said
    assert (folder / "journal" / f"missing-{first}-{last}.json").is_file()
    assert len(svc.store().journal_messages()) == 300  # the journal holds them again
    svc.reindex()
    assert len(svc.list(limit=0)) == 300 and len(_md_ids(folder)) == 300  # never dropped
    assert svc.stats()["set_aside"] == [s for s in stats["set_aside"]]  # reported until dealt with, once
    (folder / "journal" / f"missing-{first}-{last}.json").unlink()
    assert svc.stats()["set_aside"] == []


def test_doctor_says_a_gap_found_while_another_kelvin_holds_the_project(make_service, small_segments):
    from app.services import doctor

    svc = make_service()
    _fill(svc, 200)
    folder = svc.store().folder
    svc.close()
    Journal(folder / "journal").segments()[1].unlink()
    holder = Journal(folder / "journal")
    holder.open_for_write()  # another process's lock: this one can only read
    try:
        svc = make_service()
        check = doctor.journal("default", svc)
        assert check.status == "warn" and "are missing from the journal" in check.detail
        assert "taken back from the index or the Markdown when Kelvin next writes" in " ".join(svc.set_aside())
    finally:
        holder.close()


def test_lines_cut_out_of_a_segment_are_found_by_their_numbers(make_service):
    svc = make_service()
    _fill(svc, 40)
    folder = svc.store().folder
    svc.close()
    seg = Journal(folder / "journal").segments()[0]
    lines = seg.read_bytes().splitlines(keepends=True)
    seg.write_bytes(b"".join(lines[:10] + lines[15:]))  # five events gone, the journal's ends intact
    assert completeness.unexplained(Journal(folder / "journal"), thorough=False) == []  # not visible from the ends
    found = completeness.unexplained(Journal(folder / "journal"))
    assert [(g.first, g.last) for g in found] == [(11, 15)]
    svc = make_service()
    assert svc.stats()["messages"] == 40
    assert any("events 11–15 were missing from the journal" in s for s in svc.stats()["set_aside"])
    assert {m.id for m in svc.store().journal_messages()} == {f"r{i:04d}" for i in range(40)}


def test_what_only_the_markdown_and_the_ledger_still_hold_is_rescued(make_service, small_segments):
    svc = make_service()
    _fill(svc, 100)
    SettingsLedger(svc).set("max samples", "2048", "cycles", note="farm budget")
    _fill(svc, 100, start=100)
    folder = svc.store().folder
    svc.close()
    journal = Journal(folder / "journal")
    setting_seq = next(e.seq for e in journal.read() if e.op == "setting.set")
    seg = max(s for s in journal.segments() if int(s.stem) <= setting_seq)
    lost = {e.data["id"] for e in journal.read() if e.op == "message.add" and int(seg.stem) <= e.seq}
    nxt = [s for s in journal.segments() if int(s.stem) > setting_seq]
    lost = {e.data["id"] for e in journal.read() if e.op == "message.add"
            and int(seg.stem) <= e.seq < (int(nxt[0].stem) if nxt else 1 << 60)}
    seg.unlink()
    shutil.rmtree(folder / "memory.lance")  # the index is gone too: only the Markdown has the messages

    svc = make_service()
    assert svc.stats()["messages"] == 200
    back = svc.messages(sorted(lost))
    assert set(back) == lost and all(m.text.startswith("render note ") for m in back.values())
    current = SettingsLedger(svc).current_of(("cycles", "max_samples"))
    assert current is not None and current.entry.value == 2048 and current.entry.note == "farm budget"


def test_an_index_restored_from_an_older_copy_is_caught_up_not_trusted(make_service, tmp_path):
    svc = make_service()
    _fill(svc, 30)
    folder = svc.store().folder
    svc.close()
    shutil.copytree(folder / "memory.lance", tmp_path / "backup.lance")  # a backup, a sync tool
    svc = make_service()
    _fill(svc, 10, start=30)
    svc.edit("r0003", "render note 3: edited after the backup")
    svc.close()
    shutil.rmtree(folder / "memory.lance")
    shutil.copytree(tmp_path / "backup.lance", folder / "memory.lance")

    svc = make_service()
    assert len(svc.list(limit=0)) == 40
    assert svc.show("r0003").text == "render note 3: edited after the backup"
    stats = svc.stats()
    assert stats["messages"] == 40 and stats["projections_behind"] == 0 and stats["set_aside"] == []


def test_a_settings_ledger_restored_from_an_older_copy_is_read_again(make_service, tmp_path):
    svc = make_service()
    svc.commit("Octane GI clamp 10 for the glass", conversation_id="c1")
    svc.flush()
    folder = svc.store().folder
    svc.close()
    saved = (folder / "settings.jsonl").read_bytes()
    svc = make_service()
    SettingsLedger(svc).set("gi clamp", "25", "octane")
    svc.close()
    (folder / "settings.jsonl").write_bytes(saved)  # the entry set by hand is gone from the file
    svc = make_service()
    assert SettingsLedger(svc).current_of(("octane", "gi_clamp")).entry.value == 25


def test_the_numbers_a_lost_tail_leaves_out_are_recorded_once(make_service):
    svc = make_service()
    _fill(svc, 20)
    folder = svc.store().folder
    svc.close()
    seg = Journal(folder / "journal").segments()[-1]
    lines = seg.read_bytes().splitlines(keepends=True)
    seg.write_bytes(b"".join(lines[:15]))  # the journal lost its end; the index still has all 20
    svc = make_service()
    _fill(svc, 1, start=20)
    assert len(svc.list(limit=0)) == 21
    said = svc.stats()["set_aside"]
    assert len(said) == 1 and "events 16–20 were missing from the journal" in said[0]
    svc.close()
    svc = make_service()
    assert len(svc.stats()["set_aside"]) == 1 and svc.stats()["messages"] == 21


def test_a_fifo_named_like_a_segment_is_refused_in_one_sentence(make_service):
    import os

    from app.memory.journal import JournalError

    svc = make_service()
    _fill(svc, 3)
    folder = svc.store().folder
    svc.close()
    os.mkfifo(folder / "journal" / "000000000500.jsonl")
    svc = make_service()
    with pytest.raises(JournalError, match=r"000000000500.jsonl is a named pipe \(FIFO\), not a regular file"):
        svc.stats()

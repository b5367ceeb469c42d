"""The journal: durable appends, crash tails set aside, damage skipped and counted, one writer."""
from __future__ import annotations

import shutil

import pytest

from app.memory.journal import Journal, StoreLocked, decode, encode, Entry
from tests.support.journals import message_ops, written_journal


_ops = message_ops


def test_append_assigns_sequence_numbers_and_reads_back(tmp_path):
    j = Journal(tmp_path / "journal")
    j.open_for_write()
    first = j.append(_ops(3))
    second = j.append(_ops(2, 3))
    j.close()
    assert [e.seq for e in first + second] == [1, 2, 3, 4, 5]
    again = Journal(tmp_path / "journal")
    assert [e.data["id"] for e in again.read()] == ["m0", "m1", "m2", "m3", "m4"]
    assert [e.seq for e in again.read(after_seq=3)] == [4, 5]
    assert again.last_seq() == 5


def test_a_torn_last_line_is_set_aside_not_lost(tmp_path):
    j = written_journal(tmp_path / "journal", 2)
    seg = j.segments()[-1]
    whole = encode(Entry(3, "message.add", 0, {"id": "m2", "text": "t2"}))
    with open(seg, "ab") as fh:
        fh.write(whole[: len(whole) // 2])  # the process died mid-write
    j2 = Journal(tmp_path / "journal")
    assert [e.seq for e in j2.read()] == [1, 2]
    assert j2.last_seq() == 2
    assert j2.damaged_lines == 0
    j2.open_for_write()
    assert [e.seq for e in j2.append(_ops(1, 2))] == [4]  # 3 was the torn event's number: never reused
    j2.close()
    torn = list((tmp_path / "journal").glob("torn-*.bin"))
    assert len(torn) == 1 and torn[0].read_bytes() == whole[: len(whole) // 2]
    assert [e.data["id"] for e in Journal(tmp_path / "journal").read()] == ["m0", "m1", "m2"]


def _damage(seg, index, old, new):
    lines = seg.read_bytes().splitlines(keepends=True)
    assert old in lines[index]
    lines[index] = lines[index].replace(old, new)
    seg.write_bytes(b"".join(lines))


def test_a_flipped_byte_in_a_line_is_salvaged_set_aside_and_reported(tmp_path):
    j = written_journal(tmp_path / "journal", 3)
    seg = j.segments()[-1]
    _damage(seg, 1, b"t1", b"t\xb1")  # bit rot: the checksum no longer matches, the JSON still reads
    reader = Journal(tmp_path / "journal")
    got = list(reader.read())
    assert [(e.seq, e.data["id"], e.salvaged) for e in got] == [(1, "m0", False), (2, "m1", True), (3, "m2", False)]
    assert got[1].data["text"] == "t\ufffd"  # the byte that is no longer UTF-8 reads as U+FFFD
    assert reader.damaged_lines == 1
    assert reader.set_aside() == []  # a reader without the write lock moves nothing

    writer = Journal(tmp_path / "journal")
    writer.open_for_write()
    assert [e.data["id"] for e in writer.read()] == ["m0", "m1", "m2"]
    list(writer.read())  # read again: recorded once
    writer.close()
    [rec] = Journal(tmp_path / "journal").set_aside()
    assert (rec.kind, rec.segment, rec.line, rec.after_seq, rec.seq, rec.salvaged) == (
        "damaged", seg.name, 2, 1, 2, True)
    lines = seg.read_bytes().splitlines(keepends=True)
    assert (tmp_path / "journal" / rec.file).read_bytes() == lines[1]  # the bytes as they were found
    assert rec.offset == len(lines[0])
    assert "damaged line" in rec.describe() and "kept" in rec.describe()
    (tmp_path / "journal" / rec.file).unlink()  # the artist dealt with it
    assert Journal(tmp_path / "journal").set_aside() == []


def test_a_line_that_no_longer_reads_as_an_event_is_skipped_and_its_place_recorded(tmp_path):
    j = written_journal(tmp_path / "journal", 3)
    seg = j.segments()[-1]
    _damage(seg, 1, b'"seq":2', b'"seq"\x002')  # the JSON is broken
    j2 = Journal(tmp_path / "journal")
    j2.open_for_write()
    assert [e.data["id"] for e in j2.read()] == ["m0", "m2"]
    assert j2.damaged_lines == 1
    j2.close()
    [rec] = j2.set_aside()
    assert (rec.line, rec.after_seq, rec.salvaged, rec.seq) == (2, 1, False, None)


def test_a_salvaged_event_out_of_place_or_refused_is_not_handed_on(tmp_path):
    j = written_journal(tmp_path / "journal", 3)
    seg = j.segments()[-1]
    _damage(seg, 1, b'"seq":2', b'"seq":9')  # a flipped digit: it no longer fits between 1 and 3
    assert [e.seq for e in Journal(tmp_path / "journal").read()] == [1, 3]
    _damage(seg, 1, b'"seq":9,', b'"seq":2,')
    _damage(seg, 1, b'"t1"', b'"t\xb1"')  # in place, but the store finds its message broken
    assert [e.seq for e in Journal(tmp_path / "journal").read()] == [1, 2, 3]
    picky = Journal(tmp_path / "journal", accept=lambda e: e.data.get("text") == "t1")
    assert [e.seq for e in picky.read()] == [1, 3]


def test_sequence_numbers_never_repeat(tmp_path):
    j = written_journal(tmp_path / "journal", 3)
    seg = j.segments()[-1]
    whole = encode(Entry(4, "message.add", 0, {"id": "m3", "text": "t3"}))
    with open(seg, "ab") as fh:
        fh.write(whole[:-5])  # a torn event whose number was already handed out
    j2 = Journal(tmp_path / "journal")
    j2.open_for_write()
    assert j2.last_event_seq == 3
    assert [e.seq for e in j2.append(_ops(1, 9))] == [5]  # above the torn event's 4
    j2.close()
    j3 = Journal(tmp_path / "journal")
    j3.open_for_write(floor_seq=40)  # the projections have seen up to 40 (the journal lost its tail)
    assert [e.seq for e in j3.append(_ops(1, 10))] == [41]
    j3.close()
    assert [e.seq for e in Journal(tmp_path / "journal").read()] == [1, 2, 3, 5, 41]
    [torn] = Journal(tmp_path / "journal").set_aside()
    assert (torn.kind, torn.seq, torn.after_seq, torn.line) == ("torn", 4, 3, 4)


def test_a_last_line_missing_only_its_newline_is_finished_not_set_aside(tmp_path):
    j = written_journal(tmp_path / "journal", 2)
    seg = j.segments()[-1]
    seg.write_bytes(seg.read_bytes()[:-1])
    j2 = Journal(tmp_path / "journal")
    j2.open_for_write()
    assert [e.seq for e in j2.append(_ops(1, 2))] == [3]
    j2.close()
    assert [e.data["id"] for e in Journal(tmp_path / "journal").read()] == ["m0", "m1", "m2"]
    assert j2.set_aside() == []


def test_nothing_is_written_through_a_symbolic_link(tmp_path):
    from app.durable import UnsafePath

    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    folder = tmp_path / "journal"
    folder.mkdir()
    (folder / "LOCK").symlink_to(outside)
    with pytest.raises(UnsafePath, match="symbolic link"):
        Journal(folder).open_for_write()
    assert outside.read_text() == "keep me\n"
    (folder / "LOCK").unlink()
    (folder / "000000000001.jsonl").symlink_to(outside)
    with pytest.raises(UnsafePath):
        Journal(folder).open_for_write()
    assert outside.read_text() == "keep me\n"
    shutil.rmtree(folder)
    linked = tmp_path / "elsewhere"
    linked.mkdir()
    folder.symlink_to(linked, target_is_directory=True)
    with pytest.raises(UnsafePath):
        Journal(folder).open_for_write()
    assert list(linked.iterdir()) == []


def test_only_one_writer_at_a_time(tmp_path):
    a = Journal(tmp_path / "journal")
    a.open_for_write()
    b = Journal(tmp_path / "journal")
    with pytest.raises(StoreLocked, match="another Kelvin process"):
        b.open_for_write()
    a.close()
    b.open_for_write()  # the lock is free again
    b.close()


def test_segments_roll_over(tmp_path, monkeypatch):
    import app.memory.journal as journal

    monkeypatch.setattr(journal, "SEGMENT_BYTES", 300)
    j = Journal(tmp_path / "journal")
    j.open_for_write()
    for i in range(10):
        j.append(_ops(2, 2 * i))
    j.close()
    assert len(j.segments()) > 3
    assert [e.seq for e in Journal(tmp_path / "journal").read(after_seq=15)] == [16, 17, 18, 19, 20]


def test_decode_rejects_garbage():
    assert decode(b"not a journal line\n") is None
    assert decode(b"\x00\xff" * 20 + b"\n") is None
    good = encode(Entry(1, "op", 5, {"a": "é<script>"}))
    assert decode(good) == Entry(1, "op", 5, {"a": "é<script>"})
    assert decode(good[:-1]) is None  # no newline: torn


def test_last_seq_reads_past_long_lines_at_the_tail(tmp_path):
    j = Journal(tmp_path / "journal")
    assert j.last_seq() == 0
    j.open_for_write()
    j.append(_ops(3))
    j.append([("message.add", {"id": "big", "text": "x" * 3_000_000})])  # longer than the first read window
    j.close()
    assert Journal(tmp_path / "journal").last_seq() == 4

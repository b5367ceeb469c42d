"""The journal: durable appends, crash tails set aside, damage skipped and counted, one writer."""
from __future__ import annotations

import pytest

from app.memory.journal import Journal, StoreLocked, decode, encode, Entry


def _ops(n, start=0):
    return [("message.add", {"id": f"m{i}", "text": f"t{i}"}) for i in range(start, start + n)]


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
    j = Journal(tmp_path / "journal")
    j.open_for_write()
    j.append(_ops(2))
    j.close()
    seg = j.segments()[-1]
    whole = encode(Entry(3, "message.add", 0, {"id": "m2", "text": "t2"}))
    with open(seg, "ab") as fh:
        fh.write(whole[: len(whole) // 2])  # the process died mid-write
    j2 = Journal(tmp_path / "journal")
    assert [e.seq for e in j2.read()] == [1, 2]
    assert j2.last_seq() == 2
    assert j2.damaged_lines == 0
    j2.open_for_write()
    assert [e.seq for e in j2.append(_ops(1, 2))] == [3]
    j2.close()
    torn = list((tmp_path / "journal").glob("torn-*.bin"))
    assert len(torn) == 1 and torn[0].read_bytes() == whole[: len(whole) // 2]
    assert [e.data["id"] for e in Journal(tmp_path / "journal").read()] == ["m0", "m1", "m2"]


def test_a_damaged_line_in_the_middle_is_skipped_and_counted(tmp_path):
    j = Journal(tmp_path / "journal")
    j.open_for_write()
    j.append(_ops(3))
    j.close()
    seg = j.segments()[-1]
    lines = seg.read_bytes().splitlines(keepends=True)
    lines[1] = lines[1].replace(b"t1", b"XX")  # bit rot: the checksum no longer matches
    seg.write_bytes(b"".join(lines))
    j2 = Journal(tmp_path / "journal")
    assert [e.data["id"] for e in j2.read()] == ["m0", "m2"]
    assert j2.damaged_lines == 1


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

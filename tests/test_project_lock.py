"""Several Kelvin processes on one project (issue 32): the write lock is held for one write, a writer
catches up with the others inside it, sequence numbers never repeat whoever wrote, a waiting writer
waits a bounded time and then names the holder, a writer killed mid-write is mended by the next
one, and every write from several processes lands exactly once.

Two Journal or ProjectStore objects stand for two processes: the OS lock is per open file, so they
exclude each other exactly as two processes do; the last test runs real processes."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from app.durable import UnsafePath
from app.memory.journal import Journal, StoreLocked, encode, Entry
from app.memory.project_lock import set_holder
from tests.support.cli import ROOT


def _ops(*ids: str) -> list[tuple[str, dict]]:
    return [("message.add", {"id": i, "text": f"text of {i}"}) for i in ids]


def _write(j: Journal, *ids: str) -> list[int]:
    j.lock(5)
    try:
        j.open_tail()
        j.read_new()
        return [e.seq for e in j.append(_ops(*ids))]
    finally:
        j.unlock()


def test_two_writers_take_turns_and_each_reads_what_the_other_wrote(tmp_path):
    a, b = Journal(tmp_path / "journal"), Journal(tmp_path / "journal")
    assert _write(a, "a1", "a2") == [1, 2]
    b.lock()
    b.open_tail()
    assert [e.data["id"] for e in b.read_new()] == []  # its first look: everything before counts as read
    assert [e.seq for e in b.append(_ops("b1"))] == [3]  # after the other's events, never over them
    b.unlock()
    a.lock()
    a.open_tail()
    assert [(e.seq, e.data["id"]) for e in a.read_new()] == [(3, "b1")]  # only what the other wrote since
    assert [e.seq for e in a.append(_ops("a3"))] == [4]
    a.unlock()
    b.lock()
    b.open_tail()
    assert [(e.seq, e.data["id"]) for e in b.read_new()] == [(4, "a3")]  # not its own b1 again
    b.unlock()
    assert [e.seq for e in Journal(tmp_path / "journal").read()] == [1, 2, 3, 4]


def test_between_writes_nothing_is_held(tmp_path):
    a, b = Journal(tmp_path / "journal"), Journal(tmp_path / "journal")
    _write(a, "a1")
    assert not a.locked and not b.busy()  # the lock went with the write
    a.lock()
    assert b.busy() and not a.busy()
    a.unlock()


def test_a_waiting_writer_gets_its_turn_when_the_holder_is_done(tmp_path):
    holder, waiter = Journal(tmp_path / "journal"), Journal(tmp_path / "journal")
    holder.lock()
    got: dict = {}

    def wait_then_write() -> None:
        t = time.monotonic()
        waiter.lock(10)
        got["waited"] = time.monotonic() - t
        waiter.open_tail()
        got["seqs"] = [e.seq for e in waiter.append(_ops("w1"))]
        waiter.unlock()

    thread = threading.Thread(target=wait_then_write)
    thread.start()
    time.sleep(0.3)
    holder.open_tail()
    holder.append(_ops("h1"))
    holder.unlock()
    thread.join(15)
    assert got["seqs"] == [2] and got["waited"] >= 0.25


def test_a_writer_that_waited_too_long_says_who_holds_the_project(tmp_path):
    holder, other = Journal(tmp_path / "journal"), Journal(tmp_path / "journal")
    set_holder("kelvin memory import big.jsonl")
    try:
        holder.lock()
        with pytest.raises(StoreLocked) as caught:
            other.lock(0.2)
    finally:
        holder.unlock()
        set_holder("")
    said = str(caught.value)
    assert said == (f"this project is being written by another Kelvin process (pid {os.getpid()}, kelvin memory "
                    "import big.jsonl, for 0 s); nothing was written — try again when it has finished")


def test_a_writer_killed_mid_write_is_mended_by_the_next_and_its_number_never_comes_back(tmp_path):
    a, b = Journal(tmp_path / "journal"), Journal(tmp_path / "journal")
    _write(a, "a1", "a2")
    _write(b, "b0")
    seg = a.segments()[-1]
    torn = encode(Entry(4, "message.add", 0, {"id": "a3", "text": "half"}))
    with open(seg, "ab") as fh:  # the other process died in the middle of its append (its lock died with it)
        fh.write(torn[: len(torn) // 2])
    assert _write(b, "b1") == [5]  # 4 was handed out to the torn event
    [aside] = b.set_aside()
    assert aside.kind == "torn" and aside.seq == 4
    assert [e.data["id"] for e in a.read()] == ["a1", "a2", "b0", "b1"]
    a.lock()
    a.open_tail()
    assert [e.data["id"] for e in a.read_new()] == ["b0", "b1"]
    a.unlock()


def test_the_lock_files_are_never_written_through_a_link(tmp_path, make_service):
    svc = make_service()
    svc.commit("first")[1].result(timeout=30)
    folder = svc.store().journal.folder
    svc.close()
    outside = tmp_path / "precious.txt"
    outside.write_text("keep me\n")
    (folder / "IN-USE").unlink()
    (folder / "IN-USE").symlink_to(outside)
    again = make_service()
    with pytest.raises(UnsafePath):
        again.commit("second")[1].result(timeout=30)
    assert outside.read_text() == "keep me\n"


def test_two_stores_on_one_project_share_ids_settings_and_what_a_killed_writer_left(make_service):
    from app.memory.store import OP_MESSAGE_ADD
    from app.services.settings_ledger import SettingsLedger

    a, b = make_service(), make_service()  # two Kelvins on one data folder
    first, fut = a.commit("Octane GI clamp 10 for the forest", message_id="m-one")
    fut.result(timeout=30)
    b.commit("Octane GI clamp 10 for the forest", message_id="m-one")[1].result(timeout=30)  # the same message again
    assert [m.id for m in b.list(limit=0)] == ["m-one"]  # known across processes: stored once
    assert SettingsLedger(b).current_of(("octane", "gi_clamp")).entry.value == 10
    # a writer journals and is killed before it projects: the next write, in the other process, projects it
    store = a.store()
    with store.writing():
        store.journal.append([(OP_MESSAGE_ADD, {"id": "m-two", "conversation_id": "default", "role": "user",
                                                "speaker": "", "text": "Octane max samples 4000", "ts_ms": 1_760_000_000_000})])
    b.commit("and the fog card at 0.02", message_id="m-three")[1].result(timeout=30)
    assert {m.id for m in a.list(limit=0)} == {"m-one", "m-two", "m-three"}
    assert SettingsLedger(a).current_of(("octane", "max_samples")).entry.value == 4000
    assert a.stats()["projections_behind"] == 0


WRITER = """
import sys
from app.config import load
from app.services.memory import MemoryService
svc = MemoryService(load({"data_dir": sys.argv[1]}))
for i in range(int(sys.argv[3])):
    svc.commit(f"writer {sys.argv[2]} note {i}", message_id=f"{sys.argv[2]}-{i:03d}")[1].result()
svc.close()
"""


@pytest.mark.slow(seconds=6)
def test_writers_in_several_processes_each_land_exactly_once(tmp_path):
    data = tmp_path / "data"
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(data), f"w{n}", "15"], cwd=ROOT, env=os.environ.copy(),
                              stderr=subprocess.PIPE, text=True) for n in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-2000:]
    events = list(Journal(data / "default" / "journal").read())
    ids = [e.data["id"] for e in events if e.op == "message.add"]
    assert sorted(ids) == sorted(f"w{n}-{i:03d}" for n in range(3) for i in range(15))
    seqs = [e.seq for e in events]
    assert seqs == sorted(set(seqs))
    from tests.support.cli import kelvin
    import json

    stats = json.loads(kelvin("--data-dir", str(data), "memory", "stats", "--json").stdout)
    assert stats["messages"] == 45 and stats["projections_behind"] == 0
    assert Path(stats["folder"]) == data / "default"

"""The journal: an append-only, fsync'd log of every event in a project. The source of truth.

Each line is ``<crc32 hex> <json>`` where the JSON holds ``seq``, ``op``, ``at`` (ms) and ``data``,
and ``id``: the event's global identity, a UUID made by the Kelvin that journaled it (events from
before ids get a deterministic one when read: :meth:`Journal.identity`). In a project shared with a
team (app.memory.team_file) an event also says who made it (``by``, the artist; ``kv``, their
Kelvin), what its author had seen of the shared log then (``seen``), and, once it came from the
studio's server, its place in the shared order (``ss``).
Lines are grouped in segment files named after their first sequence number. Everything else in
Kelvin's memory — the LanceDB index, the Markdown files, the settings ledger — is a projection
that can be rebuilt from here.

The journal heals rather than forgets:

* A crash can leave a torn last line. Opening the journal for writing moves those bytes aside
  (``torn-<segment>-<ms>.bin``) and continues after the last whole event.
* A line damaged later (a flipped bit) fails its checksum. Readers skip it, but the first reader
  that holds the write lock copies its bytes aside (``damaged-<segment>-<offset>.bin``) and, where
  its JSON still reads as a well-formed event in its place, hands that event on (*salvaged*) so a
  rebuild does not drop the message it holds.
* Everything set aside is listed in ``set-aside.jsonl`` with its segment, line, offset and the
  sequence numbers around it, for ``kelvin memory stats`` and ``kelvin doctor`` to report until
  the artist removes the file.
* Sequence numbers never repeat: a new event's number is above every number the journal, what
  was set aside, or the projections (``floor_seq``) ever saw, so a projection never mistakes a new
  event for one it has already applied.
"""
from __future__ import annotations

import json
import logging
import os
import re
import uuid
import zlib
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

from app.core.records import now_ms
from app.durable import (NotRegularFile, TooLarge, UnsafePath, check_regular, create_new, fsync_dir, open_append,
                          open_regular, read_regular, refuse_links, write_all, write_atomically)
from app.memory.project_lock import LockBusy, WriteLock

log = logging.getLogger("kelvin.journal")

SEGMENT_BYTES = 64 * 1024 * 1024
SET_ASIDE = "set-aside.jsonl"
MAX_MANIFEST_BYTES = 64 * 1024 * 1024  # what was set aside, one line each: far less than this
BLOCK = 1 << 20
_SEQ_HINT = re.compile(rb'"seq":(\d{1,18})')


class JournalError(RuntimeError):
    """The journal cannot be used; the message says why in plain words."""


class StoreLocked(JournalError):
    """Another Kelvin process is writing this project, and went on longer than this one waits."""


@dataclass(frozen=True)
class Entry:
    seq: int
    op: str
    at: int
    data: dict
    salvaged: bool = field(default=False, compare=False)  # read back from a line whose checksum failed
    uid: str = ""  # the event's global id ("" in lines from before ids: see Journal.identity)
    by: str = ""  # the artist who made it (shared projects)
    kv: str = ""  # the Kelvin that made it (shared projects)
    seen: int = 0  # the shared log as its author had it (the server's sequence pulled so far)
    ss: int = 0  # its place in the shared log, for an event that came from the server (0: made here)
    crc: int = field(default=0, compare=False)  # the line's checksum (an old line's id is made from it)


_META = ("id", "by", "kv", "seen", "ss")


def encode(entry: Entry) -> bytes:
    obj = {"seq": entry.seq, "op": entry.op, "at": entry.at, "data": entry.data}
    for key, value in zip(_META, (entry.uid, entry.by, entry.kv, entry.seen, entry.ss)):
        if value:
            obj[key] = value
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return b"%08x " % zlib.crc32(raw) + raw + b"\n"


def _entry(obj: dict, crc: int, salvaged: bool = False) -> Entry:
    return Entry(int(obj["seq"]), str(obj["op"]), int(obj["at"]), dict(obj["data"]), salvaged,
                 str(obj.get("id") or ""), str(obj.get("by") or ""), str(obj.get("kv") or ""),
                 int(obj.get("seen") or 0), int(obj.get("ss") or 0), crc)


def decode(line: bytes) -> Entry | None:
    """One line → Entry, or None if the line is torn or damaged."""
    if len(line) < 10 or line[8:9] != b" " or not line.endswith(b"\n"):
        return None
    raw = line[9:-1]
    try:
        crc = int(line[:8], 16)
        if crc != zlib.crc32(raw):
            return None
        return _entry(json.loads(raw), crc)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


def salvage(line: bytes) -> Entry | None:
    """What a damaged line still says: its JSON read despite the checksum (bytes that are no longer
    UTF-8 become U+FFFD), or None when it no longer reads as an event."""
    raw = line[9:] if len(line) > 9 and line[8:9] == b" " else line
    try:
        obj = json.loads(raw.rstrip(b"\r\n").decode("utf-8", "replace"))
        if not isinstance(obj, dict) or not isinstance(obj.get("data"), dict) or not isinstance(obj.get("op"), str):
            return None
        return _entry(obj, zlib.crc32(raw), salvaged=True)
    except (ValueError, KeyError, TypeError, RecursionError):
        return None


@dataclass(frozen=True)
class SetAside:
    """Bytes of the journal that could not be read as an event, moved aside and recorded."""

    kind: str  # "torn": a crash's unfinished last write; "damaged": a line whose checksum fails
    segment: str
    line: int  # 1-based, in the segment
    offset: int  # bytes into the segment where it began
    size: int
    file: str  # the copy, in the journal folder
    after_seq: int  # the whole event before it (0: none)
    seq: int | None = None  # the event it held, if that much could be read
    salvaged: bool = False  # its event was read back and kept
    at: int = 0
    why: str = ""  # "unapplied": what the projection said; "missing": what is known of the cause
    rescued: int = 0  # "missing": messages taken back from the index or the Markdown

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, d: dict) -> "SetAside":
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})

    def describe(self) -> str:
        if self.kind == "missing":
            span = f"event {self.seq:,}" if self.size == 1 else f"events {self.seq:,}–{(self.seq or 0) + self.size - 1:,}"
            back = (f"; {self.rescued:,} message(s) the index or the Markdown still held were journaled again"
                    if self.rescued else "; nothing of them was left in the index or the Markdown")
            return f"{span} were missing from the journal ({self.why}){back}; what is known is in journal/{self.file}"
        if self.kind == "unapplied":
            return (f"event {self.seq} could not be applied ({self.why}); the rest of the journal was, and the event "
                    f"is kept in journal/{self.file}")
        where = f"{self.segment} line {self.line}"
        if self.kind == "torn":
            return f"an unfinished write at the end of {where} (a crash), {self.size} bytes, in journal/{self.file}"
        what = "its event was read back and kept" if self.salvaged else "its event could not be read back"
        return f"a damaged line, {where} ({self.size} bytes, in journal/{self.file}): {what}"


class Journal:
    def __init__(self, folder: Path, accept: Callable[[Entry], bool] = lambda e: True):
        """``accept``: whether an event salvaged from a damaged line is whole enough to hand on
        (the store checks a message's fields)."""
        self.folder = folder
        self.accept = accept
        self._lock = WriteLock(folder / "LOCK")
        self._fh = None
        # where this process has read up to (segment, byte offset after a whole line, that line's seq):
        # the next catch-up reads on from here instead of the whole segment (see read_new)
        self._cursor: tuple[str, int, int] | None = None
        self._segment_bytes = 0
        self._segment = ""  # the segment open for appending
        self._next_seq = 1
        self.last_event_seq = 0  # the newest whole event (kept while open for writing)
        self.damaged_lines = 0
        self._recorded: set[tuple[str, int]] | None = None  # (segment, offset) already in set-aside.jsonl
        self._warned: set[tuple[str, int]] = set()
        # what the ids of events from before ids are made from (a shared project keeps the one it
        # was shared with in its team file, so a rename does not change them)
        self.namespace = uuid.uuid5(uuid.NAMESPACE_URL, f"kelvin-journal:{folder.parent.name}")

    def identity(self, entry: Entry) -> Entry:
        """The entry with its global id: its own, or for a line written before events had ids one
        made from the project's namespace, its number and its checksum — the same every time it is
        read, and never written back (old lines are never rewritten)."""
        if entry.uid:
            return entry
        return replace(entry, uid=str(uuid.uuid5(self.namespace, f"{entry.seq}:{entry.crc:08x}")))

    # ---- reading ---------------------------------------------------------------------------------
    def segments(self) -> list[Path]:
        """The segment files, oldest first. A segment that is not a regular file (a FIFO named like one
        would make every reader wait for ever) is refused in one sentence (:class:`NotRegularFile`)."""
        if not self.folder.is_dir():
            return []
        segs = sorted(p for p in self.folder.glob("*.jsonl") if p.stem.isdigit())
        for seg in segs:
            if seg.is_symlink():
                raise UnsafePath(seg)
            try:
                check_regular(seg)
            except NotRegularFile as exc:
                raise JournalError(str(exc)) from None
        return segs

    def read(self, after_seq: int = 0) -> Iterator[Entry]:
        """Every event with ``seq > after_seq``, in order. A damaged line is skipped, or handed on
        as its salvaged event (``salvaged=True``) when its JSON still reads as a well-formed event
        that fits between its neighbours; either way it is reported once and, by a process holding
        the write lock, set aside. A torn last line (a crash mid-write) is left to
        ``open_for_write``."""
        segs = self.segments()
        prev = 0
        for i, seg in enumerate(segs):
            nxt_first = int(segs[i + 1].stem) if i + 1 < len(segs) else None
            if nxt_first is not None and nxt_first <= after_seq + 1:
                continue  # every event in this segment is older than wanted
            pending: list[tuple[int, int, bytes]] = []  # damaged lines waiting for the next whole one
            with open_regular(seg) as fh:
                offset = 0
                for lineno, line in enumerate(fh, 1):
                    entry = decode(line)
                    if entry is None:
                        pending.append((lineno, offset, line))
                    else:
                        if pending:
                            yield from self._damaged(seg, pending, prev, entry.seq, after_seq)
                            pending = []
                        prev = entry.seq
                        if entry.seq > after_seq:
                            yield entry if entry.uid else self.identity(entry)
                    offset += len(line)
            if pending and nxt_first is not None:
                yield from self._damaged(seg, pending, prev, nxt_first, after_seq)
            # damaged lines at the very end of the last segment are a torn write: set aside by
            # open_for_write()

    def _damaged(self, seg: Path, lines: list[tuple[int, int, bytes]], prev: int, nxt: int,
                 after_seq: int) -> Iterator[Entry]:
        for lineno, offset, raw in lines:
            entry = salvage(raw)
            ok = entry is not None and prev < entry.seq < nxt and self.accept(entry)
            self.damaged_lines += 1
            key = (seg.name, offset)
            if key not in self._warned:
                self._warned.add(key)
                log.warning("journal %s line %d is damaged (its checksum fails); %s", seg.name, lineno,
                            "its event was read back and kept" if ok else "it was skipped")
            if self._fh is not None:
                self._record_damage(seg, lineno, offset, raw, prev, entry.seq if ok else None, ok)
            if ok:
                prev = entry.seq
                if entry.seq > after_seq:
                    yield self.identity(entry)

    def read_from(self, segment: str = "", offset: int = 0) -> Iterator[tuple[Entry, str, int]]:
        """Every whole event from a byte position on (a segment's name and an offset in it; "" and
        0: the start), each with the position after it, so that a reader that keeps the position
        reads only what is new (the team sync's outbox). Damaged lines are left to :meth:`read`."""
        for seg in self.segments():
            if segment and seg.name < segment:
                continue
            start = offset if seg.name == segment else 0
            with open(seg, "rb") as fh:
                fh.seek(start)
                pos = start
                for line in fh:
                    pos += len(line)
                    entry = decode(line)
                    if entry is not None:
                        yield (entry if entry.uid else self.identity(entry)), seg.name, pos

    @property
    def next_seq(self) -> int:
        """The number the next event will take (while open for writing)."""
        return self._next_seq

    def last_seq(self) -> int:
        """The newest event's seq (0 if none). Reads only the tail of the last segment."""
        if self._fh is not None:
            return self.last_event_seq
        segs = self.segments()
        return self._tail(segs[-1])[1] if segs else 0

    def _tail(self, seg: Path) -> tuple[int, int]:
        """Byte offset after the last whole line of a segment, and that line's seq (the segment's
        first seq - 1 if none). Reads backwards from the end, a growing window at a time."""
        window = 1 << 20
        with open_regular(seg) as fh:
            size = os.fstat(fh.fileno()).st_size
            while True:
                start = max(0, size - window)
                fh.seek(start)
                blob = fh.read(size - start)
                lines = blob.split(b"\n")
                ends = []  # each piece's end offset (after its newline)
                pos = start
                for piece in lines[:-1]:
                    pos += len(piece) + 1
                    ends.append(pos)
                pieces = list(zip(lines[:-1], ends))
                if start > 0:
                    pieces = pieces[1:]  # the first piece may be the end of a longer line
                for raw, end in reversed(pieces):
                    entry = decode(raw + b"\n")
                    if entry is not None:
                        return end, entry.seq
                if start == 0:
                    return 0, int(seg.stem) - 1
                window *= 8

    def mark(self) -> tuple[str, int]:
        """The journal's end as it is now (its last segment and that segment's size): a cheap way for
        a reader in another process to notice that someone wrote."""
        segs = self.segments()
        try:
            return (segs[-1].name, segs[-1].stat().st_size) if segs else ("", 0)
        except OSError:
            return ("", 0)

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.segments())

    # ---- what was set aside --------------------------------------------------------------------------
    def set_aside(self) -> list[SetAside]:
        """What was moved aside and is still there (the artist removes a copy once dealt with); a record
        written again (a gap, once rescued) stands for the one before."""
        out: dict[str, SetAside] = {}
        for rec in self._manifest():
            if (self.folder / rec.file).exists():
                out[rec.file] = rec
        return list(out.values())

    def _manifest(self) -> list[SetAside]:
        try:
            text = read_regular(self.folder / SET_ASIDE, MAX_MANIFEST_BYTES).decode("utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError):
            return []
        except (NotRegularFile, TooLarge) as exc:
            raise JournalError(str(exc)) from None
        out = []
        for line in text.splitlines():
            try:
                out.append(SetAside.from_json(json.loads(line)))
            except (ValueError, TypeError, KeyError):
                continue
        return out

    def _record(self, rec: SetAside, data: bytes) -> bool:
        if self._recorded is None:
            self._recorded = {(r.segment, r.offset) for r in self._manifest() if r.kind == "damaged"}
        try:
            copy = self.folder / rec.file
            if not copy.exists():
                create_new(copy, data)
            with open_append(self.folder / SET_ASIDE) as fh:
                write_all(fh, (json.dumps(rec.to_json()) + "\n").encode("utf-8"))
        except OSError as exc:  # a full disk: told again the next time it is read
            log.warning("could not set aside %s: %s", rec.describe(), exc)
            return False
        if rec.kind == "damaged":
            self._recorded.add((rec.segment, rec.offset))
        return True

    def _record_damage(self, seg: Path, lineno: int, offset: int, raw: bytes, prev: int, seq: int | None,
                       salvaged: bool) -> None:
        if self._recorded is None:
            self._recorded = {(r.segment, r.offset) for r in self._manifest() if r.kind == "damaged"}
        if (seg.name, offset) in self._recorded:
            return
        if seq is None and (m := _SEQ_HINT.search(raw)):
            seq = int(m.group(1))
        self._record(SetAside("damaged", seg.name, lineno, offset, len(raw), f"damaged-{seg.stem}-{offset}.bin",
                              prev, seq, salvaged, now_ms()), raw)

    def note_missing(self, first: int, last: int, count: int, why: str, rescued: int = 0) -> None:
        """Record events ``first``..``last`` as missing from the journal (``count`` of them), with what is
        known (``missing-<first>-<last>.json``), so they are reported until the artist removes that file and
        never taken for news again. Written again with ``rescued`` once the rebuild took back what it could."""
        if self._fh is None:
            return
        name = f"missing-{first}-{last}.json"
        body = json.dumps({"first": first, "last": last, "missing": count, "why": why, "rescued": rescued,
                           "found_at": now_ms()}, indent=1).encode("utf-8")
        try:
            if (self.folder / name).exists():  # rescued since: say so in the file too
                write_atomically(self.folder / name, body.decode("utf-8"))
        except OSError as exc:
            log.warning("could not update %s: %s", name, exc)
        self._record(SetAside("missing", "", 0, 0, count, name, first - 1, first, False, now_ms(), why, rescued), body)

    def note_unapplied(self, entry: Entry, where: str, exc: BaseException) -> None:
        """An event a projection could not apply (a value no check of its day refused, a hand-edited
        line): copied beside the journal as ``unapplied-<seq>.json`` and listed in set-aside.jsonl,
        once, so ``stats`` and ``doctor`` say it until the copy is removed. Only by the writer."""
        why = f"{where}: {type(exc).__name__}: {str(exc)[:200]}"
        log.warning("journal event %d (%s) could not be applied to %s; set aside", entry.seq, entry.op, why)
        if self._fh is None or any(r.kind == "unapplied" and r.seq == entry.seq for r in self._manifest()):
            return
        body = json.dumps({"seq": entry.seq, "op": entry.op, "at": entry.at, "data": entry.data}, ensure_ascii=False,
                          default=str).encode("utf-8", "replace")
        self._record(SetAside("unapplied", "", 0, 0, len(body), f"unapplied-{entry.seq}.json", entry.seq - 1,
                              entry.seq, False, now_ms(), why), body)

    # ---- writing ---------------------------------------------------------------------------------
    def open_for_write(self, floor_seq: int = 0, wait_s: float = 0.0) -> None:
        """Take the project's write lock, mend a torn tail, and get ready to append after the newest
        event, or after ``floor_seq`` (the furthest any projection has seen) if that is higher. The
        lock is held until :meth:`close` — Kelvin's own writes hold it for one write each
        (:meth:`lock`, :meth:`open_tail`, :meth:`unlock`; app.memory.store)."""
        if self._fh is not None:
            return
        self.lock(wait_s)
        try:
            self.open_tail(floor_seq)
        except BaseException:
            self.unlock()
            raise

    # One write, as several Kelvin processes share a project: lock(), then whatever the caller must
    # catch up on (app.memory.store reads projections.json again, under the lock), open_tail(), the
    # appends, unlock(). Between two writes this process holds nothing and keeps no file open for
    # writing, so every other Kelvin may write in between; open_tail() then starts from the journal
    # as it is on disk, so sequence numbers never repeat whoever wrote last.
    def lock(self, wait_s: float = 0.0) -> float:
        """Take the project's write lock, waiting up to ``wait_s`` s for the process that holds it
        (raises :class:`StoreLocked` naming it). Returns the seconds waited."""
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            from app.problems import explain

            raise JournalError(explain(exc, self.folder.parent.parent) or
                               f"cannot create the journal folder {self.folder}: {exc.strerror}") from None
        refuse_links(self.folder)
        try:
            return self._lock.acquire(wait_s)
        except LockBusy as exc:
            waited = f" (waited {wait_s:.0f} s)" if wait_s >= 1 else ""
            raise StoreLocked(f"this project is being written by another Kelvin process ({exc}){waited}; nothing "
                              "was written — try again when it has finished") from None

    def busy(self) -> bool:
        """Whether another process (or another writer in this one) is writing the project right now."""
        return self._lock.busy()

    @property
    def locked(self) -> bool:
        return self._lock.held

    def open_tail(self, floor_seq: int = 0) -> None:
        """Under the lock: mend a torn tail and get ready to append after the newest event on disk
        (or ``floor_seq``, if higher)."""
        if not self._lock.held:
            raise JournalError("the journal is written only under the project's write lock")
        self._open_tail(floor_seq)

    def unlock(self) -> None:
        """End of one write: close the segment and let the next writer in."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._lock.release()

    def _open_tail(self, floor_seq: int) -> None:
        segs = self.segments()
        if not segs:
            self.last_event_seq = 0
            self._next_seq = max(floor_seq, self._seen_aside()) + 1
            self._open_segment(self.folder / f"{self._next_seq:012d}.jsonl")
            return
        seg = segs[-1]
        refuse_links(seg)
        good_end, last = self._tail(seg)
        size = seg.stat().st_size
        if good_end < size:
            hint = self._mend(seg, good_end, size, last)
            if hint is not None:
                good_end, last = hint
        self.last_event_seq = last
        self._next_seq = max(last, floor_seq, self._seen_aside()) + 1
        self._open_segment(seg)

    def _seen_aside(self) -> int:
        """The highest event number seen in anything set aside (a torn event may have been numbered)."""
        return max((r.seq or 0 for r in self._manifest()), default=0)

    def _mend(self, seg: Path, good_end: int, size: int, last: int) -> tuple[int, int] | None:
        """The bytes after the last whole line: a line written whole but for its newline is
        finished; anything else is moved aside. Returns the new (end, last seq) if finished."""
        with open_regular(seg) as fh:
            fh.seek(good_end)
            tail = fh.read(size - good_end)
        whole = decode(tail + b"\n") if b"\n" not in tail else None
        with open_append(seg) as out:
            if whole is not None:
                write_all(out, b"\n")
                log.warning("journal %s ended without its last newline; the event was whole and is kept", seg.name)
                return size + 1, whole.seq
            keep = f"torn-{seg.stem}-{now_ms()}.bin"
            hint = _SEQ_HINT.search(tail)
            # the copy and its record first: a crash in between leaves the tail twice, never nowhere
            if not self._record(SetAside("torn", seg.name, _line_of(seg, good_end), good_end, len(tail), keep, last,
                                         int(hint.group(1)) if hint else None, False, now_ms()), tail):
                raise JournalError(f"the journal ends in an unfinished write that cannot be moved aside (is the disk "
                                   f"full?); nothing was changed: {seg}")
            os.ftruncate(out.fileno(), good_end)
            os.fsync(out.fileno())
        log.warning("journal %s ended with %d bytes of an unfinished write (a crash); they were moved to %s",
                    seg.name, len(tail), keep)
        return None

    def _open_segment(self, path: Path) -> None:
        if self._fh is not None:
            self._fh.close()
        new = not path.exists()
        self._fh = open_append(path)
        self._segment = path.name
        self._segment_bytes = os.lseek(self._fh.fileno(), 0, os.SEEK_END)
        if new:
            fsync_dir(self.folder)

    def append(self, items: list[tuple[str, dict]], stamp: dict | None = None) -> list[Entry]:
        """Write events durably (one fsync for the batch) and return them with their seq. All or
        nothing: a write that fails half-way (a full disk) is cut back and nothing is numbered.
        Each event gets a new global id; ``stamp`` (``by``, ``kv``, ``seen``) says who made it in a
        shared project."""
        at = now_ms()
        meta = stamp or {}
        return self._write([Entry(0, op, at, data, uid=str(uuid.uuid4()), by=meta.get("by", ""),
                                  kv=meta.get("kv", ""), seen=int(meta.get("seen", 0))) for op, data in items])

    def append_remote(self, events: list[Entry]) -> list[Entry]:
        """Write events that came from the studio's server (their id, author, time and place in the
        shared order kept), numbered after this journal's newest."""
        return self._write(events)

    def _write(self, events: list[Entry]) -> list[Entry]:
        if self._fh is None:
            raise JournalError("journal is not open for writing")
        # this process has seen everything before (its cursor is at the end): its own events too
        at_end = self._cursor is not None and self._cursor[:2] == (self._segment, self._segment_bytes)
        if self._segment_bytes >= SEGMENT_BYTES:
            self._open_segment(self.folder / f"{self._next_seq:012d}.jsonl")
        entries = [replace(e, seq=self._next_seq + i) for i, e in enumerate(events)]
        blob = b"".join(encode(e) for e in entries)
        try:
            write_all(self._fh, blob)
        except OSError as exc:
            raise JournalError(f"could not write the journal ({exc.strerror or exc}); nothing of this write was "
                               "kept, and nothing already saved was lost") from None
        self._next_seq += len(entries)
        self._segment_bytes += len(blob)
        if entries:
            self.last_event_seq = entries[-1].seq
            if at_end:
                self._cursor = (self._segment, self._segment_bytes, entries[-1].seq)
        return entries

    def end(self) -> tuple[str, int]:
        """Under the lock, open for writing: where the next event goes (its segment and the bytes
        in it) — the position after everything this process just wrote."""
        if self._fh is None:
            raise JournalError("journal is not open for writing")
        return self._segment, self._segment_bytes

    # ---- catching up with other processes (under the write lock) ----------------------------------
    def read_to_end(self) -> None:
        """Under the lock: mark everything now in the journal as seen by this process (after it
        opened the project, or rebuilt it from the whole journal)."""
        segs = self.segments()
        if not segs:
            self._cursor = ("", 0, 0)
            return
        end, last = self._tail(segs[-1])
        self._cursor = (segs[-1].name, end, last)

    def read_new(self) -> list[Entry]:
        """Under the lock: every event written since this process last read or wrote (by other
        Kelvin processes), read on from a byte offset — a catch-up costs what the others wrote, not
        the whole segment. Where a line does not decode (a damaged line), the rest is read by
        :meth:`read`, which deals with damage."""
        if not self._lock.held:
            raise JournalError("catching up with the journal needs the project's write lock")
        cursor = self._cursor
        segs = self.segments()
        names = [p.name for p in segs]
        if cursor is None:
            self.read_to_end()
            return []
        name, offset, seq = cursor
        if name not in names:  # nothing was written when this process last looked, or segments moved
            return self._read_slowly(seq)
        out: list[Entry] = []
        for seg in segs[names.index(name):]:
            start = offset if seg.name == name else 0
            with open_regular(seg) as fh:
                fh.seek(start)
                data = fh.read()
            pos = start
            for line in data.splitlines(keepends=True):
                entry = decode(line)
                if entry is None or entry.seq <= seq:  # damage (or a torn tail not mended yet)
                    return out + self._read_slowly(seq)
                out.append(entry)
                pos += len(line)
                seq = entry.seq
            self._cursor = (seg.name, pos, seq)
        return out

    def _read_slowly(self, after_seq: int) -> list[Entry]:
        found = list(self.read(after_seq=after_seq))
        self.read_to_end()
        return found

    def close(self) -> None:
        self.unlock()


def read_blocks(path: Path, size: int = BLOCK) -> Iterator[bytes]:
    """A data-folder file read in bounded pieces (only if it is a regular file)."""
    with open_regular(path) as fh:
        while block := fh.read(size):
            yield block


def _line_of(seg: Path, offset: int) -> int:
    """The 1-based line number that starts at ``offset``."""
    n = 1
    with open_regular(seg) as fh:
        remaining = offset
        while remaining > 0:
            block = fh.read(min(remaining, 1 << 20))
            if not block:
                break
            n += block.count(b"\n")
            remaining -= len(block)
    return n

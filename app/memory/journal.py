"""The journal: an append-only, fsync'd log of every event in a project. The source of truth.

Each line is ``<crc32 hex> <json>`` where the JSON holds ``seq``, ``op``, ``at`` (ms) and ``data``.
Lines are grouped in segment files named after their first sequence number. A crash can only
leave a torn last line; opening the journal for writing moves those bytes aside (nothing is
thrown away) and continues after the last whole event. Everything else in Kelvin's memory — the
LanceDB index and the Markdown files — is a projection that can be rebuilt from here.
"""
from __future__ import annotations

import json
import logging
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from app.core.records import now_ms
from app.durable import fsync_dir

log = logging.getLogger("kelvin.journal")

SEGMENT_BYTES = 64 * 1024 * 1024


class JournalError(RuntimeError):
    """The journal cannot be used; the message says why in plain words."""


class StoreLocked(JournalError):
    pass


@dataclass(frozen=True)
class Entry:
    seq: int
    op: str
    at: int
    data: dict


def encode(entry: Entry) -> bytes:
    body = json.dumps({"seq": entry.seq, "op": entry.op, "at": entry.at, "data": entry.data},
                      ensure_ascii=False, separators=(",", ":"))
    raw = body.encode("utf-8")
    return b"%08x " % zlib.crc32(raw) + raw + b"\n"


def decode(line: bytes) -> Entry | None:
    """One line → Entry, or None if the line is torn or damaged."""
    if len(line) < 10 or line[8:9] != b" " or not line.endswith(b"\n"):
        return None
    raw = line[9:-1]
    try:
        if int(line[:8], 16) != zlib.crc32(raw):
            return None
        obj = json.loads(raw)
        return Entry(int(obj["seq"]), str(obj["op"]), int(obj["at"]), dict(obj["data"]))
    except (ValueError, KeyError, TypeError):
        return None


class _Lock:
    """An exclusive OS lock on a file, released by the OS if the process dies."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None

    def acquire(self) -> None:
        fh = open(self.path, "a+b")
        try:
            if os.name == "nt":
                import msvcrt

                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)
            else:
                import fcntl

                fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            fh.seek(0)
            holder = fh.read().decode("ascii", "replace").strip() or "unknown"
            fh.close()
            raise StoreLocked(
                f"this project is being written by another Kelvin process (pid {holder}); "
                "close it or wait for it to finish"
            ) from None
        fh.seek(0)
        fh.truncate()
        fh.write(str(os.getpid()).encode())
        fh.flush()
        self._fh = fh

    def release(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None


class Journal:
    def __init__(self, folder: Path):
        self.folder = folder
        self._lock = _Lock(folder / "LOCK")
        self._fh = None
        self._segment_bytes = 0
        self._next_seq = 1
        self.damaged_lines = 0

    # ---- reading ---------------------------------------------------------------------------------
    def segments(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("*.jsonl") if p.stem.isdigit())

    def read(self, after_seq: int = 0) -> Iterator[Entry]:
        """Every whole event with ``seq > after_seq``, in order. Damaged lines are skipped and
        counted; a torn last line (a crash mid-write) is ignored."""
        segs = self.segments()
        for i, seg in enumerate(segs):
            if i + 1 < len(segs) and int(segs[i + 1].stem) <= after_seq + 1:
                continue  # every event in this segment is older than wanted
            damaged: list[int] = []
            with open(seg, "rb") as fh:
                for lineno, line in enumerate(fh, 1):
                    entry = decode(line)
                    if entry is None:
                        damaged.append(lineno)
                        continue
                    self._report_damaged(seg, damaged)
                    damaged = []
                    if entry.seq > after_seq:
                        yield entry
            if i + 1 < len(segs):
                self._report_damaged(seg, damaged)
            # damaged lines at the very end of the last segment are a torn write: ignored here,
            # set aside by open_for_write()

    def _report_damaged(self, seg: Path, linenos: list[int]) -> None:
        for lineno in linenos:
            self.damaged_lines += 1
            log.warning("journal %s line %d is damaged and was skipped", seg.name, lineno)

    def last_seq(self) -> int:
        """The newest whole event's seq (0 if none). Reads only the tail of the last segment."""
        if self._fh is not None:
            return self._next_seq - 1
        segs = self.segments()
        if not segs:
            return 0
        seg = segs[-1]
        size = seg.stat().st_size
        window = 1 << 20
        with open(seg, "rb") as fh:
            while True:
                start = max(0, size - window)
                fh.seek(start)
                lines = fh.read().split(b"\n")
                if start > 0:
                    lines = lines[1:]  # the first piece may be the end of a longer line
                for raw in reversed(lines):
                    entry = decode(raw + b"\n")
                    if entry is not None:
                        return entry.seq
                if start == 0:
                    return int(seg.stem) - 1
                window *= 8

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in self.segments())

    # ---- writing ---------------------------------------------------------------------------------
    def open_for_write(self) -> None:
        """Take the project's write lock, mend a torn tail, and get ready to append."""
        if self._fh is not None:
            return
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise JournalError(f"cannot create the journal folder {self.folder}: {exc.strerror}") from None
        self._lock.acquire()
        segs = self.segments()
        if segs:
            seg = segs[-1]
            good_end, last = self._scan_tail(seg)
            size = seg.stat().st_size
            if good_end < size:
                self._set_aside(seg, good_end)
            self._next_seq = max(last, int(seg.stem) - 1) + 1
            self._open_segment(seg)
        else:
            self._next_seq = 1
            self._open_segment(self.folder / f"{1:012d}.jsonl")

    def _scan_tail(self, seg: Path) -> tuple[int, int]:
        """Byte offset after the last whole line of a segment, and the last seq in it."""
        good_end, last, pos = 0, 0, 0
        with open(seg, "rb") as fh:
            for line in fh:
                pos += len(line)
                entry = decode(line)
                if entry is not None:
                    good_end, last = pos, entry.seq
        return good_end, last

    def _set_aside(self, seg: Path, good_end: int) -> None:
        with open(seg, "r+b") as fh:
            fh.seek(good_end)
            tail = fh.read()
            keep = self.folder / f"torn-{seg.stem}-{now_ms()}.bin"
            keep.write_bytes(tail)
            fh.truncate(good_end)
            fh.flush()
            os.fsync(fh.fileno())
        log.warning("journal %s ended with %d bytes of an unfinished write (a crash); "
                    "they were moved to %s", seg.name, len(tail), keep.name)

    def _open_segment(self, path: Path) -> None:
        if self._fh is not None:
            self._fh.close()
        new = not path.exists()
        self._fh = open(path, "ab")
        self._segment_bytes = self._fh.tell()
        if new:
            _fsync_dir(self.folder)

    def append(self, items: list[tuple[str, dict]]) -> list[Entry]:
        """Write events durably (one fsync for the batch) and return them with their seq."""
        if self._fh is None:
            raise JournalError("journal is not open for writing")
        if self._segment_bytes >= SEGMENT_BYTES:
            self._open_segment(self.folder / f"{self._next_seq:012d}.jsonl")
        at = now_ms()
        entries = []
        chunks = []
        for op, data in items:
            entry = Entry(self._next_seq, op, at, data)
            self._next_seq += 1
            entries.append(entry)
            chunks.append(encode(entry))
        blob = b"".join(chunks)
        try:
            self._fh.write(blob)
            self._fh.flush()
            os.fsync(self._fh.fileno())
        except OSError as exc:
            self._next_seq -= len(items)
            raise JournalError(f"could not write the journal ({exc.strerror}); nothing was lost from "
                               "what was already saved") from None
        self._segment_bytes += len(blob)
        return entries

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None
        self._lock.release()


_fsync_dir = fsync_dir

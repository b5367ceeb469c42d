"""Whether the journal is whole: its sequence numbers prove it.

Every event is numbered one above the event before it, and every segment file is named after its
first event. So a segment deleted from the middle (its neighbours' numbers no longer meet), lines
cut out of a segment (fewer lines than numbers), or a journal that lost its beginning all show as
numbers that are missing — found without trusting anything but the journal itself.

A missing number is *explained* when it is accounted for beside the journal (``set-aside.jsonl``):
a torn write or a damaged line that held it, or a gap already found and recorded (``missing``,
with a copy of what is known in ``journal/missing-<first>-<last>.json``). Only unexplained gaps
are news: the writer records them, rebuilds with what the index and the Markdown still hold, and
``stats`` and ``doctor`` say them until the artist removes the record's file.

Two depths: ``quick`` compares each segment's first number with the last of the one before (a
deleted segment; cheap enough for every open), ``thorough`` also counts each segment's lines
against its numbers and reads a segment whose count falls short (lost lines).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from app.memory.journal import Journal, decode, read_blocks

log = logging.getLogger("kelvin.journal")


@dataclass(frozen=True)
class Gap:
    """Events ``first``..``last`` (inclusive) that the journal no longer holds; ``count`` of them are
    missing (fewer than the span when damaged lines stand in some of the places)."""

    first: int
    last: int
    count: int

    def describe(self) -> str:
        span = f"event {self.first}" if self.first == self.last else f"events {self.first:,}–{self.last:,}"
        lost = f"{self.count:,} events" if self.count != 1 else "1 event"
        return f"{span} are missing from the journal ({lost}: a segment deleted or lines cut out)" \
            if self.count != 1 else f"{span} is missing from the journal (a line cut out)"


def _lines(seg: Path) -> int:
    """Whole lines in a segment (each ends with a newline), read in bounded pieces."""
    return sum(block.count(b"\n") for block in read_blocks(seg))


def _scan(seg: Path, first: int) -> list[Gap]:
    """The gaps inside one segment: consecutive whole events whose numbers jump by more than the
    damaged lines between them."""
    gaps: list[Gap] = []
    prev, damaged = first - 1, 0
    with seg.open("rb") as fh:
        for line in fh:
            entry = decode(line)
            if entry is None:
                damaged += 1 if line.endswith(b"\n") else 0
                continue
            missing = entry.seq - prev - 1 - damaged
            if missing > 0:
                gaps.append(Gap(prev + 1, entry.seq - 1, missing))
            prev, damaged = max(prev, entry.seq), 0
    return gaps


def gaps(journal: Journal, thorough: bool = True, upto: int | None = None) -> list[Gap]:
    """Every run of numbers the journal lacks, from 1 to its last event (or ``upto``, the number the
    next event will take minus one), explained or not."""
    found: list[Gap] = []
    prev_last = 0
    for seg in journal.segments():
        first = int(seg.stem)
        end, last = journal._tail(seg)  # the journal's own tail reader
        if first > prev_last + 1:
            found.append(Gap(prev_last + 1, first - 1, first - prev_last - 1))
        if thorough and last >= first and _lines(seg) < last - first + 1:
            found += _scan(seg, first)
        prev_last = max(prev_last, last)
    if upto is not None and upto > prev_last:
        found.append(Gap(prev_last + 1, upto, upto - prev_last))
    return found


def unexplained(journal: Journal, thorough: bool = True, upto: int | None = None) -> list[Gap]:
    """The gaps nothing beside the journal accounts for (see the module's doc)."""
    records = journal._manifest()  # the journal's own record of what was set aside
    held = {r.seq for r in records if r.seq is not None and r.kind in ("torn", "damaged")}
    recorded = [(r.seq, r.seq + r.size - 1) for r in records if r.kind == "missing" and r.seq is not None]
    out: list[Gap] = []
    for gap in gaps(journal, thorough, upto):
        numbers = [n for n in range(gap.first, gap.last + 1)
                   if n not in held and not any(a <= n <= b for a, b in recorded)] \
            if gap.last - gap.first < 1_000_000 else [gap.first]
        if not numbers:
            continue
        count = min(gap.count, len(numbers))
        out.append(Gap(numbers[0], numbers[-1], count))
    return out

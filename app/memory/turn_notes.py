"""What goes with a turn besides its words: what Kelvin looked at to answer, the settings it stated
(the chips under the answer), and what the artist did with each chip — so that after a project
switch, a restart or a rebuild every answer still shows them.

They are journal events like the messages (``turn.sources``, written with the answer;
``turn.chips``, once the turn's settings are read; ``turn.chip``, when the artist answers one), and
this is their projection: ``turns.jsonl`` in the project's folder, one line per event, read into a
map from the answer's id. Lines are appended in journal order, so the last line's number says how
far it has read; replaying events it has seen changes nothing; ``rebuild`` makes it again from the
journal alone. A message edited or deleted takes its chips with it (the ledger reads it again).
"""
from __future__ import annotations

import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

from app.durable import open_append, write_all

log = logging.getLogger("kelvin.turns")

OP_TURN_SOURCES = "turn.sources"  # {"message_id", "sources": [{"kind", "text", "ts_ms"?, "domain"?, "role"?}]}
OP_TURN_CHIPS = "turn.chips"  # {"message_id", "question_id", "chips": [ledger entries as JSON]}
OP_CHIP_ANSWER = "turn.chip"  # {"message_id", "entry_id", "answer": "used" | "corrected to …" | "turned down", "ts_ms"}
TURN_OPS = (OP_TURN_SOURCES, OP_TURN_CHIPS, OP_CHIP_ANSWER)
_FORGETS = ("message.edit", "message.delete")


@dataclass
class TurnNote:
    """One answer's note: what Kelvin looked at, the chips (None: never noted, read them from the
    ledger), and the artist's answers by ledger entry id: (what, when in ms)."""

    message_id: str
    question_id: str = ""
    sources: list[dict] = field(default_factory=list)
    chips: list[dict] | None = None
    answers: dict[str, tuple[str, int]] = field(default_factory=dict)


def whole(op: str, data: dict) -> bool:
    """Whether a turn event read back from a damaged journal line is whole enough to project."""
    if not isinstance(data.get("message_id"), str) or not data["message_id"]:
        return False
    if op == OP_TURN_SOURCES:
        return isinstance(data.get("sources"), list)
    if op == OP_TURN_CHIPS:
        return isinstance(data.get("chips"), list)
    return isinstance(data.get("entry_id"), str) and isinstance(data.get("answer"), str) \
        and isinstance(data.get("ts_ms"), int)


class TurnNotes:
    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / "turns.jsonl"
        self.seq = 0  # the last journal event read
        self._notes: dict[str, TurnNote] = {}
        self._by_question: dict[str, str] = {}
        self._lock = threading.Lock()
        self._read_to = (0, 0)  # (inode, byte offset) of turns.jsonl read so far
        with self._lock:
            self._load()

    def _load(self) -> None:
        """Read turns.jsonl on from where this process last read it (all of it the first time, or
        when another process rebuilt it: a new file)."""
        try:
            with self.path.open("rb") as fh:
                ino = os.fstat(fh.fileno()).st_ino
                if ino != self._read_to[0]:
                    self._notes, self._by_question, self.seq, start = {}, {}, 0, 0
                else:
                    start = self._read_to[1]
                fh.seek(start)
                for n, raw in enumerate(fh, 1):
                    if not raw.endswith(b"\n"):
                        break  # being written by another process: read at the next catch-up
                    start += len(raw)
                    try:
                        d = json.loads(raw)
                        self._apply(str(d["op"]), d["data"])
                        self.seq = max(self.seq, int(d["seq"]))
                    except (ValueError, KeyError, TypeError, AttributeError):
                        log.warning("%s line %d is damaged; skipped", self.path, n)
                self._read_to = (ino, start)
        except FileNotFoundError:
            pass
        except OSError as exc:
            log.warning("%s cannot be read (%s); answers show no notes until it is rebuilt", self.path, exc)

    def follow(self) -> None:
        """Catch up with what another Kelvin process projected since this one last read."""
        with self._lock:
            self._load()

    def _apply(self, op: str, d: dict) -> None:
        if op in _FORGETS:
            mid = str(d.get("id", ""))
            for key in (mid, self._by_question.get(mid, "")):
                if key in self._notes:
                    self._notes[key].chips = None  # the ledger reads the message again: its chips follow
            return
        note = self._notes.setdefault(d["message_id"], TurnNote(d["message_id"]))
        if op == OP_TURN_SOURCES:
            note.sources = [s for s in d["sources"] if isinstance(s, dict)]
        elif op == OP_TURN_CHIPS:
            note.chips = [c for c in d["chips"] if isinstance(c, dict)]
            note.question_id = str(d.get("question_id") or "")
            if note.question_id:
                self._by_question[note.question_id] = note.message_id
        elif op == OP_CHIP_ANSWER:
            note.answers[str(d["entry_id"])] = (str(d["answer"]), int(d["ts_ms"]))

    # ---- projecting ---------------------------------------------------------------------------------
    def project(self, entries: Iterable) -> int:
        """Take in the turn events (and the edits and deletes that concern them) past ``seq``."""
        lines = []
        with self._lock:
            for e in entries:
                if e.seq <= self.seq:
                    continue
                if e.op in TURN_OPS or (e.op in _FORGETS and self._concerns(e.data)):
                    self._apply(e.op, e.data)
                    lines.append({"seq": e.seq, "op": e.op, "data": e.data})
                    self.seq = e.seq
            if lines:
                self.folder.mkdir(parents=True, exist_ok=True)
                data = "".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode("utf-8")
                with open_append(self.path) as fh:
                    st = os.fstat(fh.fileno())
                    write_all(fh, data, sync=False)
                if self._read_to == (st.st_ino, st.st_size):  # read up to here: what follows is ours
                    self._read_to = (st.st_ino, st.st_size + len(data))
        return len(lines)

    def _concerns(self, d: dict) -> bool:
        mid = str(d.get("id", ""))
        return mid in self._notes or mid in self._by_question

    def rebuild(self, entries: Iterable) -> None:
        with self._lock:
            self._notes, self._by_question, self.seq, self._read_to = {}, {}, 0, (0, 0)
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
        self.project(entries)

    # ---- reading ------------------------------------------------------------------------------------
    def of(self, message_ids: Iterable[str]) -> dict[str, TurnNote]:
        """Copies: the writer's thread may add to a note while a reader looks at it."""
        with self._lock:
            return {m: TurnNote(n.message_id, n.question_id, list(n.sources), None if n.chips is None else list(n.chips),
                                dict(n.answers)) for m in message_ids if (n := self._notes.get(m)) is not None}

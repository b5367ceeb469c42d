"""The journal folded: which messages and kept memories it holds after every edit and delete, and
where each message's Markdown block lives (live, or in the archived day a rollover moved it to) —
placed as the projections place them. A rebuild and the rescue of lost messages start from it."""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from app.core.records import Memory, Message
from app.memory import replies
from app.memory.journal import Entry
from app.memory.markdown import before
from app.memory.store.events import (
    CONTEXT_ENGINE,
    DATA_ERRORS,
    OP_DAY_ROLLOVER,
    OP_MEMORY_ADD,
    OP_MEMORY_DELETE,
    OP_MESSAGE_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
    whole_message,
)

if TYPE_CHECKING:
    from app.memory.store import ProjectStore

log = logging.getLogger("kelvin.store")


def fold_journal(store: ProjectStore, tag: bool = True) -> Folded:
    """The messages and memories the journal holds, and which archived day each archived message
    is in — placed as the projection places them: added live, moved by a rollover, restored into
    the day whose range covers it. An event that cannot be read as what it says is set aside.
    ``tag=False``: the messages untagged (only their ids matter)."""
    acc = _Fold()
    for e in store.in_order():
        try:
            acc.fold(e)
        except DATA_ERRORS as exc:
            store.journal.note_unapplied(e, "the index and Markdown", exc)
    out: dict[str, Message] = {}
    for k, v in acc.messages.items():
        try:
            out[k] = store.to_message(v) if tag else store.bare_message(v)
        except DATA_ERRORS as exc:
            log.warning("project %s: message %s cannot be rebuilt (%s); skipped", store.name, k, exc)
    return Folded(out, acc.memories, acc.archived, acc.rollovers, acc.deleted - acc.messages.keys(), acc.salvaged,
                  acc.touched, acc.forgotten - acc.memories.keys(), acc.unfinished)


class _Fold:
    """What the journal holds, event by event (see :func:`fold_journal`)."""

    def __init__(self) -> None:
        self.messages: dict[str, dict] = {}
        self.memories: dict[str, Memory] = {}
        self.live: dict[str, int] = {}  # id → ts of the messages in the live files
        self.archived: dict[str, str] = {}
        self.rollovers: list[list] = []
        self.deleted: set[str] = set()
        self.salvaged: set[str] = set()  # messages whose text the journal read back from a damaged line
        self.touched: dict[str, int] = {}  # message id → the last event about it
        self.forgotten: set[str] = set()  # kept memories deleted
        self.unfinished: dict[str, list] = {}  # replies seen streaming, not finished

    def fold(self, e: Entry) -> None:
        d, messages = e.data, self.messages
        replies.track(self.unfinished, [e])
        if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE) and d["id"] not in messages:
            whole_message(d)
            messages[d["id"]] = d
            (self.salvaged.add if e.salvaged else self.salvaged.discard)(d["id"])
            day = place_in(self.rollovers, d["ts_ms"]) if e.op == OP_MESSAGE_RESTORE else None
            if day is None:
                self.live[d["id"]] = d["ts_ms"]
            else:
                self.archived[d["id"]] = day
        elif e.op == OP_MESSAGE_EDIT and d["id"] in messages:
            if not isinstance(d["text"], str):
                raise TypeError("an edit's text is a string")
            messages[d["id"]] = {**messages[d["id"]], "text": d["text"],
                                 **({CONTEXT_ENGINE: d[CONTEXT_ENGINE]} if CONTEXT_ENGINE in d else {})}
            (self.salvaged.add if e.salvaged else self.salvaged.discard)(d["id"])
        elif e.op == OP_MESSAGE_DELETE:
            self.deleted.add(d["id"])
            messages.pop(d["id"], None)
            self.live.pop(d["id"], None)
            self.archived.pop(d["id"], None)
        elif e.op == OP_DAY_ROLLOVER:
            cutoff, day = int(d["cutoff_ms"]), str(d["day"])
            self.rollovers.append([e.seq, cutoff, day])
            for mid in [mid for mid, ts in self.live.items() if before(ts, cutoff)]:
                self.archived[mid] = day
                del self.live[mid]
        elif e.op == OP_MEMORY_ADD:
            self.memories[d["id"]] = Memory(**d)
        elif e.op == OP_MEMORY_DELETE:
            self.memories.pop(d["id"], None)
            self.forgotten.add(d["id"])
        if e.op.startswith("message."):
            self.touched[d["id"]] = e.seq


@dataclass
class Folded:
    """What the journal holds, folded: messages, memories, the archived day of each archived
    message, and the day rollovers ([seq, cutoff_ms, day])."""

    messages: dict[str, Message]
    memories: dict[str, Memory]
    archived: dict[str, str] = field(default_factory=dict)
    rollovers: list[list] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)  # deleted and not restored since
    salvaged: set[str] = field(default_factory=set)  # text read back from a damaged journal line
    touched: dict[str, int] = field(default_factory=dict)  # message id → the last event about it
    forgotten: set[str] = field(default_factory=set)  # kept memories deleted (and not kept again)
    unfinished: dict[str, list] = field(default_factory=dict)  # replies seen streaming, never finished


def place_in(rollovers: list[list], ts_ms: int) -> str | None:
    """The archived day whose range covers ``ts_ms`` (the first rollover by cutoff that it falls
    before; ties in journal order), or None for the live files."""
    for _seq, cutoff, day in sorted(rollovers, key=lambda r: r[1]):
        if before(ts_ms, cutoff):
            return day
    return None



def local_day(ts_ms: int) -> str:
    """The local calendar date of a moment, as YYYY-MM-DD (the name of an archived day)."""
    return datetime.fromtimestamp(ts_ms / 1000).date().isoformat()


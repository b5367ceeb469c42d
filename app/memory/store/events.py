"""The events a project's journal holds about messages, kept memories and the day's end, and what
makes one of them whole enough to project (the settings ledger's and the turn notes' own events are
theirs: app.memory.settings_book, app.memory.turn_notes)."""
from __future__ import annotations

from app.core.records import (
    Memory,
    Message,
    RecordError,
    check_id,
    check_name,
    check_role,
    check_speaker,
    check_status,
    check_text,
)
from app.memory.journal import Entry
from app.memory.replies import OP_REPLY_PART
from app.memory.settings_book import SETTING_OPS
from app.memory.turn_notes import TURN_OPS
from app.memory.turn_notes import whole as whole_turn_event

OP_MESSAGE_ADD = "message.add"
OP_MESSAGE_EDIT = "message.edit"
OP_MESSAGE_DELETE = "message.delete"
CONTEXT_ENGINE = "context_engine"  # in a message event: the engine its conversation was about when it was said
OP_MESSAGE_RESTORE = "message.restore"  # a deleted message put back (undo): the whole message, as it was
OP_MEMORY_ADD = "memory.add"
OP_MEMORY_DELETE = "memory.delete"
# the day's end: {"day": "YYYY-MM-DD", "cutoff_ms": int}; live Markdown blocks from before the cutoff
# move to archive/<day>/ (day: the local date of the newest block moved)
OP_DAY_ROLLOVER = "day.rollover"
OPS = (OP_MESSAGE_ADD, OP_MESSAGE_EDIT, OP_MESSAGE_DELETE, OP_MESSAGE_RESTORE, OP_MEMORY_ADD, OP_MEMORY_DELETE,
       OP_DAY_ROLLOVER, OP_REPLY_PART, *SETTING_OPS, *TURN_OPS)

# what a projection raises for an event it cannot take (bad data), as against the disk or the index
# failing (OSError and the index's own errors), after which the projections catch up later
DATA_ERRORS = (KeyError, TypeError, ValueError, OverflowError, AttributeError, IndexError, RecursionError)


def with_engine(m: Message) -> dict:
    """A stored message as a restore event: the whole message, and the engine it was tagged with
    (so it comes back tagged as it was)."""
    return {**m.to_event(), **({CONTEXT_ENGINE: m.tags.engine} if m.tags.engine else {})}


def edit_event(m: Message, text: str) -> dict:
    """An edit as the journal keeps it: the whole message with its new text and the engine it was
    tagged with, so every projection reads it as it stood at that point of the order — not as the
    index holds it when the projection gets there (deleted later, or taken out while a team's order
    is settled). Older journals hold bare edits (``id`` and ``text``); they are still read."""
    return {**with_engine(m), "text": text}


def whole_message(d: dict) -> None:
    """Raise KeyError or TypeError unless ``d`` has what a stored message needs, of the right types (the
    content rules are the writers'; an older Kelvin's messages stay readable)."""
    if not all(isinstance(d[k], str) for k in ("id", "text", "role", "speaker", "conversation_id")) \
            or not d["id"] or not isinstance(d.get("turn_id", ""), str) or not isinstance(d.get("status", ""), str):
        raise TypeError("a message's id, text, role, speaker, conversation, turn and status are strings")
    if not isinstance(d["ts_ms"], int) or isinstance(d["ts_ms"], bool) or not -2**62 < d["ts_ms"] < 2**62:
        raise TypeError("a message's time is a whole number of milliseconds")


def whole_event(e: Entry) -> bool:
    """Whether an event read back from a damaged journal line is whole enough to project."""
    d = e.data
    try:
        if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
            check_id(d["id"]), check_text(d["text"]), check_role(d["role"]), check_speaker(d["speaker"])
            check_name(d["conversation_id"], "conversation_id"), check_status(d.get("status", ""))
            return isinstance(d["ts_ms"], int) and isinstance(d.get("turn_id", ""), str)
        if e.op == OP_MESSAGE_EDIT:
            return bool(check_id(d["id"]) and check_text(d["text"]))
        if e.op in (OP_MESSAGE_DELETE, OP_MEMORY_DELETE):
            return bool(check_id(d["id"]))
        if e.op == OP_MEMORY_ADD:
            Memory(**d)
            return bool(check_id(d["id"]) and check_text(d["text"])) and isinstance(d["ts_ms"], int)
        if e.op == OP_DAY_ROLLOVER:
            return isinstance(d["cutoff_ms"], int) and bool(str(d["day"]))
        if e.op in SETTING_OPS:
            return isinstance(d.get("parameter", ""), str) and isinstance(d.get("ts_ms", 0), int)
        if e.op in TURN_OPS:
            return whole_turn_event(e.op, d)
        if e.op == OP_REPLY_PART:
            return bool(check_id(d["id"])) and isinstance(d.get("text", ""), str)
    except (RecordError, KeyError, TypeError, ValueError):
        return False
    return False

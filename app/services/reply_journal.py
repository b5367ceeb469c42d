"""How a reply is journaled: while it streams, what came so far every half second (a ``reply.part``,
app.memory.replies: a kill -9 loses at most a second of it); when it ends, the whole reply with its
status — complete, stopped, cut, failed or from memory — under the id its checkpoints used, so they
fold into it, in parts if a model ran past what one message holds; and what the answer looked at.

Called on the turn's thread, under the conversation lock (app.services.conversation); the commit
queue writes, the turn never waits for the disk. Qt-free.
"""
from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import Callable

from app.core import chunking
from app.core.records import MAX_MESSAGE_CHARS, RecordError, check_text, now_ms
from app.memory.replies import OP_REPLY_PART, this_process
from app.memory.turn_notes import OP_TURN_SOURCES
from app.services.memory import MemoryService
from app.services.turn import Turn, TurnResult
from app.services.turn_extras import sources_of

log = logging.getLogger("kelvin.conversation")

CHECKPOINT_S = 0.5  # a streaming reply is journaled at least this often: a kill -9 loses at most a second

Watch = Callable[[Future, str], None]  # the conversation's: a commit failing in the background is said


def checkpoint(memory: MemoryService, watch: Watch, turn: Turn, parts: list[str], every: float = CHECKPOINT_S) -> None:
    """Journal what streamed since the last checkpoint, if ``every`` seconds have passed (a
    ``reply.part``: app.memory.replies). The commit queue writes it; the stream never waits."""
    now = time.monotonic()
    done, last = turn.streamed
    if now - last < every:
        return
    text = "".join(parts)
    if len(text) <= done:
        return
    part = {"id": turn.answer_id, "project": turn.project, "conversation_id": turn.conversation_id,
            "turn_id": turn.id, "speaker": f"Kelvin ({turn.model})", "ts_ms": now_ms(), "text": text[done:],
            **this_process()}
    turn.streamed[:] = [len(text), now]
    watch(memory.writer.submit(turn.project, [(OP_REPLY_PART, part)]), "reply so far")


def store(memory: MemoryService, watch: Watch, turn: Turn, result: TurnResult) -> None:
    """Every reply is stored with its status — a stopped, cut or failed one too."""
    if result.status == "command":
        return
    text = result.text.strip()
    status = {"complete": "", "recall": "recall"}.get(result.status, result.status)
    if result.status == "cancelled":
        why = f"stopped: {result.error}" if result.error else "stopped by the artist"
        text = (text + f"\n\n[{why}]") if text else f"[{why} before the reply began]"
    elif result.status == "cut":
        text = f"{text}\n\n[reply cut off: {result.error}]"
    elif result.status == "failed":
        text = f"[no reply: {result.error}]"
    speaker = "Kelvin (from memory)" if result.status == "recall" else f"Kelvin ({turn.model})"
    parts = reply_parts(text)
    try:
        parts = [check_text(part, "reply") for part in parts]
    except RecordError as exc:  # a reply too odd to keep as it is (binary junk): keep why
        log.warning("reply not stored as given: %s", exc)
        parts, status = [f"[the reply could not be stored: {exc}]"], "failed"
    ts = now_ms()
    for n, part in enumerate(parts):  # the first under the id its checkpoints used: they fold into it
        message, stored = memory.commit(part, role="assistant", speaker=speaker,
                                        conversation_id=turn.conversation_id, turn_id=turn.id,
                                        project=turn.project, status=status, ts_ms=ts + n,
                                        message_id=turn.answer_id if n == 0 else None)
        result.answer = result.answer or message
        watch(stored, "reply")
        result.stored += (stored,)
    sources = sources_of(result)
    if sources:  # journaled with the turn: the answer's fold-out after a switch, a restart, a rebuild
        watch(memory.note_turn(OP_TURN_SOURCES, {"message_id": result.answer.id, "sources": sources},
                               project=turn.project), "what the answer looked at")


def reply_parts(text: str) -> list[str]:
    """A reply as the messages it is stored in: whole, or — past what one message holds (a model
    that ran away) — in parts split at paragraph or sentence ends, each saying where it goes on."""
    if len(text) <= MAX_MESSAGE_CHARS:
        return [text]
    pieces = chunking.split(text, MAX_MESSAGE_CHARS - 200)
    n = len(pieces)
    return [(f"[the reply, part {i} of {n}]\n\n" if i > 1 else "") + piece
            + (f"\n\n[the reply goes on in the next message: part {i + 1} of {n}]" if i < n else "")
            for i, piece in enumerate(pieces, 1)]

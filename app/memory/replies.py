"""A reply journaled as it streams, so that a kill -9 loses at most its last second.

While a reply streams, the conversation journals what came since the last checkpoint, at least once
a second, as a ``reply.part`` event (the reply's id, the text since, and the process writing it).
The projections ignore parts — nobody searches half a sentence — but keep the replies they have
seen parts of and no whole message for (``Projections.unfinished``). The finished reply is an
ordinary ``message.add`` under the same id, with the whole text: it folds the parts in exactly once.

When the writing process died before that (a kill -9, a power cut), the next Kelvin that opens the
project for writing journals the parts joined as the reply, marked as cut off. A reply whose writer
is still alive (the window streaming while a command runs beside it) is left to it.
"""
from __future__ import annotations

import logging
import os
from typing import Iterable

from app.core.records import MAX_MESSAGE_CHARS

log = logging.getLogger("kelvin.store")

OP_REPLY_PART = "reply.part"
CUT_NOTE = "[reply cut off: Kelvin was stopped before the reply was finished; what had streamed is kept]"
_STARTED: float | None = None


def this_process() -> dict:
    """Who writes a part: this process's id and start time (a pid alone may be reused)."""
    global _STARTED
    if _STARTED is None:
        try:
            import psutil

            _STARTED = round(psutil.Process().create_time(), 2)
        except Exception:  # noqa: BLE001 — no psutil here: the pid alone
            _STARTED = 0.0
    return {"pid": os.getpid(), "started": _STARTED}


def alive(pid: int, started: float) -> bool:
    """Whether the process that wrote a part is still running (the same process, not a reused pid)."""
    if pid == os.getpid():
        return True
    try:
        import psutil

        proc = psutil.Process(pid)
        return not started or abs(proc.create_time() - started) < 1.0
    except Exception:  # noqa: BLE001 — gone (NoSuchProcess), or cannot be asked
        return False


def track(unfinished: dict[str, list], entries: Iterable) -> bool:
    """Follow the replies being streamed through journal events: ``unfinished`` maps a reply's id to
    [the seq of its first part, pid, start time]. Returns whether it changed."""
    changed = False
    for e in entries:
        if e.op == OP_REPLY_PART:
            d = e.data
            if isinstance(d.get("id"), str) and d["id"] not in unfinished:
                unfinished[d["id"]] = [e.seq, int(d.get("pid") or 0), float(d.get("started") or 0.0)]
                changed = True
        elif e.op in ("message.add", "message.restore") and isinstance(e.data, dict) and e.data.get("id") in unfinished:
            del unfinished[e.data["id"]]
            changed = True
    return changed


def finish_cut(unfinished: dict[str, list], read, known: set[str]) -> list[tuple[str, dict]]:
    """The ``message.add`` events that keep the replies whose writer died mid-stream: their parts joined,
    marked as cut off. ``read(after_seq)`` reads the journal; ``known``: the ids already stored."""
    dead = {rid: v for rid, v in unfinished.items() if rid not in known and not alive(v[1], v[2])}
    if not dead:
        return []
    texts: dict[str, list[str]] = {rid: [] for rid in dead}
    heads: dict[str, dict] = {}
    last_at: dict[str, int] = {}
    for e in read(min(v[0] for v in dead.values()) - 1):
        if e.op == OP_REPLY_PART and e.data.get("id") in dead:
            texts[e.data["id"]].append(str(e.data.get("text") or ""))
            heads.setdefault(e.data["id"], e.data)
            last_at[e.data["id"]] = e.at
    events = []
    for rid, head in heads.items():
        text = "".join(texts[rid]).rstrip()
        body = f"{text}\n\n{CUT_NOTE}" if text.strip() else f"[{CUT_NOTE[1:-1]} before any of it]"
        for n, piece in enumerate(_pieces(body)):
            events.append(("message.add", {
                "id": rid if n == 0 else f"{rid}-{n + 1}", "project": str(head.get("project") or ""),
                "conversation_id": str(head.get("conversation_id") or "default"), "turn_id": str(head.get("turn_id") or ""),
                "role": "assistant", "speaker": str(head.get("speaker") or "Kelvin"), "text": piece,
                "ts_ms": int(head.get("ts_ms") or last_at[rid]) + n, "status": "cut"}))
        log.warning("a reply (%s) was being written when Kelvin stopped; the %d characters that had streamed are "
                    "kept, marked as cut off", rid, len(text))
    return events


def _pieces(text: str) -> list[str]:
    step = MAX_MESSAGE_CHARS - 200
    return [text[i : i + step] for i in range(0, len(text), step)] or [text]

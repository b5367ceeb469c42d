"""Overflow summaries: after a reply, a short model-written note for each long message of the window
that the next turn would otherwise have to fold into an extractive note (app.core.context).

Runs as a job of the conversation's ``kelvin-after-turn`` pool (app.services.conversation), one
message at a time, each under the conversation lock (one model call at a time) and only while no
question waits: a new question, a project switch, a mode change or closing sets ``stop`` and cancels
the summary's stream, and the extractive note stands in. A note is kept only if the job was not
stopped meanwhile. Qt-free.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import replace

from app.core.commands import Mode
from app.core.records import Message
from app.core.tokens import Calibration, clip
from app.llm.errors import ModelServerUnavailable
from app.services.turn import Turn

log = logging.getLogger("kelvin.conversation")

SUMMARY_PROMPT = ("Summarise the message below for a rendering assistant's short-term memory in at most 80 "
                  "words. Keep every number, setting name, engine, error and file name exactly. No preamble.")


def needing_notes(c, turn: Turn) -> list[Message]:
    """The messages of the last turns, not summarised yet, too long for their share of the next window
    (``c``: the conversation, read under its lock)."""
    share = int((turn.budget.num_ctx - turn.budget.answer) * turn.budget.recent_share * 0.5)
    cal = c.calibration.setdefault(turn.model, Calibration())
    return [m for m in (c._recent or []) if m.id not in c._notes and cal.tokens(m.text) > share]


def summarise(c, m: Message, turn: Turn, stop: threading.Event) -> bool:
    """Summarise ``m`` into the conversation's notes; False when the jobs after this turn should end
    (stopped, recall mode, the server away, a failure)."""
    cal = c.calibration.setdefault(turn.model, Calibration())
    with c.inference_lock:
        mode = c.mode  # the mode now, not the turn's: the guard may have moved Kelvin off the GPU
        if stop.is_set() or mode is Mode.RECALL or (turn.project, turn.conversation_id) != (c.project, c.conversation_id):
            return False  # (a switch that took the lock first: its notes are another conversation's)
        body, _ = clip(m.text, int(c.budget_for(mode, turn.model).num_ctx // 2 / cal.ratio))
        parts: list[str] = []
        try:
            c._stream_once([{"role": "system", "content": SUMMARY_PROMPT},
                            {"role": "user", "content": body}], 200,
                           replace(turn, mode=mode, budget=c.budget_for(mode, turn.model)), False, parts,
                           lambda s: None, kind="summary", stop=stop)
        except ModelServerUnavailable as exc:
            log.info("no summary for %s: %s", m.id, exc)
            return False
        except Exception:  # a summary is a nicety; the extractive note stands in
            log.exception("summary of %s failed", m.id)
            return False
        summary = "".join(parts).strip()
        if summary and not stop.is_set():
            c._notes[m.id] = summary
    return True

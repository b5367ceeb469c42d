"""The optional model pass: an extraction model (``extract_model``) reads each message of a finished
turn for render settings the rules missed; what it says is checked strictly against the taxonomy
(app.core.render_settings.model_extraction) and only what is new is journaled, marked as found by the model.

Runs as a job of the conversation's ``kelvin-after-turn`` pool (app.services.conversation), after the
overflow summaries, one message at a time under the conversation lock; ``stop`` (a new question, a
switch, a mode change, closing) cancels its stream, and nothing is written once stopped. Qt-free.
"""
from __future__ import annotations

import logging
import threading

from app.core.commands import Mode
from app.core.render_settings.model_extraction import SCHEMA, check, prompt
from app.core.records import Message
from app.llm.errors import ModelServerUnavailable
from app.memory.settings_book import OP_SETTING_ADD
from app.services.turn import Turn

log = logging.getLogger("kelvin.conversation")


def read_for_settings(c, m: Message, turn: Turn, stop: threading.Event) -> bool:
    """Let the extraction model read ``m`` (``c``: the conversation); False when the jobs after this
    turn should end (stopped, recall mode, the server away, a failure)."""
    model = c.settings.extract_model
    with c.inference_lock:
        mode = c.mode
        if stop.is_set() or mode is Mode.RECALL:
            return False
        try:
            book = c.ledger.book(turn.project)
            have = {(e.engine, e.parameter, e.status) for e in book.mentions_of(m.id)}
            stream = c.backend.chat(model, prompt(m.text, m.role, c.ledger.catalogue, book.engine),
                                    format=SCHEMA, num_ctx=4096, cpu=mode is Mode.CPU, num_predict=400)
            c._stream = ("summary", stream)  # published for the stop: it cancels a "summary" stream
            try:
                if stop.is_set():
                    stream.cancel()
                for _ in stream:
                    pass
                text = stream.text
            finally:
                c._stream = None
                stream.close()
        except ModelServerUnavailable as exc:
            log.info("no model pass over %s: %s", m.id, exc)
            return False
        except Exception:  # the rules' result stands
            log.exception("model pass over %s failed", m.id)
            return False
        if stop.is_set():
            return False
        found = [x for x in check(text, m.role, c.ledger.catalogue) if (x.engine, x.parameter, x.status) not in have]
        if found:
            events = [(OP_SETTING_ADD, {"source_id": m.id, "ts_ms": m.ts_ms, "engine": x.engine,
                                        "parameter": x.parameter, "value": list(x.value) if isinstance(x.value, tuple)
                                        else x.value, "unit": x.unit, "status": x.status, "name": x.name,
                                        "domain": x.domain}) for x in found]
            c._watch(c.memory.writer.submit(turn.project, events), "settings found by the model")
            log.info("the model pass found %d more setting(s) in %s", len(found), m.id)
    return True

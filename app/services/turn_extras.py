"""What the chat shows under an answer besides its words — what Kelvin looked at, and the settings
the turn stated as chips with what the artist did with them — read back for a transcript and kept
as the turn's notes in the journal (app.memory.turn_notes). Qt-free; runs on the window's workers.

A turn's chips are noted once they are read (the ledger's entries as they were: a value turned down
later leaves the ledger but not the turn); a turn with no note (one asked from the command line)
takes its chips from the ledger's mentions of its messages. Every chip's status is worked out
against the ledger as it is now (app.core.render_settings.chips), so an older answer's "in use" retires when a newer
value comes in.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from app.core.render_settings.chips import Chip, one_per_value, prose
from app.core.render_settings.ledger import Current, Entry
from app.core.records import Message, now_ms
from app.memory.turn_notes import OP_CHIP_ANSWER, OP_TURN_CHIPS, TurnNote


@dataclass
class Extras:
    sources: list[dict] = field(default_factory=list)  # what the answer looked at (turn_notes' form)
    chips: list[Chip] = field(default_factory=list)
    noted: bool = True  # the chips are the turn's note (False: read from the ledger, to be noted when answered)


def sources_of(result) -> list[dict]:
    """What went into the answer's prompt (a TurnResult of app.services.conversation), as the turn's
    note keeps it: the settings (in words), the past messages (their time, domain, who and a quote),
    the kept memories."""
    out = [{"kind": "setting", "text": s} for s in result.settings]
    out += [{"kind": "message", "id": m.id, "ts_ms": m.ts_ms, "domain": m.tags.domain, "role": m.role,
             "text": " ".join(m.text.split())[:200]} for m in result.recalled]
    out += [{"kind": "memory", "text": m.text, "ts_ms": m.ts_ms} for m in result.memories]
    return out


def currents_of(ledger, project: str) -> dict[tuple[str, str, str], Current]:
    """Each setting of the project as the ledger holds it — the decided value and any reading to
    confirm (what a chip is stated against; the window applies it to the chips on screen with
    :meth:`Chip.restate`, on its own thread)."""
    return {c.entry.key: c for c in ledger.book(project).currents(candidates=True)}


def turn_engines(question: Message | None, before: Message | None, tagger) -> tuple[str, ...]:
    """The engine a turn is about: the one its question names in the artist's own words (a pasted log
    of another engine does not count), else the one the project was about just before it (the
    engine of the message said before the question). Empty: not known, any engine."""
    around = before.tags.engine if before is not None and before.tags.engine else ""
    if question is None:
        return (around,) if around else ()
    named = tagger.tag(prose(question.text), around).engine
    return (named,) if named else ()


def _before(message: Message, page: list[Message], memory, project: str) -> Message | None:
    """The message said just before ``message`` in the project (from ``page`` when it holds it)."""
    earlier = [m for m in page if (m.ts_ms, m.id) < (message.ts_ms, message.id) and m.turn_id != message.turn_id]
    if earlier:
        return max(earlier, key=lambda m: (m.ts_ms, m.id))
    from app.core.filters import Filters

    found = [m for m in memory.list(project, limit=3, filters=Filters(until_ms=message.ts_ms))
             if m.id != message.id and m.turn_id != message.turn_id]
    return found[-1] if found else None


def chips_for(entries: list[Entry], answer: Message, engines: tuple[str, ...], project: str, ledger,
              note: TurnNote | None = None, currents: dict | None = None) -> list[Chip]:
    """The chips of one turn (its ledger ``entries``), stated against the ledger now, with the
    artist's answers from ``note``."""
    currents = currents_of(ledger, project) if currents is None else currents
    chips = []
    for e in one_per_value([e for e in entries if not e.candidate]):
        chip = Chip(e, answer.id, project, engines)
        chip.restate(currents.get(e.key))
        if note is not None and e.id in note.answers:
            chip.answer, chip.answered_ms = note.answers[e.id]
        chips.append(chip)
    return chips


def extras_of(messages: list[Message], project: str, memory, ledger) -> dict[str, Extras]:
    """For each answer among ``messages`` (a transcript's page): what it looked at and its chips."""
    answers = [m for m in messages if m.role == "assistant"]
    if not answers:
        return {}
    notes = memory.turn_notes([m.id for m in answers], project)
    book, currents = ledger.book(project), currents_of(ledger, project)
    out: dict[str, Extras] = {}
    for a in answers:
        note = notes.get(a.id)
        turn = [m for m in messages if m.turn_id and m.turn_id == a.turn_id] or [a]
        if note is not None and note.chips is not None:
            entries = [Entry.from_json(c) for c in note.chips]
        else:
            entries = [e for m in turn for e in book.mentions_of(m.id)]
        question = next((m for m in turn if m.role == "user"), None)
        engines = turn_engines(question, _before(question or a, messages, memory, project), memory.tagger)
        out[a.id] = Extras(note.sources if note is not None else [],
                           chips_for(entries, a, engines, project, ledger, note, currents),
                           noted=note is not None and note.chips is not None)
    return out


def found_chips(answer: Message, question: Message | None, project: str, memory, ledger) -> list[Chip]:
    """A turn just stored: its chips, noted in the journal with the turn."""
    said = [m for m in (question, answer) if m is not None]
    book = ledger.book(project)
    entries = [e for m in said for e in book.mentions_of(m.id) if not e.candidate]
    if not entries:
        return []
    engines = turn_engines(question, _before(said[0], [], memory, project), memory.tagger)
    chips = chips_for(entries, answer, engines, project, ledger)
    if chips:
        memory.note_turn(OP_TURN_CHIPS, {"message_id": answer.id, "question_id": question.id if question else "",
                                         "chips": [c.entry.to_json() for c in chips]}, project=project)
    return chips


def note_answer(chip: Chip, answer: str, chips_of_turn: list[Chip], memory, noted: bool) -> int:
    """Journal what the artist did with ``chip`` (the turn's chips first, if they were never noted:
    a value turned down leaves the ledger, and must not leave the turn). Returns when, in ms; the
    chip itself is the window's to change."""
    ts = now_ms()
    if not noted:
        memory.note_turn(OP_TURN_CHIPS, {"message_id": chip.message_id, "question_id": "",
                                         "chips": [c.entry.to_json() for c in chips_of_turn]}, project=chip.project)
    memory.note_turn(OP_CHIP_ANSWER, {"message_id": chip.message_id, "entry_id": chip.entry.id, "answer": answer,
                                      "ts_ms": ts}, project=chip.project).result()
    return ts

"""What a chip under an answer says about a setting the turn stated — only what is true now.

A chip is a ledger entry (a setting and value a message stated) seen against the ledger as it is:

* **in use** — an applied value that is the current one for its setting, in the engine the turn is
  about (its message's, else the project's): a value read from a pasted log of another engine is
  not in use here;
* **replaced** — an applied value a newer one has replaced (the newer value retires it);
* **another engine** — an applied value of an engine the turn is not about;
* **suggested** — a proposal; **in use already** when it proposes the value in force;
* **turned down** — a value the writer said no to.

Other statuses a ledger entry may carry (a value the ledger is unsure of: "to confirm") pass through
as they are; a chip may carry a question in place of its status word. Pure: no Qt, no I/O.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from app.core.render_settings.parameters import format_value, same_value

APPLIED, PROPOSED, REJECTED = "applied", "proposed", "rejected"  # app.core.render_settings.extraction's (not imported: the window's first paint)

IN_USE, REPLACED, ELSEWHERE, SUGGESTED, ALREADY, TURNED_DOWN, NOT_IN_USE, TO_CONFIRM = (
    "in_use", "replaced", "elsewhere", "suggested", "already", "turned_down", "not_in_use", "to_confirm")
WORDS = {IN_USE: "in use", REPLACED: "replaced by {now}", ELSEWHERE: "another engine", SUGGESTED: "suggested",
         ALREADY: "in use already", TURNED_DOWN: "turned down", NOT_IN_USE: "no longer in use",
         TO_CONFIRM: "to confirm"}
ANSWERABLE = (SUGGESTED, REPLACED, ELSEWHERE, NOT_IN_USE, IN_USE, TO_CONFIRM)
_RANK = {APPLIED: 0, PROPOSED: 1, REJECTED: 2}
ENGINE_NAMES = {"vray": "V-Ray"}


@dataclass
class Chip:
    """A setting and value a turn stated, under its answer: what it is now and what the artist did."""

    entry: object  # app.core.render_settings.ledger.Entry
    message_id: str = ""  # the answer it is shown under
    project: str = ""
    engines: tuple[str, ...] = ()  # the engines the turn is about (its message's, else the project's)
    status: str = SUGGESTED  # one of the keys above, or a status of the ledger's own ("to_confirm")
    words: str = ""  # the status as shown ("replaced by 8")
    question: str = ""  # a question the chip asks in place of its status ("256 or 128 for brute-force rays?")
    answer: str = ""  # what the artist did: "used", "corrected to 6", "turned down" ("" not yet)
    answered_ms: int = 0

    @property
    def label(self) -> str:
        e = self.entry
        engine = ENGINE_NAMES.get(e.engine, e.engine.capitalize())
        name = (e.name or e.parameter).replace("_", " ") + (f" ({e.scope})" if getattr(e, "scope", "") else "")
        return " ".join(x for x in (engine, name, format_value(e.value, e.unit)) if x)

    @property
    def answerable(self) -> bool:
        return not self.answer and self.status in ANSWERABLE

    def restate(self, current) -> bool:
        """Its status against ``current`` (app.core.render_settings.ledger.Current for its setting — the decided value,
        any value to confirm — or the entry in force, or None); whether it changed."""
        key = status_of(self.entry, current, self.engines)
        said = words(key, getattr(current, "decision", current))
        asks = getattr(current, "question", "") if key == TO_CONFIRM else ""
        changed = (key, said, asks) != (self.status, self.words, self.question)
        self.status, self.words, self.question = key, said, asks
        return changed


def status_of(entry, current, engines: tuple[str, ...] = ()) -> str:
    """The chip's status for ``entry`` (app.core.render_settings.ledger.Entry), given ``current`` — the setting as the
    ledger holds it (a Current: its decision, and the readings to confirm), or the entry in force, or
    None — and the ``engines`` the turn is about (empty: any). A reading the ledger is unsure of asks
    (issue 30): "to confirm", with the question."""
    if getattr(current, "unsure", False) and any(d.id == entry.id for d in current.doubts):
        return TO_CONFIRM
    current = getattr(current, "decision", current)  # the value decided: what "in use" means
    if entry.status == APPLIED:
        if entry.engine and engines and entry.engine not in engines:
            return ELSEWHERE
        if current is None:
            return NOT_IN_USE
        return IN_USE if same_value(current.value, entry.value) else REPLACED
    if entry.status == PROPOSED:
        return ALREADY if current is not None and same_value(current.value, entry.value) else SUGGESTED
    if entry.status == REJECTED:
        return TURNED_DOWN
    return entry.status


_FENCE = re.compile(r"^\s*(```|~~~).*?^\s*\1[^\n]*$", re.M | re.S)
_LOG_LINE = re.compile(r"^\s*(\[|<|\d{1,4}[-/:.]\d\d[-/:.]\d\d|#!|>)")
_REPORT_LINE = re.compile(r"^\s*[\w .()/-]{1,60}\s*[:=]\s*\S.{0,60}$")


def prose(text: str) -> str:
    """The writer's own words in ``text``: without pasted code, log lines ("[Redshift] …", time
    stamps) and runs of three or more "name: value" report lines — what names the engine a
    message is about, where a pasted log of another engine does not."""
    text = _FENCE.sub(" ", text)
    lines = text.splitlines()
    report = [bool(_REPORT_LINE.match(ln)) for ln in lines]
    kept = []
    for i, line in enumerate(lines):
        run = report[i] and (sum(report[max(0, i - 2):i + 3]) >= 3)
        if not run and not _LOG_LINE.match(line):
            kept.append(line)
    return "\n".join(kept)


def words(key: str, current=None) -> str:
    """A status in the artist's words ("replaced by 8")."""
    now = format_value(current.value, current.unit) if current is not None else ""
    return WORDS.get(key, key.replace("_", " ")).format(now=now)


def one_per_value(entries: list) -> list:
    """One chip per setting and value: a value said as applied is not offered again as a
    suggestion in the same turn (the first-met order of the settings is kept)."""
    best: dict[tuple, object] = {}
    for e in entries:
        key = (e.engine, e.parameter, format_value(e.value, e.unit))
        if key not in best or _RANK.get(e.status, 3) < _RANK.get(best[key].status, 3):
            best[key] = e
    return list(best.values())

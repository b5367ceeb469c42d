"""The settings ledger: for each (engine, parameter, scope) the decided value, what the last scene
holds, and the whole history.

Rules (pure, replayable): an **applied** value supersedes the previous one; a **proposal** never
changes the current value; a **rejection** of the current value (or of "it", no value) restores
the applied value before it; a rejection of any other value changes nothing. A reading the status
model was **unsure** of (``sure`` False) never changes the decision: it leaves the setting *to
confirm* (the value decided, and the one in doubt) until a sure reading or the artist settles it.
The artist's own corrections (``set``/``unset``) are applied entries like any other, marked
``by="artist"``, and they are the newest fact when they are journaled, whatever the dates of the
messages journaled before them; ``retract`` takes an entry out (its message was deleted or edited).
What a scene file holds (``by="scene"``) is kept beside the decision, never as it. History is
ordered by time, then by arrival, so an imported day slots in where it happened.

The **scope** is the named light, camera, output or object a value belongs to ("key", "cam_hero",
"turntable"); "" is render-wide (and every ledger written before scopes existed).

In a project shared with a team, arrival is the place in the shared order (the studio server's
sequence once known; this Kelvin's events not yet on the server after it), every entry says who
made it (``author``, ``origin``: their Kelvin) and how much of the shared order they had seen
(``seen``). Two applied values of one parameter made on two Kelvins, neither having seen the other,
are a **conflict**: the current value carries the other(s) until someone sets it again having seen
both.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace

from app.core.render_settings.mentions import APPLIED, PROPOSED, REJECTED
from app.core.render_settings.parameters import ANY, Value, format_value, same_value
from app.core.render_settings.scopes import object_key
from app.core.render_settings.trust import TrustModel
from app.core.render_settings.trust import features as trust_features

UNSET = "unset"
ENTRY_STATUSES = (APPLIED, PROPOSED, REJECTED, UNSET)


@dataclass(frozen=True)
class Entry:
    id: str  # "<source event seq>.<n>", unique and stable across replays
    engine: str
    parameter: str
    value: Value
    unit: str
    status: str
    ts_ms: int
    source_id: str = ""  # the message it came from ("" for the artist's manual edits)
    domain: str = "general"
    name: str = ""
    by: str = "rules"  # rules | model | artist
    candidate: bool = False
    order: int = 0  # arrival (journal seq), the tie-break after ts_ms
    note: str = ""  # the artist's why, for a value set by hand; the file and scene, for a scene's value
    scope: str = ""  # the named light, camera, output or object ("" render-wide)
    sure: bool = True  # False: a reading the status model was unsure of (the ledger asks)
    author: str = ""  # who said or set it (a shared project's artist; "" in a personal project)
    origin: str = ""  # the Kelvin it was made on (shared projects)
    seen: int = 0  # the shared order as its author had seen it when made (shared projects)
    confidence: float = 1.0  # how sure the status model was of the reading (1.0: the rules, or by hand)
    confirmed: bool = False  # a proposal taken by "ok"/"done", its value unsaid
    restore: bool = False  # said as a return to an earlier value ("back to 4")
    before: bool = False  # the value in use before a change the message told ("from 2000 to 4000": 2000)

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.engine, self.parameter, self.scope)

    def to_json(self) -> dict:
        d = asdict(self)
        d["value"] = list(self.value) if isinstance(self.value, tuple) else self.value
        if not d["scope"]:
            del d["scope"]
        if d["sure"]:
            del d["sure"]
        if d["confidence"] >= 1.0:
            del d["confidence"]
        else:
            d["confidence"] = round(d["confidence"], 3)
        for flag in ("confirmed", "restore", "before"):
            if not d[flag]:
                del d[flag]
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Entry":
        value = d.get("value")
        source, note = str(d.get("source_id") or ""), str(d.get("note") or "")
        if d.get("by") == "artist" and "note" not in d:  # written before notes had their own field
            source, note = "", source
        return cls(id=str(d["id"]), engine=str(d.get("engine") or ANY), parameter=str(d["parameter"]),
                   value=tuple(value) if isinstance(value, list) else value, unit=str(d.get("unit") or ""),
                   status=str(d["status"]), ts_ms=int(d["ts_ms"]), source_id=source,
                   domain=str(d.get("domain") or "general"), name=str(d.get("name") or ""),
                   by=str(d.get("by") or "rules"), candidate=bool(d.get("candidate")), order=int(d.get("order") or 0),
                   note=note, scope=str(d.get("scope") or ""), sure=d.get("sure", True) is not False,
                   author=str(d.get("author") or ""), origin=str(d.get("origin") or ""), seen=int(d.get("seen") or 0),
                   confidence=_fraction(d.get("confidence", 1.0)), confirmed=d.get("confirmed") is True,
                   restore=d.get("restore") is True, before=d.get("before") is True)


def _fraction(x) -> float:
    try:
        return min(1.0, max(0.0, float(x)))
    except (TypeError, ValueError):
        return 1.0


@dataclass(frozen=True)
class Current:
    """One setting as the CLI, the prompt, recall mode and the window show it: the value decided
    (in conversation or by hand), a value in doubt if the last reading was unsure, and what the last
    scene imported holds — two facts, never one."""

    decision: Entry | None  # the applied entry in force (None: nothing decided yet)
    previous: Entry | None  # the applied entry before it (what a rejection would restore)
    changed: int  # how many times an applied value replaced another
    pending: Entry | None = None  # an unsure reading since the decision: the value to confirm (or a doubt)
    held: Entry | None = None  # the last scene's value (file and scene in its note)
    doubts: tuple[Entry, ...] = ()  # every unsure reading of the message that left it to confirm
    conflict: tuple[Entry, ...] = ()  # other values set on other Kelvins without seeing this one (shared projects)
    doubted: bool = False  # the decision itself is in doubt (the trust model, ``trust.py``): asked, not asserted

    @property
    def entry(self) -> Entry:
        """What stands for the setting: the decision, else the value to confirm, else the file's."""
        e = self.decision or self.pending or self.held
        assert e is not None
        return e

    @property
    def unsure(self) -> bool:
        """The ledger does not assert a value: a reading since the decision needs confirming."""
        return self.pending is not None

    @property
    def alternatives(self) -> list[Entry]:
        """The values a question to the artist offers: the ones in doubt in the order they were said,
        then the one decided ("No, keep 256 … blotchy at 128" → "256 or 128 for brute-force rays?")."""
        said = [e for e in (*self.doubts, self.decision) if e is not None and e.value is not None]
        return [e for n, e in enumerate(said) if not any(same_value(e.value, o.value) for o in said[:n])]

    @property
    def question(self) -> str:
        """What the chip and the Settings tab ask about a value to confirm: "256 or 128 for brute-force
        rays?" (one value: "Brute-force rays 128 now?"; "" when nothing is in doubt)."""
        if not self.unsure:
            return ""
        name = (self.entry.name or self.entry.parameter).replace("_", " ")
        name = name[:1].lower() + name[1:] if not name[:2].isupper() else name
        if self.entry.scope:
            name += f" ({self.entry.scope})"
        choices = [format_value(a.value, a.unit) for a in self.alternatives]
        if self.doubted and len(choices) == 1:
            return f"Still {choices[0]} for {name}?"
        if len(choices) >= 2:
            return f"{' or '.join(choices)} for {name}?"
        if choices and self.pending is not None and self.pending.status == REJECTED:
            return f"Still {choices[0]} for {name}?"
        return f"{name[:1].upper() + name[1:]} {choices[0]} now?" if choices else f"What is {name} now?"

    @property
    def differs(self) -> bool:
        """The scene holds another value than the one decided."""
        return self.decision is not None and self.held is not None and not same_value(self.decision.value,
                                                                                        self.held.value)

    def to_json(self) -> dict:
        e = self.entry
        return {"engine": e.engine or None, "parameter": e.parameter, "name": e.name or e.parameter,
                "scope": e.scope or None,
                "value": _plain(e.value) if self.decision is not None else None, "unit": e.unit,
                "status": e.status if self.decision is not None else ("to confirm" if self.pending else "in the file"),
                "set_at": e.ts_ms, "source_id": e.source_id or None, "domain": e.domain,
                "by": e.by, "candidate": e.candidate, "note": e.note or None,
                **({"author": e.author} if e.author else {}),
                **({"conflict": [{"author": c.author, "value": list(c.value) if isinstance(c.value, tuple) else c.value,
                                  "unit": c.unit, "set_at": c.ts_ms} for c in self.conflict]} if self.conflict else {}),
                "previous": None if self.previous is None else {
                    "value": _plain(self.previous.value), "unit": self.previous.unit, "set_at": self.previous.ts_ms},
                "to_confirm": None if self.pending is None else {
                    "value": _plain(self.pending.value), "unit": self.pending.unit, "status": self.pending.status,
                    "said_at": self.pending.ts_ms, "source_id": self.pending.source_id or None,
                    "choices": [_plain(a.value) for a in self.alternatives]},
                "in_file": None if self.held is None else {
                    "value": _plain(self.held.value), "unit": self.held.unit, "read_at": self.held.ts_ms,
                    "source": self.held.note or None, "differs": self.differs}}


def _plain(value: Value):
    return list(value) if isinstance(value, tuple) else value


def in_order(history: list[Entry]) -> list[Entry]:
    """Entries by time, then arrival — but the artist's own corrections come after everything
    journaled before them, whatever those messages' dates say: set by hand is the newest fact."""
    latest = 0
    placed = []
    for e in sorted(history, key=lambda e: (e.order, e.id)):
        at = max(e.ts_ms, latest) if e.by == "artist" else e.ts_ms
        latest = max(latest, at)
        placed.append((at, e))
    return [e for _, e in sorted(placed, key=lambda p: (p[0], p[1].order, p[1].id))]


def _decision(e: Entry) -> bool:
    """An applied value someone decided (said or set by hand), as opposed to one read from a scene file."""
    return e.status == APPLIED and not e.candidate and e.by != "scene" and bool(e.origin)


def concurrent(a: Entry, b: Entry) -> bool:
    """Made on two Kelvins, neither having seen the other (each one's place in the shared order is
    after what the other's author had seen)."""
    return a.origin != b.origin and a.order > b.seen and b.order > a.seen


def fold(history: list[Entry]) -> Current | None:
    """The setting after ``history`` (one parameter and scope, any order); in a shared project, with
    the values that conflict with the decision."""
    stack: list[Entry] = []
    changes = 0
    doubts: list[Entry] = []  # the unsure readings of the last message that had any, since the decision
    held: Entry | None = None
    for e in in_order(history):
        if e.by == "scene":
            held = e
            continue
        if not e.sure and e.status in (APPLIED, REJECTED):
            if doubts and (doubts[-1].source_id, doubts[-1].order) != (e.source_id, e.order):
                doubts = []  # a newer message is in doubt: its readings are the question
            doubts.append(e)
            continue
        if e.status == APPLIED:
            doubts = []
            if stack and same_value(stack[-1].value, e.value):
                stack[-1] = e  # said again: the latest source and time, not a change
                continue
            if stack:
                changes += 1
            stack.append(e)
        elif e.status == REJECTED:
            if doubts and (e.value is None or any(d.value is not None and same_value(d.value, e.value) for d in doubts)):
                doubts = []  # the value in doubt is turned down: the decision stands
                continue
            if stack and (e.value is None or same_value(stack[-1].value, e.value)):
                stack.pop()
                changes += 1
                doubts = []
        elif e.status == UNSET:
            stack.clear()
            doubts = []
    decision = stack[-1] if stack else None
    if doubts and not _asks(doubts, decision):
        doubts = []
    if decision is None and not doubts and held is None:
        return None
    conflict: dict[tuple, Entry] = {}
    if decision is not None and _decision(decision):
        for e in history:
            if _decision(e) and concurrent(e, decision) and not same_value(e.value, decision.value):
                conflict.setdefault((e.origin, repr(e.value)), e)  # one per Kelvin and value
    return Current(decision=decision, previous=stack[-2] if len(stack) > 1 else None, changed=changes,
                   pending=doubts[-1] if doubts else None, held=held, doubts=tuple(doubts),
                   conflict=tuple(sorted(conflict.values(), key=lambda e: (e.ts_ms, e.order, e.id))))


def _asks(doubts: list[Entry], decision: Entry | None) -> bool:
    """Unsure readings leave a question only if one of them could change what stands: a value other
    than the decided one said as applied (or as turned down, when nothing is decided), or the decided
    value itself doubted."""
    for d in doubts:
        if d.value is None:
            if d.status == REJECTED and decision is not None:
                return True  # "that didn't help?": the decision is in doubt
            continue
        same = decision is not None and same_value(decision.value, d.value)
        if d.status == APPLIED and not same:
            return True
        if d.status == REJECTED and (same or decision is None):
            return True
    return False


class Ledger:
    """One project's ledger in memory: entries by parameter, retractions applied.

    Entries are indexed by id, by parameter and by the message they came from, so adding or
    retracting costs what it touches — never a walk over every entry (a project with 20k mentions
    of one setting retracts a deleted message's entries as fast as a new project does)."""

    def __init__(self, trust: TrustModel | None = None) -> None:
        self.trust = trust  # whether a decided value may be stated (None: every decision is)
        self._by_key: dict[tuple[str, str, str], dict[str, Entry]] = {}
        self._scopes: dict[tuple[str, str], dict[str, None]] = {}  # (engine, parameter) → its scopes
        self._objects: dict[str, str] = {}  # object_key → the scope name first used for that object
        self._by_id: dict[str, Entry] = {}
        self._by_source: dict[str, dict[str, None]] = {}  # source id → entry ids (ordered)
        self._retracted: set[str] = set()  # never added again (a replay of what came before its retraction)
        self._cache: dict[tuple[str, str, str], Current | None] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, entry: Entry) -> bool:
        if entry.id in self._by_id or entry.id in self._retracted:
            return False  # a replay: already here, or taken out since
        if entry.scope:  # "heroes", "hero stills" after "hero": one object, under the name said first
            same = self._objects.setdefault(object_key(entry.scope), entry.scope)
            if same != entry.scope:
                entry = replace(entry, scope=same)
        self._by_id[entry.id] = entry
        self._by_key.setdefault(entry.key, {})[entry.id] = entry
        self._scopes.setdefault(entry.key[:2], {})[entry.scope] = None
        if entry.source_id:
            self._by_source.setdefault(entry.source_id, {})[entry.id] = None
        self._forget_answers(entry)
        return True

    def _forget_answers(self, entry: Entry) -> None:
        """An entry changes its own setting's answer — and, through the trust model, the answers of the
        same parameter on its other lights, cameras and outputs."""
        if self.trust is None:
            self._cache.pop(entry.key, None)
            return
        for scope in self._scopes.get(entry.key[:2], ()):
            self._cache.pop((entry.engine, entry.parameter, scope), None)

    def retract(self, source_id: str = "", entry_id: str = "") -> list[Entry]:
        """Take out the entries from one message (or one entry). Returns what was taken out."""
        ids = list(self._by_source.get(source_id, ())) if source_id else []
        if entry_id and entry_id in self._by_id:
            ids.append(entry_id)
        return [self._take(i) for i in dict.fromkeys(ids)]

    def forget(self, entry_id: str) -> Entry | None:
        """Take an entry out as if it had never been added (not marked retracted): the undo of a
        tentative add in a shared project, which is applied again in the shared order."""
        entry = self._by_id.get(entry_id)
        if entry is None:
            return None
        self._take(entry_id)
        self._retracted.discard(entry_id)
        return entry

    def unretract(self, entry: Entry) -> None:
        """Put back an entry a tentative retraction took out (the undo of :meth:`retract`)."""
        self._retracted.discard(entry.id)
        self.add(entry)

    def _take(self, entry_id: str) -> Entry:
        entry = self._by_id.pop(entry_id)
        self._retracted.add(entry_id)
        del self._by_key[entry.key][entry_id]
        if entry.source_id:
            mine = self._by_source[entry.source_id]
            del mine[entry_id]
            if not mine:
                del self._by_source[entry.source_id]
        self._forget_answers(entry)
        return entry

    def of_source(self, source_id: str) -> list[Entry]:
        """The entries a message gave: by parameter (in the order the ledger first met each), then by time."""
        mine = [self._by_id[i] for i in self._by_source.get(source_id, ())]
        if len(mine) < 2:
            return mine
        place = {k: n for n, k in enumerate(self._by_key)}
        return sorted(mine, key=lambda e: (place[e.key], e.ts_ms, e.order, e.id))

    def object(self, scope: str) -> str:
        """The name the ledger keeps an object under ("heroes" → "hero" once "hero" was said first)."""
        return self._objects.get(object_key(scope), scope) if scope else ""

    def history(self, engine: str, parameter: str, scope: str = "") -> list[Entry]:
        return in_order(list(self._by_key.get((engine, parameter, self.object(scope)), {}).values()))

    def current(self, engine: str, parameter: str, scope: str = "") -> Current | None:
        key = (engine, parameter, self.object(scope))
        if key not in self._cache:
            cur = fold(list(self._by_key.get(key, {}).values()))
            self._cache[key] = cur if cur is None or self.trust is None else self._checked(cur, key)
        return self._cache[key]

    def _checked(self, cur: Current, key: tuple[str, str, str]) -> Current:
        """The decision, or — when the trust model doubts a reading of conversation — the decision
        asked about ("Still 128 for brute-force rays?"). What the artist set by hand is never doubted."""
        d = cur.decision
        if d is None or cur.unsure or d.by not in ("rules", "model") or d.candidate:
            return cur
        siblings = {scope: self.history(key[0], key[1], scope) for scope in self._scopes.get(key[:2], ())
                    if scope != key[2] and self._by_key.get((key[0], key[1], scope))}
        assert self.trust is not None
        if self.trust.trusts(trust_features(d, self.history(*key), siblings, cur.changed)):
            return cur
        return replace(cur, pending=d, doubts=(d,), doubted=True)

    def currents(self, engine: str | None = None, candidates: bool = False) -> list[Current]:
        out = []
        for eng, param, scope in self._by_key:
            if engine is not None and eng != engine:
                continue
            cur = self.current(eng, param, scope)
            if cur is not None and (candidates or not cur.entry.candidate):
                out.append(cur)
        return sorted(out, key=lambda c: (c.entry.engine, c.entry.domain, c.entry.parameter, c.entry.scope))

    def keys(self) -> list[tuple[str, str, str]]:
        return [k for k, entries in self._by_key.items() if entries]

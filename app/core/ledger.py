"""The settings ledger: for each (engine, parameter) the current value and its whole history.

Rules (pure, replayable): an **applied** value supersedes the previous one; a **proposal** never
changes the current value; a **rejection** of the current value (or of "it", no value) restores
the applied value before it; a rejection of any other value changes nothing. The artist's own
corrections (``set``/``unset``) are applied entries like any other, marked ``by="artist"``;
``retract`` takes an entry out (its message was deleted or edited). History is ordered by time,
then by arrival, so an imported day slots in where it happened.

In a project shared with a team, arrival is the place in the shared order (the studio server's
sequence once known; this Kelvin's events not yet on the server after it), every entry says who
made it (``author``, ``origin``: their Kelvin) and how much of the shared order they had seen
(``seen``). Two applied values of one parameter made on two Kelvins, neither having seen the other,
are a **conflict**: the current value carries the other(s) until someone sets it again having seen
both.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from app.core.extraction import APPLIED, PROPOSED, REJECTED
from app.core.parameters import ANY, Value, same_value

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
    note: str = ""  # the artist's why, for a value set by hand
    author: str = ""  # who said or set it (a shared project's artist; "" in a personal project)
    origin: str = ""  # the Kelvin it was made on (shared projects)
    seen: int = 0  # the shared order as its author had seen it when made (shared projects)

    @property
    def key(self) -> tuple[str, str]:
        return (self.engine, self.parameter)

    def to_json(self) -> dict:
        d = asdict(self)
        d["value"] = list(self.value) if isinstance(self.value, tuple) else self.value
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
                   note=note, author=str(d.get("author") or ""), origin=str(d.get("origin") or ""),
                   seen=int(d.get("seen") or 0))


@dataclass(frozen=True)
class Current:
    """A parameter's current value, as the CLI, the prompt and recall mode show it."""

    entry: Entry  # the applied entry in force
    previous: Entry | None  # the applied entry before it (what a rejection would restore)
    changed: int  # how many times an applied value replaced another
    conflict: tuple[Entry, ...] = ()  # other values set on other Kelvins without seeing this one (shared projects)

    def to_json(self) -> dict:
        e = self.entry
        return {"engine": e.engine or None, "parameter": e.parameter, "name": e.name or e.parameter,
                "value": list(e.value) if isinstance(e.value, tuple) else e.value, "unit": e.unit,
                "status": e.status, "set_at": e.ts_ms, "source_id": e.source_id or None, "domain": e.domain,
                "by": e.by, "candidate": e.candidate, "note": e.note or None,
                **({"author": e.author} if e.author else {}),
                **({"conflict": [{"author": c.author, "value": list(c.value) if isinstance(c.value, tuple) else c.value,
                                  "unit": c.unit, "set_at": c.ts_ms} for c in self.conflict]} if self.conflict else {}),
                "previous": None if self.previous is None else {
                    "value": list(self.previous.value) if isinstance(self.previous.value, tuple) else self.previous.value,
                    "unit": self.previous.unit, "set_at": self.previous.ts_ms}}


def _decision(e: Entry) -> bool:
    """An applied value someone decided (said or set by hand), as opposed to one read from a scene file."""
    return e.status == APPLIED and not e.candidate and e.by != "scene" and bool(e.origin)


def concurrent(a: Entry, b: Entry) -> bool:
    """Made on two Kelvins, neither having seen the other (each one's place in the shared order is
    after what the other's author had seen)."""
    return a.origin != b.origin and a.order > b.seen and b.order > a.seen


def fold(history: list[Entry]) -> Current | None:
    """The current value after ``history`` (one parameter, any order); in a shared project, with the
    values that conflict with it."""
    stack: list[Entry] = []
    changes = 0
    for e in sorted(history, key=lambda e: (e.ts_ms, e.order, e.id)):
        if e.status == APPLIED:
            if stack and same_value(stack[-1].value, e.value):
                stack[-1] = e  # said again: the latest source and time, not a change
                continue
            if stack:
                changes += 1
            stack.append(e)
        elif e.status == REJECTED:
            if stack and (e.value is None or same_value(stack[-1].value, e.value)):
                stack.pop()
                changes += 1
        elif e.status == UNSET:
            stack.clear()
    if not stack:
        return None
    top = stack[-1]
    conflict: dict[tuple, Entry] = {}
    if _decision(top):
        for e in history:
            if _decision(e) and concurrent(e, top) and not same_value(e.value, top.value):
                conflict.setdefault((e.origin, repr(e.value)), e)  # one per Kelvin and value
    return Current(entry=top, previous=stack[-2] if len(stack) > 1 else None, changed=changes,
                   conflict=tuple(sorted(conflict.values(), key=lambda e: (e.ts_ms, e.order, e.id))))


class Ledger:
    """One project's ledger in memory: entries by parameter, retractions applied.

    Entries are indexed by id, by parameter and by the message they came from, so adding or
    retracting costs what it touches — never a walk over every entry (a project with 20k mentions
    of one setting retracts a deleted message's entries as fast as a new project does)."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], dict[str, Entry]] = {}
        self._by_id: dict[str, Entry] = {}
        self._by_source: dict[str, dict[str, None]] = {}  # source id → entry ids (ordered)
        self._retracted: set[str] = set()  # never added again (a replay of what came before its retraction)
        self._cache: dict[tuple[str, str], Current | None] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def add(self, entry: Entry) -> bool:
        if entry.id in self._by_id or entry.id in self._retracted:
            return False  # a replay: already here, or taken out since
        self._by_id[entry.id] = entry
        self._by_key.setdefault(entry.key, {})[entry.id] = entry
        if entry.source_id:
            self._by_source.setdefault(entry.source_id, {})[entry.id] = None
        self._cache.pop(entry.key, None)
        return True

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
        self._cache.pop(entry.key, None)
        return entry

    def of_source(self, source_id: str) -> list[Entry]:
        """The entries a message gave: by parameter (in the order the ledger first met each), then by time."""
        mine = [self._by_id[i] for i in self._by_source.get(source_id, ())]
        if len(mine) < 2:
            return mine
        place = {k: n for n, k in enumerate(self._by_key)}
        return sorted(mine, key=lambda e: (place[e.key], e.ts_ms, e.order, e.id))

    def history(self, engine: str, parameter: str) -> list[Entry]:
        return sorted(self._by_key.get((engine, parameter), {}).values(), key=lambda e: (e.ts_ms, e.order, e.id))

    def current(self, engine: str, parameter: str) -> Current | None:
        key = (engine, parameter)
        if key not in self._cache:
            self._cache[key] = fold(list(self._by_key.get(key, {}).values()))
        return self._cache[key]

    def currents(self, engine: str | None = None, candidates: bool = False) -> list[Current]:
        out = []
        for eng, param in self._by_key:
            if engine is not None and eng != engine:
                continue
            cur = self.current(eng, param)
            if cur is not None and (candidates or not cur.entry.candidate):
                out.append(cur)
        return sorted(out, key=lambda c: (c.entry.engine, c.entry.domain, c.entry.parameter))

    def keys(self) -> list[tuple[str, str]]:
        return [k for k, entries in self._by_key.items() if entries]

"""The settings ledger as the rest of Kelvin uses it: current values, history, the artist's
corrections, and the lines that go into a turn's prompt (or a recall answer). Qt-free.

The ledger itself is a projection of each project's journal (app.memory.settings_book); this
service reads it (caught up first) and writes the artist's corrections as journal events.
"""
from __future__ import annotations

import logging

from app.core.context import when
from app.core.ledger import Current, Entry
from app.core.parameters import ANY, ParamSpec, format_value, parse_value, tokens
from app.core.records import RecordError, check_name, now_ms
from app.memory.settings_book import OP_SETTING_RETRACT, OP_SETTING_SET, OP_SETTING_UNSET, SettingsBook
from app.services.memory import MemoryService

log = logging.getLogger("kelvin.settings")

MAX_PROMPT_LINES = 12
_TOPIC_ONLY_DOMAINS = ("optimization", "lighting", "camera", "shading")


def engine_label(engine: str) -> str:
    return {"": "", "vray": "V-Ray", "octane": "Octane", "redshift": "Redshift", "arnold": "Arnold",
            "cycles": "Cycles", "karma": "Karma", "corona": "Corona"}.get(engine, engine.capitalize())


def describe(c: Current, with_source: bool = False) -> str:
    """"Octane GI clamp = 10 (set 2026-11-22 14:02; before: 25, set 09:10)"."""
    e, p = c.entry, c.previous
    label = " ".join(x for x in (engine_label(e.engine), e.name or e.parameter) if x)
    bits = [f"set {when(e.ts_ms)}" + (" by hand" if e.by == "artist" else "")]
    if with_source and e.source_id and e.by != "artist":
        bits[0] += f" in {e.source_id}"
    if p is not None:
        bits.append(f"before: {format_value(p.value, p.unit)}, set {when(p.ts_ms)}")
    return f"{label} = {format_value(e.value, e.unit)} ({'; '.join(bits)})"


class SettingsLedger:
    def __init__(self, memory: MemoryService):
        self.memory = memory
        self.catalogue = memory.extractor.cat

    # ---- reading -----------------------------------------------------------------------------------
    def book(self, project: str | None = None) -> SettingsBook:
        store = self.memory.store(project)
        if store.exists():
            self.memory._catch_up(store)
            if not store.writable and store.settings.seq < store.journal.last_seq():
                # another Kelvin holds the project: read what it wrote since, in memory
                store.settings.project(store.journal.read(after_seq=store.settings.seq), store._lookup,
                                       store.bare_message, persist=False)
        else:
            self.memory.flush()
        return store.settings

    def current(self, project: str | None = None, engine: str | None = None, candidates: bool = False) -> list[Current]:
        self.memory.flush()
        return self.book(project).currents(self._engine(engine) if engine else None, candidates)

    def resolve(self, name: str, engine: str | None = None, project: str | None = None) -> list[tuple[str, str]]:
        """The (engine, parameter) keys a name means: taxonomy synonyms first, then candidates stored
        in the ledger under that name."""
        eng = self._engine(engine) if engine else None
        keys = [s.ident for s in self.catalogue.lookup(name, eng)]
        if not keys:
            slug = "_".join(t for t, _ in tokens(name))
            keys = [k for k in self.book(project).keys() if k[1] == slug and (eng is None or k[0] == eng)]
        return keys

    def history(self, name: str, engine: str | None = None, project: str | None = None) -> list[tuple[tuple[str, str], list[Entry]]]:
        self.memory.flush()
        keys = self.resolve(name, engine, project)
        if not keys:
            raise RecordError(f"no setting called {name!r}" + (f" for {engine}" if engine else "")
                              + " (kelvin settings list shows what the ledger knows)")
        book = self.book(project)
        return [(k, book.history(*k)) for k in keys if book.history(*k)] or [(keys[0], [])]

    # ---- the artist's corrections --------------------------------------------------------------------
    def set(self, name: str, value: str, engine: str | None = None, project: str | None = None, note: str = "") -> Entry:
        spec = self._one(name, engine, project)
        try:
            parsed, unit = parse_value(spec, value)
        except ValueError as exc:
            raise RecordError(str(exc)) from None
        event = {"engine": spec.engine, "parameter": spec.key, "value": list(parsed) if isinstance(parsed, tuple) else parsed,
                 "unit": unit, "ts_ms": now_ms(), "name": spec.name, "domain": spec.domain, "note": note[:200]}
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_SET, event)]).result()
        return self.current_of(spec.ident, project).entry

    def confirm(self, entry: Entry, project: str | None = None, note: str = "confirmed in the chat") -> Entry:
        """The artist confirms a value Kelvin found in the conversation: it is applied, by the artist."""
        value = list(entry.value) if isinstance(entry.value, tuple) else entry.value
        event = {"engine": entry.engine, "parameter": entry.parameter, "value": value, "unit": entry.unit,
                 "ts_ms": now_ms(), "name": entry.name, "domain": entry.domain, "note": note[:200]}
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_SET, event)]).result()
        return self.current_of(entry.key, project).entry

    def unset(self, name: str, engine: str | None = None, project: str | None = None) -> None:
        keys = self.resolve(name, engine, project)
        if len(keys) > 1 and engine is None:
            keys = [k for k in keys if k[0] == self._project_engine(project)] or keys
        if len(keys) != 1:
            raise RecordError(self._ambiguity(name, keys))
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_UNSET, {"engine": keys[0][0], "parameter": keys[0][1],
                                                                   "ts_ms": now_ms()})]).result()

    def retract(self, entry_id: str, project: str | None = None) -> None:
        """Take one wrongly extracted entry out of the history (journaled)."""
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_RETRACT, {"entry_id": check_name(entry_id, "entry id")})]).result()

    def current_of(self, key: tuple[str, str], project: str | None = None) -> Current | None:
        self.memory.flush()
        book = self.book(project)
        return next((c for c in book.currents(candidates=True) if c.entry.key == key), None)

    # ---- for the conversation ----------------------------------------------------------------------
    def relevant(self, project: str, question: str) -> tuple[str, ...]:
        """Current values a question is about: the parameters it names, else (for a question about
        noise, light, the camera …) the current values of that domain. One line each."""
        book = self.book(project)
        currents = book.currents()
        if not currents:
            return ()
        toks = [t for t, _ in tokens(question[:4000])]
        named: list[tuple[str, str]] = []
        engines: set[str] = set()
        for _, _, what in self.catalogue.find(toks):
            if isinstance(what, str):
                engines.add(what)
            else:
                named += [s.ident for s in what]
        chosen = [c for c in currents if c.entry.key in named and (not engines or c.entry.engine in engines | {ANY})]
        if not chosen:
            slug = " ".join(toks)
            chosen = [c for c in book.currents(candidates=True)
                      if c.entry.candidate and c.entry.parameter.replace("_", " ") in slug]
        if not chosen:
            domain = self.memory.tagger.tag(question[:4000]).domain  # what the question is about
            if domain in _TOPIC_ONLY_DOMAINS:
                chosen = [c for c in currents if c.entry.domain == domain
                          and (not engines or c.entry.engine in engines | {ANY})]
        chosen.sort(key=lambda c: -c.entry.ts_ms)
        return tuple(describe(c) for c in chosen[:MAX_PROMPT_LINES])

    # ---- helpers -----------------------------------------------------------------------------------
    def _engine(self, engine: str) -> str:
        e = engine.strip().lower().replace("-", "")
        if e in ("any", "none", "", "camera"):
            return ANY
        for words, name in self.catalogue.engines.items():
            if " ".join(words).replace("-", "") == e or name == e:
                return name
        if e in self.catalogue.engine_list:
            return e
        raise RecordError(f"unknown engine {engine!r} (known: {', '.join(x for x in self.catalogue.engine_list)})")

    def _project_engine(self, project: str | None) -> str:
        """The engine the project's conversation has been about lately ("" if none)."""
        return self.book(project).engine if self.memory.store(project).exists() else ""

    def _one(self, name: str, engine: str | None, project: str | None = None) -> ParamSpec:
        eng = self._engine(engine) if engine else None
        specs = self.catalogue.lookup(name, eng)
        if len(specs) > 1 and eng is None:  # "max samples": the engine the project is talking about
            specs = [s for s in specs if s.engine == self._project_engine(project)] or specs
        if len(specs) == 1:
            return specs[0]
        if not specs:
            raise RecordError(f"no setting called {name!r}" + (f" for {engine}" if engine else "")
                              + " in the taxonomy (add it to taxonomy.toml in Kelvin's config folder)")
        raise RecordError(self._ambiguity(name, [s.ident for s in specs]))

    @staticmethod
    def _ambiguity(name: str, keys: list[tuple[str, str]]) -> str:
        if not keys:
            return f"no setting called {name!r} in the ledger"
        return (f"{name!r} is a setting of several engines ({', '.join(engine_label(e) or 'any' for e, _ in keys)}); "
                "add --engine")

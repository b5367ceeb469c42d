"""The settings ledger as the rest of Kelvin uses it: current values, history, the artist's
corrections, and the lines that go into a turn's prompt (or a recall answer). Qt-free.

The ledger itself is a projection of each project's journal (app.memory.settings_book); this
service reads it (caught up first) and writes the artist's corrections as journal events.
"""
from __future__ import annotations

import logging
import re
from dataclasses import replace

from app.core.context import when
from app.core.render_settings.ledger import Current, Entry
from app.core.render_settings.parameters import ANY, ParamSpec, check_value, format_value, parse_value, tokens
from app.core.records import RecordError, check_name, now_ms
from app.core.render_settings.scopes import scope_key
from app.core.render_settings.scene import Difference, Scene, SceneValue, difference_line, differences
from app.memory.settings_book import (OP_SETTING_RETRACT, OP_SETTING_SCENE, OP_SETTING_SET, OP_SETTING_UNSET,
                                      SettingsBook)
from app.services.memory import MemoryService

log = logging.getLogger("kelvin.settings")

MAX_PROMPT_LINES = 12
_SCENE_QUESTION = re.compile(r"\bscene\b.{0,60}\b(?:match|matches|differ|differs|different|decided|agree|same)\b"
                             r"|\b(?:match|differ|decided)\b.{0,60}\bscene\b", re.IGNORECASE | re.DOTALL)
_TOPIC_ONLY_DOMAINS = ("optimization", "lighting", "camera", "shading")


def engine_label(engine: str) -> str:
    return {"": "", "vray": "V-Ray", "octane": "Octane", "redshift": "Redshift", "arnold": "Arnold",
            "cycles": "Cycles", "karma": "Karma", "corona": "Corona"}.get(engine, engine.capitalize())


def setting_label(e: Entry) -> str:
    """"Octane GI clamp", "Light temperature (key)"."""
    label = " ".join(x for x in (engine_label(e.engine), e.name or e.parameter) if x)
    return f"{label} ({e.scope})" if e.scope else label


def describe(c: Current, with_source: bool = False) -> str:
    """One setting as every place that shows a current value says it: the decision, the value in
    doubt when the last reading was unsure, and the file's value beside it when they differ.

    "Octane GI clamp = 10 (set 2026-11-22 14:02; before: 25, set 09:10)";
    "Redshift Brute-force rays = 256 or 128 — to confirm (decided 256, set …; 128 said …, unclear)";
    "Octane GI clamp = 10 — to confirm (set …, not sure it still holds)" (the trust model doubts it);
    "Cycles Max samples = 512 (set …; in the file forest.blend · scene 'Scene': 777)";
    "Cycles Clamp indirect: not decided (in the file forest.blend · scene 'Scene': 10)"."""
    label = setting_label(c.entry)
    d, p = c.decision, c.previous
    held = ""
    if c.held is not None and (d is None or c.differs):
        held = f"in the file {c.held.note or 'imported'}: {format_value(c.held.value, c.held.unit)}"
    if c.doubted and d is not None:  # the trust model doubts the decision itself (later talk may have changed it)
        bits = [f"set {when(d.ts_ms)}, not sure it still holds"] + ([held] if held else [])
        return f"{label} = {format_value(d.value, d.unit)} — to confirm ({'; '.join(bits)})"
    if c.unsure:
        q = c.pending
        choices = " or ".join(format_value(a.value, a.unit) for a in c.alternatives) or "?"
        said = ("turned down" if q.status == "rejected" else "said") + f" {when(q.ts_ms)}"
        bits = ([f"decided {format_value(d.value, d.unit)}, set {when(d.ts_ms)}"] if d is not None else []) + \
            [f"{format_value(q.value, q.unit) if q.value is not None else 'it'} {said}, unclear"] + ([held] if held else [])
        return f"{label} = {choices} — to confirm ({'; '.join(bits)})"
    if d is None:
        return f"{label}: not decided ({held})"
    said = f"{d.author}, {when(d.ts_ms)}" if d.author else f"set {when(d.ts_ms)}"  # who, in a shared project
    bits = [said + (" by hand" if d.by == "artist" else "")]
    if with_source and d.source_id and d.by != "artist":
        bits[0] += f" in {d.source_id}"
    if p is not None:
        bits.append(f"before: {format_value(p.value, p.unit)}, set {when(p.ts_ms)}")
    if held:
        bits.append(held)
    line = f"{label} = {format_value(d.value, d.unit)} ({'; '.join(bits)})"
    return line + (f" — {conflict_words(c)}" if c.conflict else "")


def value_text(c: Current) -> str:
    """The setting's value in a few words: "12", "256 or 128 — to confirm", "512 (the file: 777)",
    "not decided (the file: 10)"."""
    d = c.decision
    held = f" (the file: {format_value(c.held.value, c.held.unit)})" if c.held is not None and (d is None or c.differs) \
        else ""
    if c.unsure:
        return " or ".join(format_value(a.value, a.unit) for a in c.alternatives) + " — to confirm" + held
    return (format_value(d.value, d.unit) if d is not None else "not decided") + held


def question(c: Current) -> str:
    """What the chip and the Settings tab ask about a value to confirm ("256 or 128 for brute-force rays?")."""
    return c.question


def merged(currents: list[Current]) -> list[Current]:
    """A camera's or light's value read from a file, where nothing was decided for it by name but a
    render-wide value was, goes beside the render-wide decision (one row, two facts)."""
    wide = {(c.entry.engine, c.entry.parameter): n for n, c in enumerate(currents) if not c.entry.scope}
    out = list(currents)
    gone: set[int] = set()
    for n, c in enumerate(currents):
        if c.entry.scope and c.decision is None and c.pending is None and c.held is not None:
            k = wide.get((c.entry.engine, c.entry.parameter))
            if k is not None and out[k].held is None and out[k].decision is not None:
                out[k] = replace(out[k], held=c.held)
                gone.add(n)
    return [c for n, c in enumerate(out) if n not in gone]


def conflict_words(c: Current) -> str:
    """"conflict: Leo set 25 at 10:43 without having seen it — choose one"."""
    others = "; ".join(f"{x.author or 'another Kelvin'} set {format_value(x.value, x.unit)} at {when(x.ts_ms)}"
                       for x in c.conflict)
    return (f"CONFLICT: {others} without having seen it — choose one (kelvin settings set "
            f"\"{c.entry.name or c.entry.parameter}\" VALUE)")


class SettingsLedger:
    def __init__(self, memory: MemoryService):
        self.memory = memory
        self.catalogue = memory.catalogue

    # ---- reading -----------------------------------------------------------------------------------
    def book(self, project: str | None = None) -> SettingsBook:
        store = self.memory.store(project)
        if store.exists():
            self.memory.caught_up(store)  # with what every Kelvin process wrote, this one or another
        else:
            self.memory.flush()
        return store.settings

    def current(self, project: str | None = None, engine: str | None = None, candidates: bool = False) -> list[Current]:
        """Every setting of the project: decided, to confirm, or only in the last scene's file."""
        self.memory.flush()
        return merged(self.book(project).currents(self._engine(engine) if engine else None, candidates))

    def to_confirm(self, project: str | None = None) -> list[Current]:
        """The settings whose last reading Kelvin was unsure of: what the artist is asked."""
        return [c for c in self.current(project) if c.unsure]

    def resolve(self, name: str, engine: str | None = None, project: str | None = None) -> list[tuple[str, str]]:
        """The (engine, parameter) keys a name means: taxonomy synonyms first, then candidates stored
        in the ledger under that name."""
        eng = self._engine(engine) if engine else None
        keys = [s.ident for s in self.catalogue.lookup(name, eng)]
        if not keys:
            slug = "_".join(t for t, _ in tokens(name))
            keys = list(dict.fromkeys(k[:2] for k in self.book(project).keys()
                                      if k[1] == slug and (eng is None or k[0] == eng)))
        return keys

    def history(self, name: str, engine: str | None = None, project: str | None = None) -> list[tuple[tuple[str, str], list[Entry]]]:
        self.memory.flush()
        keys = self.resolve(name, engine, project)
        if not keys:
            raise RecordError(f"no setting called {name!r}" + (f" for {engine}" if engine else "")
                              + " (kelvin settings list shows what the ledger knows)")
        book = self.book(project)
        scoped = [k3 for k in keys for k3 in [(*k, "")] + sorted(x for x in book.keys() if x[:2] == k and x[2])]
        return [(k, book.history(*k)) for k in scoped if book.history(*k)] or [((*keys[0], ""), [])]

    # ---- the artist's corrections --------------------------------------------------------------------
    def set(self, name: str, value: str, engine: str | None = None, project: str | None = None, note: str = "",
            scope: str = "") -> Entry:
        """Set by hand: journaled, and the decision from now on — the newest fact whatever the dates of
        the messages already in the ledger."""
        spec = self._one(name, engine, project)
        try:  # its kind and range, before anything is journaled
            parsed, unit = check_value(spec, *parse_value(spec, value))
        except ValueError as exc:
            raise RecordError(str(exc)) from None
        return self._decide(spec.engine, spec.key, parsed, unit, spec.name, spec.domain, scope_key(scope), note, project)

    def confirm(self, entry: Entry, project: str | None = None, note: str = "confirmed in the chat") -> Entry:
        """The artist confirms a value Kelvin found in the conversation: it is applied, by the artist."""
        spec = self.catalogue.specs.get(entry.key[:2])
        try:  # checked again before it is journaled: the entry may come from an older Kelvin's ledger
            checked, _unit = check_value(spec, entry.value, entry.unit) if spec is not None else (entry.value, "")
        except ValueError as exc:
            raise RecordError(f"{entry.name or entry.parameter}: {exc}") from None
        return self._decide(entry.engine, entry.parameter, checked, entry.unit, entry.name, entry.domain,
                            entry.scope, note, project)

    def adopt(self, name: str, engine: str | None = None, project: str | None = None, scope: str | None = None) -> Entry:
        """The file's value becomes the decision (one action, journaled like any correction)."""
        keys = self.resolve(name, engine, project)
        held = [c for c in self.current(project, candidates=True) if c.entry.key[:2] in keys and c.held is not None
                and (scope is None or c.held.scope == scope_key(scope) or c.entry.scope == scope_key(scope))]
        if len(held) > 1 and engine is None:
            held = [c for c in held if c.entry.engine == self._project_engine(project)] or held
        if not held:
            raise RecordError(f"no scene file holds a value for {name!r}" + (f" ({scope})" if scope else "")
                              + ": kelvin scene import FILE reads one")
        if len(held) > 1:
            raise RecordError(f"{name!r} is held for several lights or cameras ("
                              + ", ".join(c.held.scope or "render-wide" for c in held) + "); add --scope")
        c = held[0]
        h = c.held
        return self._decide(c.entry.engine, c.entry.parameter, h.value, h.unit, h.name or c.entry.name, h.domain,
                            c.entry.scope, f"adopted from the file: {h.note}"[:200], project)

    def _decide(self, engine: str, parameter: str, value, unit: str, name: str, domain: str, scope: str, note: str,
                project: str | None) -> Entry:
        event = {"engine": engine, "parameter": parameter, "value": list(value) if isinstance(value, tuple) else value,
                 "unit": unit, "ts_ms": now_ms(), "name": name, "domain": domain, "note": note[:200],
                 **({"scope": scope} if scope else {})}
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_SET, event)]).result()
        cur = self.current_of((engine, parameter, scope), project)
        assert cur is not None and cur.decision is not None  # set by hand is the newest fact (ledger.in_order)
        return cur.decision

    def unset(self, name: str, engine: str | None = None, project: str | None = None, scope: str = "") -> Current | None:
        """No decided value any more (the history stays). Returns what stands now: nothing, or only
        what a scene file holds."""
        keys = self.resolve(name, engine, project)
        if len(keys) > 1 and engine is None:
            keys = [k for k in keys if k[0] == self._project_engine(project)] or keys
        if len(keys) != 1:
            raise RecordError(self._ambiguity(name, keys))
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_UNSET, {"engine": keys[0][0], "parameter": keys[0][1],
                                                                   "ts_ms": now_ms(),
                                                                   **({"scope": scope_key(scope)} if scope else {})})]).result()
        return self.current_of((*keys[0], scope_key(scope)), project)

    def retract(self, entry_id: str, project: str | None = None) -> None:
        """Take one wrongly extracted entry out of the history (journaled)."""
        store = self.memory.store(project)
        self.memory.writer.submit(store.name, [(OP_SETTING_RETRACT, {"entry_id": check_name(entry_id, "entry id")})]).result()

    def current_of(self, key: tuple[str, ...], project: str | None = None) -> Current | None:
        """One setting by (engine, parameter[, scope]) — render-wide when the scope is left out."""
        self.memory.flush()
        engine, parameter, scope = (*key, "")[:3]
        return self.book(project).current(engine, parameter, scope)

    # ---- scenes ------------------------------------------------------------------------------------
    def import_scene(self, scene: Scene, project: str | None = None) -> dict:
        """Every value of the scene into the ledger as what the file holds (the file and scene in the
        note, dated now) — beside the decisions, never as them — in one journal append: all of it or
        none. Lights and cameras keep their names as scopes. Values the catalogue does not know are
        kept as candidates."""
        ts = now_ms()
        note = scene.source[:200]

        def event(v: SceneValue, candidate: bool) -> tuple[str, dict]:
            spec = v.spec
            engine, parameter = (spec.engine, spec.key) if spec is not None else (ANY, _slug(v.name))
            value = list(v.value) if isinstance(v.value, tuple) else v.value
            # the file and scene, and a driver that computes the value ("driven by the expression var * 2")
            said = f"{note} · {v.how}"[:200] if v.how else note
            marks = {k: getattr(v, k) for k in ("light", "camera", "driven") if getattr(v, k)}  # as sent
            return (OP_SETTING_SCENE, {"engine": engine, "parameter": parameter, "value": value, "unit": v.unit,
                                       "ts_ms": ts, "name": spec.name if spec is not None else v.name,
                                       "domain": spec.domain if spec is not None else "general", "note": said,
                                       "candidate": candidate, **marks, **({"scope": v.scope} if v.scope else {})})

        events = [event(v, False) for v in scene.values] + [event(v, True) for v in scene.candidates
                                                            if _slug(v.name)]
        if events:
            store = self.memory.store(project)
            self.memory.writer.submit(store.name, events).result()
        return {"source": scene.source, "settings": len(scene.values), "candidates": len(events) - len(scene.values),
                "at": ts}

    def scene_differences(self, scene: Scene, project: str | None = None) -> list[tuple[Difference, str]]:
        """Where the scene differs from what was decided (in conversation or by hand; earlier scene
        imports do not count), each with the words it was decided in."""
        self.memory.flush()
        book = self.book(project)
        params = {v.key[:2] for v in scene.values}
        keys = {k for v in scene.values for k in (v.key, (v.key[0], v.key[1], ""))} | \
            {k for k in book.keys() if k[:2] in params}
        found = differences(scene, {k: book.history(*k) for k in keys})
        return [(d, self._quote(d.source_id, project)) for d in found]

    def scene_in_ledger(self, project: str | None = None) -> Scene | None:
        """The last scene imported into the project, as the ledger holds it (None: never)."""
        self.memory.flush()
        book = self.book(project)
        # each setting's last scene value is what its current holds (cached by the ledger until an
        # entry of that setting arrives): no walk over every entry when the browser opens
        latest: dict[tuple[str, str, str], Entry] = {c.held.key: c.held for c in book.currents(candidates=True)
                                                     if c.held is not None and not c.held.candidate}
        if not latest:
            return None
        last_ts = max(e.ts_ms for e in latest.values())
        values = tuple(SceneValue(self.catalogue.specs.get(e.key[:2]), e.name, e.value, e.unit, driven=_driven(e.note),
                                  scope=e.scope)
                       for e in latest.values() if e.ts_ms == last_ts and e.key[:2] in self.catalogue.specs)
        note = next((e.note for e in latest.values() if e.ts_ms == last_ts), "")
        return Scene(app="", file=note.partition(DRIVEN[0])[0].partition(DRIVEN[1])[0], scene="", engine="",
                     values=values, candidates=())

    def scene_answer(self, project: str | None = None, say_none: bool = True) -> tuple[str, ...]:
        """The diff, as the lines a question about the scene and the decisions gets (``say_none``
        False: nothing at all when no scene was ever imported, for the window and the brief)."""
        scene = self.scene_in_ledger(project)
        if scene is None:
            return ("No scene has been imported into this project yet (kelvin scene import FILE.blend, or Send to "
                    "Kelvin in Blender)",) if say_none else ()
        now = now_ms()
        lines = [difference_line(d, now, quote) for d, quote in self.scene_differences(scene, project)]
        if not lines:
            return (f"The last scene imported ({scene.file}) matches what was decided",)
        return (f"The last scene imported ({scene.file}) differs from what was decided:",
                *lines[:MAX_PROMPT_LINES])

    def _quote(self, source_id: str, project: str | None) -> str:
        if not source_id:
            return ""
        m = self.memory.show(source_id, project)
        if m is None:
            return ""
        text = " ".join(m.text.split())
        return text if len(text) <= 90 else text[:87].rstrip() + "…"

    # ---- for the conversation ----------------------------------------------------------------------
    def relevant(self, project: str, question: str) -> tuple[str, ...]:
        """Current values a question is about: the parameters it names, else (for a question about
        noise, light, the camera …) the current values of that domain. One line each."""
        book = self.book(project)
        currents = merged(book.currents())
        if not currents:
            return ()
        if _SCENE_QUESTION.search(question[:4000]):  # "does my scene match what we decided?"
            return self.scene_answer(project)
        toks = [t for t, _ in tokens(question[:4000])]
        named: list[tuple[str, str]] = []
        engines: set[str] = set()
        for _, _, what in self.catalogue.find(toks):
            if isinstance(what, str):
                engines.add(what)
            else:
                named += [s.ident for s in what]
        chosen = [c for c in currents if c.entry.key[:2] in named and (not engines or c.entry.engine in engines | {ANY})]
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


DRIVEN = (" · driven by ", " · animated")  # in a scene value's note: what computes it in the file


def _driven(note: str) -> str:
    """What a scene value's note says computes it ("the expression var * 2" → "var * 2"), or ""."""
    if DRIVEN[1] in note:
        return "animated" + note.partition(DRIVEN[1])[2]
    how = note.partition(DRIVEN[0])[2]
    return how[len("the expression "):] if how.startswith("the expression ") else "a driver" if how else ""


def _slug(name: str) -> str:
    """A candidate's key: its words joined ("view transform" → "view_transform")."""
    return "_".join(t for t, _ in tokens(name))[:80]

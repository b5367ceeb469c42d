"""A scene's render settings (Kelvin's scene format), checked against the catalogue, and where the
scene differs from what was decided. Pure: no I/O.

The format (``docs/scene-format.md``) is what the Blender reader and add-on send, and what a script
for any other DCC app can send: ``{"format": "kelvin-scene", "version": 1, "app", "file", "scene",
"engine", "settings": [{"engine", "parameter" (or "name"), "value"}], "extra": [{"name", "value",
"unit"}], "notes": [...]}``. A setting the catalogue knows becomes an applied ledger value; one it
does not know (or a value it cannot hold) is kept as a candidate — never dropped silently. Any
value may say which light or camera holds it (``"light"``, ``"camera"``) and that a driver or an
expression computes it (``"driven"``: the expression, or "a driver").
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import datetime

from app.core.render_settings.ledger import APPLIED, Current, Entry, fold
from app.core.render_settings.parameters import (ANY, Catalogue, ParamSpec, Value, as_candidate, check_value, format_value,
                                  parse_value, same_value)
from app.core.render_settings.scopes import SCENE_CAMERA_KEYS, scope_key

FORMAT = "kelvin-scene"
VERSION = 1
MAX_SETTINGS = 2000  # a scene sends a few dozen; thousands is junk, refused whole
MAX_TEXT = 200
ENGINE_LABELS = {"vray": "V-Ray", "renderman": "RenderMan"}  # else the key, capitalised


class SceneError(ValueError):
    """A scene that cannot be read or used, in one plain sentence."""


@dataclass(frozen=True)
class SceneValue:
    spec: ParamSpec | None  # None: a candidate (the catalogue has no key for it)
    name: str  # the display name ("Max samples"; for a candidate, the words sent: "View transform")
    value: Value
    unit: str
    driven: str = ""  # computed in the file by a driver: its expression ("var * 2"), or "a driver"
    light: str = ""  # the light that holds it ("Key"), where a light does
    camera: str = ""  # the camera that holds it, where a camera does
    scope: str = ""  # the ledger's scope: that light's or camera's name ("key"), "" render-wide (issue 30)

    @property
    def how(self) -> str:
        """What the ledger notes and the diff shows beside the value: "driven by the expression var * 2"."""
        if not self.driven:
            return ""
        said = self.driven if len(self.driven) <= 80 else self.driven[:79] + "…"
        if said.startswith("animated"):  # keyed over time (a USD stage's time samples): "animated (2 keys; …)"
            return said
        return "driven by a driver" if self.driven == "a driver" else f"driven by the expression {said}"

    @property
    def key(self) -> tuple[str, str, str]:
        return (*self.spec.ident, self.scope) if self.spec is not None else (ANY, self.name, "")


@dataclass(frozen=True)
class Scene:
    app: str
    file: str
    scene: str
    engine: str
    values: tuple[SceneValue, ...]  # known to the catalogue
    candidates: tuple[SceneValue, ...]  # kept, not known
    notes: tuple[str, ...] = ()

    @property
    def source(self) -> str:
        """Where the values come from, as the ledger notes it: "forest.blend · scene 'Scene'"."""
        name = self.file.replace("\\", "/").rsplit("/", 1)[-1] if self.file else self.app or "a scene"
        return f"{name} · scene {self.scene!r}" if self.scene else name


def read(data: object, catalogue: Catalogue) -> Scene:
    """The scene format → a :class:`Scene`, every value checked. Raises SceneError (nothing is
    half-read: a scene is used whole or not at all)."""
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise SceneError(f"not Kelvin's scene format (a JSON object with \"format\": \"{FORMAT}\")")
    if data.get("version") != VERSION:
        raise SceneError(f"scene format version {data.get('version')!r}: this Kelvin reads version {VERSION}")
    settings, extra = data.get("settings", []), data.get("extra", [])
    if not isinstance(settings, list) or not isinstance(extra, list):
        raise SceneError("\"settings\" and \"extra\" are lists")
    if len(settings) + len(extra) > MAX_SETTINGS:
        raise SceneError(f"{len(settings) + len(extra):,} settings in one scene: at most {MAX_SETTINGS:,}")
    values: list[SceneValue] = []
    candidates: list[SceneValue] = []
    problems: list[str] = []
    for n, item in enumerate(settings, 1):
        if not isinstance(item, dict):
            raise SceneError(f"setting {n} is not an object")
        spec = _spec(item, catalogue)
        raw = item.get("value")
        if spec is None:
            said = _text(item.get("parameter") or item.get("name") or f"setting {n}")
            engine = _text(item.get("engine") or "").strip()  # (printable: a script may send anything)
            if engine and not item.get("parameter") and engine.lower() not in ("any", said.split(" ")[0].lower()):
                # a setting sent by its words for an engine: "Octane kernel", not "kernel"
                said = f"{ENGINE_LABELS.get(engine.lower(), engine.capitalize())} {_lower_first(said)}"
            candidates.append(SceneValue(None, said, _plain(raw, said, problems), _text(item.get("unit") or ""),
                                         **_marks(item)))
            continue
        try:
            # the parameter's kind and range, and what the ledger can hold and compare (a 400-digit
            # number cannot be compared with anything: it must never reach the journal as a number)
            value, unit = check_value(spec, *_value(spec, raw))
        except ValueError as exc:  # a setting Kelvin knows, a value it cannot hold: kept, and said
            candidates.append(SceneValue(None, f"{spec.name} as sent", _plain(raw), _text(item.get("unit") or ""),
                                         **_marks(item)))
            problems.append(f"{label(spec)}: {_shown(raw)} is not a value it can hold ({exc}); kept as a candidate")
            continue
        values.append(SceneValue(spec, spec.name, value, unit, **_marks(item), scope=_scope(item, spec)))
    camera = ""
    for n, item in enumerate(extra, 1):
        if not isinstance(item, dict) or not _text(item.get("name") or "").strip():
            raise SceneError(f"extra {n} has no name")
        name = _text(item["name"])
        known = _known_extra(item, catalogue, str(data.get("engine") or ""))
        if known is not None:
            values.append(known)
            continue
        if name.strip().lower() == "active camera" and isinstance(item.get("value"), str):
            camera = scope_key(_text(item["value"]))
        candidates.append(SceneValue(None, name, _plain(item.get("value"), name, problems), _text(item.get("unit") or ""),
                                     **_marks(item)))
    if camera:  # a scene that names its active camera but not the camera of each value: that camera's
        values = [replace(v, scope=camera) if v.spec is not None and v.spec.key in SCENE_CAMERA_KEYS and not v.scope
                  else v for v in values]
    seen: dict[tuple[str, str, str], SceneValue] = {}
    for v in values:
        seen[v.key] = v  # one value per setting: the last one sent
    notes = data.get("notes") or []
    return Scene(app=_text(data.get("app") or ""), file=_text(data.get("file") or "", 500),
                 scene=_text(data.get("scene") or ""), engine=_text(data.get("engine") or "").lower(),
                 values=tuple(seen.values()), candidates=tuple(candidates),
                 notes=tuple(n for x in notes if isinstance(x, str) if (n := _text(x, 300).strip())) + tuple(problems))


def _lower_first(words: str) -> str:
    """"Max samples" → "max samples"; "GI clamp" stays as it is."""
    return words[:1].lower() + words[1:] if words[1:2].islower() else words


def _marks(item: dict) -> dict:
    """Where a value lives and how it is computed, as sent (text, or nothing)."""
    return {k: _text(item[k]) for k in ("driven", "light", "camera") if isinstance(item.get(k), str) and item[k].strip()}


def _scope(item: dict, spec: ParamSpec | None) -> str:
    """The ledger's scope of a value sent: the ``scope`` it names, else the light that holds it, else the
    camera (for the camera's own settings: lens, sensor, focus, f-stop)."""
    for key in ("scope", "light"):
        if isinstance(item.get(key), str) and item[key].strip():
            return scope_key(_text(item[key]))
    if spec is not None and spec.key in SCENE_CAMERA_KEYS and isinstance(item.get("camera"), str):
        return scope_key(_text(item["camera"]))
    return ""


_LIGHT_EXTRA = re.compile(r"^light (.+) (power|temperature|intensity)$", re.IGNORECASE)
_LIGHT_KEYS = {"power": "light_power", "temperature": "light_temperature", "intensity": "light_intensity"}


def _known_extra(item: dict, catalogue: Catalogue, engine: str) -> SceneValue | None:
    """An extra the catalogue can hold after all: a light's power, temperature or (unitless) intensity by
    the light's name ("Light Key power", 350 W → the key's light power), or a setting named as a person says it
    ("View transform": "AgX")."""
    name = " ".join(str(item["name"]).split())
    unit = str(item.get("unit") or "")
    hit = _LIGHT_EXTRA.match(name)
    if hit:
        key = _LIGHT_KEYS[hit.group(2).lower()]
        if key == "light_power" and unit.upper() != "W" or key == "light_intensity" and unit:
            return None  # a sun's strength is W/m², not a light's power; an intensity with a unit is not a multiplier
        light = item.get("light") if isinstance(item.get("light"), str) and item["light"].strip() else hit.group(1)
        spec, scope = catalogue.specs.get((ANY, key)), scope_key(_text(light))
    else:
        hits = [s for s in catalogue.lookup(name) if s.engine in (ANY, engine.lower())]
        spec, scope = (hits[0] if len(hits) == 1 else None), ""
    if spec is None:
        return None
    try:
        value, unit = check_value(spec, *_value(spec, item.get("value")))
    except ValueError:
        return None
    return SceneValue(spec, spec.name, value, unit, **_marks(item), scope=scope)


def _spec(item: dict, catalogue: Catalogue) -> ParamSpec | None:
    engine = str(item.get("engine") or "").lower()
    engine = ANY if engine in ("", "any") else engine
    key = str(item.get("parameter") or "").lower().strip()
    if key and (engine, key) in catalogue.specs:
        return catalogue.specs[(engine, key)]
    name = str(item.get("name") or key)
    hits = catalogue.lookup(name, engine or "") if name else []
    return hits[0] if len(hits) == 1 else None


def _value(spec: ParamSpec, raw) -> tuple[Value, str]:
    if isinstance(raw, bool):
        if spec.kind != "bool":
            raise ValueError(f"not on/off but {spec.kind}")
        return raw, ""
    if isinstance(raw, (int, float)):
        if isinstance(raw, float) and not math.isfinite(raw):
            raise ValueError("not a number")
        if spec.kind == "bool":
            raise ValueError("on or off")
        return parse_value(spec, repr(raw) if isinstance(raw, float) else str(raw))  # in the setting's own unit
    if isinstance(raw, str):
        return parse_value(spec, raw[:MAX_TEXT])
    raise ValueError("no value")


def _plain(raw, name: str = "", problems: list[str] | None = None) -> Value:
    """A value sent for a candidate, as the ledger can hold it: numbers it can compare, short
    printable text; anything else becomes text, said in a note when ``problems`` is given."""
    if isinstance(raw, str):
        return _text(raw)
    if isinstance(raw, float) and not math.isfinite(raw):
        return None
    if raw is not None and not isinstance(raw, (bool, int, float)):
        return _text(raw)
    value, why = as_candidate(raw)
    if why and problems is not None:
        problems.append(f"{name}: {why}")
    return value


def _text(x, limit: int = MAX_TEXT) -> str:
    """Printable text only (no control characters, no lone surrogates from a JSON \\ud800 escape)."""
    s = x if isinstance(x, str) else str(x) if isinstance(x, (int, float, bool)) or x is None else repr(x)[:limit]
    return "".join(ch for ch in s[: limit * 4] if ch.isprintable() and not "\ud800" <= ch <= "\udfff")[:limit]


def _shown(raw) -> str:
    """A sent value as a note quotes it: short, printable."""
    if isinstance(raw, int) and not isinstance(raw, bool) and len(str(abs(raw))) > 24:
        return str(as_candidate(raw)[0])
    return repr(_text(raw, 40))


# ---- the scene against what was decided -------------------------------------------------------------
@dataclass(frozen=True)
class Difference:
    name: str  # "Cycles Clamp indirect", "Light power (key)"
    key: tuple[str, str, str]
    scene: str  # as shown: "10"
    decided: str  # "7"
    decided_at_ms: int
    by: str  # "rules" (said in a conversation), "model", "artist" (set by hand)
    source_id: str = ""  # the message it was said in
    note: str = ""
    driven: str = ""  # the scene's value is computed by a driver ("driven by the expression var * 2")


def decided(history: list[Entry]) -> Current | None:
    """The value last *decided* for one setting — in conversation or by hand — leaving out what
    scene imports put in the ledger (they are what a file holds, never the decision)."""
    cur = fold([e for e in history if e.by != "scene" and not e.candidate])
    return cur if cur is not None and cur.decision is not None else None


def differences(scene: Scene, histories: dict[tuple[str, str, str], list[Entry]]) -> list[Difference]:
    """Where the scene's value differs from the one decided — for a light or camera, the value decided
    for it by name, else the render-wide one (settings nobody decided are not differences: the
    scene is simply what it is there)."""
    out: list[Difference] = []
    for v in scene.values:
        now = decided(histories.get(v.key, []))
        if now is None and v.scope:
            now = decided(histories.get((v.key[0], v.key[1], ""), []))
        if now is None and not v.scope:  # decided for one output only ("7 on the hero frames"): that one
            scoped = [c for k, h in histories.items() if k[:2] == v.key[:2] and k[2] and (c := decided(h)) is not None]
            now = scoped[0] if len(scoped) == 1 else None
        if now is None or now.decision.status != APPLIED or same_value(now.decision.value, v.value):
            continue
        e = now.decision
        out.append(Difference(name=label(v.spec) + (f" ({v.scope})" if v.scope else ""), key=v.key,
                              scene=format_value(v.value, v.unit),
                              decided=format_value(e.value, e.unit) + (f" ({e.scope})" if e.scope and not v.scope else ""),
                              decided_at_ms=e.ts_ms, by=e.by, source_id=e.source_id, note=e.note, driven=v.how))
    return out


def label(spec: ParamSpec | None) -> str:
    if spec is None:
        return ""
    engine = ENGINE_LABELS.get(spec.engine, spec.engine.capitalize())
    return f"{engine} {spec.name}".strip()


def said_when(ts_ms: int, now_ms: int) -> str:
    """"today", "yesterday", "on Tuesday" (this week), else "on 12 November"."""
    then, now = datetime.fromtimestamp(ts_ms / 1000), datetime.fromtimestamp(now_ms / 1000)
    days = (now.date() - then.date()).days
    if days <= 0:
        return "today"
    if days == 1:
        return "yesterday"
    if days < 7:
        return f"on {then:%A}"
    return f"on {then.day} {then:%B}" + (f" {then.year}" if then.year != now.year else "")


def difference_line(d: Difference, now_ms: int, quote: str = "") -> str:
    """"Cycles Clamp indirect: scene 10, decided 7 on Tuesday ("Decision: clamp indirect 7")"; a
    driven value says so: "scene 10 (driven by the expression var * 2)"."""
    how = "set by hand" if d.by == "artist" else "decided"
    why = f' ("{quote}")' if quote else (f" ({d.note})" if d.note else "")
    driven = f" ({d.driven})" if d.driven else ""
    return f"{d.name}: scene {d.scene}{driven}, {how} {d.decided} {said_when(d.decided_at_ms, now_ms)}{why}"

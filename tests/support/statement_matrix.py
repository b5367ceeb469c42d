"""Plain statements of every parameter in the shipped catalogue, as artists and the model say them.

Issue 24: "GI clamp is currently 25" recorded nothing. This generates, for each parameter of the
catalogue Kelvin ships (each engine, camera, lights, output), the plainest ways to state a value —
"set X to N", "X is N", "X is currently N", "X in ENGINE set to N", "raised X to N", "X from A to
B", "X: N", "X = N", "went with N for X", "back to N on X", "X to N, M was too slow", "X N instead
of M", the value with its unit, and the model's suggestion — with the engine, parameter, value and
status each must give. The conversation is about the parameter's engine (as in a real day, where
the engine was named earlier), except in "X in ENGINE set to N", which names it.

Conventions (bench/data/LABELLING.md): the old value of "X from A to B" is applied (history, said
before the new value); "back to N" may also turn down the value in use without naming it (a
rejection with no value); "M was too slow" turns M down, and so does "N instead of M" (the
labelled sets mark "went OIDN instead of OptiX" as OptiX turned down).

Names two parameters share: a phrase the catalogue gives to two parameters of one engine cannot be
resolved by any rule, so :func:`shared_names` lists them (the test keeps that list empty); a
phrase an engine shares with camera, lights or output (``any``) is the engine's in that engine's
conversation and the shared one elsewhere, and the matrix has rows for both sides.
"""
from __future__ import annotations

from dataclasses import dataclass

from app.core.render_settings.extraction import Context, Extractor
from app.core.render_settings.parameters import ANY, ParamSpec

ENGINE_WORDS = {"octane": "Octane", "redshift": "Redshift", "arnold": "Arnold", "cycles": "Cycles", "vray": "V-Ray",
                "karma": "Karma", "corona": "Corona"}
ANY_CONVERSATION = "octane"  # camera, lights and output are said in some engine's conversation


@dataclass(frozen=True)
class Expected:
    engine: str
    parameter: str
    value: object
    unit: str
    status: str


@dataclass(frozen=True)
class Row:
    template: str
    spec: tuple[str, str]
    role: str
    text: str
    engine: str  # the conversation's engine before this message ("" when the message names it)
    expected: tuple[Expected, ...]
    unnamed_rejection: bool = False  # "back to N": turning down the value in use, unnamed, is right too


def _said(value, spec: ParamSpec) -> str:
    """A value as an artist types it."""
    if spec.kind == "enum":
        says = spec.values.get(value) or ()
        return says[0] if says else value.replace("_", " ")
    if spec.kind == "bool":
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:g}"
    return str(value)


def _pick(candidates, spec: ParamSpec) -> list:
    lo = spec.min if spec.min is not None else float("-inf")
    hi = spec.max if spec.max is not None else float("inf")
    return [c for c in candidates if lo <= c <= hi]


def values(spec: ParamSpec) -> tuple[object, object, object]:
    """Three different plausible values (a current one, another, a third) for the parameter."""
    if spec.kind == "enum":
        keys = list(spec.values)
        return keys[0], keys[1 % len(keys)], keys[2 % len(keys)]
    if spec.kind == "bool":
        return True, False, True
    if spec.kind == "resolution":
        return "1920x1080", "3840x2160", "2048x858"
    if spec.kind == "text":
        if spec.key.startswith("shutter"):
            return "1/125", "1/50", "1/250"
        if "time" in spec.key:
            return "1:30:00", "0:45:00", "2:00:00"
        return "4k", "8k", "2k"
    unit = spec.unit
    if unit == "K":
        return 5600, 4300, 6500
    if unit == "mm":
        return 50, 85, 35
    if unit == "fps":
        return 24, 30, 25
    if unit == "°":
        got = _pick([90, 45, 180, 30, 60], spec)
        return got[0], got[1], got[2]
    if unit == "ev":
        return 1.5, 0.5, 2
    if unit == "%":
        return 3, 5, 2
    if spec.kind == "int":
        got = _pick([12, 6, 16, 3, 24, 512, 64, 2], spec)
        return got[0], got[1], got[2]
    if spec.max is not None and spec.max <= 1:
        return 0.05, 0.02, 0.1
    got = _pick([2.5, 4, 1.5, 6], spec)
    return got[0], got[1], got[2]


def _with_unit(value, spec: ParamSpec) -> str:
    """The value with its unit, as typed: "50mm", "5600K", "24 fps", "1.5 ev", "90°", "3%"."""
    said = _said(value, spec)
    if spec.unit in ("mm", "K", "°", "%", "px"):
        return f"{said}{spec.unit}"
    if spec.unit:
        return f"{said} {spec.unit}"
    return said


def rows(extractor: Extractor) -> list[Row]:
    out: list[Row] = []
    for spec in extractor.cat.specs.values():
        out += _rows_for(spec)
    return out


def _rows_for(spec: ParamSpec) -> list[Row]:
    x = spec.name
    a, b, c = values(spec)
    sa, sb, sc = _said(a, spec), _said(b, spec), _said(c, spec)
    engine = spec.engine or ANY_CONVERSATION
    numeric = spec.kind in ("int", "number")

    def exp(value, status="applied") -> Expected:
        return Expected(spec.engine, spec.key, value, spec.unit, status)

    def row(template: str, text: str, *expected: Expected, role: str = "user", named: bool = False,
            unnamed_rejection: bool = False) -> Row:
        return Row(template, spec.ident, role, text, "" if named else engine, expected, unnamed_rejection)

    out: list[Row] = []
    if spec.kind == "bool":
        on, off = "on", "off"
        out += [
            row("turn X on", f"Turned {x} {on}.", exp(True)),
            row("X is N", f"{x} is {off}.", exp(False)),
            row("X is currently N", f"{x} is currently {on}.", exp(True)),
            row("X: N", f"{x}: {off}", exp(False)),
            row("X = N", f"{x} = {on}", exp(True)),
            row("enabled X", f"Enabled {x} for this shot.", exp(True)),
            row("disabled X", f"Disabled {x}, the frame was fine without it.", exp(False)),
            row("model: I'd turn X on", f"I'd turn {x} {on} for this shot.", exp(True, "proposed"), role="assistant"),
        ]
        if spec.engine:
            out.append(row("X in ENGINE set to N", f"{x} in {ENGINE_WORDS[spec.engine]} set to {off}.", exp(False),
                           named=True))
        return out
    out += [
        row("set X to N", f"Set {x} to {sa}.", exp(a)),
        row("X is N", f"{x} is {sa}.", exp(a)),
        row("X is currently N", f"{x} is currently {sa}.", exp(a)),
        row("X: N", f"{x}: {sa}", exp(a)),
        row("X = N", f"{x} = {sa}", exp(a)),
        row("went with N for X", f"We went with {sa} for {x}.", exp(a)),
        row("back to N on X", f"Back to {sa} on {x}.", exp(a), unnamed_rejection=True),
        row("X to N, M was too slow", f"{x} to {sa}, {sb} was too slow.", exp(b, "rejected"), exp(a)),
        row("X N instead of M", f"{x} {sa} instead of {sb}.", exp(b, "rejected"), exp(a)),
        row("X from A to B", f"Changed {x} from {sb} to {sa}.", exp(b), exp(a)),
        row("model: try X at N", f"Try {x} at {sc}.", exp(c, "proposed"), role="assistant"),
        row("model: I'd set X to N", f"I'd set {x} to {sc} for this shot.", exp(c, "proposed"), role="assistant"),
    ]
    if spec.engine:
        out.append(row("X in ENGINE set to N", f"{x} in {ENGINE_WORDS[spec.engine]} set to {sa}.", exp(a), named=True))
    if numeric:
        up, down = (a, b) if _bigger(a, b) else (b, a)
        out += [row("raised X to N", f"Raised {x} to {_said(up, spec)}.", exp(up)),
                row("lowered X to N", f"Lowered {x} to {_said(down, spec)}.", exp(down))]
    if spec.unit and spec.kind != "resolution":
        out.append(row("X N with its unit", f"{x} {_with_unit(a, spec)} for the hero shot.", exp(a)))
    return out


def _bigger(a, b) -> bool:
    return float(a) > float(b)


def check(extractor: Extractor, r: Row) -> str:
    """"" when the message gives exactly the expected settings, else what it gave."""
    got, _ = extractor.extract(r.text, r.role, Context(engine=r.engine))
    said = [m for m in got if not m.candidate]
    if r.unnamed_rejection:
        said = [m for m in said if not (m.status == "rejected" and m.value is None)]
    want = list(r.expected)
    if len(said) == len(want) and all(_same(m, w) for m, w in zip(sorted(said, key=_order), sorted(want, key=_order))):
        return ""
    shown = ", ".join(f"{m.engine or 'any'}.{m.parameter}={m.value!r}{m.unit} {m.status}" for m in got) or "nothing"
    return f"{r.text!r} ({r.role}, in {r.engine or 'no engine yet'}) gave {shown}"


def _order(m) -> tuple:
    return (m.engine, m.parameter, m.status, str(m.value))


def _same(m, w: Expected) -> bool:
    if (m.engine, m.parameter, m.status) != (w.engine, w.parameter, w.status):
        return False
    if isinstance(w.value, float) or isinstance(m.value, float):
        try:
            return abs(float(m.value) - float(w.value)) < 1e-9 and (m.unit or "") == (w.unit or "")
        except (TypeError, ValueError):
            return False
    return m.value == w.value and (m.unit or "") == (w.unit or "")


def shared_names(extractor: Extractor) -> dict[tuple[str, str], list[str]]:
    """Phrases two parameters of the same engine both claim: (engine, phrase) → their keys."""
    out: dict[tuple[str, str], list[str]] = {}
    for words, specs in extractor.cat._phrases.items():
        by_engine: dict[str, list[str]] = {}
        for s in specs:
            by_engine.setdefault(s.engine, []).append(s.key)
        for engine, keys in by_engine.items():
            if len(keys) > 1:
                out[(engine or "any", " ".join(words))] = sorted(keys)
    return out


def shared_with_any(extractor: Extractor) -> list[tuple[str, ParamSpec, ParamSpec]]:
    """Phrases an engine's parameter shares with a camera, light or output one: (phrase, the
    engine's, the shared one)."""
    out = []
    for words, specs in extractor.cat._phrases.items():
        anys = [s for s in specs if s.engine == ANY]
        for s in specs:
            if s.engine != ANY:
                out += [(" ".join(words), s, a) for a in anys]
    return out

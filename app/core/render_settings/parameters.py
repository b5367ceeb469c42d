"""Render parameters from the taxonomy: what each is called, what its values look like.

``resources/taxonomy.toml`` (plus the artist's own) lists per engine the parameters artists talk
about, with their canonical key, display name, value kind, units and synonyms. This module turns
that data into a :class:`Catalogue` that finds parameter names in text (longest match over
tokens) and parses values ("2k", "1,024", "0,5", "f/2.8", "5600K", "1920x1080", "on"). Pure.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from app.core.tagging import DOMAINS

KINDS = ("number", "int", "bool", "enum", "range", "resolution", "text")
ANY = ""  # the engine of engine-agnostic parameters (camera, lights, output)

Value = float | int | bool | str | tuple | None


@dataclass(frozen=True)
class ParamSpec:
    engine: str  # "octane", … or ANY
    key: str  # "gi_clamp"
    name: str  # "GI clamp"
    domain: str
    kind: str
    unit: str = ""
    units: tuple[str, ...] = ()  # other spellings of units an artist may type
    synonyms: tuple[str, ...] = ()
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)  # enum value → how it is said
    min: float | None = None
    max: float | None = None
    claims: tuple[str, ...] = ()  # enum values that, said alone, mean this parameter (shared ones)

    @property
    def ident(self) -> tuple[str, str]:
        return (self.engine, self.key)


def specs_from_dict(data: dict) -> list[ParamSpec]:
    """``[params.<engine>.<key>]`` tables → specs. Malformed entries are skipped, never fatal:
    the artist's own taxonomy file must not be able to stop Kelvin."""
    out: list[ParamSpec] = []
    for engine, table in (data.get("params") or {}).items():
        if not isinstance(table, dict):
            continue
        for key, spec in table.items():
            if not isinstance(spec, dict):
                continue
            kind = str(spec.get("kind", "number"))
            domain = str(spec.get("domain", "general"))
            values = spec.get("values") if isinstance(spec.get("values"), dict) else {}
            try:
                out.append(ParamSpec(
                    engine=ANY if engine == "any" else str(engine).lower(), key=str(key).lower(),
                    name=str(spec.get("name") or key.replace("_", " ")),
                    domain=domain if domain in DOMAINS else "general",
                    kind=kind if kind in KINDS else "number",
                    unit=str(spec.get("unit", "")),
                    units=tuple(str(u).lower() for u in spec.get("units", ()) if isinstance(u, str)),
                    synonyms=tuple(str(s).lower() for s in spec.get("synonyms", ()) if isinstance(s, str)),
                    values={str(v).lower(): tuple(str(s).lower() for s in (says if isinstance(says, list) else []))
                            for v, says in values.items()},
                    min=float(spec["min"]) if isinstance(spec.get("min"), (int, float)) else None,
                    max=float(spec["max"]) if isinstance(spec.get("max"), (int, float)) else None,
                    claims=tuple(str(v).lower() for v in spec.get("claims", ()) if isinstance(v, str)),
                ))
            except (TypeError, ValueError, AttributeError):
                continue
    return out


# ---- tokens -----------------------------------------------------------------------------------------
# words (with inner ' - .), numbers (1,024  0.5  0,5  2k  1/125  f/2.8  1920x1080), and = : ° %
_TOKEN = re.compile(
    r"->|=>|→"  # "8 -> 4": a change, from the first value to the second
    r"|f/\d+(?:[.,]\d+)?"  # f/2.8
    r"|f\d{1,2}(?:[.,]\d)?(?!\w|[.,]\d)"  # f5.6, f2.8
    r"|\d+\s?[x×]\s?\d+(?!\d|\.\d)"  # 1920x1080 (a full stop may follow)
    r"|\d{3,5} by \d{3,5}(?!\d|\.\d)"  # 2048 by 858
    r"|\d{1,2}:\d{2}(?::\d{2})?(?![\d])"  # 8:00:00, 15:00 (a time, never a number)
    r"|\d{1,3}[hm]\d{1,2}s?(?![\d])"  # 3m40, 1h31, 6m48s: a duration, never a value
    r"|\d+(?:\.\d+)?e[+-]?\d+(?![\w.])"  # 1e6 (Octane's GI clamp default), 1e-4
    r"|\[[x ✓]?\]"  # a checkbox pasted from a panel: [x] on, [ ] off
    r"|1/\d+(?!\d|\.\d)"  # 1/125
    r"|[-+]?\d+(?:[.,]\d+)*(?:%|°|[a-zA-Z]+)?"  # 10  0.5  1,024  2k  35mm  5600K  +0.5ev
    r"|[a-z][a-z0-9]*(?:['’][a-z]+|[-_][a-z0-9]+)*"
    r"|[=:?;°%@]",
    re.IGNORECASE,
)


_F_NUMBER = re.compile(r"^f(\d+(?:[.,]\d+)?)$")


def tokens(text: str) -> list[tuple[str, int]]:
    """Lower-case tokens with their start offsets. "3-4" is a number, a dash and a number (a
    range); "f8" and "f 5.6" are apertures, like "f/8"."""
    out: list[tuple[str, int]] = []
    for m in _TOKEN.finditer(text):
        tok, at = m.group(0).lower(), m.start()
        if tok in ("=>", "→"):
            tok = "->"
        if tok[:1] == "[":  # "Alpha shadows [x]"
            tok = "off" if tok in ("[]", "[ ]") else "on"
        if tok.endswith(("'s", "’s")) and len(tok) > 3 and tok[:-2] not in _PRONOUNS:  # "region's on"
            out += [(tok[:-2], at), ("'s", at + len(tok) - 2)]
            continue
        if out and tok[0] == "-" and len(tok) > 1 and tok[1].isdigit() and out[-1][1] + len(out[-1][0]) == at \
                and out[-1][0][-1:].isdigit():
            out += [("-", at), (tok[1:], at + 1)]
            continue
        f = _F_NUMBER.match(tok)
        if f:
            tok = "f/" + f.group(1)
        elif out and out[-1][0] == "f" and _NUM.match(tok) and tok[0].isdigit() and "x" not in tok:
            out[-1] = ("f/" + tok, out[-1][1])
            continue
        out.append((tok, at))
    return out


_PRONOUNS = {"it", "that", "what", "there", "here", "let", "he", "she", "who", "where", "how", "one", "everything",
             "nothing", "something", "mine"}


def word_tokens(phrase: str) -> tuple[str, ...]:
    return tuple(t for t, _ in tokens(phrase))


# ---- values -----------------------------------------------------------------------------------------
_NUM = re.compile(r"^([-+]?)(\d+(?:[.,]\d+)*(?:e[+-]?\d+)?)(%|°|[a-z]+)?$")
_RES = re.compile(r"^(\d+)\s?(?:[x×]|by)\s?(\d+)$")
_TRUE = {"on", "true", "yes", "enabled", "enable", "checked", "active"}
_FALSE = {"off", "false", "no", "disabled", "disable", "unchecked", "none"}
MULTIPLIERS = {"k": 1000}
_BINARY_K = {1, 2, 4}  # "1k", "2k", "4k" samples: 1024, 2048, 4096 (but "16k" is 16000)


@dataclass(frozen=True)
class Number:
    value: float
    unit: str  # as typed, lower case ("" if none)
    is_int: bool


def parse_number(tok: str) -> Number | None:
    """"1,024" → 1024; "0,5" → 0.5; "2k" → 2000 (unit "k" kept for temperatures); "35mm" → 35 mm."""
    if tok.startswith("f/"):
        tok = tok[2:]
    m = _NUM.match(tok)
    if not m:
        return None
    sign, digits, unit = m.group(1), m.group(2), (m.group(3) or "").lower()
    if "," in digits and "." not in digits:
        groups = digits.split(",")
        if len(groups) == 2 and len(groups[1]) != 3:
            digits = digits.replace(",", ".")  # European decimal comma: 0,5
        else:
            digits = digits.replace(",", "")  # thousands: 1,024
    else:
        digits = digits.replace(",", "")
    if digits.count(".") > 1:
        return None  # a version number (2024.1.2), not a value
    try:
        value = float(sign + digits)
    except ValueError:
        return None
    if math.isinf(value) or math.isnan(value):
        return None
    return Number(value=value, unit=unit, is_int="." not in digits)


def number_for(spec: ParamSpec, num: Number) -> tuple[float | int, str] | None:
    """The number as this parameter's value and unit, or None if it cannot be one (a unit that
    does not belong, out of the plausible range, a fraction for a count)."""
    value, unit = num.value, num.unit
    accepted = {spec.unit.lower(), *spec.units} - {""}
    if unit:
        if unit in MULTIPLIERS and spec.kind == "int" and unit not in accepted:
            value, unit = value * (1024 if unit == "k" and value in _BINARY_K else MULTIPLIERS[unit]), ""
        elif unit in accepted:
            unit = spec.unit
        elif unit == "x" and spec.kind in ("int", "number"):
            unit = ""  # "4x" subdivisions
        else:
            return None
    else:
        unit = spec.unit
    if spec.kind == "int":
        if value != int(value):
            return None
        value = int(value)
    elif value == int(value) and abs(value) < 1e15:
        value = int(value) if num.is_int else value
    if spec.min is not None and value < spec.min or spec.max is not None and value > spec.max:
        return None
    return value, unit


def bool_word(tok: str) -> bool | None:
    if tok in _TRUE:
        return True
    if tok in _FALSE:
        return False
    return None


def resolution(tok: str) -> str | None:
    """"1920x1080" → "1920x1080"; sizes under 100 px a side ("2x 3090", "25 x 17") are not images."""
    m = _RES.match(tok)
    if not m or min(int(m.group(1)), int(m.group(2))) < 100:
        return None
    return f"{int(m.group(1))}x{int(m.group(2))}"


def _is_number(x: object) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def same_value(a: Value, b: Value) -> bool:
    """Whether two values are the same setting value (numbers within a billionth). Never raises: a
    number too large for a float is compared exactly."""
    if _is_number(a) and _is_number(b):
        if isinstance(a, int) and isinstance(b, int):
            return a == b
        try:
            fa, fb = float(a), float(b)
        except OverflowError:
            return False
        if not (math.isfinite(fa) and math.isfinite(fb)):
            return fa == fb
        return abs(fa - fb) <= 1e-9 * max(1.0, abs(fa))
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    return a == b


# choice values as artists read them in their renderer's panels; any other key reads as its words
# ("brute_force" → "brute force")
VALUE_NAMES = {"oidn": "OpenImageDenoise", "optix": "OptiX", "octane_ai": "Octane AI", "nvidia_ai": "NVIDIA AI",
               "altus": "Altus", "noice": "Noice", "pmc": "PMC", "uhd_cache": "UHD cache",
               "aces": "ACES", "agx": "AgX", "filmic": "Filmic", "khronos_pbr_neutral": "Khronos PBR Neutral"}


def format_value(value: Value, unit: str = "") -> str:
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, float):
        text = f"{value:g}"
    elif isinstance(value, (list, tuple)):
        text = "–".join(format_value(v) for v in value)
    elif value is None:
        text = "—"
    else:
        text = VALUE_NAMES.get(str(value)) or str(value).replace("_", " ")
    if unit and not isinstance(value, bool) and value is not None:
        text += unit if unit in ("%", "°", "mm", "px") else f" {unit}"
    return text


# ---- what the ledger can hold ----------------------------------------------------------------------
MAX_HELD_INT = 2**63 - 1  # what every reader of the ledger (JSON, Arrow, SQL) holds as a whole number
MAX_HELD_TEXT = 200
MAX_HELD_PARTS = 4  # a range is two numbers; nothing a setting holds has more parts


def holdable(value: object) -> str:
    """"" when the ledger can keep ``value`` and compare it with others; else why not, in words.
    A value that passes is safe for every later step: JSON, the journal's UTF-8, the comparisons."""
    if value is None or isinstance(value, bool):
        return ""
    if isinstance(value, int):
        return "" if abs(value) <= MAX_HELD_INT else f"a number of {len(str(abs(value)))} digits, too large to compare"
    if isinstance(value, float):
        return "" if math.isfinite(value) else "not a finite number"
    if isinstance(value, str):
        if len(value) > MAX_HELD_TEXT:
            return f"{len(value):,} characters of text (at most {MAX_HELD_TEXT})"
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "text that is not valid Unicode (a lone surrogate)"
        return ""
    if isinstance(value, (list, tuple)):
        if len(value) > MAX_HELD_PARTS or any(isinstance(v, (list, tuple, dict)) for v in value):
            return "a list no setting holds"
        return next((why for v in value if (why := holdable(v))), "")
    return f"a {type(value).__name__}, not a setting's value"


def check_value(spec: ParamSpec, value: Value, unit: str = "") -> tuple[Value, str]:
    """``value`` checked against the parameter's kind and range: (value, unit) as the ledger keeps it
    (a list becomes a tuple), or ValueError saying why it cannot be this parameter's value."""
    why = holdable(value)
    if why:
        raise ValueError(why)
    if isinstance(value, list):
        value = tuple(value)

    def in_range(x: object, whole: bool) -> None:
        if not _is_number(x) or (whole and not isinstance(x, int) and not (isinstance(x, float) and x.is_integer())):
            raise ValueError(f"{spec.name} takes a {'whole ' if whole else ''}number, not {x!r}")
        if spec.min is not None and x < spec.min or spec.max is not None and x > spec.max:
            raise ValueError(f"{format_value(x)} is outside {spec.name}'s range"
                             f" ({format_value(spec.min) if spec.min is not None else '…'}"
                             f"–{format_value(spec.max) if spec.max is not None else '…'})")

    kind = spec.kind
    if kind == "bool":
        if not isinstance(value, bool):
            raise ValueError(f"{spec.name} is on or off, not {value!r}")
    elif kind == "int":
        in_range(value, True)
        value = int(value)  # type: ignore[arg-type]
    elif kind == "number":
        in_range(value, False)
    elif kind == "range":
        parts = value if isinstance(value, tuple) else (value,)
        if not 1 <= len(parts) <= 2:
            raise ValueError(f"{spec.name} is a number or a range of two")
        for x in parts:
            in_range(x, False)
    elif kind == "enum":
        if not isinstance(value, str) or value not in spec.values:
            raise ValueError(f"{spec.name} is one of: {', '.join(v.replace('_', ' ') for v in spec.values)}")
    elif kind == "resolution":
        if not isinstance(value, str) or resolution(value) != value:
            raise ValueError(f"{spec.name} is written WIDTHxHEIGHT, e.g. 1920x1080")
    elif kind == "text":
        if not isinstance(value, str) or len(value) > 100:
            raise ValueError(f"{spec.name} is a short text")
    return value, unit if isinstance(unit, str) and len(unit) <= 20 else ""


def as_candidate(value: object) -> tuple[Value, str]:
    """A value the ledger keeps as a candidate: as it is when it can be held, else as a short text
    (a 400-digit number becomes "99999999…9 (400 digits)"), with why in words ("" if kept as is)."""
    why = holdable(value)
    if not why:
        return (tuple(value) if isinstance(value, list) else value), ""  # type: ignore[return-value]
    if isinstance(value, int) and not isinstance(value, bool):
        digits = str(abs(value))
        text = ("-" if value < 0 else "") + digits[:12] + "…" + digits[-2:] + f" ({len(digits)} digits)"
    elif isinstance(value, str):
        text = value.encode("utf-8", "replace").decode("utf-8")[:MAX_HELD_TEXT]
        text = "".join(ch for ch in text if ch.isprintable())[:MAX_HELD_TEXT]
    else:
        text = "".join(ch for ch in repr(value) if ch.isprintable())[:60]
    return text, f"kept as text: {why}"


_SHORT_VALUES = {"bf", "lc", "ic", "ipc", "pt", "dl", "oidn", "agx"}  # abbreviations artists say alone ("bf + lc")
_NEVER_ALONE = {"standard"}  # ordinary words that are an enum value only beside their parameter's name


# ---- the catalogue --------------------------------------------------------------------------------
class Catalogue:
    """Every known parameter, found in text by its synonyms (longest match first)."""

    def __init__(self, specs: list[ParamSpec], engine_names: dict[str, tuple[str, ...]] | None = None):
        self.specs = {s.ident: s for s in specs}
        self._phrases: dict[tuple[str, ...], list[ParamSpec]] = {}
        self._longest = 1
        for s in specs:
            for phrase in {s.key.replace("_", " "), s.name.lower(), *s.synonyms}:
                words = word_tokens(phrase)
                if words:
                    bucket = self._phrases.setdefault(words, [])
                    if s not in bucket:
                        bucket.append(s)
                    self._longest = max(self._longest, len(words))
        self.engines: dict[tuple[str, ...], str] = {}
        for engine, names in (engine_names or {}).items():
            for n in names:
                words = word_tokens(n)
                if words:
                    self.engines[words] = engine
                    self._longest = max(self._longest, len(words))
        # enum values said without their parameter ("we went with OIDN", "brute force"): see bare_value
        self._bare: dict[tuple[str, ...], list[tuple[ParamSpec, str]]] = {}
        for s in specs:
            for value, says in s.values.items():
                for phrase in {value.replace("_", " "), *says}:
                    words = word_tokens(phrase)
                    if words and (len(words) > 1 or len(words[0]) >= 4 or words[0] in _SHORT_VALUES) \
                            and words[0] not in _NEVER_ALONE \
                            and (s, value) not in self._bare.get(words, []):
                        self._bare.setdefault(words, []).append((s, value))
        self._bare_longest = max((len(w) for w in self._bare), default=1)
        self._bare_first = {w[0] for w in self._bare}
        self._enum_words = {s.ident: [(value, word_tokens(phrase)) for value, says in s.values.items()
                                      for phrase in (value.replace("_", " "), *says)] for s in specs if s.values}
        self.engine_list = sorted({s.engine for s in specs if s.engine} | set((engine_names or {}).keys()))

    def find(self, toks: list[str], engine: str = "") -> list[tuple[int, int, object]]:
        """(start, end, what) for each longest match left to right: ``what`` is a list of
        ParamSpec candidates (the same words in several engines) or an engine name (str). With an
        ``engine``, words that name nothing in it give way to shorter ones ("pt samples" in Octane is
        the PT kernel, then "samples")."""
        found = []
        i, n = 0, len(toks)
        while i < n:
            for size in range(min(self._longest, n - i), 0, -1):
                key = tuple(toks[i:i + size])
                if key in self._phrases and (not engine or size == 1 or any(
                        s.engine in (engine, ANY) for s in self._phrases[key])
                        or not self._means_something(toks[i], engine)):
                    # another engine's name whose first word means nothing alone here ("light
                    # samples" in Octane) stays that name: never Octane's "samples"
                    found.append((i, i + size, self._phrases[key]))
                    i += size
                    break
                if key in self.engines:
                    found.append((i, i + size, self.engines[key]))
                    i += size
                    break
            else:
                i += 1
        return found

    def _means_something(self, tok: str, engine: str) -> bool:
        """The word alone names something in ``engine``: a parameter, an enum value ("pt", the PT
        kernel) or an engine."""
        return any(s.engine in (engine, ANY) for s in self._phrases.get((tok,), ())) \
            or (tok,) in self.engines or self.bare_value([tok], 0, engine) is not None \
            or any(s.engine in (engine, ANY) for s, _ in self._bare.get((tok,), ()))

    def bare_value(self, toks: list[str], start: int, engine: str) -> tuple[ParamSpec, str, int, bool] | None:
        """An enum value said without its parameter at ``toks[start:]`` (longest first), in the engine
        being talked about: (spec, value, tokens, shared). A value several parameters share ("brute
        force": primary and secondary GI) means the one that claims it in the taxonomy (shared=True),
        else nothing."""
        if start >= len(toks) or toks[start] not in self._bare_first:
            return None
        for size in range(min(self._bare_longest, len(toks) - start), 0, -1):
            hits = [(s, v) for s, v in self._bare.get(tuple(toks[start:start + size]), ())
                    if s.engine in (ANY, engine)]
            shared = len(hits) > 1
            if shared:
                hits = [(s, v) for s, v in hits if v in s.claims]
            if len(hits) == 1:
                return hits[0][0], hits[0][1], size, shared
            if hits:
                return None
        return None

    def lookup(self, name: str, engine: str | None = None) -> list[ParamSpec]:
        """Specs a name the artist typed refers to ("gi clamp", "gi_clamp", "GI Clamp")."""
        words = word_tokens(name.replace("_", " "))
        hits = list(self._phrases.get(words, ()))
        if engine is not None:
            hits = [s for s in hits if s.engine == engine.lower() or (engine.lower() in ("", "any") and s.engine == ANY)]
        return hits

    def enum_value(self, spec: ParamSpec, toks: list[str], start: int) -> tuple[str, int] | None:
        """An enum value said at ``toks[start:]`` (longest synonym), with its length in tokens."""
        best: tuple[str, int] | None = None
        pairs = self._enum_words.get(spec.ident)
        if pairs is None:  # a spec made after the catalogue (tests)
            pairs = [(v, word_tokens(p)) for v, says in spec.values.items() for p in (v.replace("_", " "), *says)]
        for value, words in pairs:
            if words and tuple(toks[start:start + len(words)]) == words and (best is None or len(words) > best[1]):
                best = (value, len(words))
        return best


def parse_value(spec: ParamSpec, text: str) -> tuple[Value, str]:
    """A value the artist typed for ``spec`` ("10", "on", "brute force", "1920x1080", "35mm", "8-16"),
    as (value, unit). Raises ValueError with a plain message when it cannot be one."""
    raw = " ".join(text.strip().lower().split())
    if not raw:
        raise ValueError("no value given")
    if spec.kind == "bool":
        b = bool_word(raw)
        if b is None:
            raise ValueError(f"{spec.name} is on or off (got {text!r})")
        return b, ""
    if spec.kind == "enum":
        words = word_tokens(raw)
        for value, says in spec.values.items():
            if words in {word_tokens(p) for p in (value.replace("_", " "), *says)}:
                return value, ""
        raise ValueError(f"{spec.name} is one of: {', '.join(v.replace('_', ' ') for v in spec.values)} (got {text!r})")
    if spec.kind == "resolution":
        res = resolution(raw.replace(" ", ""))
        if res is None:
            raise ValueError(f"{spec.name} is written WIDTHxHEIGHT, e.g. 1920x1080 (got {text!r})")
        return res, spec.unit
    if spec.kind == "text":
        return text.strip()[:100], spec.unit
    parts = re.split(r"\s*(?:-|–|to)\s*(?=\d)", raw) if spec.kind == "range" or re.search(r"\d\s*[-–]\s*\d", raw) else [raw]
    values = []
    for part in parts:
        num = parse_number(part.replace(" ", ""))
        got = number_for(spec, num) if num else None
        if got is None:
            unit = f" in {spec.unit}" if spec.unit else ""
            if spec.min is not None and spec.max is not None:
                bounds = f" between {spec.min:g} and {spec.max:g}"
            elif spec.min is not None:
                bounds = f" of at least {spec.min:g}"
            elif spec.max is not None:
                bounds = f" of at most {spec.max:g}"
            else:
                bounds = ""
            raise ValueError(f"{spec.name} takes a {'whole ' if spec.kind == 'int' else ''}number{unit}{bounds} "
                             f"(got {text!r})")
        values.append(got)
    if len(values) == 2:
        return (values[0][0], values[1][0]), values[0][1]
    return values[0]

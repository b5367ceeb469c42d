"""The first rule-based tagger: domain, message type and render engine, from the taxonomy.

The taxonomy is plain data (``resources/taxonomy.toml``, merged with the artist's own); this module
only applies it, so it is fast, offline and deterministic. It is one pluggable step: anything with
``tag(text) -> Tags`` can replace it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from app.core.records import Tags

DOMAINS = ("lighting", "shading", "camera", "optimization", "geometry", "texturing", "compositing", "general")
TYPES = ("setting", "instruction", "critique", "logic", "dialogue")

_NUMBER = r"[-+]?\d+(?:[.,]\d+)?\s*(?:%|mm|px|k|ev|x|ms|s|°)?"


class Tagger(Protocol):
    def tag(self, text: str) -> Tags: ...


@dataclass(frozen=True)
class Taxonomy:
    domains: dict[str, tuple[str, ...]]
    engine_names: dict[str, tuple[str, ...]]
    engine_hints: dict[str, tuple[str, ...]]
    type_terms: dict[str, tuple[str, ...]]
    setting_verbs: tuple[str, ...]

    @classmethod
    def from_dict(cls, data: dict) -> "Taxonomy":
        """Build from parsed TOML. Unknown domains are ignored; missing sections are empty."""
        domains = {
            name: tuple(str(t).lower() for t in spec.get("terms", ()))
            for name, spec in data.get("domains", {}).items()
            if name in DOMAINS
        }
        engines = data.get("engines", {})
        types = data.get("types", {})
        return cls(
            domains=domains,
            engine_names={e: tuple(str(n).lower() for n in s.get("names", ())) for e, s in engines.items()},
            engine_hints={e: tuple(str(n).lower() for n in s.get("hints", ())) for e, s in engines.items()},
            type_terms={t: tuple(str(x).lower() for x in types.get(t, ())) for t in ("critique", "instruction", "logic")},
            setting_verbs=tuple(str(x).lower() for x in types.get("setting_verbs", ())),
        )


def merge(base: dict, extra: dict) -> dict:
    """Merge an artist's taxonomy into the bundled one: tables merge, lists are extended."""
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merge(out[key], value)
        elif isinstance(value, list) and isinstance(out.get(key), list):
            out[key] = out[key] + [v for v in value if v not in out[key]]
        else:
            out[key] = value
    return out


def _terms_regex(terms: tuple[str, ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    alts = sorted({re.escape(t) for t in terms}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(alts) + r")(?![\w-])", re.IGNORECASE)


class RuleTagger:
    def __init__(self, taxonomy: Taxonomy):
        self._domains = [(d, _terms_regex(t)) for d, t in taxonomy.domains.items()]
        self._engine_names = [(e, _terms_regex(t)) for e, t in taxonomy.engine_names.items()]
        self._engine_hints = [(e, _terms_regex(t)) for e, t in taxonomy.engine_hints.items()]
        self._types = {t: _terms_regex(terms) for t, terms in taxonomy.type_terms.items()}
        params = tuple(t for terms in taxonomy.domains.values() for t in terms) + tuple(
            h for hints in taxonomy.engine_hints.values() for h in hints
        )
        param_alt = "|".join(sorted({re.escape(p) for p in params}, key=len, reverse=True)) or r"(?!x)x"
        verb_alt = "|".join(sorted({re.escape(v) for v in taxonomy.setting_verbs}, key=len, reverse=True)) or r"(?!x)x"
        # "GI clamp 10", "max samples: 1024", "clamp = 25", "set X to 5", "went with 1024 samples"
        self._setting = re.compile(
            rf"(?<![\w-])(?:{param_alt})\s*(?:[:=]|\bto\b|\bat\b)?\s*{_NUMBER}(?![\w.])"
            rf"|(?<![\w-])(?:{verb_alt})\b[^.\n]{{0,40}}?\b(?:to|=|at|with)\s*{_NUMBER}(?![\w.])"
            rf"|(?<![\w-])(?:went with|going with|settled on|using)\s+{_NUMBER}",
            re.IGNORECASE,
        )

    def tag(self, text: str) -> Tags:
        sample = text[:20_000]  # tags come from the head of a huge paste; the whole text is still indexed
        return Tags(domain=self._domain(sample), type=self._type(sample), engine=self._engine(sample))

    def _domain(self, text: str) -> str:
        best, best_hits = "general", 0
        for domain, rx in self._domains:
            # a multi-word term ("gi clamp") is stronger evidence than a single word ("gi")
            hits = sum(1 + m.count(" ") for m in rx.findall(text)) if rx else 0
            if hits > best_hits:
                best, best_hits = domain, hits
        return best

    def _engine(self, text: str) -> str | None:
        for group in (self._engine_names, self._engine_hints):
            counts = [(len(rx.findall(text)), e) for e, rx in group if rx]
            counts = [c for c in counts if c[0]]
            if counts:
                return max(counts, key=lambda c: c[0])[1]
        return None

    def _type(self, text: str) -> str:
        if self._setting.search(text):
            return "setting"
        for kind in ("critique", "instruction", "logic"):
            rx = self._types.get(kind)
            if rx is None:
                continue
            if kind == "instruction":
                first = text.lstrip().split("\n", 1)[0]
                if rx.match(first.lstrip("-*• ")) or re.search(r"\b(?:always|never|remember|please)\b", first, re.I):
                    return kind
            elif rx.search(text):
                return kind
        return "dialogue"

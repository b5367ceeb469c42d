"""The first rule-based tagger: domain, message type and render engine, from the taxonomy.

The taxonomy is plain data (``resources/taxonomy.toml``, merged with the artist's own); this module
only applies it, so it is fast, offline and deterministic. It is one pluggable step: anything with
``tag(text) -> Tags`` can replace it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Protocol

from app.core.records import Tags

DOMAINS = ("lighting", "shading", "camera", "optimization", "geometry", "texturing", "compositing", "general")
TYPES = ("setting", "instruction", "critique", "logic", "dialogue")

_NUMBER = r"[-+]?\d+(?:[.,]\d+)?\s*(?:%|mm|px|k|ev|x|ms|s|°)?"


class Tagger(Protocol):
    def tag(self, text: str, engine: str = "") -> Tags: ...


@dataclass(frozen=True)
class Taxonomy:
    domains: dict[str, tuple[str, ...]]
    engine_names: dict[str, tuple[str, ...]]
    engine_hints: dict[str, tuple[str, ...]]
    type_terms: dict[str, tuple[str, ...]]
    setting_verbs: tuple[str, ...]
    host_names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    priority_terms: tuple[str, ...] = ()

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
            host_names={h: tuple(str(n).lower() for n in s.get("names", ())) for h, s in data.get("hosts", {}).items()
                        if isinstance(s, dict)},
            priority_terms=tuple(str(x).lower() for x in data.get("priority", {}).get("high", ())),
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


_TOKEN = re.compile(r"[a-z0-9]+(?:['.-][a-z0-9]+)*|[=:]")
_VALUE = re.compile(r"[-+]?\d+(?:[.,]\d+)?(?:%|mm|px|k|ev|x|ms|s|°)?")
_JOINERS = {"to", "at", "=", ":", "is", "of"}


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


class _Lexicon:
    """Terms of one or more words, found by longest match over the text's tokens (a dict lookup
    per token and length: fast on long pastes, unlike one regex alternation of hundreds of terms)."""

    def __init__(self) -> None:
        self._terms: dict[tuple[str, ...], set[str]] = {}
        self._sizes: dict[str, list[int]] = {}  # first word → term lengths starting with it, longest first
        self._longest = 1

    def add(self, term: str, label: str) -> None:
        key = tuple(tokens(term))
        if key:
            self._terms.setdefault(key, set()).add(label)
            self._longest = max(self._longest, len(key))
            sizes = self._sizes.setdefault(key[0], [])
            if len(key) not in sizes:
                sizes.append(len(key))
                sizes.sort(reverse=True)

    def ending_at(self, toks: list[str], end: int) -> set[str]:
        """Labels of every term that ends just before ``toks[end]``, overlapping ones included."""
        out: set[str] = set()
        for size in range(1, min(self._longest, end) + 1):
            out |= self._terms.get(tuple(toks[end - size : end]), set())
        return out

    def scan(self, toks: list[str]) -> list[tuple[int, int, set[str]]]:
        """(start, end, labels) of each longest match, left to right, not overlapping."""
        found = []
        i, n = 0, len(toks)
        sizes_of = self._sizes.get
        while i < n:
            for size in sizes_of(toks[i], ()):
                labels = self._terms.get(tuple(toks[i : i + size])) if i + size <= n else None
                if labels:
                    found.append((i, i + size, labels))
                    i += size - 1
                    break
            i += 1
        return found


class RuleTagger:
    def __init__(self, taxonomy: Taxonomy):
        self._order = list(taxonomy.domains)
        self._words = _Lexicon()  # domains, engines, parameters
        for domain, terms in taxonomy.domains.items():
            for t in terms:
                self._words.add(t, f"domain:{domain}")
                self._words.add(t, "param")
        for engine, names in taxonomy.engine_names.items():
            for t in names:
                self._words.add(t, f"engine:{engine}")
        for host, names in taxonomy.host_names.items():
            for t in names:
                self._words.add(t, f"host:{host}")
        self._high = _Lexicon()  # standing instructions and decisions: "always", "client wants", "final"
        for t in taxonomy.priority_terms:
            self._high.add(t, "high")
        for engine, hints in taxonomy.engine_hints.items():
            for t in hints:
                self._words.add(t, f"hint:{engine}")
                self._words.add(t, "param")
        self._kinds = _Lexicon()  # critique, instruction and logic phrases
        for kind, terms in taxonomy.type_terms.items():
            for t in terms:
                self._kinds.add(t, kind)
        verb_alt = "|".join(sorted({re.escape(v) for v in taxonomy.setting_verbs}, key=len, reverse=True)) or r"(?!x)x"
        # "set the clamp to 10", "went with 1024 samples"; "GI clamp 10" is found from the tokens
        self._setting_phrase = re.compile(
            rf"(?<![\w-])(?:{verb_alt})\b[^.\n]{{0,40}}?\b(?:to|=|at|with)\s*{_NUMBER}(?![\w.])"
            rf"|(?<![\w-])(?:went with|going with|settled on|using)\s+{_NUMBER}",
            re.IGNORECASE,
        )

    def tag(self, text: str, engine: str = "") -> Tags:
        """The message's tags. ``engine`` is the engine its conversation is about (named earlier):
        a message that names no engine itself is that engine's, whatever its words hint at — in an
        Octane day "adaptive sampling" and "caustics" are Octane's, not Cycles'."""
        sample = text[:20_000]  # tags come from the head of a huge paste; the whole text is still indexed
        toks = tokens(sample)
        words = self._words.scan(toks)
        kind = self._type(sample, toks)
        high = bool(self._high.scan(toks[:400])) and kind in ("instruction", "setting", "logic", "critique")
        priority = 2 if high else 1 if kind in ("setting", "critique", "instruction") else 0
        return Tags(domain=self._domain(words), type=kind, engine=self._engine(words, engine), host_app=self._host(words),
                    priority=priority)

    @staticmethod
    def _host(words) -> str | None:
        counts: dict[str, int] = {}
        for _, _, labels in words:
            for label in labels:
                if label.startswith("host:"):
                    counts[label[5:]] = counts.get(label[5:], 0) + 1
        return max(counts, key=lambda h: counts[h]) if counts else None

    def _domain(self, words) -> str:
        scores: dict[str, int] = {}
        for start, end, labels in words:
            for label in labels:
                if label.startswith("domain:"):
                    # a multi-word term ("gi clamp") is stronger evidence than a single word ("gi")
                    scores[label[7:]] = scores.get(label[7:], 0) + (end - start)
        if not scores:
            return "general"
        return max(scores, key=lambda d: (scores[d], -self._order.index(d)))

    @staticmethod
    def _engine(words, around: str = "") -> str | None:
        """The engine the message names; else the conversation's; else the one its words hint at."""
        for prefix in ("engine:", "hint:"):
            if prefix == "hint:" and around:
                return around
            counts: dict[str, int] = {}
            for _, _, labels in words:
                for label in labels:
                    if label.startswith(prefix):
                        counts[label[len(prefix):]] = counts.get(label[len(prefix):], 0) + 1
            if counts:
                return max(counts, key=lambda e: counts[e])
        return None

    def _type(self, text: str, toks: list[str]) -> str:
        for pos, tok in enumerate(toks):
            if pos and _VALUE.fullmatch(tok):  # a value: is a parameter named just before it?
                end = pos
                while end > 0 and toks[end - 1] in _JOINERS:
                    end -= 1
                if "param" in self._words.ending_at(toks, end):
                    return "setting"
        if self._setting_phrase.search(text):
            return "setting"
        kinds = {label for _, _, labels in self._kinds.scan(toks) for label in labels}
        if "critique" in kinds:
            return "critique"
        first = tokens(text.lstrip().split("\n", 1)[0])
        opening = self._kinds.scan(first[:3])
        if (opening and opening[0][0] == 0 and "instruction" in opening[0][2]) or \
                {"always", "never", "remember", "please"} & set(first):
            return "instruction"
        if "logic" in kinds:
            return "logic"
        return "dialogue"

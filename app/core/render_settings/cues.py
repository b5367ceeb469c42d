"""The extractor's phrase book: the words that say what a sentence does with a value. Pure.

The words live in ``resources/phrases/*.toml``, one file per kind of cue (``status``: applied,
proposed or turned down; ``value_cues``: what ties a value to its setting; ``state``: a value told as
what is there now; ``switches``: on and off; ``turned_down``: complaints about a value;
``not_values``: numbers that are not settings; ``things``: lights, cameras, engines named in
passing; ``answers``: which proposal an answer takes). Each table there has a ``job`` (what its words
do) and its ``words``. The services read the files once and hand their tables here
(:meth:`Cues.from_files`); the rules in ``app.core.render_settings.extraction`` only ask the book.

A list of single words is a set here; phrases keep the file's order where the first match decides
(``it_on_off_verbs``, the headings' words).
"""
from __future__ import annotations

import re

FILES = ("status", "value_cues", "state", "switches", "turned_down", "not_values", "things", "answers")


class CuesError(ValueError):
    """The phrase files are missing a table or hold one of the wrong shape."""


def _words_re(words, before: str = r"\b", after: str = r"\b", flags: int = 0) -> re.Pattern:
    return re.compile(before + "(?:" + "|".join(re.escape(w) for w in words) + ")" + after, flags)


class Cues:
    """Every table of the phrase files as an attribute named by its table (``cues.proposal``)."""

    def __init__(self, tables: dict[str, object]) -> None:
        self.__dict__.update(tables)

    @classmethod
    def from_files(cls, files: dict[str, dict]) -> "Cues":
        """The phrase book from the parsed files (file name without ``.toml`` → its tables)."""
        tables: dict[str, object] = {}
        for name in FILES:
            if name not in files:
                raise CuesError(f"the phrase file {name}.toml is missing")
            for key, table in files[name].items():
                words = table.get("words") if isinstance(table, dict) else None
                if not isinstance(table, dict) or not str(table.get("job", "")).strip() or words is None:
                    raise CuesError(f"{name}.toml: [{key}] needs a job and its words")
                if key in tables:
                    raise CuesError(f"{name}.toml: [{key}] is already a table of another file")
                tables[key] = words
        try:
            return cls(_shaped(tables))
        except (KeyError, TypeError, AttributeError, ValueError) as exc:
            raise CuesError(f"the phrase files are not what the rules read: {exc}") from exc


def _shaped(t: dict[str, object]) -> dict[str, object]:
    """Each table in the shape the rules use it in."""
    out: dict[str, object] = {k: frozenset(v) for k, v in t.items() if isinstance(v, list)}
    out["state_before"] = tuple(f" {w} " for w in t["state_before"])  # (str.endswith takes a tuple)
    out["enum_after"] = frozenset(tuple(w.split()) for w in t["enum_after"])
    out["value_then"] = frozenset(tuple(w.split()) for w in t["value_then"])
    out["value_then_pairs"] = frozenset(tuple(w.split()) for w in t["value_then_pairs"])
    out["it_on_off"] = tuple((f" {verb} it {state} ", state == "on") for verb in t["it_on_off_verbs"]
                             for state in ("on", "off"))  # the first said decides
    out["ordinals"] = {str(k): int(v) for k, v in t["ordinals"].items()}
    out["counts"] = {str(k): int(v) for k, v in t["counts"].items()}
    out["named_resolutions"] = {tuple((k.split() + [""])[:2]): str(v) for k, v in t["named_resolutions"].items()}
    out["headings"] = {str(k): tuple(v) for k, v in t["headings"].items()}
    # phrases said as whole words inside a sentence, found by one pattern each
    out["clause_split"] = re.compile(r"(?<=[!?;\n])|(?<=\.)(?=\s|$)|(?<=\w)\s*,\s*(?=(?:"
                                     + "|".join(re.escape(w) for w in t["clause_openers"]) + r")\b)")
    out["state_head_re"] = _words_re(t["state_head"])
    out["asking_head_re"] = _words_re(t["asking_head"])
    out["future_re"] = _words_re(t["future"], " ", " ")
    out["plan_re"] = _words_re(t["plan"])
    out["later_re"] = _words_re(t["later"])
    out["for_named_re"] = re.compile(r"\b(?:on|for|in)\s+(?:the\s+|my\s+|our\s+)?[\w-]+(?:\s+[\w-]+){0,2}\s+(?:"
                                     + "|".join(re.escape(w) for w in t["named_outputs"]) + r")\b|_", re.IGNORECASE)
    return out

"""How the settings bench scores what the extractor and the ledger made of a labelled session (issue 30).

Shared by ``settings_extraction.py`` (the rules, the shipped status model) and ``train_status.py``
(leave-one-set-out cross-validation of the status model), so both count the same way.

**Keys.** A mention is (engine, parameter, value, status, scope); a current value is (engine,
parameter, scope, value). Values match by ``same_value`` (numbers to 1e-9, ranges element by
element, enum keys and text lower-cased).

**Scopes** (``LABELLING.md`` §1, second edition) match by name after :func:`scope_name`: lower case;
``_``, ``-`` and runs of spaces are one space; a leading article or possessive goes ("the", "a",
"an", "my", "our", "your", "his", "her", "their", and a trailing "'s" on any word); then one generic
trailing word goes (light, lights, lamp, lamps, camera, cam, cams, cameras, layer, output, frames,
frame, shots, shot, renders, render, stills, still, cut, cuts, version, versions) when something is left
before it, and the last word is made singular ("heroes" → "hero", "strips" → "strip"; words in -ss, -us,
-is stay); a sun's angle scoped "sun" is the same fact as one with no scope (the parameter names the
sun). These fold names only — two labellers' words for one object — never a different object. So "key light", "Key" and
"the key's" are one name, "CAM_hero" is "cam hero", "hero frames" is "hero", "the glass layer" is
"glass"; "cam" alone stays "cam". A file whose labels carry no ``scope`` anywhere was written before
scopes existed (every set up to ``n``): there scope is not compared at all, so a scope the ledger
gives ("key light at 5600K" → key) is neither credited nor held against it.

**Current values** are the ledger's after each session, against the session's ``final`` row: a value
the ledger holds but marks *to confirm* (``Current.unsure``) is not a current value (neither right
nor wrong: it is not shown as one). **Turned down or floated, shown as current**: a current value
that is not in ``final`` and that the session's labels only ever gave as rejected or proposed for
that (engine, parameter, scope) — the failure an artist must never see. The rest of the wrong
current values are counted too (``other_wrong``: a value applied earlier and replaced, one nobody
said, a wrong parameter).
"""
from __future__ import annotations

import re

from app.core.render_settings.parameters import same_value

_ARTICLES = {"the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that"}
_GENERIC_TAIL = {"light", "lights", "lamp", "lamps", "camera", "cam", "cams", "cameras", "layer", "output", "frames",
                 "frame", "shots", "shot", "renders", "render", "stills", "still", "cut", "cuts", "version", "versions"}
_OWN_OBJECT = {"sun_elevation": "sun", "sun_azimuth": "sun"}  # the parameter names its object already


def _singular(word: str) -> str:
    """"heroes" → "hero", "strips" → "strip" ("glass", "chassis", "gas" stay)."""
    if word.endswith("oes") and len(word) > 4:
        return word[:-2]
    if word.endswith("s") and not word.endswith(("ss", "us", "is")) and len(word) > 3:
        return word[:-1]
    return word


def scope_name(scope) -> str:
    """A scope as the scorer compares it: "The Key Light" → "key", "CAM_hero" → "cam hero"."""
    if not scope:
        return ""
    words = [w[:-2] if w.endswith(("'s", "’s")) else w
             for w in re.sub(r"[\s_\-]+", " ", str(scope).lower()).strip().split()]
    while words and words[0] in _ARTICLES:
        words = words[1:]
    if len(words) > 1 and words[-1] in _GENERIC_TAIL:
        words = words[:-1]
    if words:
        words[-1] = _singular(words[-1])
    return " ".join(words)


def scope_of(parameter: str, scope) -> str:
    """:func:`scope_name`, and "sun elevation 35" scoped "sun" is the sun's elevation either way."""
    name = scope_name(scope)
    return "" if name and _OWN_OBJECT.get(parameter) == name else name


def norm_value(v):
    if isinstance(v, list):
        return tuple(v)
    if isinstance(v, str):
        return v.strip().lower().replace(" ", "_") if not any(ch.isdigit() for ch in v) else v.strip().lower()
    return v


def mention_key(m: dict, with_status: bool = True, with_scope: bool = True) -> tuple:
    """(engine, parameter, value, status, scope) of a labelled or extracted mention."""
    scope = scope_of(m["parameter"], m.get("scope")) if with_scope else ""
    return (m.get("engine") or "", m["parameter"], norm_value(m.get("value")),
            m["status"] if with_status else "", scope)


def _same(a, b) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and same_value(a, b))


def matches(a: tuple, b: tuple) -> bool:
    return a[0] == b[0] and a[1] == b[1] and a[3] == b[3] and a[4] == b[4] and _same(a[2], b[2])


def score(pairs: list[tuple[list[tuple], list[tuple]]]) -> dict:
    tp = fp = fn = 0
    for got, want in pairs:
        left = list(want)
        for g in got:
            hit = next((w for w in left if matches(g, w)), None)
            if hit is not None:
                left.remove(hit)
                tp += 1
            else:
                fp += 1
        fn += len(left)
    p = tp / (tp + fp) if tp + fp else 1.0
    r = tp / (tp + fn) if tp + fn else 1.0
    return {"tp": tp, "fp": fp, "fn": fn, "precision": round(p, 4), "recall": round(r, 4),
            "f1": round(2 * p * r / (p + r), 4) if p + r else 0.0}


def file_is_scoped(rows: list[dict], final: list[dict]) -> bool:
    """Labels written to the second guide carry ``scope`` (null or a name) somewhere."""
    return any("scope" in m for r in rows for m in r.get("expected", [])) or any("scope" in f for f in final)


class SessionScore:
    """Accumulates one labelled file's (or a whole run's) figures, session by session."""

    STATUSES = ("applied", "proposed", "rejected")

    def __init__(self) -> None:
        self.mentions: list = []
        self.by_status: dict[str, list] = {st: [] for st in self.STATUSES}
        self.current: list = []
        self.to_confirm = 0
        self.turned_down_shown = 0
        self.floated_shown = 0
        self.other_wrong = 0
        self.sessions = 0
        self.messages = 0

    def message(self, got: list[tuple], want: list[tuple]) -> None:
        self.messages += 1
        self.mentions.append((got, want))
        for st in self.STATUSES:
            self.by_status[st].append(([k for k in got if k[3] == st], [k for k in want if k[3] == st]))

    def session(self, have: list[tuple], unsure: int, final: list[tuple], labels: list[tuple]) -> list[dict]:
        """``have``: the ledger's asserted current values, (engine, parameter, value, "", scope);
        ``final``: the labelled ones, same shape; ``labels``: every labelled mention of the session.
        Returns what was wrong, for reading."""
        self.sessions += 1
        self.to_confirm += unsure
        self.current.append((have, final))
        wrong = []
        for h in have:
            if any(matches(h, f) for f in final):
                continue
            said = {k[3] for k in labels if (k[0], k[1], k[4]) == (h[0], h[1], h[4]) and _same(k[2], h[2])}
            if said and "applied" not in said:
                kind = "turned_down" if "rejected" in said else "floated"
            else:
                kind = "other"
            if kind == "turned_down":
                self.turned_down_shown += 1
            elif kind == "floated":
                self.floated_shown += 1
            else:
                self.other_wrong += 1
            wrong.append({"current": list(h), "kind": kind})
        return wrong

    def summary(self) -> dict:
        cur = score(self.current)
        return {"messages": self.messages, "sessions": self.sessions,
                "mentions_all": score(self.mentions),
                "by_status": {st: score(p) for st, p in self.by_status.items()},
                "current_values": {**cur, "to_confirm": self.to_confirm},
                "turned_down_or_floated_shown_as_current": self.turned_down_shown + self.floated_shown,
                "wrong_current": {"turned_down": self.turned_down_shown, "floated": self.floated_shown,
                                  "other": self.other_wrong}}

    def short(self) -> dict:
        s = self.summary()
        return {"messages": s["messages"],
                **{st: {k: s["by_status"][st][k] for k in ("precision", "recall")} for st in self.STATUSES},
                "current_values": {k: s["current_values"][k] for k in ("precision", "recall", "to_confirm")},
                "turned_down_or_floated_shown_as_current": s["turned_down_or_floated_shown_as_current"]}

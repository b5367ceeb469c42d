"""Which named object a value belongs to, read by a small learned model (issue 30). Pure.

The rules of :mod:`scopes` read one shape at a time — the noun right before a value, "on/for the …
frames", an identifier — and a sentence that sets several lights at once ("key 5600, fill at 4300
and the practicals down to 2700K") or names the object after a second value defeats them: on the
second blind set two thirds of the wrong current values were a value on the wrong object.

Here every way of reading the value's object is a *candidate*: render-wide (""), every name of one to
three words in the sentence (not a function word, a verb, a time, a quantity), an identifier
(``CAM_hero``), and what the rules read when no words of the sentence say it (an object the
conversation named before, found again in the value's clause). Each is described by what an
engineer would look at — on which side of the value it is and how far, whether a comma, another
value or the parameter's own name lies between, the word before it ("on", "for") and after it
(light, cam, layer, "'s", "at"), whether the rules chose it, whether the conversation knows it, what
kind of parameter it is (a light's, a camera's, an output's, a render setting) — and a logistic
regression scores them; the best one wins. The weights come from ``bench/train_scope.py`` (the
labelled sets with scopes, leave-one-set-out), stored in ``resources/scope_model.json``; without
them the rules decide alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.core.render_settings import parameters as P
from app.core.render_settings.scopes import (
    _ARTICLES, _IDENT, _JOINERS, _NOT_A_NAME, _OBJECT_TAIL, CAMERA_KEYS, LIGHT_KEYS, OUTPUT_KEYS, _nameable,
    object_key, scope_key)

_PREPS = {"on", "for", "in", "at", "to", "of"}
_BREAKS = {",", ";", "but", "while", "whereas", "and"}


@dataclass(frozen=True)
class ScopeModel:
    weights: dict[str, float] = field(default_factory=dict)
    margin: float = 0.0  # how much better than the rules' reading another must score to win

    @classmethod
    def from_json(cls, data: dict) -> "ScopeModel":
        return cls(weights={str(k): float(v) for k, v in (data.get("weights") or {}).items()},
                   margin=float(data.get("margin", 0.0)))

    def score(self, features: list[str]) -> float:
        z = sum(self.weights.get(f, 0.0) for f in features)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def choose(self, candidates: list[tuple[str, list[str]]], rules: str = "") -> str:
        """The best candidate's scope, unless the rules' reading (``rules``) scores within
        :attr:`margin` of it (render-wide first on a tie)."""
        best, top, theirs = "", -1.0, None
        for scope, feats in candidates:
            p = self.score(feats)
            if p > top + 1e-12:
                best, top = scope, p
            if scope == rules:
                theirs = p if theirs is None else max(theirs, p)
        if theirs is not None and top - theirs <= self.margin:
            return rules
        return best


def _kind(key: str) -> str:
    if key in LIGHT_KEYS:
        return "light"
    if key in CAMERA_KEYS:
        return "camera"
    if key in OUTPUT_KEYS:
        return "output"
    return "render"


def _spans(toks: list[str]) -> list[tuple[int, int]]:
    """Every name of one to three words: nameable words, none of them a function word, verb, time or
    quantity (a generic object word — light, cam, frames — only last, after a name)."""
    out = []
    for j, tok in enumerate(toks):
        if _IDENT.match(tok):
            out.append((j, j + 1))
            continue
        if not _nameable(tok) or tok in _NOT_A_NAME or tok in _OBJECT_TAIL:
            continue
        k = j
        while k < len(toks) and k - j < 3 and _nameable(toks[k]) and toks[k] not in _NOT_A_NAME \
                and toks[k] not in _OBJECT_TAIL:
            k += 1
            out.append((j, k))
    return out


def _number(tok: str) -> bool:
    return P.parse_number(tok) is not None or any(c.isdigit() for c in tok)


def candidates(key: str, kind_bool: bool, toks: list[str], at: int, names: list[tuple[int, int]],
               objects: tuple[str, ...], rule: str, known: str) -> list[tuple[str, list[str]]]:
    """(scope, features) for every reading of the object of the value at ``toks[at]`` (``at`` -1: the
    parameter's name stands for it). ``toks`` carries "," where the text had a clause mark;
    ``names``: where the parameter's name was said; ``rule``/``known``: what the rules read."""
    kind = _kind(key)
    if at < 0:
        at = names[0][1] - 1 if names else -1
    where = max(0, at)
    numbers = [j for j, t in enumerate(toks) if j != at and _number(t)]
    known_keys = {object_key(o) for o in objects}
    spans = _spans(toks)
    rule_key, known_key = object_key(rule), object_key(known)
    base = [f"k:{kind}", f"bool:{kind_bool}"]
    out: list[tuple[str, list[str]]] = []
    none = ["none", f"none:{kind}", f"none:rule_empty:{not rule}", f"none:known_empty:{not known}",
            f"none:spans:{min(len(spans), 3)}", f"none:objects:{bool(objects)}"]
    if at < 0:
        none.append("none:no_value")
    out.append(("", base + none))
    seen: dict[str, tuple[int, str, list[str]]] = {}  # name → its nearest mention: gap, side, features
    for s, e in spans:
        words = toks[s:e]
        tail = toks[e] if e < len(toks) and toks[e] in _OBJECT_TAIL else ""
        name = scope_key(" ".join(words + ([tail] if tail else [])))
        if not name:
            continue
        okey = object_key(name)
        left = e <= where
        gap = (where - e) if left else (s - where - 1)
        if s <= where < e:
            gap, side = 0, "on"
        else:
            side = "L" if left else "R"
        lo, hi = (e + (1 if tail else 0), where) if left else (where + 1, s)
        between = toks[lo:hi] if lo <= hi else []
        f = [f"span:{kind}", f"side:{side}", f"gap:{side}:{min(gap, 6)}", f"gap:{kind}:{side}:{min(gap, 4)}",
             f"len:{len(words)}"]
        commas = sum(t in (",", ";") for t in between)
        f.append(f"commas:{side}:{min(commas, 2)}")
        if any(t in _BREAKS - {",", ";"} for t in between):
            f.append(f"conj_between:{side}")
        if any(lo <= j < hi for j in numbers):
            f.append(f"value_between:{side}")
        if any(lo <= a < hi for a, _ in names):
            f.append(f"param_between:{side}")
        if between and all(t in _JOINERS or t in ("'s",) for t in between):
            f.append(f"joined:{side}")
        before = toks[s - 1] if s > 0 else "^"
        after = toks[e + (1 if tail else 0)] if e + (1 if tail else 0) < len(toks) else "$"
        if before in _PREPS:
            f.append(f"prep:{before}:{side}")
        elif before in _ARTICLES:
            before2 = toks[s - 2] if s > 1 else "^"
            f.append("article")
            if before2 in _PREPS:
                f.append(f"prep:{before2}:{side}")
        if tail:
            f.append(f"tail:{tail}")
            f.append(f"tail:{kind}")
        if after == "'s":
            f.append("poss")
        if after in _JOINERS:
            f.append(f"then_joiner:{side}")
        if _IDENT.match(words[0]):
            f.append(f"ident:{kind}")
        if okey and okey == rule_key:
            f.append("rule")
            f.append(f"rule:{kind}")
        if okey and okey == known_key:
            f.append("known_nearest")
        if okey in known_keys:
            f.append("known")
        f.append(f"head:{words[-1]}")
        for suffix in ("ed", "ing", "ly", "er", "s", "y"):
            if words[-1].endswith(suffix) and len(words[-1]) > len(suffix) + 2:
                f.append(f"suffix:{suffix}")
                break
        strong = bool(tail) or before in ("on", "for") or after == "'s" or _IDENT.match(words[0]) \
            or okey in known_keys or okey == rule_key
        if not strong and (commas or any(t in _BREAKS for t in between)):
            continue  # a bare word in another clause: not a reading anyone would make
        if any(a <= s < b or s <= a < e for a, b in names):
            f.append("is_param_name")
        prev = seen.get(name)
        if prev is None or gap < prev[0]:
            seen[name] = (gap, side, base + f)
    nearest: dict[str, tuple[int, str]] = {}  # side → the name nearest the value on it
    for name, (gap, side, _f) in seen.items():
        if side not in nearest or gap < nearest[side][0]:
            nearest[side] = (gap, name)
    for name, (_gap, side, f) in seen.items():
        if nearest[side][1] == name:
            f = f + [f"nearest:{side}", f"nearest:{kind}:{side}"]
        out.append((name, f))
    # what the rules or the conversation gave, if no span of this sentence says it (a scope carried over)
    for extra, tag in ((rule, "rule_only"), (known, "known_only")):
        if extra and object_key(extra) not in {object_key(n) for n, _ in out}:
            out.append((extra, base + [tag, f"{tag}:{kind}"]))
            if tag == "known_only":
                out[-1][1].append("known")
    return out

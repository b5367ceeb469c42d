"""Which named light, camera, output or object a setting belongs to (issue 30). Pure.

A value is render-wide (scope "") unless the words tie it to a named thing: a light ("key light at
5600K", "the fireplace at 1900K", "rim 150 W", "the pendants' temperature 2700 K"), a camera
("CAM_hero at f/2.8"), an output or deliverable ("hero frames at 3840x2160, the turntable at
1920x1080", "the turntable's 1920x1080"), a render layer or object ("clamp indirect 7 on the hero
frames", "the glass layer"). Stages of work and conditions are not objects ("for the finals", "for
now", "in this shot"). A scene file scopes its lights and cameras by their names the same way.

Scopes are compared by :func:`scope_key`: lower case, ``_``/``-``/spaces as one space, no leading
article or possessive, no generic last word (light, lamp, camera, cam, layer, output, frames, shots,
renders): "Key light", "key" and "the key's" are one light; "CAM_hero" is "cam hero".
"""
from __future__ import annotations

import re

from app.core.render_settings import parameters as P
from app.core.render_settings.parameters import ParamSpec

_ARTICLES = {"the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "those", "these"}
_GENERIC_TAIL = {"light", "lights", "lamp", "lamps", "camera", "cam", "cams", "cameras", "layer", "output", "frames",
                 "frame", "shots", "shot", "renders", "render"}

# parameters that belong to a light, a camera, or an output: a noun beside them names which one
LIGHT_KEYS = {"light_temperature", "light_power", "light_intensity"}
CAMERA_KEYS = {"focal_length", "f_stop", "shutter_speed", "iso", "focus_distance", "sensor_width", "depth_of_field",
               "shutter_angle", "aperture"}
OUTPUT_KEYS = {"resolution", "resolution_percentage"}
OBJECT_KEYS = LIGHT_KEYS | CAMERA_KEYS | OUTPUT_KEYS
SCENE_CAMERA_KEYS = {"focal_length", "sensor_width", "depth_of_field", "f_stop", "focus_distance"}  # the camera's own

# words that never name an object: function words, verbs, stages of work, times, quantities
_NOT_A_NAME = {
    "the", "a", "an", "my", "our", "your", "his", "her", "their", "this", "that", "those", "these", "it", "its",
    "it's", "is", "are", "was", "were", "be", "been", "being", "at", "to", "on", "in", "of", "for", "from", "with",
    "and", "or", "but", "so", "then", "now", "also", "too", "just", "still", "only", "both", "all", "every", "each",
    "rest", "others", "other", "everything", "i", "we", "you", "they", "he", "she", "me", "us", "them", "set",
    "sets", "setting", "put", "went", "go", "going", "using", "use", "used", "keep", "kept", "keeping", "changed",
    "change", "moved", "bumped", "dropped", "raised", "lowered", "tried", "try", "made", "make", "turned", "got",
    "have", "has", "had", "did", "do", "does", "switched", "final", "finals", "preview", "previews", "draft",
    "drafts", "test", "tests", "wip", "lookdev", "review", "client", "animation", "anim", "stills",
    "tonight", "today", "tomorrow", "yesterday", "morning", "evening", "night", "time", "here", "there",
    "scene", "shot", "frame", "frames", "render", "renders", "version", "pass", "passes", "no", "not", "yes", "ok",
    "okay", "yeah", "new", "old", "same", "value", "values", "back", "up", "down", "about", "around", "maybe",
    "instead", "than", "like", "more", "less", "much", "bit", "little", "way", "bumping", "dropping", "raising",
    "lowering", "want", "wants", "need", "needs", "looks", "look", "looked", "feels", "warm", "warmer", "cool",
    "cooler", "cold", "hot", "bright", "brighter", "dark", "darker", "soft", "softer", "hard", "harder", "strong",
    "stronger", "weak", "weaker", "temperature", "temp", "power", "intensity", "kelvin", "watts", "resolution",
    "res", "degrees", "light", "lights", "lamp", "lamps", "camera", "cam", "sun", "hdri", "dome", "sky", "lens",
    "exposure", "iso", "shutter", "aperture", "scale", "size", "colour", "color", "which", "what", "where", "how",
    "if", "when", "while", "after", "before", "since", "as", "by", "via", "per", "into", "over", "under", "nah",
    "nope", "good", "great", "nice", "fine", "better", "worse", "first", "second", "last", "next", "one",
    "two", "three", "four", "five", "six", "ten", "left", "right", "top", "bottom", "front", "behind", "inside",
    "outside", "main", "overall", "global", "whole", "entire", "default", "current", "currently", "again",
    "already", "finally", "even", "ever", "never", "always", "don't", "didn't", "doesn't", "i'm", "we're",
    "i've", "we've", "i'll", "we'll", "let's", "gonna", "should", "could", "would", "might", "will",
    "can", "must", "shall", "may", "tho", "though", "btw", "pls", "please", "thanks", "thx", "hmm", "hm",
    "ugh", "oh", "well", "actually", "really", "pretty", "quite", "very", "super", "slightly",
    "delivery", "deliver", "delivering", "spec", "specs", "budget", "farm", "gpu", "vram", "card",
    # durations and verbs that sit where a name would ("3 min 2560x1440", "hero frames stay 2048x858")
    "min", "mins", "minute", "minutes", "sec", "secs", "seconds", "hour", "hours", "hrs", "stay", "stays",
    "stayed", "reverted", "revert", "reverting", "out", "tiny", "sits", "remains", "remain",
}
_OBJECT_TAIL = {"light", "lights", "lamp", "lamps", "cam", "camera", "frames", "frame", "shots", "shot", "renders",
                "render", "stills", "still", "layer", "pass", "output", "version", "versions", "plate", "plates"}
_FOR_OBJECT = {"frames", "shots", "renders", "stills", "layer", "output", "version", "versions", "plate", "plates"}
_IDENT = re.compile(r"^[a-z][a-z0-9]*_[a-z0-9_]+$")  # CAM_hero, key_lgt, sh010_cam
_JOINERS = {"at", "to", "is", "are", "=", ":", "on", "now", "set", "was", "of", "'s", "goes", "went", "stays",
            "sits", "with", "from", "->", "back", "down", "up", "currently", "still", "@"}
_PARAM_WORDS = {"power", "intensity", "temperature", "temp", "strength", "resolution", "res", "wattage", "exposure",
                "multiplier", "kelvin", "colour", "color", "f-stop", "fstop", "aperture", "focal", "length", "lens"}
_STOP_LEFT = {",", ";", "and", "but", "then", "so", "also", "+", "/", "&", "while", "plus", "with", "vs"}


def scope_key(name: str | None) -> str:
    """The scope as the ledger keys it: "The Key Light" → "key", "CAM_hero" → "cam hero"."""
    if not name:
        return ""
    words = [w[:-2] if w.endswith(("'s", "’s")) else w
             for w in re.sub(r"[\s_\-]+", " ", str(name).lower()).strip().split()]
    while words and words[0] in _ARTICLES:
        words = words[1:]
    if len(words) > 1 and words[-1] in _GENERIC_TAIL:
        words = words[:-1]
    return " ".join(words)[:60]


_SAME_OBJECT_TAIL = {"stills", "still", "cut", "cuts", "version", "versions", "deliverable", "deliverables"}


def object_key(scope: str) -> str:
    """What makes two scope names one object in a project: "heroes", "hero stills" and "hero" are the
    hero output; "strips" and "strip" one light ("left strip" and "right strip" stay two)."""
    words = scope_key(scope).split()
    if len(words) > 1 and words[-1] in _SAME_OBJECT_TAIL:
        words = words[:-1]
    if words:
        w = words[-1]
        if w.endswith("oes") and len(w) > 4:
            words[-1] = w[:-2]
        elif w.endswith("s") and not w.endswith(("ss", "us", "is")) and len(w) > 3:
            words[-1] = w[:-1]
    return " ".join(words)


def _nameable(tok: str) -> bool:
    return (tok.isalpha() and (len(tok) > 1 or tok in "lr")) or bool(_IDENT.match(tok)) or bool(re.fullmatch(r"[a-z]+\d+[a-z]*", tok))


def scope_of(spec: ParamSpec, toks: list[str], at: int, names: list[tuple[int, int]]) -> str:
    """The object the value at ``toks[at]`` belongs to ("" render-wide). ``names``: where the
    parameter's own name was said in the sentence, (start, end)."""
    if at < 0:
        at = names[0][1] if names else -1
    if at < 0 or at >= len(toks):
        return ""
    key = spec.key
    objectish = key in LIGHT_KEYS or key in CAMERA_KEYS or key in OUTPUT_KEYS
    # an identifier in the clause: CAM_hero, key_lgt
    lo, hi = _clause(toks, at)
    for j in sorted(range(lo, hi), key=lambda j: abs(j - at)):
        if _IDENT.match(toks[j]) and (objectish or toks[j].startswith(("cam", "lgt", "light"))):
            return scope_key(toks[j])
    # "… on/for the hero frames", "the glass layer": an object of any setting
    for j in range(lo, hi - 1):
        if toks[j] in ("on", "for", "in") and j + 1 < hi:
            k = j + 1
            while k < hi and toks[k] in _ARTICLES:
                k += 1
            words = []
            while k < hi and len(words) < 3 and _nameable(toks[k]) and toks[k] not in _FOR_OBJECT:
                words.append(toks[k])
                k += 1
            if words and k < hi and toks[k] in _FOR_OBJECT and not (set(words) & _NOT_A_NAME):
                return scope_key(" ".join(words))
    if not objectish or spec.kind == "bool":
        return ""  # ("shallow depth of field" names no camera: a switch is scoped only by an identifier)
    # the noun phrase right before the value or its parameter's name: "key light at 5600K",
    # "the fireplace at 1900K", "hero resolution 3840x2160", "the turntable's 1920x1080"
    start = at
    near = [s for s, e in names if e <= at and at - e <= 3]
    if near:
        start = max(near)
    j = start - 1
    while j >= lo and (toks[j] in _JOINERS or toks[j] in _PARAM_WORDS) and toks[j] not in ("'s",):
        j -= 1
    if j >= lo and toks[j] == "'s":
        j -= 1
    words: list[str] = []
    while j >= lo and len(words) < 3 and _nameable(toks[j]) and toks[j] not in _JOINERS:
        if toks[j] in _NOT_A_NAME and toks[j] not in _OBJECT_TAIL:
            break
        words.insert(0, toks[j])
        j -= 1
    if words and words[-1] in _OBJECT_TAIL and len(words) == 1:
        words = []
    if words and not (j >= lo and toks[j] not in _ARTICLES and toks[j] not in _STOP_LEFT and _nameable(toks[j])
                      and toks[j] not in _NOT_A_NAME and toks[j] not in _JOINERS):
        return scope_key(" ".join(words))
    # after the value: "5600K on the key", "1920x1080 for the turntable", "150 W for the rim"
    k = at + 1
    while k < hi and (P.parse_number(toks[k]) is not None or toks[k] in (spec.units or ()) or toks[k] in ("k", "w")):
        k += 1
    if k < hi and toks[k] in ("on", "for", "in"):
        k += 1
        while k < hi and toks[k] in _ARTICLES:
            k += 1
        words = []
        while k < hi and len(words) < 3 and _nameable(toks[k]) and toks[k] not in _NOT_A_NAME:
            words.append(toks[k])
            k += 1
        if k < hi and toks[k] in _OBJECT_TAIL:
            words.append(toks[k])
        if words and (words[0] not in _OBJECT_TAIL):
            return scope_key(" ".join(words))
    return ""


def known_object(toks: list[str], at: int, objects: tuple[str, ...]) -> str:
    """An object the conversation already named, said again in the value's clause: "for the turntable
    you could drop max samples to 1500", "OptiX on the turntable", "heroes go out at 5000" once
    "turntable" and "hero" are known. The one nearest the value wins."""
    if at < 0 or at >= len(toks) or not objects:
        return ""
    lo, hi = _clause(toks, at)
    wanted = {object_key(o): o for o in objects}
    best, gap = "", 1 << 30
    for width in (3, 2, 1):
        for j in range(lo, hi - width + 1):
            words = toks[j:j + width]
            if any(not _nameable(w) for w in words):
                continue
            name = wanted.get(object_key(" ".join(words)))
            if name is None or (width == 1 and words[0] in _NOT_A_NAME):
                continue
            far = min(abs(j - at), abs(j + width - 1 - at))
            if far < gap:
                best, gap = name, far
    return best


def _clause(toks: list[str], at: int) -> tuple[int, int]:
    """The tokens of the clause around ``at``: up to the nearest "," ";" "and" "but" on each side
    (commas are not tokens: the caller's list carries them when it has them)."""
    lo = at
    while lo > 0 and toks[lo - 1] not in (";", ",", "but", "while", "whereas"):
        lo -= 1
    hi = at + 1
    while hi < len(toks) and toks[hi] not in (";", ",", "but", "while", "whereas", "and"):
        hi += 1
    return lo, hi

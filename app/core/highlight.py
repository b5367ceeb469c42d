"""Which words of a message a search matched, for the memory browser to show them.

Full-text search stems words and ignores stop words, so "flicker" finds "The point cloud
flickers": the browser should mark "flickers", not nothing. A word of the message is marked when it
begins like a query word (the query word less a short ending, at least four letters) and is not
much longer; words like "the" or "did" are never marked.
"""
from __future__ import annotations

import re

_WORD = re.compile(r"\w+")
_STOP = frozenset("a an and are as at be but by did do does for from had has have how i if in into is it its me my "
                  "no not of on or our she he so that the their them then there these they this to was we were "
                  "what when where which who why will with you your".split())


def _keys(query: str) -> list[str]:
    keys = []
    for w in _WORD.findall(query.casefold()):
        if w in _STOP or (len(w) < 2 and not w.isdigit()):
            continue
        keys.append(w if len(w) < 5 or w.isdigit() else w[: max(4, len(w) - 2)])
    return list(dict.fromkeys(keys))


def spans(text: str, query: str) -> list[tuple[int, int]]:
    """(start, end) of every word of ``text`` the query matches, in order."""
    keys = _keys(query)
    if not keys:
        return []
    out = []
    for m in _WORD.finditer(text):
        word = m.group(0).casefold()
        for key in keys:
            if word == key or (not key.isdigit() and word.startswith(key) and len(word) <= len(key) + 5):
                out.append(m.span())
                break
    return out

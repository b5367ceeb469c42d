"""Tables that compare values, read as what they say.

A model answers "what should I change?" with a table: | Setting | Current | Suggested |. Read row
by row as "Max samples: 256 | 512", both numbers look like suggestions, and the one first in the
row wins. A table that compares values names its columns: one says what is (current, now, before,
yours), another what is proposed (suggested, new, try, target). In Kelvin's answer only the proposal
is a suggestion — the current column repeats the artist; in the artist's own table the current
column is the state they report, and what they mean to try is not a decision. So a comparing table
keeps the setting's name and the one column that says something new for its writer; every other
table is left as it is. Pure text in, text out (the extractor's layout step reads the result).
"""
from __future__ import annotations

import re

_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{2,}:?[ \t]*(\|[ \t]*:?-{2,}:?[ \t]*)*\|?[ \t]*$")
_MARKS = re.compile(r"[*_`~]")
CURRENT_WORDS = ("current", "currently", "now", "before", "old", "existing", "yours", "your", "was", "today",
                 "in use", "present", "from", "actual", "default", "set")
PROPOSED_WORDS = ("suggested", "suggestion", "suggest", "proposed", "proposal", "recommended", "recommendation",
                  "recommend", "new", "try", "target", "after", "to", "change to", "set to", "instead", "better",
                  "should be", "fix", "change")


def _cells(line: str) -> list[str]:
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|"):
        body = body[:-1]
    return [c.strip() for c in body.split("|")]


def _kind(header: str) -> str:
    """"current", "proposed" or "" for a column's header."""
    words = " " + " ".join(re.findall(r"[a-z]+", _MARKS.sub("", header.lower()))) + " "
    if any(f" {w} " in words for w in PROPOSED_WORDS):
        return "proposed"
    if any(f" {w} " in words for w in CURRENT_WORDS):
        return "current"
    return ""


def compared(text: str, role: str) -> str:
    """``text`` with each table that compares values narrowed to its name column and the column that
    is new for ``role``'s writer ("assistant": the proposal; anyone else: the current value)."""
    if "|" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and "|" in lines[i] and _RULE.match(lines[i + 1]):
            head = _cells(lines[i])
            kinds = [_kind(h) for h in head]
            keep_kind = "proposed" if role == "assistant" else "current"
            if len(head) >= 3 and "current" in kinds[1:] and "proposed" in kinds[1:]:
                keep = [0] + [n for n, k in enumerate(kinds) if n and k == keep_kind]
                end = i + 2
                while end < len(lines) and "|" in lines[end] and lines[end].strip():
                    end += 1
                for line in [lines[i], lines[i + 1], *lines[i + 2:end]]:
                    cells = _cells(line)
                    out.append("| " + " | ".join(cells[n] if n < len(cells) else "" for n in keep) + " |")
                i = end
                continue
        out.append(lines[i])
        i += 1
    return "\n".join(out)

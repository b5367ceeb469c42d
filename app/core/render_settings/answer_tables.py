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


def find_tables(text: str) -> list[tuple[int, int, list[list[str]]]]:
    """Every Markdown table in ``text``: (first line, line after the last, its rows of cells — the
    header first, the rule left out)."""
    lines = text.split("\n")
    found = []
    i = 0
    while i < len(lines):
        if i + 1 < len(lines) and "|" in lines[i] and _RULE.match(lines[i + 1]):
            end = i + 2
            while end < len(lines) and "|" in lines[end] and lines[end].strip():
                end += 1
            found.append((i, end, [_cells(lines[i])] + [_cells(ln) for ln in lines[i + 2:end]]))
            i = end
            continue
        i += 1
    return found


def _replace(text: str, tables, rewrite) -> str:
    lines = text.split("\n")
    for start, end, rows in reversed(tables):
        new = rewrite(rows)
        if new is not None:
            lines[start:end] = new
    return "\n".join(lines)


def compared(text: str, role: str) -> str:
    """``text`` with each table that compares values narrowed to its name column and the column that
    is new for ``role``'s writer ("assistant": the proposal; anyone else: the current value)."""
    if "|" not in text:
        return text
    keep_kind = "proposed" if role == "assistant" else "current"

    def narrow(rows):
        kinds = [_kind(h) for h in rows[0]]
        if len(rows[0]) < 3 or "current" not in kinds[1:] or "proposed" not in kinds[1:]:
            return None
        keep = [0] + [n for n, k in enumerate(kinds) if n and k == keep_kind]
        out = ["| " + " | ".join(r[n] if n < len(r) else "" for n in keep) + " |" for r in rows]
        return [out[0], "|" + "---|" * len(keep), *out[1:]]

    return _replace(text, find_tables(text), narrow)


def stacked(text: str, which: set[int]) -> str:
    """``text`` with the tables numbered in ``which`` written as a list, one item per row — the row's
    first cell, then each other cell with its column's name ("- **Max samples** — Current: 256 ·
    Suggested: 512"): what a table too wide for a sidebar becomes, so that no word is broken."""
    tables = find_tables(text)
    picked = [t for n, t in enumerate(tables) if n in which]

    def as_list(rows):
        head, out = rows[0], []
        for row in rows[1:]:
            rest = " · ".join(f"{head[n]}: {c}" if n < len(head) and head[n] else c
                              for n, c in enumerate(row) if n and c)
            out.append(f"- **{row[0]}**" + (f" — {rest}" if rest else "") if row and row[0] else f"- {rest}")
        return [*out, ""]

    return _replace(text, picked, as_list)

"""The artist's words in the window. The services speak to two front ends: the terminal, where a
fix can be a command (`ollama serve`, an environment variable, a flag), and the window, where the
fix is a button or a view. What reaches the window from below goes through here: a clause that
names a command, a flag, an environment variable or one of Kelvin's files is left out — the window
says its own fix beside it (Setup…, the mode box, the GPU view) — and the marks a stored reply
carries for its end ("[stopped: switched project]") become a short status in words."""
from __future__ import annotations

import re

_DEVELOPER = re.compile(r"`|\b[A-Z][A-Z0-9]*_[A-Z0-9_]{2,}\b|(?<![\w-])--[a-z][\w-]*|\bkelvin (?:[a-z]+ )*[a-z]+\b|"
                        r"\b[\w-]+\.(?:md|toml|jsonl?|lance|ini)\b")
_END_MARK = re.compile(r"\s*\[(stopped by the artist|stopped: [^\]]*|reply cut off: [^\]]*|no reply: [^\]]*|"
                       r"stopped(?::[^\]]*)? before the reply began|stopped by the artist before the reply began)\]\s*$")
STOP_WORDS = {"switched project": "when you switched project"}


def plain_words(text: str) -> str:
    """``text`` without the clauses that speak a developer's language; the rest as it was."""
    if not _DEVELOPER.search(text):
        return text
    kept = [c for c in re.split(r"(?<=[;.])\s+|\s+(?=\()", text) if c.strip() and not _DEVELOPER.search(c)]
    out = " ".join(kept).strip().rstrip(";,")
    return out + ("." if out and not out.endswith((".", "!", "?")) else "")


def reply_end(text: str) -> tuple[str, str]:
    """A stored reply's text without the mark of how it ended, and that end in words ("stopped when
    you switched project", "cut off", "no reply"; "" for a whole reply)."""
    m = _END_MARK.search(text)
    if m is None:
        return text, ""
    mark, body = m.group(1), text[:m.start()].rstrip()
    if mark.startswith("stopped"):
        why = mark.partition(":")[2].replace("before the reply began", "").strip()
        return body, ("stopped " + STOP_WORDS.get(why, why)).strip() if why and why != "by the artist" else "stopped"
    if mark.startswith("reply cut off"):
        return body, "cut off"
    return body, "no reply"

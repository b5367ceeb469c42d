"""Split long messages into chunks that put back together exactly.

Chunks are contiguous, non-overlapping slices of the original text, so
``"".join(chunks) == text`` always holds and a search hit on any chunk can return the whole
message. Boundaries prefer paragraph breaks, then sentence ends, then whitespace.
"""
from __future__ import annotations

import re

CHUNK_CHARS = 1200  # ~300 tokens: inside every embedder's window (MiniLM truncates at 256 word pieces)

_BREAKS = (re.compile(r"\n\s*\n"), re.compile(r"[.!?;:]\s+|\n"), re.compile(r"\s+"))


def split(text: str, limit: int = CHUNK_CHARS) -> list[str]:
    if limit < 16:
        raise ValueError("chunk limit too small")
    chunks: list[str] = []
    start = 0
    n = len(text)
    while n - start > limit:
        window = text[start : start + limit]
        cut = _last_break(window, min_pos=limit // 3)
        chunks.append(text[start : start + cut])
        start += cut
    if start < n or not chunks:
        chunks.append(text[start:])
    return chunks


def _last_break(window: str, min_pos: int) -> int:
    for pattern in _BREAKS:
        best = -1
        for m in pattern.finditer(window):
            if m.end() >= min_pos and m.end() < len(window) + 1:
                best = m.end()
        if best > 0:
            return best
    return len(window)  # one very long word: hard cut

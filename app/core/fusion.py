"""Fusion for hybrid search: the full-text and the vector results become one ranking.

Each leg's scores are scaled to 0..1 over its own candidates (BM25 as it comes; the vector leg's
cosine similarity), then mixed: ``TEXT_WEIGHT`` of the full-text score, the rest of the vector
score. On LoCoMo's conversations this beat reciprocal rank fusion by 0.10 in evidence recall@10 (0.742
against 0.644 with MiniLM, docs/benchmarks.md §12): a small embedder's ranks are weak votes, its scores say how sure it is.
Two refinements: a message that contains the query verbatim gets a bonus (so ``GI clamp 10`` beats
a message that merely mentions clamps and tens), and recency breaks ties. Archived messages (from
before the project's last day rollover) stay findable, but their score counts a little less, so a
recent message that matches as well comes first; the verbatim bonus counts in full, so a message
that says the query word for word still beats one that does not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

TEXT_WEIGHT = 0.6  # the full-text leg's share of the mix; the vector leg has the rest
VERBATIM_BONUS = 1.25  # more than any mixed score (at most 1): the whole query said word for word always wins
# an archived message's score counts this much (its verbatim bonus in full): a recent message that
# matches as well comes first. bench/recall.py --roll-over: 0.85 cost recall, 0.98 was even or better
ARCHIVED_WEIGHT = 0.98


@dataclass(frozen=True)
class Candidate:
    message_id: str
    ts_ms: int
    text: str = ""
    archived: bool = False  # said before the project's last day rollover
    score: float = 0.0  # the leg's own, higher is better: BM25, or cosine similarity


@dataclass(frozen=True)
class Fused:
    message_id: str
    score: float
    ts_ms: int


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip()


def said_as(query: str) -> re.Pattern | None:
    """A pattern that finds the query said word for word (any case, any run of spaces between its
    words, whole words only: "GI clamp 1" is not said in "GI clamp 10"); None for a query too short."""
    phrase = " ".join(query.lower().split())  # lower, not casefold: IGNORECASE matches "ß" only as "ß"
    if len(phrase) < 3:
        return None
    words = r"\s+".join(re.escape(w) for w in phrase.split(" "))
    return re.compile(r"(?<!\w)" + words + r"(?!\w|[.,]\d)", re.IGNORECASE)


def _scaled(leg: list[Candidate]) -> dict[str, float]:
    """A leg's scores scaled to 0..1 over its candidates; a message's best chunk counts."""
    best: dict[str, float] = {}
    for cand in leg:
        best[cand.message_id] = max(best.get(cand.message_id, cand.score), cand.score)
    if not best:
        return {}
    low, high = min(best.values()), max(best.values())
    if high - low < 1e-12:
        return {mid: 1.0 for mid in best}
    return {mid: (s - low) / (high - low) for mid, s in best.items()}


def fuse(text: list[Candidate], vector: list[Candidate] = (), query: str = "", text_weight: float | None = None,
         archived_weight: float | None = None) -> list[Fused]:
    """Mix the legs' scaled scores (the full-text leg alone when there is no vector leg), best first.
    The weights default to the module's ``TEXT_WEIGHT`` and ``ARCHIVED_WEIGHT``."""
    text_weight = TEXT_WEIGHT if text_weight is None else text_weight
    archived_weight = ARCHIVED_WEIGHT if archived_weight is None else archived_weight
    t, v = _scaled(list(text)), _scaled(list(vector))
    share = text_weight if v else 1.0
    ts: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    archived: set[str] = set()
    for cand in [*text, *vector]:
        ts[cand.message_id] = max(ts.get(cand.message_id, cand.ts_ms), cand.ts_ms)
        texts.setdefault(cand.message_id, []).append(cand.text)
        if cand.archived:
            archived.add(cand.message_id)
    scores = {mid: share * t.get(mid, 0.0) + (1.0 - share) * v.get(mid, 0.0) for mid in ts}
    for mid in archived:
        scores[mid] *= archived_weight
    verbatim = said_as(query)
    if verbatim is not None:
        for mid, parts in texts.items():
            if any(verbatim.search(p) for p in parts):
                scores[mid] += VERBATIM_BONUS
    fused = [Fused(mid, s, ts[mid]) for mid, s in scores.items()]
    fused.sort(key=lambda f: (-round(f.score, 12), -f.ts_ms, f.message_id))
    return fused

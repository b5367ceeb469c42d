"""Rank fusion for hybrid search: full-text and vector results become one ranking.

Reciprocal rank fusion (Cormack et al., 2009) over ranked lists of message ids, with two
refinements: a message that contains the query verbatim counts as an extra first-place vote
(so ``GI clamp 10`` beats a message that merely mentions clamps and tens), and recency breaks ties.
Archived messages (from before the project's last day rollover) stay findable, but their rank
votes count a little less, so a recent message that matches as well comes first; their verbatim
vote counts in full, so a message that says the query word for word still beats one that does not.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RRF_K = 60
# an archived message's rank votes count this much (its verbatim vote in full): about one place in one
# list, so a recent message that matches as well comes first. bench/recall.py --roll-over: 0.85 cost
# recall (older answers sank), 0.98 was even or better
ARCHIVED_WEIGHT = 0.98


@dataclass(frozen=True)
class Candidate:
    message_id: str
    ts_ms: int
    text: str = ""
    archived: bool = False  # said before the project's last day rollover


@dataclass(frozen=True)
class Fused:
    message_id: str
    score: float
    ts_ms: int


def normalise(text: str) -> str:
    return re.sub(r"\s+", " ", text.casefold()).strip()


def fuse(ranked_lists: list[list[Candidate]], query: str = "", k: int = RRF_K,
         archived_weight: float = ARCHIVED_WEIGHT) -> list[Fused]:
    """Fuse ranked lists (best first). A message appearing several times in a list (several
    chunks) counts once, at its best rank. The rank votes of archived candidates are multiplied
    by ``archived_weight``."""
    scores: dict[str, float] = {}
    ts: dict[str, int] = {}
    texts: dict[str, list[str]] = {}
    archived: set[str] = set()
    for ranked in ranked_lists:
        seen: set[str] = set()
        rank = 0
        for cand in ranked:
            texts.setdefault(cand.message_id, []).append(cand.text)
            if cand.archived:
                archived.add(cand.message_id)
            if cand.message_id in seen:
                continue
            seen.add(cand.message_id)
            rank += 1
            scores[cand.message_id] = scores.get(cand.message_id, 0.0) + 1.0 / (k + rank)
            ts[cand.message_id] = max(ts.get(cand.message_id, cand.ts_ms), cand.ts_ms)
    for mid in archived:
        scores[mid] *= archived_weight
    phrase = normalise(query)
    if phrase and len(phrase) >= 3:
        # whole words only: "GI clamp 1" must not count as said in "GI clamp 10"
        verbatim = re.compile(r"(?<!\w)" + re.escape(phrase) + r"(?!\w|[.,]\d)")
        for mid, parts in texts.items():
            if any(verbatim.search(normalise(p)) for p in parts):
                scores[mid] += 1.0 / (k + 1)
    fused = [Fused(mid, s, ts[mid]) for mid, s in scores.items()]
    fused.sort(key=lambda f: (-round(f.score, 12), -f.ts_ms, f.message_id))
    return fused

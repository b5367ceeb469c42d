"""What Kelvin asks of a model server, whichever kind it is: the records it hands back and the one
interface both kinds implement.

Two kinds speak it: :class:`~app.llm.backend.OllamaBackend` (Ollama's own API) and
:class:`~app.llm.openai_compat.OpenAIBackend` (any OpenAI-compatible local server: LM Studio,
llama.cpp's ``llama-server``, Jan, vLLM). The conversation, the brief, the model extraction pass,
the embedders and the VRAM guard talk to :class:`ModelServer` only; :func:`app.llm.servers.connect`
picks the kind from the settings. What a server cannot do (pull a model, put it on the CPU for one
request, unload it on request) it says in plain words instead of pretending.
"""
from __future__ import annotations

import dataclasses
import threading
from dataclasses import dataclass
from typing import Callable, Protocol, runtime_checkable

from app.llm.stream import ChatStream


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
    prompt_eval_count: int | None = None  # the server's own count of the prompt's tokens
    eval_count: int | None = None
    cached_tokens: int | None = None  # of the prompt, how many the server reused from its cache (None: not said)


@dataclass(frozen=True)
class ModelInfo:
    name: str
    capabilities: tuple[str, ...]
    parameter_size: str
    family: str
    context_length: int | None  # the most tokens one request may hold (None: the server does not say)

    @property
    def supports_tools(self) -> bool:
        return "tools" in self.capabilities


@dataclass(frozen=True)
class LoadedModel:
    """A model in memory (``ollama ps``); ``size_vram`` < ``size`` means partly on the CPU (0 and 0:
    the server does not say what it holds)."""

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


@runtime_checkable
class ModelServer(Protocol):
    """A model server Kelvin talks to. Every problem is a
    :class:`~app.llm.errors.ModelServerUnavailable` with one plain sentence."""

    host: str  # the address the artist set
    kind: str  # "ollama" or "openai" (the setting's value)
    can_pull: bool  # Kelvin can download a model through it (Ollama); else the server's own app does
    cpu_mode: bool  # one request can be kept off the GPU (Ollama's num_gpu 0); else the server decides

    @property
    def label(self) -> str:
        """What the artist calls it: "Ollama", "LM Studio", "llama.cpp's server", …"""
        ...

    def chat(self, model: str, messages: list[dict], *, tools: list[dict] | None = None, num_ctx: int = 8192,
             cpu: bool = False, num_predict: int | None = None, keep_alive: str | float | None = None,
             format: dict | str | None = None) -> ChatStream: ...

    def complete(self, model: str, messages: list[dict], **kwargs) -> tuple[str, ChatChunk]: ...

    def embed(self, model: str, texts: list[str]) -> list[list[float]]: ...

    def ps(self) -> list[LoadedModel]: ...

    def preload(self, model: str) -> None: ...

    def unload(self, model: str, confirm_s: float = 5.0) -> bool: ...

    def unload_problem(self) -> str:
        """"" when the server frees a model's memory on request; else the sentence saying why not and
        what the artist can do instead."""
        ...

    def show(self, model: str) -> ModelInfo: ...

    def list(self) -> list[str]: ...

    def has_model(self, model: str) -> bool: ...

    def pull(self, model: str, progress: Callable[[PullProgress], None] = lambda p: None,
             cancel: threading.Event | None = None) -> None: ...

    def version(self) -> str: ...

    def close(self) -> None: ...


def complete(server: ModelServer, model: str, messages: list[dict], **kwargs) -> tuple[str, ChatChunk]:
    """The whole reply and its final chunk (carrying every tool call of the reply)."""
    last, calls = ChatChunk(), []
    with server.chat(model, messages, **kwargs) as stream:
        for last in stream:
            calls.extend(last.tool_calls)
    return stream.text, dataclasses.replace(last, tool_calls=tuple(calls))

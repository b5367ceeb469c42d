"""The OpenAI chat-completions wire format, both ways, and the servers' refusals in plain words.

Pure translation (no network): Kelvin's messages (Ollama's shape: tool calls with argument objects,
tool results by name) into the OpenAI shape (call ids, arguments as JSON text); a stream of
server-sent events back into :class:`~app.llm.model_server.ChatChunk` objects, tool-call fragments
put together; and an error body into the right :class:`~app.llm.errors.ModelServerUnavailable`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from app.llm.errors import (ContextTooSmall, ModelMissing, ModelServerUnavailable, ServerError, StreamCut,
                            out_of_memory)
from app.llm.model_server import ChatChunk, ToolCall


def messages_out(messages: list[dict]) -> list[dict]:
    """Kelvin's chat messages as an OpenAI server takes them: every tool call gets an id, its
    arguments as JSON text, and each tool result the id of the call it answers (in order)."""
    out, pending, n = [], [], 0
    for m in messages:
        m = {k: v for k, v in m.items() if k not in ("tool_name", "images")}
        if m.get("role") == "assistant" and m.get("tool_calls"):
            calls = []
            for c in m["tool_calls"]:
                fn = c.get("function", c)
                args = fn.get("arguments") or {}
                calls.append({"id": c.get("id") or f"call_{n}", "type": "function",
                              "function": {"name": fn.get("name", ""),
                                           "arguments": args if isinstance(args, str) else json.dumps(args)}})
                pending.append(calls[-1]["id"])
                n += 1
            m["tool_calls"] = calls
        elif m.get("role") == "tool":
            m["tool_call_id"] = m.get("tool_call_id") or (pending.pop(0) if pending else f"call_{n}")
        out.append(m)
    return out


def response_format(format: dict | str | None) -> dict | None:
    """Ollama's ``format`` ("json" or a JSON schema) as ``response_format``."""
    if format is None:
        return None
    if format == "json":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": "kelvin_answer", "schema": format, "strict": True}}


def _arguments(text: str) -> dict:
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {"arguments": text}  # the tool's checker refuses it, in words the model sees
    return value if isinstance(value, dict) else {"arguments": value}


@dataclass
class Reader:
    """Server-sent events in, chunks out. ``feed`` takes one line; ``end`` gives the final chunk."""

    label: str
    host: str
    model: str
    finish: str | None = None
    usage: dict = field(default_factory=dict)
    done: bool = False  # "data: [DONE]" seen
    text: str = ""
    _calls: dict[int, dict] = field(default_factory=dict)

    def feed(self, line: str) -> ChatChunk | None:
        if not line.startswith("data:"):
            return None  # a comment (":" keep-alive ping), an event name, a blank separator
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return None
        try:
            event = json.loads(data)
        except ValueError:
            return None
        if not isinstance(event, dict):
            return None
        if "error" in event:
            raise refusal(-1, event, self.label, self.host, self.model, partial=self.text)
        return self.take(event)

    def take(self, event: dict) -> ChatChunk | None:
        """One ``chat.completion.chunk`` (or a whole ``chat.completion``, from a server that ignored
        ``stream``)."""
        if isinstance(event.get("usage"), dict):
            self.usage = event["usage"]
        text = ""
        for choice in event.get("choices") or ():
            delta = choice.get("delta") or choice.get("message") or {}
            text += delta.get("content") or ""
            for i, call in enumerate(delta.get("tool_calls") or ()):
                slot = self._calls.setdefault(call.get("index", i), {"name": "", "arguments": ""})
                fn = call.get("function") or {}
                slot["name"] += fn.get("name") or ""
                args = fn.get("arguments")
                slot["arguments"] += args if isinstance(args, str) else json.dumps(args) if args else ""
            self.finish = choice.get("finish_reason") or self.finish
        self.text += text
        return ChatChunk(text=text) if text else None

    @property
    def finished(self) -> bool:
        return self.done or self.finish is not None

    def end(self) -> ChatChunk:
        calls = tuple(ToolCall(c["name"], _arguments(c["arguments"])) for _, c in sorted(self._calls.items())
                      if c["name"])
        reason = {"tool_calls": "stop", None: "stop"}.get(self.finish, self.finish)
        cached = (self.usage.get("prompt_tokens_details") or {}).get("cached_tokens")
        return ChatChunk(tool_calls=calls, done=True, done_reason=reason,
                         prompt_eval_count=self.usage.get("prompt_tokens"),
                         eval_count=self.usage.get("completion_tokens"), cached_tokens=cached)


_NOT_LOADED = re.compile(r"not loaded|no models? (?:is |are )?loaded|not running|failed to load|model.*unloaded", re.I)
_NOT_FOUND = re.compile(r"not found|does not exist|no such model|unknown model|invalid model", re.I)
_CONTEXT = re.compile(r"context (?:size|length|window)|exceeds? the (?:available )?context|maximum context", re.I)
_NUMBER = re.compile(r"\((\d+) tokens\)|context (?:size|length)(?: is| of)? (\d+)|maximum context length is (\d+)", re.I)


def _error_text(body) -> tuple[str, dict]:
    err = body.get("error", body) if isinstance(body, dict) else body
    if isinstance(err, dict):
        return str(err.get("message") or err.get("type") or json.dumps(err)), err
    return str(err or "").strip(), {}


def refusal(status: int, body, label: str, host: str, model: str, *, partial: str | None = None,
            fix_missing: str = "") -> ModelServerUnavailable:
    """The server's error (``body``: its JSON, or its text) as one plain sentence with the fix."""
    text, err = _error_text(body)
    text = text.strip() or f"HTTP {status}"
    if partial:  # an error after some text: what came is kept
        return StreamCut(f"{label}'s reply from {model!r} was cut off ({text}); the partial answer is kept, "
                         "ask again for the rest", partial)
    if err.get("type") == "exceed_context_size_error" or _CONTEXT.search(text):
        limit = int(err.get("n_ctx") or 0)
        if not limit:
            found = _NUMBER.findall(text)
            numbers = [int(n) for group in found for n in group if n]
            limit = min(numbers) if numbers else 0
        held = f"holds only {limit:,} tokens per request" if limit else "holds fewer tokens per request"
        fix = "load the model with a larger context (llama-server -c 8192; LM Studio: Context Length)"
        if limit and limit < 1024:
            return ContextTooSmall(f"{label} at {host} {held}, fewer than Kelvin's smallest window (1,024); {fix}",
                                   limit, status)
        return ContextTooSmall(f"{label} at {host} {held}, fewer than Kelvin's window; {fix} or lower num_ctx",
                               limit, status)
    if _NOT_LOADED.search(text) or _NOT_FOUND.search(text) or status == 404:
        how = fix_missing or f"load it in {label} or set chat_model to a model it lists"
        state = "has not loaded" if _NOT_LOADED.search(text) else "does not have"
        return ModelMissing(f"{label} at {host} {state} the model {model!r} ({text}); {how}", model)
    if oom := out_of_memory(text, model):
        return oom
    if status == 501 and "embedding" in text.lower():
        return ServerError(f"{label} at {host} does not serve embeddings ({text}); start it with --embeddings, or set "
                           "the embedder to another model or 'none'", status)
    if status in (401, 403):
        return ServerError(f"{label} at {host} refused Kelvin's key ({text}); set openai_api_key to the key the "
                           "server expects", status)
    where = f"status {status}" if status > 0 else "mid-reply"
    return ServerError(f"{label} at {host} refused the request for {model!r} ({where}): {text}", status)

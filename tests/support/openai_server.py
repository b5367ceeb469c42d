"""A deterministic OpenAI-compatible server for tests: real HTTP on 127.0.0.1, stdlib only.

It speaks what Kelvin's :mod:`app.llm.openai_compat` uses — ``/v1/models``, ``/v1/chat/completions``
(server-sent events with ``stream``, usage with ``stream_options.include_usage``, tool-call
fragments, ``response_format``) and ``/v1/embeddings`` — and, by ``flavour``, what each real
server adds: llama.cpp's ``llama-server`` with one model (``/props``) or in router mode
(``/models``, ``/models/load``, ``/models/unload``), LM Studio 0.4 (``/api/v1/models``,
``/api/v1/models/load|unload``) and before (``/api/v0/models``), or nothing more (Jan, vLLM).
Shapes follow llama.cpp's tools/server/README.md and LM Studio's REST docs; errors are
``{"error": {"message", "type", "code"}}`` as both send them.

    with OpenAITestServer(flavour="llama.cpp-router") as srv:
        srv.queue_reply("Try a denoiser.")

Faults: ``refuse_next``, ``vanish_mid_stream``, ``stream_error``, ``ignore_stream`` (a whole JSON
reply whatever ``stream`` says), ``html`` (not an OpenAI server at all), ``n_ctx`` (the context it
holds per request), ``autoload`` (False: a model must be loaded first), ``delay_s``.
"""
from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

from tests.support.ollama_server import _HTTPServer, embed_text

FLAVOURS = ("llama.cpp", "llama.cpp-router", "lmstudio", "lmstudio-v0", "openai")


@dataclass
class Model:
    kind: str = "chat"  # or "embedding"
    dim: int = 64
    tools: bool = False
    size: int = 246_587_904


DEFAULT_MODELS = {"gemma-3-270m": Model(), "nomic-embed-text-v1.5": Model(kind="embedding")}


class OpenAITestServer:
    def __init__(self, models: dict | None = None, *, flavour: str = "llama.cpp-router", n_ctx: int = 8192,
                 autoload: bool = True, host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0):
        assert flavour in FLAVOURS, flavour
        self.models = dict(DEFAULT_MODELS if models is None else models)
        self.flavour, self.n_ctx, self.autoload, self.delay_s = flavour, n_ctx, autoload, delay_s
        self.requests: list[tuple[str, dict | None]] = []
        self.keys: list[str] = []  # the Authorization header of each request ("" when none)
        self.errors: list[BaseException] = []
        self.vanish_mid_stream = False
        self.vanish_after = 2
        self.stream_error: str | None = None
        self.ignore_stream = False
        self.html = False
        self.loaded: set[str] = set(self.models) if flavour == "llama.cpp" else set()
        self._replies: deque[dict] = deque()
        self._refusals: deque[tuple[int, dict, str | None]] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._bind = (host, port)
        self._httpd: _HTTPServer | None = None
        self._port = 0
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> OpenAITestServer:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self._bind, _Handler, self)
            self._port = self._httpd.server_address[1]  # kept after stop(): tests name the address in messages
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                            name=f"kelvin-openai-test-server-{self.port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.drop_connections()
        self._httpd.server_close()
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> OpenAITestServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        """The address as an artist types it (LM Studio shows it with /v1)."""
        return f"http://{self._bind[0]}:{self.port}/v1"

    # -- scripting -------------------------------------------------------------------------------
    def queue_reply(self, text: str = "", tool_calls: list | None = None) -> None:
        """The next chat answer; ``tool_calls``: [{"name": .., "arguments": {..}}]."""
        self._replies.append({"text": text, "tool_calls": list(tool_calls or [])})

    def refuse_next(self, status: int = 500, message: str = "internal error", path: str | None = None,
                    **extra) -> None:
        self._refusals.append((status, {"code": status, "message": message, "type": "server_error", **extra}, path))

    def requests_to(self, path: str) -> list[dict | None]:
        return [body for p, body in self.requests if p == path]

    # -- state ------------------------------------------------------------------------------------
    def _take_refusal(self, path: str):
        with self._lock:
            for i, (status, err, only) in enumerate(self._refusals):
                if only in (None, path):
                    del self._refusals[i]
                    return status, err
        return None

    def _listed(self) -> list[dict]:
        out = []
        for name, m in self.models.items():
            entry = {"id": name, "object": "model", "owned_by": "llamacpp", "created": 1795704464}
            if self.flavour.startswith("llama.cpp"):
                entry["meta"] = {"n_ctx": self.n_ctx, "n_params": 268098176, "size": m.size}
            if self.flavour == "llama.cpp-router":
                entry["status"] = {"value": "loaded" if name in self.loaded else "unloaded",
                                   "args": ["llama-server", "--ctx-size", str(self.n_ctx)]}
                if name not in self.loaded:
                    entry.pop("meta")
            out.append(entry)
        return out


class _Refusal(Exception):
    def __init__(self, status: int, message: str, type_: str = "invalid_request_error", **extra):
        super().__init__(message)
        self.status, self.body = status, {"error": {"code": status, "message": message, "type": type_, **extra}}


_VANISH = object()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "OpenAITest"
    server: _HTTPServer

    def setup(self):
        super().setup()
        import socket
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        owner: OpenAITestServer = self.server.owner
        path = self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        owner.requests.append((path, body))
        owner.keys.append(self.headers.get("Authorization", ""))
        if owner.html:  # a web server that is not a model server at all
            return self._send(200, b"<html><body>It works!</body></html>", "text/html")
        route = _ROUTES.get((method, path))
        if route is None or (route.__name__ not in owner_routes(owner.flavour)):
            return self._json(404, {"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}})
        try:
            if refusal := owner._take_refusal(path):
                return self._json(refusal[0], {"error": refusal[1]})
            route(self, owner, body if isinstance(body, dict) else {})
        except _Refusal as r:
            self._json(r.status, r.body)
        except OSError:
            self.close_connection = True

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, obj) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    # -- the OpenAI API ----------------------------------------------------------------------------
    def models(self, owner, body):
        self._json(200, {"object": "list", "data": owner._listed()})

    def embeddings(self, owner, body):
        name = body.get("model", "")
        m = self._model(owner, name)
        if m.kind != "embedding":
            raise _Refusal(501, "This server does not support embeddings. Start it with `--embeddings`",
                           "not_supported_error")
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        self._json(200, {"object": "list", "model": name, "usage": {"prompt_tokens": 1, "total_tokens": 1},
                         "data": [{"object": "embedding", "index": i, "embedding": embed_text(t, m.dim)}
                                  for i, t in enumerate(texts)]})

    def _model(self, owner, name: str) -> Model:
        if owner.flavour == "llama.cpp":  # one model, whatever the request names
            return next(iter(owner.models.values()))
        if name not in owner.models:
            raise _Refusal(400, f"model '{name}' not found")
        if name not in owner.loaded:
            if not owner.autoload:
                raise _Refusal(400, "model is not loaded")
            owner.loaded.add(name)
        return owner.models[name]

    def chat(self, owner, body):
        name = body.get("model", "")
        m = self._model(owner, name)
        if m.kind != "chat":
            raise _Refusal(400, f"model '{name}' does not support chat completions")
        messages = body.get("messages") or []
        prompt_tokens = max(1, sum(len(str(x.get("content") or "")) for x in messages) // 4 + 4 * len(messages))
        if prompt_tokens > owner.n_ctx:
            raise _Refusal(400, f"request ({prompt_tokens} tokens) exceeds the available context size "
                                f"({owner.n_ctx} tokens), try increasing it", "exceed_context_size_error",
                           n_prompt_tokens=prompt_tokens, n_ctx=owner.n_ctx)
        users = [str(x.get("content") or "") for x in messages if x.get("role") == "user"]
        with owner._lock:
            reply = owner._replies.popleft() if owner._replies else {"text": f"Echo: {users[-1] if users else ''}",
                                                                      "tool_calls": []}
        pieces = re.findall(r"\s*\S+", reply["text"])
        limit = body.get("max_tokens")
        finish = "tool_calls" if reply["tool_calls"] else "stop"
        if limit and 0 < limit < len(pieces):
            pieces, finish = pieces[:limit], "length"
        usage = {"prompt_tokens": prompt_tokens, "completion_tokens": len(pieces),
                 "total_tokens": prompt_tokens + len(pieces), "prompt_tokens_details": {"cached_tokens": 0}}
        base = {"id": "chatcmpl-test", "created": int(time.time()), "model": name}
        calls = [{"index": i, "id": f"call_{i}", "type": "function",
                  "function": {"name": c["name"], "arguments": json.dumps(c.get("arguments") or {})}}
                 for i, c in enumerate(reply["tool_calls"])]
        if not body.get("stream") or owner.ignore_stream:
            message = {"role": "assistant", "content": "".join(pieces)}
            if calls:
                message["tool_calls"] = [{k: v for k, v in c.items() if k != "index"} for c in calls]
            return self._json(200, {**base, "object": "chat.completion", "usage": usage,
                                    "choices": [{"index": 0, "finish_reason": finish, "message": message}]})
        self._sse(owner, self._events(owner, base, pieces, calls, finish, usage, body))

    def _events(self, owner, base, pieces, calls, finish, usage, body):
        def chunk(delta, reason=None):
            return {**base, "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "finish_reason": reason, "delta": delta}]}

        yield chunk({"role": "assistant", "content": None})
        for i, piece in enumerate(pieces):
            if i == owner.vanish_after and (owner.vanish_mid_stream or owner.stream_error):
                yield _VANISH if owner.vanish_mid_stream else {"error": {"code": 500, "message": owner.stream_error,
                                                                         "type": "server_error"}}
                return
            owner._stopping.wait(owner.delay_s)
            yield chunk({"content": piece})
        for c in calls:  # as llama.cpp streams them: the name first, the arguments in two fragments
            args = c["function"]["arguments"]
            yield chunk({"tool_calls": [{**c, "function": {"name": c["function"]["name"], "arguments": args[:3]}}]})
            yield chunk({"tool_calls": [{"index": c["index"], "function": {"arguments": args[3:]}}]})
        yield chunk({}, finish)
        if (body.get("stream_options") or {}).get("include_usage"):
            yield {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}
        yield "[DONE]"

    def _sse(self, owner, events) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for event in events:
            if event is _VANISH or owner._stopping.is_set():
                self.close_connection = True  # no terminating chunk: the client sees a cut body
                return
            line = f"data: {event if isinstance(event, str) else json.dumps(event)}\n\n".encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.write(b"0\r\n\r\n")

    # -- llama.cpp -------------------------------------------------------------------------------------
    def props(self, owner, body):
        if owner.flavour == "llama.cpp-router":
            return self._json(200, {"role": "router", "max_instances": 4, "models_autoload": owner.autoload,
                                    "build_info": "b0-test"})
        tools = any(m.tools for m in owner.models.values())
        self._json(200, {"default_generation_settings": {"n_ctx": owner.n_ctx}, "total_slots": 1,
                         "model_path": next(iter(owner.models), ""), "build_info": "b0-test",
                         "chat_template_caps": {"supports_tools": tools, "supports_system_role": True}})

    def router_models(self, owner, body):
        self._json(200, {"object": "list", "data": owner._listed()})

    def router_load(self, owner, body):
        name = body.get("model", "")
        if name not in owner.models:
            raise _Refusal(400, "model is not found")
        owner.loaded.add(name)
        self._json(200, {"success": True})

    def router_unload(self, owner, body):
        name = body.get("model", "")
        if name not in owner.models:
            raise _Refusal(400, "model is not found")
        if name not in owner.loaded:
            raise _Refusal(400, "model is not running")
        owner.loaded.discard(name)
        self._json(200, {"success": True})

    # -- LM Studio --------------------------------------------------------------------------------------
    def lms_models(self, owner, body):
        self._json(200, {"models": [{
            "type": "embedding" if m.kind == "embedding" else "llm", "key": name, "display_name": name,
            "size_bytes": m.size, "max_context_length": 32768,
            "loaded_instances": [{"id": name, "config": {"context_length": owner.n_ctx}}] if name in owner.loaded else [],
            "capabilities": {"trained_for_tool_use": m.tools, "vision": False}} for name, m in owner.models.items()]})

    def lms_load(self, owner, body):
        name = body.get("model", "")
        if name not in owner.models:
            raise _Refusal(404, f"Model '{name}' not found")
        owner.loaded.add(name)
        self._json(200, {"type": "llm", "instance_id": name, "status": "loaded", "load_time_seconds": 0.1})

    def lms_unload(self, owner, body):
        name = body.get("instance_id", "")
        if name not in owner.loaded:
            raise _Refusal(404, f"No loaded model instance '{name}'")
        owner.loaded.discard(name)
        self._json(200, {"instance_id": name})

    def lms_v0_models(self, owner, body):
        self._json(200, {"object": "list", "data": [{
            "id": name, "object": "model", "type": "embeddings" if m.kind == "embedding" else "llm",
            "state": "loaded" if name in owner.loaded else "not-loaded", "max_context_length": 32768,
            **({"loaded_context_length": owner.n_ctx} if name in owner.loaded else {}),
            "capabilities": ["tool_use"] if m.tools else []} for name, m in owner.models.items()]})


_ROUTES = {("GET", "/v1/models"): _Handler.models, ("POST", "/v1/chat/completions"): _Handler.chat,
           ("POST", "/v1/embeddings"): _Handler.embeddings, ("GET", "/props"): _Handler.props,
           ("GET", "/models"): _Handler.router_models, ("POST", "/models/load"): _Handler.router_load,
           ("POST", "/models/unload"): _Handler.router_unload, ("GET", "/api/v1/models"): _Handler.lms_models,
           ("POST", "/api/v1/models/load"): _Handler.lms_load, ("POST", "/api/v1/models/unload"): _Handler.lms_unload,
           ("GET", "/api/v0/models"): _Handler.lms_v0_models}
_COMMON = {"models", "chat", "embeddings"}


def owner_routes(flavour: str) -> set[str]:
    """The endpoints each kind of server has."""
    return _COMMON | {"llama.cpp": {"props"}, "llama.cpp-router": {"props", "router_models", "router_load", "router_unload"},
                      "lmstudio": {"lms_models", "lms_load", "lms_unload"}, "lmstudio-v0": {"lms_v0_models"},
                      "openai": set()}[flavour]

"""A deterministic Ollama-protocol server for tests: real HTTP on 127.0.0.1, stdlib only.

It speaks the REST API the official ``ollama`` Python client (0.6.x) uses, with the shapes of
Ollama's docs/api.md: ``/api/version``, ``/api/tags``, ``/api/show``, ``/api/ps``, ``/api/embed``,
``/api/chat``, ``/api/generate`` and ``/api/pull``. Streaming answers are NDJSON sent with chunked
transfer encoding, as Ollama sends them, so a stream cut short is an error the client can see.

    with OllamaTestServer() as srv:
        srv.queue_reply("Try a denoiser.")
        reply = ollama.Client(host=srv.host).chat(model="llama3.1:8b", messages=[...])

Replies are scripted (``queue_reply``) or ``"Echo: <last user message>"``; embeddings are hashed
bags of words and trigrams, so texts that share words are close. Faults: ``refuse_next``,
``vanish_mid_stream``, ``stream_error``, ``delay_s``; ``words_per_chunk`` streams a huge reply in fewer chunks. By hand: ``python -m tests.support.ollama_server``.
"""
from __future__ import annotations

import argparse
import faulthandler
import hashlib
import json
import math
import re
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.12.0-kelvin-test"
DEFAULT_KEEP_ALIVE_S = 300.0  # Ollama keeps a model loaded 5 minutes after its last use
LOAD_NS = 500_000_000  # fake but fixed durations, so tests can assert on them
PROMPT_TOKEN_NS, EVAL_TOKEN_NS = 1_000_000, 20_000_000
_TASK_PREFIXES = ("search_query:", "search_document:", "classification:", "clustering:")


@dataclass
class ModelSpec:
    """An installed model. ``kind`` is "chat" or "embedding"; ``dim`` is the embedding width."""

    kind: str = "chat"
    dim: int = 64
    size: int = 4_920_000_000
    size_vram: int | None = None  # bytes on the GPU once loaded; None = all of it
    family: str = "llama"
    parameter_size: str = "8.0B"
    quantization_level: str = "Q4_K_M"
    context_length: int = 131072
    capabilities: list[str] | None = None  # None = by kind

    def caps(self) -> list[str]:
        if self.capabilities is not None:
            return list(self.capabilities)
        return ["embedding"] if self.kind == "embedding" else ["completion", "tools"]


EMBED_SPEC = dict(kind="embedding", size=274_302_450, family="nomic-bert", parameter_size="137M",
                  quantization_level="F16", context_length=2048)
DEFAULT_MODELS = {"llama3.1:8b": ModelSpec(), "nomic-embed-text": ModelSpec(**EMBED_SPEC)}


def _as_spec(value: ModelSpec | dict | str) -> ModelSpec:
    if isinstance(value, ModelSpec):
        return value
    if isinstance(value, str):
        return ModelSpec(**EMBED_SPEC) if value == "embedding" else ModelSpec(kind=value)
    base = EMBED_SPEC if value.get("kind") == "embedding" else {}
    return ModelSpec(**{**base, **value})


def full_name(name: str) -> str:
    """``nomic-embed-text`` -> ``nomic-embed-text:latest``, as Ollama names models."""
    return name if ":" in name.rsplit("/", 1)[-1] else f"{name}:latest"


def embed_text(text: str, dim: int = 64) -> list[float]:
    """Deterministic unit vector: signed hashing of lowercased words and their character trigrams.
    nomic-style task prefixes ("search_query: ") are ignored, as the real model treats them."""
    text = text.strip()
    for prefix in _TASK_PREFIXES:
        if text.lower().startswith(prefix):
            text = text[len(prefix):]
    words = re.findall(r"\w+", text.lower())
    feats = [(f"w:{w}", 1.0) for w in words]
    feats += [(f"t:{p[i:i + 3]}", 0.35) for w in words for p in [f"#{w}#"] for i in range(len(p) - 2)]
    vec = [0.0] * dim
    for feat, weight in feats or [("<empty>", 1.0)]:
        h = int.from_bytes(hashlib.blake2b(feat.encode(), digest_size=8).digest(), "little")
        vec[h % dim] += weight if h >> 63 else -weight
    norm = math.sqrt(sum(v * v for v in vec)) or 1.0
    return [v / norm for v in vec]


def _keep_alive_s(value) -> float:
    """Seconds from a keep_alive (number = seconds, or a Go duration like "5m"); < 0 = forever."""
    if value is None:
        return DEFAULT_KEEP_ALIVE_S
    try:
        seconds = float(value)
    except ValueError:
        parts = re.findall(r"(-?\d+(?:\.\d+)?)(ms|s|m|h)", str(value))
        if not parts or "".join(n + u for n, u in parts) != str(value).strip():
            raise _Refusal(400, f"time: invalid duration {value!r}") from None
        seconds = sum(float(n) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600}[u] for n, u in parts)
    return math.inf if seconds < 0 else seconds


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(min(ts, 32503680000), timezone.utc).isoformat()  # inf -> year 3000


class _Refusal(Exception):
    def __init__(self, status: int, error: str):
        super().__init__(error)
        self.status, self.error = status, error


_VANISH = object()  # marker in a chunk stream: drop the connection here


class OllamaTestServer:
    """See the module docstring. Start with ``start()`` or ``with``; ``stop()`` closes the port."""

    def __init__(self, models: dict | None = None, *, available: dict | None = None,
                 host: str = "127.0.0.1", port: int = 0, delay_s: float = 0.0):
        self.models = {k: _as_spec(v) for k, v in (DEFAULT_MODELS if models is None else models).items()}
        self.available = {k: _as_spec(v) for k, v in (available or {}).items()}  # pullable specs
        self.requests: list[tuple[str, dict | None]] = []  # (path, JSON body) of every request
        self.request_times: list[float] = []  # time.monotonic() at which each request arrived (same order)
        self.loads: list[tuple[str, dict]] = []  # every (re)load: (model, load-time options)
        self.errors: list[BaseException] = []  # exceptions raised inside handlers (should stay [])
        self.delay_s = delay_s  # sleep per reply chunk / pull step (stream or not)
        self.vanish_mid_stream = False  # drop the connection after `vanish_after` chunks
        self.vanish_after = 2
        self.stream_error: str | None = None  # send {"error": ...} after `vanish_after` chunks
        self.honour_num_predict = True  # False: stream the whole reply whatever the limit (a runaway model)
        self.words_per_chunk = 1  # words per streamed chunk (a huge reply in fewer chunks: the same text, sooner)
        self._bind = (host, port)
        self._loaded: dict[str, dict] = {}
        self._replies: deque[dict] = deque()
        self._refusals: deque[tuple[int, str, str | None]] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> OllamaTestServer:
        if self._httpd is None:
            self._stopping.clear()
            self._httpd = _HTTPServer(self._bind, _Handler, self)
            self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                                            name=f"kelvin-ollama-test-server-{self.port}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, cut open connections, join every thread; the port is then closed."""
        if self._httpd is None:
            return
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.drop_connections()
        self._httpd.server_close()  # joins the per-connection threads
        self._thread.join()
        self._httpd = self._thread = None

    def __enter__(self) -> OllamaTestServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the server is not running")
        return self._httpd.server_address[1]

    @property
    def host(self) -> str:
        bound = self._bind[0] if self._bind[0] not in ("", "0.0.0.0") else "127.0.0.1"
        return f"http://{bound}:{self.port}"

    # -- scripting -------------------------------------------------------------------------------
    def queue_reply(self, text: str = "", tool_calls: list | None = None) -> None:
        """The next chat/generate answer. ``tool_calls``: [{"name": .., "arguments": {..}}] or the
        wire form [{"function": {...}}]; they are returned in ``message.tool_calls`` (chat)."""
        calls = [c if "function" in c else {"function": c} for c in tool_calls or []]
        self._replies.append({"text": text, "tool_calls": calls})

    def refuse_next(self, n: int = 1, status: int = 500, error: str = "internal error",
                    path: str | None = None) -> None:
        """Answer the next ``n`` requests (to ``path`` only, if given) with ``status`` and
        ``{"error": error}``, as Ollama reports errors."""
        self._refusals.extend([(status, error, path)] * n)

    def requests_to(self, path: str) -> list[dict | None]:
        """Bodies of the requests sent to ``path``, oldest first."""
        return [body for p, body in self.requests if p == path]

    def unloads(self) -> list[tuple[str, float]]:
        """(model, arrival time) of every unload request (``keep_alive: 0``), oldest first."""
        return [(body.get("model", ""), at) for (path, body), at in zip(self.requests, self.request_times)
                if path in ("/api/generate", "/api/chat", "/api/embed") and isinstance(body, dict)
                and "keep_alive" in body and _keep_alive_s(body["keep_alive"]) == 0]

    def loaded(self) -> list[str]:
        """Names of the models loaded now (what /api/ps lists)."""
        with self._lock:
            self._expire()
            return list(self._loaded)

    # -- state used by the handler ----------------------------------------------------------------
    def _find(self, name: str) -> tuple[str, ModelSpec] | None:
        for key, spec in list(self.models.items()):
            if full_name(key) == full_name(name):
                return full_name(key), spec
        return None

    def _model(self, body: dict, missing: str = 'model "{}" not found, try pulling it first'):
        name = body.get("model") or body.get("name")
        if not name:
            raise _Refusal(400, "model is required")
        found = self._find(name)
        if found is None:
            raise _Refusal(404, missing.format(name))
        return found

    def _take_refusal(self, path: str) -> tuple[int, str] | None:
        with self._lock:
            for i, (status, error, only) in enumerate(self._refusals):
                if only in (None, path):
                    del self._refusals[i]
                    return status, error
        return None

    def _expire(self) -> None:
        now = time.time()
        for name in [n for n, m in self._loaded.items() if m["expires"] <= now]:
            del self._loaded[name]

    def _touch(self, name: str, spec: ModelSpec, body: dict) -> int:
        """Load (or keep loaded) a model for a request; return its load duration in ns."""
        opts = body.get("options") or {}
        load_opts = {k: opts[k] for k in ("num_ctx", "num_gpu") if k in opts}
        keep = _keep_alive_s(body.get("keep_alive"))
        with self._lock:
            self._expire()
            old = self._loaded.get(name)
            vram = spec.size if spec.size_vram is None else spec.size_vram
            self._loaded[name] = {
                "expires": time.time() + keep, "options": load_opts, "spec": spec,
                "size_vram": 0 if load_opts.get("num_gpu") == 0 else vram,
                "context_length": load_opts.get("num_ctx", min(4096, spec.context_length))}
            if old is not None and old["options"] == load_opts:
                return 0
            self.loads.append((name, dict(load_opts)))
            return LOAD_NS

    def _unload(self, name: str) -> None:
        with self._lock:
            self._loaded.pop(name, None)

    def _pull(self, name: str) -> ModelSpec:
        spec = next((s for k, s in self.available.items() if full_name(k) == full_name(name)), None)
        if spec is None:
            embedding = any(w in name for w in ("embed", "minilm", "bge"))
            spec = ModelSpec(**EMBED_SPEC) if embedding else ModelSpec()
        if self._find(name) is None:
            self.models[name] = spec
        return spec

    def _describe(self, name: str, spec: ModelSpec) -> dict:
        return {"name": name, "model": name, "modified_at": "2026-11-01T12:00:00Z", "size": spec.size,
                "digest": hashlib.sha256(name.encode()).hexdigest(),
                "details": {"parent_model": "", "format": "gguf", "family": spec.family,
                            "families": [spec.family], "parameter_size": spec.parameter_size,
                            "quantization_level": spec.quantization_level}}


class _HTTPServer(ThreadingHTTPServer):
    """One named thread per connection, all joined on close; live sockets are tracked so stop()
    can cut keep-alive connections that would otherwise keep a handler thread waiting forever."""

    def __init__(self, addr, handler, owner: OllamaTestServer):
        self.owner = owner
        self._conns: set = set()
        self._workers: list[threading.Thread] = []
        self._conn_lock = threading.Lock()
        super().__init__(addr, handler)

    def process_request(self, request, client_address):
        with self._conn_lock:
            self._conns.add(request)
            self._workers = [t for t in self._workers if t.is_alive()]
            t = threading.Thread(target=self.process_request_thread, args=(request, client_address),
                                 name=f"kelvin-ollama-test-conn-{self.server_address[1]}", daemon=True)
            self._workers.append(t)
        t.start()

    def shutdown_request(self, request):
        with self._conn_lock:
            self._conns.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):
        exc = sys.exc_info()[1]
        if isinstance(exc, OSError):  # the client hung up (say, after an error line): not a bug
            return
        self.owner.errors.append(exc)
        super().handle_error(request, client_address)  # prints the traceback

    def drop_connections(self) -> None:
        with self._conn_lock:
            for sock in list(self._conns):
                try:
                    sock.shutdown(socket.SHUT_RDWR)  # wakes a handler waiting for the next request
                except OSError:
                    pass

    def server_close(self):
        super().server_close()
        with self._conn_lock:
            workers = list(self._workers)
        for t in workers:
            t.join()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive and chunked streams, like Ollama
    server_version = "OllamaTest"
    server: _HTTPServer

    def setup(self):
        super().setup()  # no Nagle: otherwise each small answer waits ~40 ms for a delayed ACK
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # quiet; the request log is on the owner
        pass

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    # -- plumbing --------------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        owner, path = self.server.owner, self.path.split("?", 1)[0]
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        owner.request_times.append(time.monotonic())
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            owner.requests.append((path, None))
            return self._json(400, {"error": "invalid JSON body"})
        owner.requests.append((path, body))
        route = _ROUTES.get((method, path))
        if route is None:
            return self._send(404, b"404 page not found", "text/plain")
        try:
            if refusal := owner._take_refusal(path):
                raise _Refusal(*refusal)
            route(self, owner, body if isinstance(body, dict) else {})
        except _Refusal as r:
            self._json(r.status, {"error": r.error})
        except OSError:  # the client went away (or stop() cut the socket)
            self.close_connection = True

    def _send(self, status: int, data: bytes, ctype: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _json(self, status: int, obj: dict) -> None:
        self._send(status, json.dumps(obj).encode(), "application/json; charset=utf-8")

    def _answer(self, owner: OllamaTestServer, chunks, stream: bool) -> None:
        """Send NDJSON chunks (stream) or only the last one, which the producer makes whole."""
        if not stream:
            last = None
            for last in chunks:
                if last is _VANISH:
                    self.close_connection = True  # no response at all
                    return
            return self._json(500 if "error" in last else 200, last)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in chunks:
            if chunk is _VANISH or owner._stopping.is_set():
                self.close_connection = True  # no terminating chunk: the client sees a cut body
                return
            line = (json.dumps(chunk) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
        self.wfile.write(b"0\r\n\r\n")

    # -- endpoints -------------------------------------------------------------------------------
    def root(self, owner, body):
        self._send(200, b"Ollama is running", "text/plain; charset=utf-8")

    def version(self, owner, body):
        self._json(200, {"version": VERSION})

    def tags(self, owner, body):
        self._json(200, {"models": [owner._describe(full_name(k), s) for k, s in list(owner.models.items())]})

    def show(self, owner, body):
        name, spec = owner._model(body, missing="model '{}' not found")
        arch = spec.family.replace("-", "_")
        num, unit = re.match(r"([\d.]+)([BMK]?)", spec.parameter_size).groups()
        count = int(float(num) * {"B": 1e9, "M": 1e6, "K": 1e3, "": 1}[unit])
        info = {"general.architecture": arch, "general.parameter_count": count,
                f"{arch}.context_length": spec.context_length, f"{arch}.embedding_length": spec.dim}
        details = owner._describe(name, spec)
        self._json(200, {"license": "", "modelfile": f"FROM {name}\n", "parameters": "",
                         "template": "{{ .Prompt }}", "details": details["details"], "model_info": info,
                         "capabilities": spec.caps(), "modified_at": details["modified_at"]})

    def ps(self, owner, body):
        with owner._lock:
            owner._expire()
            running = [{**owner._describe(n, m["spec"]), "expires_at": _iso(m["expires"]),
                        "size_vram": m["size_vram"], "context_length": m["context_length"]}
                       for n, m in owner._loaded.items()]
        self._json(200, {"models": running})

    def embed(self, owner, body):
        name, spec = owner._model(body)
        if "embedding" not in spec.caps():
            raise _Refusal(500, "this model does not support embeddings")
        texts = body.get("input", [])
        texts = [texts] if isinstance(texts, str) else list(texts)
        dim = min(spec.dim, body.get("dimensions") or spec.dim)
        load = owner._touch(name, spec, body)
        tokens = sum(max(1, len(t) // 4) for t in texts)
        self._json(200, {"model": name, "embeddings": [embed_text(t, dim) for t in texts],
                         "total_duration": load + tokens * PROMPT_TOKEN_NS, "load_duration": load,
                         "prompt_eval_count": tokens})

    def chat(self, owner, body):
        self._complete(owner, body, chat=True)

    def generate(self, owner, body):
        self._complete(owner, body, chat=False)

    def _complete(self, owner, body, chat: bool) -> None:
        name, spec = owner._model(body)
        messages = body.get("messages") or []
        base = {"model": name, "created_at": _iso(time.time())}
        empty = {"message": {"role": "assistant", "content": ""}} if chat else {"response": ""}
        if not (messages if chat else body.get("prompt")):  # load / unload request, never streamed
            unload = _keep_alive_s(body.get("keep_alive")) == 0  # Ollama takes it for any model kind
            owner._unload(name) if unload else owner._touch(name, spec, body)
            return self._json(200, {**base, **empty, "done": True, "done_reason": "unload" if unload else "load"})
        if "completion" not in spec.caps():
            raise _Refusal(400, f'"{name}" does not support {"chat" if chat else "generate"}')
        if chat and body.get("tools") and "tools" not in spec.caps():
            raise _Refusal(400, f"registry.ollama.ai/library/{name} does not support tools")
        load = owner._touch(name, spec, body)
        users = [m.get("content") or "" for m in messages if m.get("role") == "user"]
        prompt_text = "".join(m.get("content") or "" for m in messages) if chat else body["prompt"]
        prompt_text += body.get("system") or ""
        if chat and body.get("tools"):  # Ollama renders the tool schemas into the prompt too
            prompt_text += json.dumps(body["tools"])
        default = f"Echo: {users[-1] if users else ''}" if chat else f"Echo: {body['prompt']}"
        with owner._lock:
            reply = owner._replies.popleft() if owner._replies else {"text": default, "tool_calls": []}
        self._answer(owner, self._chunks(owner, body, base, reply, len(prompt_text), load, chat),
                     body.get("stream", True) is not False)

    def _chunks(self, owner, body, base, reply, prompt_chars, load, chat):
        """Yield the streamed chunks; the last one also carries the whole text (non-stream)."""
        pieces = re.findall(r"\s*\S+", reply["text"])
        limit = (body.get("options") or {}).get("num_predict") if owner.honour_num_predict else None
        reason = "stop"
        if limit and 0 < limit < len(pieces):
            pieces, reason = pieces[:limit], "length"
        tool_calls = reply["tool_calls"] if chat else []
        prompt_n, eval_n = max(1, prompt_chars // 4), max(1, len(pieces))
        if owner.words_per_chunk > 1:
            n = owner.words_per_chunk
            pieces = ["".join(pieces[i:i + n]) for i in range(0, len(pieces), n)]

        def part(text, **extra):
            return {**base, **({"message": {"role": "assistant", "content": text, **extra}} if chat
                               else {"response": text}), "done": False}

        for i, piece in enumerate(pieces + (["<tools>"] if tool_calls else [])):
            if i == owner.vanish_after and (owner.vanish_mid_stream or owner.stream_error):
                yield _VANISH if owner.vanish_mid_stream else {"error": owner.stream_error}
                return
            owner._stopping.wait(owner.delay_s)
            yield part("", tool_calls=tool_calls) if piece == "<tools>" else part(piece)
        final = part("".join(pieces), **({"tool_calls": tool_calls} if tool_calls else {}))
        final.update(done=True, done_reason=reason, total_duration=load + prompt_n * PROMPT_TOKEN_NS
                     + eval_n * EVAL_TOKEN_NS, load_duration=load, prompt_eval_count=prompt_n,
                     prompt_eval_duration=prompt_n * PROMPT_TOKEN_NS, eval_count=eval_n,
                     eval_duration=eval_n * EVAL_TOKEN_NS)
        if body.get("stream", True) is not False:  # streamed: the text went in the parts
            final.update({**part(""), "done": True})
        if not chat:
            final["context"] = list(range(1, prompt_n + eval_n + 1))
        yield final

    def pull(self, owner, body):
        name = body.get("model") or body.get("name")
        if not name:
            raise _Refusal(400, "model is required")

        def progress():
            yield {"status": "pulling manifest"}
            spec = owner._pull(name)
            for layer, total in ((f"{name}/weights", spec.size), (f"{name}/params", 412)):
                digest = "sha256:" + hashlib.sha256(layer.encode()).hexdigest()
                for done in (0, total // 2, total):
                    owner._stopping.wait(owner.delay_s)
                    yield {"status": f"pulling {digest[7:19]}", "digest": digest, "total": total, "completed": done}
            yield from ({"status": s} for s in ("verifying sha256 digest", "writing manifest", "success"))

        self._answer(owner, progress(), body.get("stream", True) is not False)


_ROUTES = {("GET", "/"): _Handler.root, ("GET", "/api/version"): _Handler.version,
           ("GET", "/api/tags"): _Handler.tags, ("POST", "/api/show"): _Handler.show,
           ("GET", "/api/ps"): _Handler.ps, ("POST", "/api/embed"): _Handler.embed,
           ("POST", "/api/chat"): _Handler.chat, ("POST", "/api/generate"): _Handler.generate,
           ("POST", "/api/pull"): _Handler.pull}


def _interrupt(signum, frame) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description="Serve a fake, deterministic Ollama until Ctrl+C.")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=11434)
    ap.add_argument("--delay", type=float, default=0.05, help="seconds before each streamed chunk")
    args = ap.parse_args(argv)
    if hasattr(signal, "SIGUSR1"):
        faulthandler.register(signal.SIGUSR1)  # `kill -USR1` prints where every thread is
    # Ctrl+C and SIGTERM both end it, even when started from a shell that ignores SIGINT for what it
    # runs in the background (`nohup … &`: the ignore is inherited, and Ctrl+C would do nothing)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    with OllamaTestServer(host=args.host, port=args.port, delay_s=args.delay) as srv:
        try:  # short sleeps: a Ctrl+C the kernel hands to a server thread is only seen by the main
            print(f"fake Ollama {VERSION} on http://{args.host}:{srv.port} with {', '.join(srv.models)}", flush=True)
            while True:  # thread when it next runs Python code, never while it blocks on a lock forever
                time.sleep(0.1)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()

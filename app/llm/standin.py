"""A stand-in Ollama on 127.0.0.1 for ``kelvin --self-test``: just enough of Ollama's REST API for
Kelvin's real client and the real window to do one turn against it, so a bundle shows that its HTTP
stack (httpx, pydantic, the ``ollama`` client) works without the artist's Ollama running.

It answers ``GET /api/version``, ``/api/tags``, ``/api/ps`` and ``POST /api/show``, ``/api/chat``
(streamed as NDJSON, as Ollama streams); anything else is a 404 with Ollama's error shape. It binds
to the loopback interface only, on a free port, and serves until :meth:`stop`.
"""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VERSION = "0.0.0-kelvin-self-test"
REPLY = ("Self-test reply: the **memory**, the model client and the window are wired up.",
         " Nothing left this machine.")


class StandInOllama:
    def __init__(self, model: str):
        self.model = model
        self.requests: list[str] = []  # "GET /api/version", … in arrival order
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self._server.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._server.serve_forever, name="kelvin-standin-ollama", daemon=True)

    @property
    def host(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> StandInOllama:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> StandInOllama:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:  # quiet
        pass

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def _route(self, method: str) -> None:
        owner: StandInOllama = self.server.owner  # type: ignore[attr-defined]
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        owner.requests.append(f"{method} {self.path}")
        model = owner.model
        if (method, self.path) == ("GET", "/api/version"):
            return self._json({"version": VERSION})
        if (method, self.path) == ("GET", "/api/tags"):
            return self._json({"models": [{"name": model, "model": model, "size": 0, "digest": "self-test",
                                           "details": {"parameter_size": "stand-in"}}]})
        if (method, self.path) == ("GET", "/api/ps"):
            return self._json({"models": []})
        if (method, self.path) == ("POST", "/api/show"):
            return self._json({"capabilities": ["completion"], "details": {"parameter_size": "stand-in"},
                               "model_info": {}, "modified_at": "2026-01-01T00:00:00Z"})
        if (method, self.path) == ("POST", "/api/chat"):
            try:
                stream = json.loads(body or b"{}").get("stream", True)
            except ValueError:
                return self._json({"error": "the request body is not JSON"}, 400)
            return self._chat(model, stream)
        return self._json({"error": f"{self.path} is not part of the self-test's stand-in Ollama"}, 404)

    def _json(self, obj: dict, status: int = 200) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _chat(self, model: str, stream: bool) -> None:
        parts = [{"model": model, "message": {"role": "assistant", "content": text}, "done": False} for text in REPLY]
        final = {"model": model, "message": {"role": "assistant", "content": ""}, "done": True, "done_reason": "stop",
                 "prompt_eval_count": 1, "eval_count": len(REPLY), "total_duration": 1, "eval_duration": 1}
        if not stream:
            final["message"]["content"] = "".join(REPLY)
            return self._json(final)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-ndjson")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for obj in parts + [final]:
            line = json.dumps(obj).encode() + b"\n"
            self.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")
        self.wfile.write(b"0\r\n\r\n")

"""One TLS context per process for every client Kelvin opens to a model server.

Building one loads the system's CA certificates (~30 ms of CPU). Each backend used to build its own,
and a backend is made for every conversation, brief, setup look and terminal command; the context
is only read once built, so one serves every client, thread and stream (Ollama over https behind a
proxy, an OpenAI-compatible server with a certificate). A plain http:// host never uses it.
"""
from __future__ import annotations

import ssl
import threading

import httpx

_lock = threading.Lock()
_context: ssl.SSLContext | None = None


def context() -> ssl.SSLContext:
    """The process's TLS context for model servers (httpx's defaults: certifi's CA bundle, or
    ``SSL_CERT_FILE``/``SSL_CERT_DIR`` when set), built on first use."""
    global _context
    with _lock:
        if _context is None:
            _context = httpx.create_ssl_context()
        return _context

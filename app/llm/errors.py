"""Expected problems with the model server, told to the artist plainly (not bugs).

Every class is an :class:`OllamaUnavailable` whose message is one sentence: what happened and what
to do. :func:`explain` turns a raw client or transport error into the right one.
"""
from __future__ import annotations

import re

import httpx
import ollama


class OllamaUnavailable(RuntimeError):
    """Ollama is not running, not reachable, or the model is missing; the message says what to do."""


class NotRunning(OllamaUnavailable):
    """Nothing answers at the host."""


class ModelMissing(OllamaUnavailable):
    """The server does not have the model; ``model`` names it (Kelvin can offer the pull)."""

    def __init__(self, message: str, model: str):
        super().__init__(message)
        self.model = model


class OutOfMemory(OllamaUnavailable):
    """The model does not fit in the memory left (GPU or system)."""


class StreamCut(OllamaUnavailable):
    """The reply stopped half way; ``partial`` is the text received until then."""

    def __init__(self, message: str, partial: str):
        super().__init__(message)
        self.partial = partial


class ServerBusy(OllamaUnavailable):
    """The model server is busy with others' requests (a studio's shared GPU box): a wait, not a failure."""


def remote(host: str) -> bool:
    """Whether the model server is another machine (the studio's GPU box) rather than this one."""
    from urllib.parse import urlsplit

    name = (urlsplit(host if "://" in host else f"http://{host}").hostname or "").lower()
    return name not in ("", "localhost", "127.0.0.1", "::1", "0.0.0.0") and not name.startswith("127.")


class ServerError(OllamaUnavailable):
    """Any other refusal; ``status`` is the HTTP status (-1 when sent inside a stream)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


_OOM = re.compile(r"out of memory|more system memory|insufficient memory|not enough memory|unable to allocate"
                  r"|failed to allocate|cudamalloc|outofdevicememory|alloc_failed", re.IGNORECASE)
_MISSING = re.compile(r"not found|file does not exist", re.IGNORECASE)


def _refusal(exc: ollama.ResponseError, host: str, model: str) -> OllamaUnavailable:
    text = str(exc.error).strip()
    if exc.status_code == 404 or _MISSING.search(text):
        return ModelMissing(f"Ollama at {host} does not have the model {model!r}; "
                            f"run `ollama pull {model}` (Kelvin can pull it for you)", model)
    if _OOM.search(text):
        return OutOfMemory(f"{model or 'The model'} does not fit in the memory left on this machine "
                           f"({text}); switch Kelvin to CPU mode, pick a smaller model or close the render")
    if exc.status_code == 503 or "server busy" in text.lower():
        if remote(host):
            return ServerBusy(f"waiting for the studio's model server ({host}): it is answering other artists; "
                              "ask again in a moment")
        return ServerBusy(f"Ollama at {host} is busy with other requests; ask again in a moment")
    status = f"status {exc.status_code}" if exc.status_code > 0 else "mid-reply"
    return ServerError(f"Ollama at {host} refused the request for {model!r} ({status}): {text}",
                       exc.status_code)


def explain(exc: BaseException, host: str, model: str, *, partial: str | None = None) -> OllamaUnavailable:
    """Turn a client or transport error into one plain sentence with the fix.

    ``partial`` is given while a reply streams in: a dropped connection, or an error sent after some
    text, then becomes :class:`StreamCut` carrying that text."""
    if isinstance(exc, OllamaUnavailable):
        return exc
    if partial is not None:
        dropped = isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError))
        if dropped or (isinstance(exc, ollama.ResponseError) and partial):
            why = "the connection dropped" if dropped else str(getattr(exc, "error", exc))
            if not partial:
                return StreamCut(f"Ollama at {host} stopped before {model!r} said anything ({why}); "
                                 "try again", partial)
            return StreamCut(f"Ollama's reply from {model!r} was cut off ({why}); the partial answer "
                             "is kept, ask again for the rest", partial)
    if isinstance(exc, ollama.ResponseError):
        return _refusal(exc, host, model)
    if isinstance(exc, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
        return NotRunning(f"Ollama is not reachable at {host}; start it with `ollama serve` "
                          "or set KELVIN_OLLAMA_HOST")
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return OllamaUnavailable(f"Ollama at {host} did not answer in time; it may be busy loading "
                                 "a model, try again in a moment")
    if isinstance(exc, httpx.HTTPError):
        return OllamaUnavailable(f"Ollama at {host} failed mid-request ({type(exc).__name__}); try again")
    return OllamaUnavailable(f"Ollama at {host} failed: {exc}")


TRANSPORT_ERRORS = (ConnectionError, httpx.HTTPError, ollama.ResponseError)

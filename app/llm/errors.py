"""Expected problems with the model server, told to the artist plainly (not bugs).

Every class is a :class:`ModelServerUnavailable` whose message is one sentence: what happened and
what to do. :func:`explain` turns a raw Ollama client or transport error into the right one;
:func:`transport` does the part every kind of server shares (nothing listening, too slow, the
connection dropped mid-reply). The OpenAI-compatible kind reads its servers' refusals in
:mod:`app.llm.openai_compat`.
"""
from __future__ import annotations

import re

import httpx
import ollama


class ModelServerUnavailable(RuntimeError):
    """The model server is not running, not reachable, or cannot do what was asked; the message says
    what to do."""


OllamaUnavailable = ModelServerUnavailable  # its name from before Kelvin spoke to more than Ollama


class NotRunning(ModelServerUnavailable):
    """Nothing answers at the host."""


class ModelMissing(ModelServerUnavailable):
    """The server does not have the model (or has not loaded it); ``model`` names it (Kelvin can offer
    the pull where the server can pull)."""

    def __init__(self, message: str, model: str):
        super().__init__(message)
        self.model = model


class OutOfMemory(ModelServerUnavailable):
    """The model does not fit in the memory left (GPU or system)."""


class StreamCut(ModelServerUnavailable):
    """The reply stopped half way; ``partial`` is the text received until then."""

    def __init__(self, message: str, partial: str):
        super().__init__(message)
        self.partial = partial


class ServerBusy(ModelServerUnavailable):
    """The model server is busy with others' requests (a studio's shared GPU box): a wait, not a failure."""


def remote(host: str) -> bool:
    """Whether the model server is another machine (the studio's GPU box) rather than this one."""
    from urllib.parse import urlsplit

    name = (urlsplit(host if "://" in host else f"http://{host}").hostname or "").lower()
    return name not in ("", "localhost", "127.0.0.1", "::1", "0.0.0.0") and not name.startswith("127.")


class ServerError(ModelServerUnavailable):
    """Any other refusal; ``status`` is the HTTP status (-1 when sent inside a stream)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class ContextTooSmall(ServerError):
    """The server holds fewer tokens per request than Kelvin sent; ``limit`` is how many it holds
    (0: it did not say), so the window can be packed again to fit."""

    def __init__(self, message: str, limit: int, status: int = 400):
        super().__init__(message, status)
        self.limit = limit


class NotCompatible(ModelServerUnavailable):
    """Something answers at the address, but not as the chosen kind of server does."""


_OOM = re.compile(r"out of memory|more system memory|insufficient memory|not enough memory|unable to allocate"
                  r"|failed to allocate|cudamalloc|outofdevicememory|alloc_failed", re.IGNORECASE)
_MISSING = re.compile(r"not found|file does not exist", re.IGNORECASE)


def out_of_memory(text: str, model: str) -> OutOfMemory | None:
    if not _OOM.search(text):
        return None
    return OutOfMemory(f"{model or 'The model'} does not fit in the memory left on this machine "
                       f"({text}); switch Kelvin to CPU mode, pick a smaller model or close the render")


def _refusal(exc: ollama.ResponseError, host: str, model: str) -> ModelServerUnavailable:
    text = str(exc.error).strip()
    if exc.status_code == 404 or _MISSING.search(text):
        return ModelMissing(f"Ollama at {host} does not have the model {model!r}; "
                            f"run `ollama pull {model}` (Kelvin can pull it for you)", model)
    if oom := out_of_memory(text, model):
        return oom
    if exc.status_code == 503 or "server busy" in text.lower():
        if remote(host):
            return ServerBusy(f"waiting for the studio's model server ({host}): it is answering other artists; "
                              "ask again in a moment")
        return ServerBusy(f"Ollama at {host} is busy with other requests; ask again in a moment")
    status = f"status {exc.status_code}" if exc.status_code > 0 else "mid-reply"
    return ServerError(f"Ollama at {host} refused the request for {model!r} ({status}): {text}",
                       exc.status_code)


def transport(exc: BaseException, label: str, host: str, model: str, start: str, *,
              partial: str | None = None) -> ModelServerUnavailable | None:
    """What every kind of server shares: a dropped connection mid-reply (``partial`` given), nothing
    listening (``start``: how to start it), too slow, a broken request. None: not a transport error."""
    if partial is not None and isinstance(exc, (httpx.RemoteProtocolError, httpx.ReadError)):
        if not partial:
            return StreamCut(f"{label} at {host} stopped before {model!r} said anything (the connection "
                             "dropped); try again", partial)
        return StreamCut(f"{label}'s reply from {model!r} was cut off (the connection dropped); the partial "
                         "answer is kept, ask again for the rest", partial)
    if isinstance(exc, (ConnectionError, httpx.ConnectError, httpx.ConnectTimeout)):
        return NotRunning(f"{label} is not reachable at {host}; {start}")
    if isinstance(exc, (httpx.TimeoutException, TimeoutError)):
        return ModelServerUnavailable(f"{label} at {host} did not answer in time; it may be busy loading "
                                      "a model, try again in a moment")
    if isinstance(exc, httpx.HTTPError):
        return ModelServerUnavailable(f"{label} at {host} failed mid-request ({type(exc).__name__}); try again")
    return None


OLLAMA_START = "start it with `ollama serve` or set KELVIN_OLLAMA_HOST"


def explain(exc: BaseException, host: str, model: str, *, partial: str | None = None) -> ModelServerUnavailable:
    """Turn an Ollama client or transport error into one plain sentence with the fix.

    ``partial`` is given while a reply streams in: a dropped connection, or an error sent after some
    text, then becomes :class:`StreamCut` carrying that text."""
    if isinstance(exc, ModelServerUnavailable):
        return exc
    if partial is not None and isinstance(exc, ollama.ResponseError) and partial:
        return StreamCut(f"Ollama's reply from {model!r} was cut off ({exc.error}); the partial answer "
                         "is kept, ask again for the rest", partial)
    if isinstance(exc, ollama.ResponseError):
        return _refusal(exc, host, model)
    told = transport(exc, "Ollama", host, model, OLLAMA_START, partial=partial)
    return told or ModelServerUnavailable(f"Ollama at {host} failed: {exc}")


TRANSPORT_ERRORS = (ConnectionError, httpx.HTTPError, ollama.ResponseError)

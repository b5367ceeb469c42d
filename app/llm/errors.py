"""Expected problems with the model server, told to the artist plainly (not bugs)."""
from __future__ import annotations

import httpx
import ollama


class OllamaUnavailable(RuntimeError):
    """Ollama is not running, not reachable, or the model is missing; the message says what to do."""


def explain(exc: BaseException, host: str, model: str) -> OllamaUnavailable:
    """Turn a client or transport error into one plain sentence with the fix."""
    if isinstance(exc, ollama.ResponseError):
        if exc.status_code == 404 or "not found" in str(exc.error).lower():
            return OllamaUnavailable(f"Ollama at {host} does not have the model {model!r}; "
                                     f"run `ollama pull {model}`")
        return OllamaUnavailable(f"Ollama at {host} refused the request for {model!r}: {exc.error}")
    if isinstance(exc, (ConnectionError, httpx.ConnectError)):
        return OllamaUnavailable(f"Ollama is not reachable at {host}; start it with `ollama serve` "
                                 "or set KELVIN_OLLAMA_HOST")
    if isinstance(exc, httpx.TimeoutException):
        return OllamaUnavailable(f"Ollama at {host} did not answer in time")
    if isinstance(exc, httpx.HTTPError):
        return OllamaUnavailable(f"Ollama at {host} failed mid-request ({type(exc).__name__})")
    return OllamaUnavailable(f"Ollama at {host} failed: {exc}")


TRANSPORT_ERRORS = (ConnectionError, httpx.HTTPError, ollama.ResponseError)

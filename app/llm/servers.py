"""The model server the settings name: Ollama (the default) or any OpenAI-compatible local server."""
from __future__ import annotations

from app.config import Config
from app.llm.model_server import ModelServer

KINDS = {"ollama": "Ollama", "openai": "OpenAI-compatible (LM Studio, llama.cpp, Jan, vLLM)"}


def connect(settings: Config, timeout_s: float | None = None) -> ModelServer:
    """A backend for ``settings.model_server`` at its address (``timeout_s``: for plain requests;
    streams may stay silent longer). Nothing is sent until it is used."""
    timeout = settings.ollama_timeout_s if timeout_s is None else timeout_s
    if settings.model_server == "openai":
        from app.llm.openai_compat import OpenAIBackend

        return OpenAIBackend(settings.openai_url, timeout, api_key=settings.openai_api_key)
    from app.llm.backend import OllamaBackend

    return OllamaBackend(settings.ollama_host, timeout)

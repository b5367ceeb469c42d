"""Which OpenAI-compatible server answers, and what it can do with its models beyond the OpenAI API.

The OpenAI API has chat, embeddings and a model list, but no "what is loaded", no "unload" and no
context size. Each server adds its own: llama.cpp's ``llama-server`` (``/props``; in router mode
``/models``, ``/models/load``, ``/models/unload``), LM Studio (``/api/v1/models`` and
``/api/v1/models/unload`` from 0.4; ``/api/v0/models`` before, which cannot unload — an idle model
goes after its time-to-live). :func:`detect` asks once which one it is; every other server (Jan,
vLLM, …) is the plain kind, and what it cannot do is said in words, never pretended.
"""
from __future__ import annotations

from typing import Callable

from app.llm.model_server import LoadedModel

Get = Callable[[str], "tuple[int, object]"]  # path from the server's root → (status, JSON or None)
Post = Callable[[str, dict], "tuple[int, object]"]

LMSTUDIO_TTL_S = 300  # what Kelvin asks LM Studio (before 0.4) for: unload a model idle this long (as Ollama's 5 minutes)


class Models:
    """Any OpenAI-compatible server: it lists models, and that is all it says about them."""

    flavour, label = "openai", "The OpenAI-compatible server"
    extra: dict = {}  # fields every chat request carries for this server

    def __init__(self, get: Get, post: Post, host: str):
        self._get, self._post, self.host = get, post, host

    def loaded(self) -> list[LoadedModel] | None:
        """What it holds in memory now; None: it does not say."""
        return None

    def load(self, model: str) -> None:
        """Load ``model`` now (nothing: the server loads models itself)."""

    def unload(self, model: str) -> bool:
        """Ask the server to free ``model``; False when it cannot."""
        return False

    def unload_problem(self) -> str:
        return (f"{self.label} at {self.host} cannot unload a model when Kelvin asks (the OpenAI API has no such "
                "call): its model keeps its memory until you stop the server or unload it there")

    def context(self, model: str, listed: dict) -> int | None:
        """How many tokens one request may hold (None: unknown)."""
        meta = listed.get("meta") or {}
        return _int(meta.get("n_ctx")) or _int(listed.get("context_length")) or _int(listed.get("max_model_len"))

    def tools(self, model: str, listed: dict) -> bool:
        """Whether the model takes tool calls (unknown counts as no: Kelvin then keeps facts by /remember)."""
        return False

    def embedding(self, model: str, listed: dict) -> bool | None:
        return None


def _int(value) -> int | None:
    try:
        n = int(value)
    except (TypeError, ValueError):
        return None
    return n if n > 0 else None


class LlamaCpp(Models):
    """``llama-server -m model.gguf``: one model, loaded as long as the server runs."""

    flavour, label = "llama.cpp", "llama.cpp's server"

    def __init__(self, get: Get, post: Post, host: str, props: dict):
        super().__init__(get, post, host)
        self.props = props

    def loaded(self) -> list[LoadedModel]:
        status, body = self._get("/v1/models")
        data = body.get("data") if status == 200 and isinstance(body, dict) else None
        return [LoadedModel(m.get("id", ""), int((m.get("meta") or {}).get("size") or 0), 0)
                for m in data or () if isinstance(m, dict)]

    def unload_problem(self) -> str:
        return (f"{self.label} at {self.host} was started with one model (-m), which it keeps in memory until it "
                "stops; start it in router mode (llama-server --models-dir FOLDER) so Kelvin can unload the model "
                "during a render, or stop the server yourself")

    def context(self, model: str, listed: dict) -> int | None:
        return _int((self.props.get("default_generation_settings") or {}).get("n_ctx")) or super().context(model, listed)

    def tools(self, model: str, listed: dict) -> bool:
        return bool((self.props.get("chat_template_caps") or {}).get("supports_tools"))


class LlamaCppRouter(Models):
    """``llama-server --models-dir FOLDER``: loads a model with the first request for it and unloads
    it on request (``/models/unload``)."""

    flavour, label = "llama.cpp-router", "llama.cpp's server"

    def _models(self) -> list[dict]:
        status, body = self._get("/models")
        data = body.get("data") if status == 200 and isinstance(body, dict) else None
        return [m for m in data or () if isinstance(m, dict)]

    def loaded(self) -> list[LoadedModel]:
        return [LoadedModel(m.get("id", ""), int((m.get("meta") or {}).get("size") or 0), 0) for m in self._models()
                if (m.get("status") or {}).get("value") in ("loaded", "loading")]

    def load(self, model: str) -> None:
        self._post("/models/load", {"model": model})

    def unload(self, model: str) -> bool:
        status, _ = self._post("/models/unload", {"model": model})
        return status == 200 or not any(m.name == model for m in self.loaded())

    def unload_problem(self) -> str:
        return ""

    def context(self, model: str, listed: dict) -> int | None:
        for m in self._models():
            if m.get("id") == model:
                if n := _int((m.get("meta") or {}).get("n_ctx")):
                    return n
                args = (m.get("status") or {}).get("args") or []
                for flag in ("--ctx-size", "-c"):
                    if flag in args and args.index(flag) + 1 < len(args):
                        return _int(args[args.index(flag) + 1])
        return super().context(model, listed)

    def tools(self, model: str, listed: dict) -> bool:
        status, body = self._get(f"/props?model={model}&autoload=false")
        caps = body.get("chat_template_caps") if status == 200 and isinstance(body, dict) else None
        return bool((caps or {}).get("supports_tools"))


class LMStudio(Models):
    """LM Studio 0.4 and later: ``/api/v1/models`` lists each model's loaded instances;
    ``/api/v1/models/unload`` frees one."""

    flavour, label = "lmstudio", "LM Studio"

    def _models(self) -> list[dict]:
        status, body = self._get("/api/v1/models")
        data = body.get("models") if status == 200 and isinstance(body, dict) else None
        return [m for m in data or () if isinstance(m, dict)]

    def _find(self, model: str) -> dict:
        return next((m for m in self._models() if model in (m.get("key"), m.get("id"))), {})

    def loaded(self) -> list[LoadedModel]:
        return [LoadedModel(m.get("key", ""), int(m.get("size_bytes") or 0), 0) for m in self._models()
                if m.get("loaded_instances")]

    def load(self, model: str) -> None:
        self._post("/api/v1/models/load", {"model": model})

    def unload(self, model: str) -> bool:
        ok = True
        for instance in self._find(model).get("loaded_instances") or ():
            status, _ = self._post("/api/v1/models/unload", {"instance_id": instance.get("id", model)})
            ok = ok and status == 200
        return ok

    def unload_problem(self) -> str:
        return ""

    def context(self, model: str, listed: dict) -> int | None:
        m = self._find(model)
        for instance in m.get("loaded_instances") or ():
            if n := _int((instance.get("config") or {}).get("context_length")):
                return n
        return None  # not loaded: LM Studio loads it with its own default, which Kelvin cannot know yet

    def tools(self, model: str, listed: dict) -> bool:
        return bool((self._find(model).get("capabilities") or {}).get("trained_for_tool_use"))

    def embedding(self, model: str, listed: dict) -> bool | None:
        m = self._find(model)
        return m.get("type") == "embedding" if m else None


class LMStudioV0(Models):
    """LM Studio before 0.4 (``/api/v0/models``): it says what is loaded, but cannot unload on
    request; Kelvin asks it to unload an idle model after :data:`LMSTUDIO_TTL_S`."""

    flavour, label = "lmstudio-v0", "LM Studio"
    extra = {"ttl": LMSTUDIO_TTL_S}

    def _models(self) -> list[dict]:
        status, body = self._get("/api/v0/models")
        data = body.get("data") if status == 200 and isinstance(body, dict) else None
        return [m for m in data or () if isinstance(m, dict)]

    def _find(self, model: str) -> dict:
        return next((m for m in self._models() if m.get("id") == model), {})

    def loaded(self) -> list[LoadedModel]:
        return [LoadedModel(m.get("id", ""), 0, 0) for m in self._models() if m.get("state") == "loaded"]

    def unload_problem(self) -> str:
        return (f"{self.label} at {self.host} (before 0.4) cannot unload a model when Kelvin asks; it unloads a model "
                f"idle for {LMSTUDIO_TTL_S // 60} minutes by itself. Eject it in LM Studio to free the VRAM now, "
                "or update LM Studio")

    def context(self, model: str, listed: dict) -> int | None:
        m = self._find(model)
        return _int(m.get("loaded_context_length")) or (_int(m.get("max_context_length")) if m.get("state") == "loaded"
                                                         else None)

    def tools(self, model: str, listed: dict) -> bool:
        return "tool_use" in (self._find(model).get("capabilities") or ())

    def embedding(self, model: str, listed: dict) -> bool | None:
        m = self._find(model)
        return m.get("type") in ("embeddings", "embedding") if m else None


def detect(get: Get, post: Post, host: str) -> Models:
    """Ask the server which one it is (a few GETs, once)."""
    status, props = get("/props")
    if status == 200 and isinstance(props, dict):
        if props.get("role") == "router":
            return LlamaCppRouter(get, post, host)
        if "default_generation_settings" in props or "build_info" in props:
            return LlamaCpp(get, post, host, props)
    status, body = get("/api/v1/models")
    if status == 200 and isinstance(body, dict) and isinstance(body.get("models"), list):
        return LMStudio(get, post, host)
    status, body = get("/api/v0/models")
    if status == 200 and isinstance(body, dict) and isinstance(body.get("data"), list):
        return LMStudioV0(get, post, host)
    return Models(get, post, host)

"""Kelvin's settings: each option declared once, with its default, description and overrides.

Precedence, lowest to highest: built-in default → ``kelvin.toml`` in the user's config folder →
environment variables → command-line flags. ``KELVIN_CONFIG_DIR`` moves the config folder
(tests use it so they never touch an artist's real settings).
"""
from __future__ import annotations

import logging
import os
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import platformdirs

log = logging.getLogger("kelvin.settings")

SCHEMA_VERSION = 1
APP_NAME = "kelvin"
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


class SettingsError(ValueError):
    """The settings file or an override is invalid; the message says which and why."""


def _opt(default, description: str, *env: str):
    return field(default=default, metadata={"description": description, "env": env})


@dataclass(frozen=True)
class Settings:
    data_dir: str = _opt("", "Folder holding every project's memory. Empty: session_data/ in a source "
                         "checkout, the platform's user data folder when installed.", "KELVIN_DATA_DIR")
    project: str = _opt("default", "Project used when none is given.", "KELVIN_PROJECT")
    ollama_host: str = _opt("http://127.0.0.1:11434", "Ollama server address; the only host Kelvin talks to.",
                            "KELVIN_OLLAMA_HOST", "OLLAMA_HOST")
    chat_model: str = _opt("llama3.1:8b", "Ollama model used for chat.", "KELVIN_CHAT_MODEL")
    embedder: str = _opt("ollama:nomic-embed-text", "Embedder for semantic search: 'ollama:<model>', "
                         "'st:<model name or path>' (sentence-transformers extra) or 'none' (full-text only).",
                         "KELVIN_EMBEDDER")
    mode: str = _opt("gpu", "How Kelvin answers at start: 'gpu' (the model on the GPU), 'cpu' (the same model on "
                     "the CPU, leaving the VRAM to renders) or 'recall' (no model: answers quoted from memory).",
                     "KELVIN_MODE")
    extract_model: str = _opt("", "Optional small Ollama model that reads each turn in the background for render "
                              "settings the rules missed (e.g. 'llama3.2:3b'); empty: rules only.",
                              "KELVIN_EXTRACT_MODEL")
    num_ctx: int = _opt(8192, "Context window in tokens sent to the model each turn.", "KELVIN_NUM_CTX")
    index_uri: str = _opt("", "Where the LanceDB index lives. Empty: <data>/<project>/memory.lance. A template "
                          "with {project}, e.g. 's3://studio-bucket/kelvin/{project}.lance', shares it.",
                          "KELVIN_INDEX_URI")
    ollama_timeout_s: float = _opt(30.0, "Seconds to wait for Ollama before giving up on a request.",
                                   "KELVIN_OLLAMA_TIMEOUT")
    schema_version: int = _opt(SCHEMA_VERSION, "Version of this settings layout (for migrations).")

    # ---- derived -------------------------------------------------------------------------------
    def data_path(self) -> Path:
        if self.data_dir:
            return Path(self.data_dir).expanduser().resolve()
        return default_data_dir()

    @staticmethod
    def describe() -> list[tuple[str, object, str, tuple[str, ...]]]:
        return [(f.name, f.default, f.metadata["description"], f.metadata["env"]) for f in fields(Settings)]


def is_source_checkout() -> bool:
    return (_SOURCE_ROOT / "pyproject.toml").is_file() and (_SOURCE_ROOT / "app").is_dir() and (
        _SOURCE_ROOT / "resources"
    ).is_dir()


def default_data_dir() -> Path:
    if is_source_checkout():
        return _SOURCE_ROOT / "session_data"
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_dir() -> Path:
    env = os.environ.get("KELVIN_CONFIG_DIR")
    return Path(env).expanduser() if env else Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def config_file() -> Path:
    return config_dir() / "kelvin.toml"


def _coerce(name: str, value: object, kind: type) -> object:
    try:
        if kind is int and not isinstance(value, bool):
            return int(value)  # type: ignore[arg-type]
        if kind is float and not isinstance(value, bool):
            return float(value)  # type: ignore[arg-type]
        if kind is str and isinstance(value, str):
            return value
    except (TypeError, ValueError):
        pass
    raise SettingsError(f"setting {name!r} must be a {kind.__name__} (got {value!r})")


def _migrate(data: dict) -> dict:
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise SettingsError(f"kelvin.toml has schema_version {version!r}; this Kelvin understands up to {SCHEMA_VERSION}")
    data["schema_version"] = SCHEMA_VERSION
    return data


def load(overrides: dict | None = None, environ: dict | None = None) -> Settings:
    """Read the settings file, then environment, then explicit overrides (command-line flags)."""
    env = os.environ if environ is None else environ
    types = {f.name: type(f.default) for f in fields(Settings)}
    values: dict[str, object] = {}
    path = config_file()
    if path.is_file():
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise SettingsError(f"{path} is not valid TOML: {exc}") from None
        for key, value in _migrate(data).items():
            if key not in types:
                log.warning("%s: unknown setting %r ignored", path, key)
                continue
            values[key] = _coerce(key, value, types[key])
    for f in fields(Settings):
        for var in f.metadata["env"]:
            if env.get(var):
                values[f.name] = _coerce(f.name, env[var], types[f.name])
                break
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _coerce(key, value, types[key])
    settings = replace(Settings(), **values)
    if settings.num_ctx < 1024:
        raise SettingsError("num_ctx must be at least 1024 tokens")
    if settings.mode not in ("gpu", "cpu", "recall"):
        raise SettingsError(f"mode must be gpu, cpu or recall (got {settings.mode!r})")
    return settings

"""Kelvin's own configuration (kelvin.toml): each option declared once, with its default, description and overrides.

Precedence, lowest to highest: built-in default → ``kelvin.toml`` in the user's config folder →
environment variables → command-line flags. ``KELVIN_CONFIG_DIR`` moves the config folder
(tests use it so they never touch an artist's real settings).
"""
from __future__ import annotations

import json
import logging
import math
import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

import platformdirs

from app.durable import read_regular, write_atomically

log = logging.getLogger("kelvin.config")

SCHEMA_VERSION = 1
MAX_CONFIG_BYTES = 1 << 20  # kelvin.toml holds a few settings
APP_NAME = "kelvin"
_SOURCE_ROOT = Path(__file__).resolve().parent.parent


class ConfigError(ValueError):
    """The settings file or an override is invalid; the message says which and why."""


def _opt(default, description: str, *env: str, low: float | None = None, high: float | None = None):
    """One setting: its default, what it does, the environment variables that set it, and (numbers)
    the range it must be in — checked when the settings are loaded, whatever set them."""
    return field(default=default, metadata={"description": description, "env": env, "low": low, "high": high})


@dataclass(frozen=True)
class Config:
    data_dir: str = _opt("", "Folder holding every project's memory. Empty: session_data/ in a source "
                         "checkout, the platform's user data folder when installed.", "KELVIN_DATA_DIR")
    project: str = _opt("default", "Project used when none is given.", "KELVIN_PROJECT")
    model_server: str = _opt("ollama", "Which kind of model server Kelvin talks to: 'ollama' (at ollama_host) or "
                             "'openai' (any OpenAI-compatible local server at openai_url: LM Studio, llama.cpp's "
                             "llama-server, Jan, vLLM).", "KELVIN_MODEL_SERVER")
    ollama_host: str = _opt("http://127.0.0.1:11434", "Ollama server address; with model_server = 'ollama', the only "
                            "host Kelvin talks to.", "KELVIN_OLLAMA_HOST", "OLLAMA_HOST")
    openai_url: str = _opt("http://127.0.0.1:1234/v1", "Address of the OpenAI-compatible server (LM Studio: "
                           "http://127.0.0.1:1234/v1, llama-server: http://127.0.0.1:8080/v1); with model_server = "
                           "'openai', the only host Kelvin talks to.", "KELVIN_OPENAI_URL")
    openai_api_key: str = _opt("", "Key the OpenAI-compatible server expects, if it was started with one (sent only "
                               "to openai_url).", "KELVIN_OPENAI_API_KEY")
    chat_model: str = _opt("llama3.1:8b", "Model used for chat (its name as the model server lists it).",
                           "KELVIN_CHAT_MODEL")
    embedder: str = _opt("ollama:nomic-embed-text", "Embedder for semantic search: 'ollama:<model>', 'openai:<model>' "
                         "(the OpenAI-compatible server at openai_url), 'st:<model name or path>' "
                         "(sentence-transformers extra) or 'none' (full-text only).",
                         "KELVIN_EMBEDDER")
    mode: str = _opt("gpu", "How Kelvin answers at start: 'gpu' (the model on the GPU), 'cpu' (the same model on "
                     "the CPU, leaving the VRAM to renders) or 'recall' (no model: answers quoted from memory).",
                     "KELVIN_MODE")
    extract_model: str = _opt("", "Optional small Ollama model that reads each turn in the background for render "
                              "settings the rules missed (e.g. 'llama3.2:3b'); empty: rules only.",
                              "KELVIN_EXTRACT_MODEL")
    num_ctx: int = _opt(8192, "Context window in tokens sent to the model each turn (1024–1,048,576).", "KELVIN_NUM_CTX",
                        low=1024, high=1_048_576)
    cpu_num_ctx: int = _opt(2048, "Context window in tokens in CPU mode, where a model reads its prompt ten or more "
                            "times slower than on a GPU (docs/benchmarks.md §20): smaller, so the first word comes in "
                            "seconds.", "KELVIN_CPU_NUM_CTX", low=1024, high=1_048_576)
    index_uri: str = _opt("", "Where the LanceDB index lives. Empty: <data>/<project>/memory.lance. A template "
                          "with {project}, e.g. 's3://studio-bucket/kelvin/{project}.lance', shares it.",
                          "KELVIN_INDEX_URI")
    ollama_timeout_s: float = _opt(30.0, "Seconds to wait for Ollama before giving up on a request (0.1–3600).",
                                   "KELVIN_OLLAMA_TIMEOUT", low=0.1, high=3600)
    vram_guard: bool = _opt(True, "Watch the GPU (NVIDIA, through NVML) and move Kelvin off it when a render needs "
                            "the VRAM.", "KELVIN_VRAM_GUARD")
    gpu_interval_ms: int = _opt(500, "How often the VRAM guard reads the GPU, in milliseconds (250–2000).",
                                "KELVIN_GPU_INTERVAL_MS", low=250, high=2000)
    vram_margin_mb: int = _opt(1024, "VRAM (MB) kept free for others on top of what Kelvin's models take; less free "
                               "than that for others and Kelvin leaves the GPU.", "KELVIN_VRAM_MARGIN_MB", low=0,
                               high=1_048_576)
    vram_reserve_mb: int = _opt(0, "A fixed amount of free VRAM (MB) below which Kelvin leaves the GPU; 0: the size "
                                "of Kelvin's models plus the margin.", "KELVIN_VRAM_RESERVE_MB", low=0, high=1_048_576)
    vram_hold_s: float = _opt(20.0, "Seconds the GPU must stay free after a render before Kelvin goes back to it.",
                              "KELVIN_VRAM_HOLD_S", low=0, high=86_400)
    yield_mode: str = _opt("cpu", "How Kelvin answers while a render has the GPU: 'cpu' (the same model on the CPU) "
                           "or 'recall' (answers quoted from memory).", "KELVIN_YIELD_MODE")
    preload_after_render: bool = _opt(False, "Load the chat model back onto the GPU as soon as a render ends, "
                                      "instead of with the next question.", "KELVIN_PRELOAD_AFTER_RENDER")
    renderer_processes: str = _opt("", "More process names that count as renderers, comma-separated "
                                   "(e.g. 'myfarmclient, hrender').", "KELVIN_RENDERER_PROCESSES")
    blender_python: str = _opt("", "The Python that has Blender's bpy module (or a 'blender' executable) that "
                               "reads .blend files for 'kelvin scene'; empty: this Python if it has bpy, else "
                               "'blender' on the PATH.", "KELVIN_BLENDER_PYTHON")
    usd_python: str = _opt("", "The Python that has Pixar's USD module (pip install usd-core) that reads .usd, .usda "
                           "and .usdc files for 'kelvin scene'; empty: this Python if it has it.", "KELVIN_USD_PYTHON")
    lock_wait_s: float = _opt(60.0, "Seconds a write waits while another Kelvin process (the window, a command, the "
                              "Blender add-on) writes the same project, before it gives up and says who is writing "
                              "(0–3600).", "KELVIN_LOCK_WAIT_S", low=0, high=3600)
    team_server: str = _opt("", "The studio's PostgreSQL for shared projects: a libpq connection string "
                            "('host=db.studio dbname=kelvin user=mia sslmode=verify-full') or a service name from "
                            "pg_service.conf. No password here: ~/.pgpass, the service file or PGPASSWORD keep it. "
                            "Empty: every project stays on this machine.", "KELVIN_TEAM_SERVER")
    artist: str = _opt("", "Your name as the team sees it beside what you say and decide in a shared project; "
                       "empty: your login name.", "KELVIN_ARTIST")
    schema_version: int = _opt(SCHEMA_VERSION, "Version of this settings layout (for migrations).")

    # ---- derived -------------------------------------------------------------------------------
    @property
    def model_host(self) -> str:
        """The address of the model server in use."""
        return self.openai_url if self.model_server == "openai" else self.ollama_host
    def artist_name(self) -> str:
        """Who this artist is to the team (the setting, else the login name)."""
        if self.artist.strip():
            return self.artist.strip()[:80]
        import getpass

        try:
            return getpass.getuser()
        except (KeyError, OSError):
            return "artist"

    def data_path(self) -> Path:
        if self.data_dir:
            return Path(self.data_dir).expanduser().resolve()
        return default_data_dir()

    @staticmethod
    def describe() -> list[tuple[str, object, str, tuple[str, ...]]]:
        return [(f.name, f.default, f.metadata["description"], f.metadata["env"]) for f in fields(Config)]


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


MAX_TEXT_SETTING = 4096  # a path, a host, a model name


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


def _coerce(name: str, value: object, kind: type) -> object:
    """A setting's value as its kind, or ConfigError in one sentence (never an OverflowError: a huge
    number from the file, ``1e400``, is said to be out of range)."""
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on", "0", "false", "no", "off"):
            return value.strip().lower() in ("1", "true", "yes", "on")
        raise ConfigError(f"setting {name!r} must be true or false (got {_shown(value)})")
    if kind is str:
        if isinstance(value, str) and len(value) <= MAX_TEXT_SETTING and "\x00" not in value:
            try:
                value.encode("utf-8")
                return value
            except UnicodeEncodeError:
                pass
        raise ConfigError(f"setting {name!r} must be a text of at most {MAX_TEXT_SETTING} characters (got {_shown(value)})")
    number: float | int | None = None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and len(value) <= 40:
        try:
            number = int(value.strip()) if kind is int and value.strip().lstrip("+-").isdigit() else float(value)
        except ValueError:
            number = None
    if number is None or (isinstance(number, float) and not math.isfinite(number)):
        raise ConfigError(f"setting {name!r} must be a{' whole' if kind is int else ''} number (got {_shown(value)})")
    if kind is int:
        if isinstance(number, float) and not number.is_integer():
            raise ConfigError(f"setting {name!r} must be a whole number (got {_shown(value)})")
        return int(number)
    return float(number)


def _in_range(name: str, value: object) -> None:
    meta = next(f.metadata for f in fields(Config) if f.name == name)
    low, high = meta.get("low"), meta.get("high")
    if isinstance(value, (int, float)) and not isinstance(value, bool) and \
            (low is not None and value < low or high is not None and value > high):
        raise ConfigError(f"setting {name!r} must be between {_num(low)} and {_num(high)} (got {_num(value)})")


def _num(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _migrate(data: dict) -> dict:
    version = data.get("schema_version", SCHEMA_VERSION)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ConfigError(f"kelvin.toml has schema_version {version!r}; this Kelvin understands up to {SCHEMA_VERSION}")
    data["schema_version"] = SCHEMA_VERSION
    return data


def load(overrides: dict | None = None, environ: dict | None = None) -> Config:
    """Read the settings file, then environment, then explicit overrides (command-line flags)."""
    env = os.environ if environ is None else environ
    types = {f.name: type(f.default) for f in fields(Config)}
    values: dict[str, object] = {}
    path = config_file()
    if path.is_file():
        try:
            data = tomllib.loads(read_regular(path, MAX_CONFIG_BYTES).decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not valid TOML: {exc}") from None
        except (OSError, RecursionError) as exc:
            raise ConfigError(f"{path} cannot be read: {exc}") from None
        for key, value in _migrate(data).items():
            if key not in types:
                log.warning("%s: unknown setting %r ignored", path, key)
                continue
            values[key] = _coerce(key, value, types[key])
    for f in fields(Config):
        for var in f.metadata["env"]:
            if env.get(var):
                values[f.name] = _coerce(f.name, env[var], types[f.name])
                break
    for key, value in (overrides or {}).items():
        if value is not None:
            values[key] = _coerce(key, value, types[key])
    for key, value in values.items():  # every number in its range, whoever set it (file, environment, flag)
        _in_range(key, value)
    settings = replace(Config(), **values)
    if settings.model_server not in ("ollama", "openai"):
        raise ConfigError(f"model_server must be 'ollama' or 'openai' (any OpenAI-compatible server: LM Studio, "
                          f"llama.cpp, Jan, vLLM), not {settings.model_server!r}")
    kind, _, arg = settings.embedder.strip().partition(":")
    if not ((kind == "none" and not arg) or kind in ("ollama", "openai", "st")):
        raise ConfigError(f"embedder (KELVIN_EMBEDDER or kelvin.toml) must be 'ollama:<model>', 'openai:<model>', "
                            f"'st:<model or path>' or 'none' (got {settings.embedder!r})")
    if settings.mode not in ("gpu", "cpu", "recall"):
        raise ConfigError(f"mode must be gpu, cpu or recall (got {settings.mode!r})")
    if settings.yield_mode not in ("cpu", "recall"):
        raise ConfigError(f"yield_mode must be cpu or recall (got {settings.yield_mode!r})")
    if settings.index_uri and "{project}" not in settings.index_uri:
        raise ConfigError(f"index_uri must hold {{project}} so that each project has its own index, e.g. "
                            f"'s3://studio/kelvin/{{project}}.lance' (got {settings.index_uri!r})")
    if re.search(r"password\s*=|postgres(?:ql)?://[^/@\s]*:[^/@\s]*@", settings.team_server, re.IGNORECASE):
        raise ConfigError("team_server holds a password; keep it in ~/.pgpass (or the pg_service.conf service file, or "
                          "PGPASSWORD) and give team_server without it, e.g. 'host=db.studio dbname=kelvin user=mia'")
    if settings.index_uri:
        try:
            settings.index_uri.format(project="p")
        except (KeyError, IndexError, ValueError):
            raise ConfigError(f"index_uri may hold only {{project}} in braces (got {settings.index_uri!r})") from None
    return settings


def env_override(name: str, environ: dict | None = None) -> str:
    """The environment variable that sets ``name`` right now (it wins over kelvin.toml), or ""."""
    env = os.environ if environ is None else environ
    spec = next(f for f in fields(Config) if f.name == name)
    return next((var for var in spec.metadata["env"] if env.get(var)), "")


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)  # a JSON string is a TOML basic string (same escapes)


def save_setting(name: str, value: object) -> Path:
    """Write one setting into the user's kelvin.toml and return the file's path.

    Every other line stays as it was (comments too); the new file is checked by reading it back
    and replaces the old one atomically, so a crash leaves either the old file or the new one. A
    file that is not valid TOML is left alone (ConfigError): it is the artist's to fix."""
    types = {f.name: type(f.default) for f in fields(Config)}
    if name not in types or name == "schema_version":
        raise ConfigError(f"there is no setting {name!r}")
    value = _coerce(name, value, types[name])
    _in_range(name, value)
    path = config_file()
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    try:
        before = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML ({exc}); fix it by hand first") from None
    line = f"{name} = {_toml_value(value)}"
    lines = text.splitlines()
    key = re.compile(rf"\s*(?:{re.escape(name)}|\"{re.escape(name)}\"|'{re.escape(name)}')\s*=")
    top = next((i for i, ln in enumerate(lines) if ln.lstrip().startswith("[")), len(lines))  # before any table
    at = next((i for i in range(top) if key.match(lines[i])), None)
    if at is None:
        lines.insert(top, line)
    else:
        lines[at] = line
    new_text = "\n".join(lines) + "\n"
    try:
        after = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        after = None
    if after is None or after.get(name) != value or {k: v for k, v in after.items() if k != name} != {
            k: v for k, v in before.items() if k != name}:
        raise ConfigError(f"{path}: {name} could not be changed safely; set it by hand ({line})")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, new_text)
    log.info("%s: %s saved", path, name)
    return path

"""First start: what Kelvin needs, and the fixes the setup panel offers, without Qt.

:func:`look` runs the doctor's checks and finds the ``ollama`` program; :func:`pull` downloads a
model through Ollama with one overall percent; :func:`keep_data_in` checks a folder and saves it as
the data folder in kelvin.toml. Each may block (network, disk): the panel runs them on workers.
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from app.llm.errors import ModelServerUnavailable
from app.llm.model_server import PullMeter
from app.llm.servers import connect
from app.services import doctor
from app.services.doctor import FAIL, Check
from app.config import Config, env_override, save_setting


@dataclass(frozen=True)
class Findings:
    checks: list[Check]
    ollama_binary: str | None  # `ollama` on the PATH: Kelvin can offer to start it
    models: tuple[str, ...] = ()  # what the server has (to pick the chat model from, where Kelvin cannot pull)


@dataclass(frozen=True)
class PullState:
    percent: int  # of the whole model, 0–100
    step: str  # Ollama's own words: "pulling manifest", "pulling 5651e0fdc6cd", "success"
    completed: int  # bytes, over the layers seen so far
    total: int


@dataclass(frozen=True)
class DataChoice:
    check: Check  # the folder, checked (FAIL: nothing was saved)
    saved: str  # the kelvin.toml written, "" if none
    override: str  # the environment variable that wins over kelvin.toml, "" if none


@dataclass(frozen=True)
class ServerChoice:
    settings: Config  # as now saved
    saved: str  # the kelvin.toml written
    override: str  # an environment variable that wins over kelvin.toml, "" if none


def look(settings: Config) -> Findings:
    backend = connect(settings)
    models: tuple[str, ...] = ()
    try:
        checks = doctor.run(settings, backend)
        if not backend.can_pull:
            try:
                models = tuple(backend.list())
            except ModelServerUnavailable:
                pass
    finally:
        backend.close()
    return Findings(checks, shutil.which("ollama") if settings.model_server == "ollama" else None, models)


def choose_server(settings: Config, kind: str, url: str) -> ServerChoice:
    """Save which model server Kelvin talks to (``ollama`` or ``openai``) and its address in
    kelvin.toml. Kelvin uses it from its next start; the returned settings are checked at once."""
    from dataclasses import replace

    url = url.strip()
    field_ = "openai_url" if kind == "openai" else "ollama_host"
    saved = save_setting("model_server", kind)
    if url:
        save_setting(field_, url)
    override = env_override("model_server") or (env_override(field_) if url else "")
    return ServerChoice(replace(settings, model_server=kind, **({field_: url} if url else {})), str(saved), override)


def pull(settings: Config, model: str, progress: Callable[[PullState], None], cancel) -> bool:
    """Download ``model``, calling ``progress`` whenever the percent or the step changes (not for
    every one of Ollama's lines). True once Ollama says "success"; False when ``cancel`` (anything
    with ``is_set()``) stopped it first."""
    meter = PullMeter()

    def line(p) -> None:
        if meter.add(p):
            progress(PullState(meter.percent, p.status, meter.completed, meter.total))

    backend = connect(settings)
    try:
        backend.pull(model, line, cancel=cancel)
    finally:
        backend.close()
    return meter.status == "success"


def keep_data_in(path: str) -> DataChoice:
    """Check the folder; if Kelvin can write it, save it as ``data_dir`` in kelvin.toml (used from
    the next start)."""
    check = doctor.data_folder(Path(path))
    if check.status == FAIL:
        return DataChoice(check, "", "")
    return DataChoice(check, str(save_setting("data_dir", path)), env_override("data_dir"))


def ollama_address(host: str) -> tuple[bool, str]:
    """Whether the Ollama host is this computer, and its ``host:port`` as ``OLLAMA_HOST`` wants it
    (so an ``ollama serve`` Kelvin starts listens where Kelvin will look)."""
    url = urlsplit(host if "://" in host else f"http://{host}")
    name = url.hostname or "127.0.0.1"
    return name in ("127.0.0.1", "localhost", "::1", "0.0.0.0"), f"{name}:{url.port or 11434}"

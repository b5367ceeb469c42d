"""``kelvin --self-test``: does every part of this Kelvin load and work? For an installed bundle first
of all (a library PyInstaller missed, a resource left out, a Qt plugin that will not load), and just
as well from a source checkout.

It starts headless (Qt offscreen), touches none of the artist's data or settings (a throw-away data
and config folder), and talks to no model: a stand-in Ollama on 127.0.0.1 answers the real client.
The artist's own Ollama host is only asked for its version, and its absence is no failure. One line
per check, then a verdict; the exit status is 0 only if every check passed.
"""
from __future__ import annotations

import os
import platform
import shutil
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Callable

from app import __version__

OK, INFO, WARN, FAIL = "ok", "info", "warn", "FAIL"
PROBE_TEXT = "Set GI clamp to 10 in Octane."
RESOURCES = ("taxonomy.toml", "parameters.toml", "prompts/system.md", "kelvin.qss", "icons/kelvin.svg")


@dataclass(frozen=True)
class Result:
    name: str
    status: str
    detail: str
    seconds: float = 0.0


def frozen() -> bool:
    """Running from a PyInstaller bundle."""
    return bool(getattr(sys, "frozen", False))


def where() -> str:
    if frozen():
        return f"bundle at {Path(sys.executable).resolve().parent}"
    return f"Python {platform.python_version()} at {sys.prefix}"


# ---- the checks (each returns (status, detail) or raises) -------------------------------------------
def check_resources() -> tuple[str, str]:
    base = resources.files("app.resources")
    sizes = {}
    for name in RESOURCES:
        data = base.joinpath(name).read_bytes()
        if not data.strip():
            return FAIL, f"{name} is empty"
        sizes[name] = len(data)
    taxonomy = tomllib.loads(base.joinpath("taxonomy.toml").read_text(encoding="utf-8"))
    params = tomllib.loads(base.joinpath("parameters.toml").read_text(encoding="utf-8"))
    n_params = sum(len(v) for v in params.get("params", {}).values() if isinstance(v, dict))
    return OK, (f"{len(taxonomy.get('engines', {}))} engines, {n_params} parameters, prompt, stylesheet, icon "
                f"({sum(sizes.values()) // 1024} KB)")


def check_rules() -> tuple[str, str]:
    from app.services.memory import load_extractor, load_tagger

    tags = load_tagger().tag(PROBE_TEXT)
    mentions, _ = load_extractor().extract(PROBE_TEXT, "user")
    found = [(m.engine, m.parameter, m.value, m.status) for m in mentions]
    if ("octane", "gi_clamp", 10, "applied") not in found:
        return FAIL, f"the settings rules read {PROBE_TEXT!r} as {found or 'nothing'}"
    return OK, f"tagged {tags.domain}/{tags.engine}; read Octane GI clamp = 10 (applied)"


def check_memory(settings) -> tuple[str, str]:
    """A real project store (journal, Markdown, LanceDB) in ``settings``' throw-away data folder."""
    from app.memory.lance_import import lancedb as imported

    lancedb = imported()

    from app.services.memory import MemoryService
    from app.services.settings_ledger import SettingsLedger

    memory = MemoryService(settings)
    try:
        message, done = memory.commit(PROBE_TEXT, project="self-test")
        done.result(timeout=60)
        hits = memory.search("GI clamp", k=3, project="self-test")
        if not hits or hits[0].message.id != message.id:
            return FAIL, f"a stored message was not found again (hits: {[h.message.id for h in hits]})"
        current = {(c.entry.engine, c.entry.parameter): c.entry.value
                   for c in SettingsLedger(memory).current("self-test")}
        if current.get(("octane", "gi_clamp")) != 10:
            return FAIL, f"the settings ledger holds {current or 'nothing'} after the message"
        markdown = sorted(p.name for p in memory.store("self-test").folder.glob("*.md"))
    finally:
        memory.close()
    return OK, f"LanceDB {lancedb.__version__}: stored, indexed and found a message; ledger and {', '.join(markdown)} written"


def check_client(stand_in) -> tuple[str, str]:
    import ollama  # noqa: F401 (the client itself must import)

    from app.llm.backend import OllamaBackend

    with OllamaBackend(stand_in.host, timeout_s=10) as backend:
        version = backend.version()
        text, last = backend.complete(stand_in.model, [{"role": "user", "content": "self-test"}])
    if "wired up" not in text or not last.done:
        return FAIL, f"the stand-in's streamed reply came back as {text!r}"
    return OK, f"ollama client {_version('ollama')}: version and a streamed chat from a stand-in on 127.0.0.1 ({version})"


def check_ollama_host(settings) -> tuple[str, str]:
    """The artist's own model server (Ollama or an OpenAI-compatible one): said, never failed."""
    from app.llm.errors import ModelServerUnavailable
    from app.llm.servers import connect

    backend = connect(settings, timeout_s=3)
    try:
        version = backend.version()
        has = backend.has_model(settings.chat_model)
    except ModelServerUnavailable as exc:
        return INFO, f"{exc} (start it before chatting; Kelvin answers from memory until then)"
    finally:
        backend.close()
    model = f"{settings.chat_model} installed" if has else f"{settings.chat_model} not there yet"
    name = f"Ollama {version}" if backend.kind == "ollama" else version
    return INFO, f"{name} at {settings.model_host}, {model}"


def check_nvml() -> tuple[str, str]:
    import pynvml  # noqa: F401 (nvidia-ml-py must be in the bundle even where there is no GPU)

    from app.gpu import nvml

    probe = nvml.probe()
    if not probe.ok:
        return OK, f"nvidia-ml-py loaded; {probe.problem}"
    gpus = ", ".join(f"{g.name} ({g.total_mb // 1024} GB)" for g in probe.gpus)
    return OK, f"driver {probe.driver}: {gpus}"


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


# ---- running them -----------------------------------------------------------------------------------
def _timed(name: str, fn: Callable[[], tuple[str, str]]) -> Result:
    t0 = time.perf_counter()
    try:
        status, detail = fn()
    except Exception as exc:  # noqa: BLE001 — a self-test reports what broke instead of stopping at it
        status, detail = FAIL, f"{type(exc).__name__}: {exc}"
    return Result(name, status, detail, time.perf_counter() - t0)


def run(settings, window: bool = True) -> list[Result]:
    """Every check, in the order Kelvin needs the parts. ``settings``: the artist's (read only)."""
    os.environ["QT_QPA_PLATFORM"] = "offscreen"  # headless, whatever the desktop
    scratch = Path(tempfile.mkdtemp(prefix="kelvin-self-test-"))
    saved_config = os.environ.get("KELVIN_CONFIG_DIR")
    os.environ["KELVIN_CONFIG_DIR"] = str(scratch / "config")  # nothing read from or written to the artist's
    try:
        from app.llm.standin import StandInOllama

        results = [_timed("resources", check_resources), _timed("settings rules", check_rules)]
        with StandInOllama(settings.chat_model) as stand_in:
            trial = replace(settings, data_dir=str(scratch / "data"), project="self-test", embedder="none",
                            model_server="ollama", ollama_host=stand_in.host, extract_model="", vram_guard=False,
                            mode="gpu", index_uri="")
            results.append(_timed("memory", lambda: check_memory(trial)))
            results.append(_timed("model client", lambda: check_client(stand_in)))
            if window:
                from app.ui.desktop_check import check_desktop
                from app.ui.self_test import check_window

                results.append(_timed("window", lambda: check_window(trial, scratch)))
                results.append(_timed("desktop", check_desktop))
        results.append(_timed("GPU (NVML)", check_nvml))
        results.append(_timed("your model server", lambda: check_ollama_host(settings)))
        return results
    finally:
        if saved_config is None:
            os.environ.pop("KELVIN_CONFIG_DIR", None)
        else:
            os.environ["KELVIN_CONFIG_DIR"] = saved_config
        shutil.rmtree(scratch, ignore_errors=True)


def report(results: list[Result], seconds: float, write: Callable[[str], object] = print) -> int:
    write(f"Kelvin {__version__} self-test · {where()} · {platform.system()} {platform.machine()}")
    width = max(len(r.name) for r in results)
    for r in results:
        write(f"  {r.status:<4}  {r.name:<{width}}  {r.detail}  [{r.seconds:.2f} s]")
    failed = [r.name for r in results if r.status == FAIL]
    passed = sum(r.status in (OK, INFO, WARN) for r in results)
    if failed:
        write(f"FAILED: {', '.join(failed)} ({passed} of {len(results)} checks passed in {seconds:.1f} s)")
        return 1
    warned = [r.name for r in results if r.status == WARN]
    tail = f"; see the warning for {', '.join(warned)}" if warned else ""
    write(f"all {len(results)} checks passed in {seconds:.1f} s{tail}")
    return 0


def main(settings) -> int:
    t0 = time.perf_counter()
    results = run(settings)
    return report(results, time.perf_counter() - t0)

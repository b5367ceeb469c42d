"""Doctor: is everything Kelvin needs in place, and if not, what to do about it.

Checks the model server (Ollama or an OpenAI-compatible one: reachable, which one), the chat and
embedding models, NVML, the data folder and the project's memory. Each check gives a status and, for every problem, the fix in one line. Used by
``kelvin doctor`` and by the app's first-run panel. Qt-free; it only reads.
"""
from __future__ import annotations

import importlib.util
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from app.gpu import nvml
from app.llm.backend import full_name
from app.llm.errors import ModelServerUnavailable
from app.llm.model_server import ModelServer
from app.config import Config

OK, WARN, FAIL, INFO = "ok", "warn", "fail", "info"
LOW_DISK_MB = 1024


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str = ""
    pull: str = ""  # the Ollama model whose pull fixes this, if that is the fix

    def to_json(self) -> dict:
        return {"name": self.name, "status": self.status, "detail": self.detail, "fix": self.fix, "pull": self.pull}


def run(settings: Config, backend: ModelServer, memory=None) -> list[Check]:
    """Every check, in the order an artist would fix them. ``memory``: a MemoryService, to check
    the project's store (left out when None)."""
    checks = _ollama(settings, backend) if backend.kind == "ollama" else _openai(settings, backend)
    checks.append(_gpu())
    checks.append(data_folder(settings.data_path()))
    if memory is not None:
        checks.append(_store(settings, memory))
        checks.append(journal(settings.project, memory))
    if settings.team_server.strip():
        checks.append(team_server(settings))
    return checks


SERVER = "model server"  # the check's name for an OpenAI-compatible server (Ollama's is "Ollama")
OPENAI_START = ("start the server (LM Studio: Developer → Start Server, or `lms server start`; llama.cpp: "
                "`llama-server -m MODEL.gguf --port 8080`); if it runs elsewhere, set KELVIN_OPENAI_URL "
                "(LM Studio: http://127.0.0.1:1234/v1, llama-server: http://127.0.0.1:8080/v1). Until then Kelvin "
                "answers from memory (recall mode).")


def _openai(settings: Config, backend: ModelServer) -> list[Check]:
    """An OpenAI-compatible server: it answers as one, has the chat model (with the context it
    holds), the embedder, and whether the VRAM guard can unload through it."""
    host = settings.openai_url
    try:
        version = backend.version()
        installed = backend.list()
    except ModelServerUnavailable as exc:
        return [Check(SERVER, FAIL, str(exc), OPENAI_START)]
    out = [Check(SERVER, OK, f"{version} at {host} (OpenAI-compatible)")]
    model = settings.chat_model
    if model in installed:
        try:
            info = backend.show(model)
        except ModelServerUnavailable as exc:
            out.append(Check("chat model", WARN, f"{model} is listed but {backend.label} cannot describe it: {exc}"))
        else:
            tools = "can use memory tools" if info.supports_tools else "no tool calls: use /remember and /forget"
            ctx = info.context_length
            if ctx and ctx < settings.num_ctx:
                out.append(Check("chat model", WARN, f"{model} ({tools}); {backend.label} holds {ctx:,} tokens per "
                                 f"request, less than Kelvin's window of {settings.num_ctx:,}: Kelvin packs "
                                 f"{max(1024, ctx):,}", f"load the model with a context of {settings.num_ctx:,} "
                                 "(llama-server -c; LM Studio: Context Length) for the whole window"))
            else:
                out.append(Check("chat model", OK, f"{model} ({tools}" + (f", {ctx:,} tokens of context)" if ctx else ")")))
    else:
        others = ", ".join(sorted(installed)[:6]) or "none"
        out.append(Check("chat model", FAIL, f"{backend.label} has no model {model} (it has: {others})",
                         f"load {model} in {backend.label}, or set KELVIN_CHAT_MODEL to a model it has"))
    out.append(_embedder(settings, backend))
    try:
        cannot = backend.unload_problem()
    except ModelServerUnavailable:
        cannot = ""
    if cannot:
        out.append(Check("unloading", INFO, cannot))
    return out




SKEW_WARN_MS = 5_000


def team_server(settings: Config) -> Check:
    """The studio's PostgreSQL: reachable, its version, this role's rights, the clocks' skew, the
    schema version."""
    from app.memory.team_server import SCHEMA_VERSION, TeamServer, TeamServerError, where

    server = TeamServer(settings.team_server)
    try:
        facts = server.facts()
    except TeamServerError as exc:
        fix = {"refused": "check the role and ~/.pgpass (or the service file) with the studio's admin",
               "offline": "check the address in team_server and the network; Kelvin works on this machine meanwhile"}
        return Check("team server", FAIL, str(exc), fix.get(exc.kind, ""))
    finally:
        server.close()
    rights = facts["rights"]
    can = ("reads and writes" if rights.get("write") else "reads only (a write says so)" if rights.get("read")
           else "has no rights on Kelvin's tables" if rights else "no Kelvin tables yet")
    detail = (f"{where(settings.team_server)}: PostgreSQL {facts['version']}, role {facts['user']} {can}, schema "
              f"{facts['schema'] or 'none'} (this Kelvin: {SCHEMA_VERSION}), clocks {facts['skew_ms']:+,} ms apart, "
              f"{facts['rtt_ms']} ms away")
    if facts["schema"] > SCHEMA_VERSION:
        return Check("team server", FAIL, detail, "the server was set up by a newer Kelvin: update Kelvin")
    if rights and not rights.get("read"):
        return Check("team server", FAIL, detail, "ask the studio's admin to grant this role SELECT on schema kelvin")
    if abs(facts["skew_ms"]) > SKEW_WARN_MS:
        return Check("team server", WARN, detail, "this machine's clock is off: the times beside what the team says "
                     "follow each artist's clock (turn on network time)")
    return Check("team server", OK, detail)


def _ollama(settings: Config, backend: ModelServer) -> list[Check]:
    host = settings.ollama_host
    try:
        version = backend.version()
    except ModelServerUnavailable as exc:
        return [Check("Ollama", FAIL, str(exc),
                      "start Ollama (`ollama serve`, or open the Ollama app); if it runs on another machine, "
                      "set KELVIN_OLLAMA_HOST=http://host:11434. Until then Kelvin answers from memory (recall mode).")]
    out = [Check("Ollama", OK, f"Ollama {version} at {host}")]
    try:
        installed = backend.list()
    except ModelServerUnavailable as exc:
        return out + [Check("models", FAIL, str(exc), "check the Ollama server's log")]
    model = settings.chat_model
    if full_name(model) in {full_name(m) for m in installed}:  # (the list just read: Ollama is not asked twice,
        # and one that stops between the two questions is not a crash of the checks)
        try:
            info = backend.show(model)
            tools = "can use memory tools" if info.supports_tools else "no tool calls: use /remember and /forget"
            out.append(Check("chat model", OK, f"{model} ({info.parameter_size}, {tools})"))
        except ModelServerUnavailable as exc:
            out.append(Check("chat model", WARN, f"{model} is installed but Ollama cannot describe it: {exc}"))
    else:
        others = ", ".join(sorted(installed)[:6]) or "none"
        out.append(Check("chat model", FAIL, f"{model} is not installed (installed: {others})",
                         f"`ollama pull {model}` (or `kelvin chat`, which offers to pull it), or set "
                         "KELVIN_CHAT_MODEL to an installed model", pull=model))
    out.append(_embedder(settings, backend, installed))
    return out


def _embedder(settings: Config, backend: ModelServer, installed: list[str] | None = None) -> Check:
    """``installed``: Ollama's models as the checks just read them (then Ollama is not asked again)."""
    spec = settings.embedder
    kind, _, name = spec.partition(":")
    if spec == "none":
        return Check("embedder", INFO, "none: search is full-text only (exact words)",
                     "for search by meaning: `ollama pull nomic-embed-text` and KELVIN_EMBEDDER=ollama:nomic-embed-text"
                     if backend.kind == "ollama" else
                     f"for search by meaning: load an embedding model in {backend.label} and set "
                     "KELVIN_EMBEDDER=openai:<its name>")
    if kind != backend.kind and kind in ("ollama", "openai"):  # embeddings from the other kind of server
        from dataclasses import replace

        from app.llm.servers import connect

        other = connect(replace(settings, model_server=kind), timeout_s=min(settings.ollama_timeout_s, 10.0))
        try:
            return _embedder(settings, other)
        except ModelServerUnavailable as exc:
            return Check("embedder", WARN, f"{spec}: {exc}; search is full-text only until it answers")
        finally:
            other.close()
    if kind in ("openai", "ollama"):
        try:
            has = (full_name(name) in {full_name(m) for m in installed}) if installed is not None and kind == "ollama" \
                else backend.has_model(name)
        except ModelServerUnavailable as exc:  # it stopped between the checks: said, never a crash of them
            return Check("embedder", WARN, f"{backend.label} stopped answering while {name} was checked: {exc}",
                         "check again once it runs")
        if has:
            return Check("embedder", OK, f"{name} through {backend.label if kind == 'openai' else 'Ollama'}")
        if kind == "openai":
            return Check("embedder", WARN, f"{backend.label} has no model {name}; search is full-text only until it has",
                         f"load {name} in {backend.label}, or set KELVIN_EMBEDDER to one it has, or 'none'")
        return Check("embedder", WARN, f"{name} is not installed; search is full-text only until it is",
                     f"`ollama pull {name}`", pull=name)
    if kind == "st":
        if importlib.util.find_spec("sentence_transformers") is None:
            return Check("embedder", WARN, "the sentence-transformers extra is not installed; full-text search only",
                         "install a CPU torch, then `pip install -e '.[st]'` (see README)")
        return Check("embedder", OK, f"sentence-transformers model {name} (offline)")
    return Check("embedder", FAIL, f"unknown embedder {spec!r}", "use ollama:<model>, st:<model> or none")


def _gpu() -> Check:
    p = nvml.probe()
    if not p.ok:
        return Check("GPU", INFO, p.problem, "nothing to do unless this machine has an NVIDIA GPU (then update "
                     "its driver)")
    gpus = "; ".join(f"GPU {g.index} {g.name}: {g.used_mb / 1024:.1f} of {g.total_mb / 1024:.1f} GB used"
                     for g in p.gpus)
    return Check("GPU", OK, f"driver {p.driver}; {gpus}")


def blocking(checks: list[Check]) -> list[Check]:
    """What keeps Kelvin from answering with the model: its server down or the chat model missing.
    (Recall mode still works; everything else only limits Kelvin.)"""
    return [c for c in checks if c.status == FAIL and c.name in ("Ollama", SERVER, "models", "chat model")]


def data_folder(path: Path) -> Check:
    """Can Kelvin keep its memory in ``path``: writable (created if missing), with room left."""
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path, prefix=".kelvin-doctor-"):
            pass
    except OSError as exc:
        return Check("data folder", FAIL, f"{path} is not writable: {exc.strerror or exc}",
                     "set KELVIN_DATA_DIR to a folder you can write, or fix its permissions")
    free_mb = shutil.disk_usage(path).free // 2**20
    if free_mb < LOW_DISK_MB:
        return Check("data folder", WARN, f"{path}: only {free_mb} MB free", "free some disk space")
    return Check("data folder", OK, f"{path} ({free_mb / 1024:.0f} GB free)")


def _store(settings: Config, memory) -> Check:
    from app.memory.index import IndexError_
    from app.memory.journal import JournalError

    name = settings.project
    try:
        stats = memory.stats(name)
    except (IndexError_, JournalError, OSError, RuntimeError, ValueError) as exc:
        return Check("memory", FAIL, f"project {name!r}: the index cannot be read: {exc}",
                     f"`kelvin --project {name!r} memory reindex` rebuilds it from the journal")
    if not stats["journal"]["events"]:
        return Check("memory", INFO, f"project {name!r} is empty (nothing said yet)")
    behind = stats.get("projections_behind", 0)
    detail = (f"project {name!r}: {stats['messages']:,} messages, {stats['memories']} kept memor{'y' if stats['memories'] == 1 else 'ies'}, "
              f"journal {stats['journal']['bytes'] / 2**20:.1f} MB")
    if behind:
        return Check("memory", WARN, f"{detail}; {behind} journaled events not yet in the index",
                     "they are replayed on the next start; `kelvin memory reindex` does it now")
    if stats.get("index", {}).get("chunks_without_vectors"):
        n = stats["index"]["chunks_without_vectors"]
        return Check("memory", INFO, f"{detail}; {n} chunks wait for vectors (filled in when the embedder is up)")
    return Check("memory", OK, detail)


def journal(name: str, memory) -> Check:
    """Every journal line's checksum, and what was set aside (torn tails, damaged lines) and is still
    there: reported until the artist has looked at it and removed the file."""
    from app.memory import completeness
    from app.memory.journal import JournalError

    try:
        store = memory.store(name)
        if not store.exists():
            return Check("journal", INFO, f"project {name!r} has no journal yet")
        reader = store.journal
        before = reader.damaged_lines
        events = sum(1 for _ in reader.read())
        damaged = reader.damaged_lines - before
        aside = reader.set_aside()
        gaps = completeness.unexplained(reader)  # numbers no event holds, that nothing accounts for yet
    except (JournalError, OSError, ValueError) as exc:
        return Check("journal", FAIL, f"project {name!r}: the journal cannot be read: {exc}",
                     "check the disk; the journal is the source of truth, do not delete it")
    if not damaged and not aside and not gaps:
        return Check("journal", OK, f"project {name!r}: {events:,} events, numbered without a gap, every checksum good")
    said = [r.describe() for r in aside]
    said += [f"{gap.describe()}; what the index or the Markdown still holds of them is taken back when Kelvin next "
             "writes this project" for gap in gaps]
    if damaged > sum(r.kind == "damaged" for r in aside):
        said.append(f"{damaged} damaged line(s), set aside when Kelvin next writes this project")
    return Check("journal", WARN, f"project {name!r}: {events:,} events readable; " + "; ".join(said),
                 "open the file(s) in the journal folder to see what they held (a message read back from a damaged "
                 "line is kept in memory; see README, Troubleshooting); delete a file once you have dealt with it")

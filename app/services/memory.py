"""MemoryService: the one door to Kelvin's memory, shared by the command line and the app.

Writes (commits, imports, edits, deletes, curated memories) go through the single-writer
CommitQueue and return at once with a Future; reads (search, show, list, stats) run on the
caller's thread against the LanceDB index. Qt-free.

Other Kelvin processes may write the same project at any time (the window is open all day while
commands run in a terminal and Blender sends its scene): each write holds the project's lock for
that write only (app.memory.store), and every read first catches up with what they wrote
(:meth:`MemoryService.caught_up`); :meth:`MemoryService.changes` tells a window cheaply that
something was written.
"""
from __future__ import annotations

import copy
import json
import logging
import threading
import time
import tomllib
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from app import resources
from app.core import projects
from app.core.embedding import Embedder, EmbedderUnavailable
from app.core.filters import Filters
from app.core.fusion import Candidate, fuse
from app.core.highlight import spans
from app.core.records import (
    Memory,
    Message,
    RecordError,
    check_id,
    check_name,
    check_role,
    check_speaker,
    check_status,
    check_text,
    new_id,
    now_ms,
)
from app.core.render_settings.parameters import Catalogue, specs_from_dict
from app.core.render_settings.status_model import StatusModel
from app.core.tagging import RuleTagger, Tagger, Taxonomy, merge
from app.durable import read_regular
from app.memory import completeness
from app.memory.index import message_from_rows, where_clause
from app.memory.journal import JournalError, StoreLocked
from app.memory.markdown import before
from app.memory.store import (
    OP_MEMORY_ADD,
    OP_MEMORY_DELETE,
    OP_MESSAGE_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
    ProjectStore,
    edit_event,
    with_engine,
)
from app.memory.turn_notes import TURN_OPS, TurnNote
from app.llm.embedders import from_spec
from app.services.commit_queue import CommitQueue
from app.services.importer import ImportItem
from app.config import Config, config_dir

if TYPE_CHECKING:
    from app.core.render_settings.cues import Cues
    from app.core.render_settings.scope_model import ScopeModel
    from app.core.render_settings.trust import TrustModel
    from app.core.render_settings.extraction import Extractor

log = logging.getLogger("kelvin.memory")
STATUS_MODEL = "status_model.json"  # the status model bench/train_status.py writes (issue 30)
TRUST_MODEL = "trust_model.json"  # whether a decided value may be stated: bench/train_trust.py writes it
SCOPE_MODEL = "scope_model.json"  # which object a value belongs to: bench/train_scope.py writes it

# candidates each leg hands to fusion, at least (and CANDIDATES_PER_K per result asked for): more
# full-text candidates cost little and find more (docs/benchmarks.md §12); the vector leg's ANN
# search grows with its limit, so it brings fewer
CANDIDATES_PER_K = 4
TEXT_CANDIDATES = 100
VECTOR_CANDIDATES = 40
VECTOR_MARGIN = 0.1  # a message found by meaning alone is a match within this cosine distance of the nearest
OPTIMIZE_AFTER_WRITES = 50


@dataclass(frozen=True)
class Hit:
    message: Message
    score: float

    def to_json(self) -> dict:
        return {**self.message.to_json(), "score": round(self.score, 6)}


@dataclass(frozen=True)
class ImportReport:
    total: int
    added: int

    @property
    def skipped(self) -> int:
        return self.total - self.added


_parsed: dict[str, object] = {}
_parsed_lock = threading.Lock()


def _parsed_once(name: str, build: Callable[[], object]) -> object:
    """What a bundled resource file parses into, parsed once per process: the files are read-only and
    so is what is built from them (the models are frozen; the taxonomy is copied for each caller).
    A project store, a service or a test opening another store no longer parses the same files again
    (~30 ms each time: the status model's weights, the taxonomy, the phrase book). A failure is not
    kept: the next call tries again and says why again."""
    with _parsed_lock:
        if name not in _parsed:
            _parsed[name] = build()
        return _parsed[name]


def load_taxonomy() -> dict:
    """The bundled taxonomy and render parameters, extended by ``taxonomy.toml`` in the config folder
    if the artist has one."""
    return _taxonomy_read()[0]


def _taxonomy_read() -> tuple[dict, bool]:
    """The taxonomy (a copy of its own for the caller), and whether it is the bundled one alone (no
    artist's ``taxonomy.toml``, or one that could not be read): what is built from the bundled one
    alone is the same in every service of the process and is built once (:func:`_shared`)."""
    data = copy.deepcopy(_parsed_once("taxonomy", lambda: merge(tomllib.loads(resources.read_text("taxonomy.toml")),
                                                                  tomllib.loads(resources.read_text("parameters.toml")))))
    extra = config_dir() / "taxonomy.toml"
    if extra.is_file():
        try:
            return merge(data, tomllib.loads(read_regular(extra, 16 * 2**20).decode("utf-8"))), False
        except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError, RecursionError) as exc:
            log.warning("%s is not valid TOML and was ignored: %s", extra, exc)
    return data, True


def _shared(name: str, bundled: bool, build: Callable[[], object]) -> object:
    """``build()``'s result, made once per process when it comes from the bundled taxonomy alone (the
    tagger and the catalogue only read what they were built with; ~15 ms each), else made anew."""
    return _parsed_once(name, build) if bundled else build()


def load_tagger(data: dict | None = None) -> RuleTagger:
    return RuleTagger(Taxonomy.from_dict(data if data is not None else load_taxonomy()))


def load_catalogue(data: dict | None = None) -> Catalogue:
    """The settings every engine has, by name (cheap: what reading the ledger needs)."""
    data = data if data is not None else load_taxonomy()
    engines = {e: tuple(str(n).lower() for n in spec.get("names", ())) for e, spec in data.get("engines", {}).items()}
    return Catalogue(specs_from_dict(data), engines)


def load_extractor(data: dict | None = None, catalogue: Catalogue | None = None) -> "Extractor":
    from app.core.render_settings.extraction import Extractor  # (0.1 s of patterns: only where messages are read)

    return Extractor(catalogue or load_catalogue(data), load_cues(), load_status_model(), load_scope_model())


def load_cues() -> "Cues":
    """The extractor's phrase book, read once from ``resources/phrases/*.toml`` (issue 35)."""
    from app.core.render_settings.cues import FILES, Cues

    return _parsed_once("cues", lambda: Cues.from_files({name: tomllib.loads(resources.read_text(f"phrases/{name}.toml"))
                                                         for name in FILES}))


def load_status_model() -> StatusModel | None:
    """The shipped status model (``resources/status_model.json``, written by bench/train_status.py);
    without it the rules read statuses alone."""
    try:
        return _parsed_once(STATUS_MODEL, lambda: StatusModel.from_json(json.loads(resources.read_text(STATUS_MODEL))))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("the status model %s could not be read (%s): statuses are read by the rules alone",
                    STATUS_MODEL, exc)
        return None


def load_scope_model() -> "ScopeModel | None":
    """Which object a value belongs to (``scope_model.py``; ``resources/scope_model.json``, written by
    bench/train_scope.py); without it the rules of ``scopes.py`` decide alone."""
    from app.core.render_settings.scope_model import ScopeModel

    try:
        return _parsed_once(SCOPE_MODEL, lambda: ScopeModel.from_json(json.loads(resources.read_text(SCOPE_MODEL))))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("the scope model %s could not be read (%s): scopes are read by the rules alone", SCOPE_MODEL, exc)
        return None


def load_trust() -> "TrustModel | None":
    """Whether the ledger may state a decided value (``trust.py``; ``resources/trust_model.json``,
    written by bench/train_trust.py); without it every decision is stated."""
    from app.core.render_settings.trust import TrustModel

    try:
        return _parsed_once(TRUST_MODEL, lambda: TrustModel.from_json(json.loads(resources.read_text(TRUST_MODEL))))
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning("the trust model %s could not be read (%s): every decided value is stated", TRUST_MODEL, exc)
        return None


class MemoryService:
    def __init__(self, settings: Config, *, tagger: Tagger | None = None, embedder: Embedder | None = None):
        self.settings = settings
        self.data_dir = settings.data_path()
        self.default_project = settings.project
        # the taxonomy, the tagger and the settings rules are built when first used (a command that only
        # lists projects never needs them: ~0.1 s)
        self._tagger: Tagger | None = tagger
        self._extractor: Extractor | None = None
        self._catalogue: Catalogue | None = None
        self._trust: TrustModel | None | bool = False  # False: not read yet
        self._taxonomy_data: dict | None = None
        self._bundled_taxonomy = True  # (no artist's taxonomy.toml: see _taxonomy_read)
        self._taxonomy_lock = threading.RLock()
        self.embedder = embedder or from_spec(settings.embedder, settings.ollama_host, settings.ollama_timeout_s,
                                               settings.openai_url, settings.openai_api_key)
        self.notices: list[str] = []  # expected problems to tell the artist once (embedder down, …)
        self.lock_patience = 1  # lock_wait_s periods a write waits for another process (the window: more)
        self._stores: dict[str, ProjectStore] = {}
        self._stores_lock = threading.Lock()
        self._query_embed_down_until = 0.0
        self._caught_up: set[str] = set()
        # the full-text and vector legs of a search run side by side (LanceDB releases the GIL)
        self._legs = ThreadPoolExecutor(max_workers=2, thread_name_prefix="kelvin-search")
        self._me: tuple[str, str] | None = None
        self.on_written: list[Callable[[str], None]] = []  # told (on the writer thread) after each write to a project
        self.writer = CommitQueue(self._apply, idle=self._upkeep)

    def _taxonomy(self) -> dict:
        with self._taxonomy_lock:
            if self._taxonomy_data is None:
                self._taxonomy_data, self._bundled_taxonomy = _taxonomy_read()
            return self._taxonomy_data

    @property
    def tagger(self) -> Tagger:
        with self._taxonomy_lock:
            if self._tagger is None:
                data = self._taxonomy()
                self._tagger = _shared("tagger", self._bundled_taxonomy, lambda: load_tagger(data))
            return self._tagger

    @property
    def catalogue(self) -> Catalogue:
        with self._taxonomy_lock:
            if self._catalogue is None:
                data = self._taxonomy()
                self._catalogue = _shared("catalogue", self._bundled_taxonomy, lambda: load_catalogue(data))
            return self._catalogue

    @property
    def trust(self) -> "TrustModel | None":
        """Whether the ledger may state a decided value (read once; a few kilobytes)."""
        with self._taxonomy_lock:
            if self._trust is False:
                self._trust = load_trust()
            return self._trust

    @property
    def extractor(self) -> Extractor:
        """The settings rules, built the first time a message is read for settings (a command that only
        reads the ledger — ``kelvin settings list`` — never pays for their patterns)."""
        with self._taxonomy_lock:
            if self._extractor is None:
                self._extractor = load_extractor(self._taxonomy(), self.catalogue)
            return self._extractor

    # ---- projects ----------------------------------------------------------------------------------
    def store(self, project: str | None = None) -> ProjectStore:
        """The project's store: any spelling of its name that maps to its folder ("dup TEST" for "Dup test")
        gives the same store, named with the one spelling the project keeps (``store.name``)."""
        name = check_name(project or self.default_project, "project")
        key = projects.folder_name(name)
        with self._stores_lock:
            store = self._stores.get(key)
            if store is None:
                store = ProjectStore(self.data_dir, name, self.tagger, self.embedder, self.settings.index_uri,
                                     extractor=lambda: self.extractor, catalogue=self.catalogue,
                                     lock_wait_s=self.settings.lock_wait_s, trust=self.trust)
                store.vectors.on_problem = self._notice
                store.identity = self.me
                self._stores[key] = store
            return store

    def me(self) -> tuple[str, str]:
        """Who this Kelvin is to a team: the artist's name, and this data folder's own id (made at
        the first shared write)."""
        if self._me is None:
            self._me = (self.settings.artist_name(), kelvin_id(self.data_dir))
        return self._me

    def projects(self) -> list[str]:
        """Folder names of every project that has a journal."""
        if not self.data_dir.is_dir():
            return []
        return sorted(p.name for p in self.data_dir.iterdir() if (p / "journal").is_dir())

    def open(self, project: str | None = None) -> int:
        """Make a project ready for writing (created if new) and replay what a crash left
        unprojected. Returns events replayed. Another process writing it meanwhile is no obstacle:
        it leaves the project as it should be, and this one catches up at its first write."""
        store = self.store(project)
        try:
            return self.writer.call(store.open_for_write).result()[0]
        except StoreLocked:
            if not store.exists():
                raise
            log.info("project %s is being written by another Kelvin process; opening it as it is", store.name)
            store.refresh()
            return 0

    def release(self, project: str) -> None:
        """Finish this project's pending writes and let go of its files (before a rename)."""
        store = self.store(project)
        self.writer.call(store.close).result()
        with self._stores_lock:
            self._stores.pop(store.folder.name, None)
        self._caught_up.discard(store.name)

    def _notice(self, text: str) -> None:
        if text not in self.notices:
            self.notices.append(text)
            log.warning("%s", text)

    # ---- writing -----------------------------------------------------------------------------------
    def _apply(self, project: str, items: list[tuple[str, dict]]) -> list:
        """Write a commit group, then tell those who asked (the team's background rounds: what was
        written goes to the studio's server now)."""
        written = self._write_patiently(project, items)
        for tell in self.on_written:
            tell(project)
        return written

    def _write_patiently(self, project: str, items: list[tuple[str, dict]]) -> list:
        """While another Kelvin process's write goes on (an import of a big file), wait for it
        ``lock_patience`` times ``lock_wait_s`` in all before giving up — the window waits longer than
        a command, so a turn asked during a long import is never dropped."""
        for attempt in range(max(1, self.lock_patience)):
            try:
                return self.store(project).write(items)
            except StoreLocked as exc:
                if attempt + 1 >= self.lock_patience:
                    raise
                log.info("waiting for another Kelvin process to finish writing %s: %s", project, exc)
        raise AssertionError("unreachable")

    def commit(self, text: str, *, role: str = "user", speaker: str = "", conversation_id: str = "default",
               turn_id: str = "", project: str | None = None, ts_ms: int | None = None,
               message_id: str | None = None, status: str = "") -> tuple[Message, Future]:
        """Commit one message. Returns at once; the Future completes when it is journaled and indexed."""
        name = self.store(project).name  # the project's one spelling
        if not speaker and role == "user" and self.store(name).team is not None:
            speaker = self.me()[0]  # in a shared project the artist's words carry their name
        msg = Message(
            id=check_id(message_id) if message_id else new_id(), project=name,
            conversation_id=check_name(conversation_id, "conversation_id"), role=check_role(role),
            speaker=check_speaker(speaker), text=check_text(text), ts_ms=ts_ms if ts_ms is not None else now_ms(), turn_id=turn_id,
            status=check_status(status),
        )
        return msg, self.writer.submit(name, [(OP_MESSAGE_ADD, msg.to_event())])

    def import_items(self, items: list[ImportItem],
                     progress: Callable[[int, int], None] = lambda done, total: None) -> ImportReport:
        """Store checked import items in timestamp order and wait until they are written. All or
        nothing per project: its messages are journaled in one append, so a full disk or a failed
        write keeps none of them (the index and Markdown follow in batches; if those fail, the
        messages are safe in the journal and :class:`MemoryBehind` says so)."""
        ordered = sorted(items, key=lambda it: (it.message.ts_ms, it.message.id))
        # one project per folder, whatever spelling each line gives it, under the project's one spelling
        by_project: dict[str, list[ImportItem]] = {}
        for it in ordered:
            by_project.setdefault(self.store(it.project).folder.name, []).append(it)
        for folder in by_project:
            self.open(self.store(by_project[folder][0].project).name)
        added = done = 0
        for its in by_project.values():
            store = self.store(its[0].project)
            events = [(OP_MESSAGE_ADD, {**it.message.to_event(), "project": store.name}) for it in its]
            aliases = {it.message.id: it.aliases(store.name) for it in its if it.derived_from}

            def step(d: int, t: int, base: int = done, n: int = len(events)) -> None:
                progress(base + (n * d) // max(t, 1), len(ordered))

            def write(store=store, events=events, aliases=aliases, step=step):
                known = store.known_ids()  # (the writer's thread: a line stored before under an older id)
                fresh = [(op, d) for op, d in events if not aliases.get(d["id"], set()) & known]
                return store.write(fresh, step)

            entries = self.writer.call(write).result()[0]
            added += len(entries)
            done += len(events)
            if not entries:  # all stored before: no step was reported
                progress(done, len(ordered))
            if store.projection_error:
                raise MemoryBehind(f"the {len(entries):,} imported messages are safe in the journal of {store.name!r}, "
                                   f"but the index and Markdown could not be updated ({store.projection_error}); "
                                   "Kelvin finishes them on its next start")
        return ImportReport(total=len(ordered), added=added)

    def edit(self, message_id: str, text: str, project: str | None = None) -> Message:
        store = self.store(project)
        check_text(text)
        self.writer.flush()  # an edit may follow its message's commit at once
        old = self.show(message_id, project)
        if old is None:
            raise RecordError(f"no message {message_id!r} in project {store.name!r}")
        self.writer.submit(store.name, [(OP_MESSAGE_EDIT, edit_event(old, text))]).result()
        self.settled(store.name, "the edit")
        return self.show(message_id, project)  # type: ignore[return-value]

    def delete(self, message_id: str, project: str | None = None) -> Message:
        """Delete a message from the index and Markdown; the journal keeps the deletion as an event."""
        store = self.store(project)
        self.writer.flush()
        old = self.show(message_id, project)
        if old is None:
            raise RecordError(f"no message {message_id!r} in project {store.name!r}")
        self.writer.submit(store.name, [(OP_MESSAGE_DELETE, {"id": message_id})]).result()
        self.settled(store.name, "the deletion")
        return old

    def restore(self, message: Message, project: str | None = None) -> Message:
        """Put a deleted message back, whole (undo of :meth:`delete`). The journal keeps the
        deletion and the restore as two events; a message that is still there is left alone."""
        store = self.store(project)
        self.writer.flush()
        self.writer.submit(store.name, [(OP_MESSAGE_RESTORE, with_engine(message))]).result()
        self.settled(store.name, "the message")
        back = self.show(message.id, project)
        if back is None:
            raise RecordError(f"message {message.id!r} could not be restored in project {store.name!r}")
        return back

    def remember(self, text: str, category: str = "fact", *, project: str | None = None,
                 source_id: str = "") -> tuple[Memory, Future]:
        name = check_name(project or self.default_project, "project")
        mem = Memory(id=new_id("k"), project=name, text=check_text(text), category=check_name(category, "category"),
                     ts_ms=now_ms(), source_id=source_id)
        return mem, self.writer.submit(name, [(OP_MEMORY_ADD, mem.to_event())])

    def note_turn(self, op: str, data: dict, project: str | None = None) -> Future:
        """Journal what goes with a turn (what it looked at, its chips, an answer to one of them: the
        ``turn.*`` events of app.memory.turn_notes). Returns at once, as a commit does."""
        if op not in TURN_OPS:
            raise RecordError(f"not a turn note: {op!r}")
        name = check_name(project or self.default_project, "project")
        return self.writer.submit(name, [(op, data)])

    def turn_notes(self, message_ids, project: str | None = None) -> dict[str, TurnNote]:
        """The notes of these answers (what each looked at, its chips, the artist's answers), by id."""
        store = self.caught_up(self.store(project))
        return store.turns.of(message_ids)

    def memories_meant(self, said: str, project: str | None = None) -> list[Memory]:
        """The kept memories ``said`` points at: the one with that id, or those whose text holds the
        words (the chat's /forget and `kelvin memory forget` take either)."""
        mems = self.memories(project)
        by_id = [m for m in mems if m.id == said.strip()]
        if by_id:
            return by_id
        words = " ".join(said.casefold().split())
        return [m for m in mems if words and words in " ".join(m.text.casefold().split())]

    def forget(self, memory_id: str, project: str | None = None) -> None:
        store = self.store(project)
        self.writer.flush()
        if not any(m.id == memory_id for m in self.memories(project)):
            raise RecordError(f"no curated memory {memory_id!r} in project {store.name!r}")
        self.writer.submit(store.name, [(OP_MEMORY_DELETE, {"id": memory_id})]).result()
        self.settled(store.name, "the change")

    def settled(self, project: str | None, what: str) -> None:
        """After a write has been journaled: raise :class:`MemoryBehind` if the index or Markdown
        could not follow it (a disk that filled up meanwhile), so the artist hears it plainly."""
        store = self.store(project)
        if store.projection_error:
            raise MemoryBehind(f"{what} is safe in the journal, but the index and Markdown could not be updated "
                               f"({store.projection_error}); Kelvin catches them up on its next start")

    def roll_over(self, project: str | None, today: str) -> int:
        """End of day: move the project's Markdown blocks from before ``today`` (a local ISO date, as
        ``Projects.today()`` gives) to ``archive/<day>/``, journaled as one ``day.rollover`` event
        (``day``: the date of the newest block moved). Returns how many blocks moved; 0, with no
        event, when there is nothing older than today — cheap enough for every day's first turn."""
        try:
            cutoff = int(datetime.combine(date.fromisoformat(today), datetime.min.time()).timestamp() * 1000)
        except (TypeError, ValueError):
            raise RecordError(f"today must be an ISO date such as 2026-11-22, not {today!r}") from None
        store = self.store(project)
        if not store.exists():
            return 0
        since = store.state.live_since_ms
        if (since is not None and not before(since, cutoff)
                and store.journal.last_seq() <= store.state.markdown_seq):
            return 0  # the live files are known to hold nothing older: no file read, no wait on the writer
        return self.writer.call(lambda: store.roll_over(cutoff)).result()[0]

    def reindex(self, project: str | None = None,
                progress: Callable[[int, int], None] = lambda done, total: None) -> int:
        store = self.store(project)
        if not store.exists():
            raise RecordError(f"project {store.name!r} has no memory yet")
        return self.writer.call(lambda: store.rebuild(progress)).result()[0]

    def maintain(self, project: str | None = None) -> None:
        """Compact the index and build the vector index if it is due (waits)."""
        store = self.store(project)

        def run():
            with store.writing():
                store.index.optimize()
                store.index.ensure_filter_indexes()
                store.index.ensure_vector_index()

        self.writer.call(run).result()

    def _upkeep(self) -> bool:
        """One small step of background upkeep on the writer thread; True while more remains. Each
        step holds the project's write lock (upkeep writes the index too), and is skipped while
        another Kelvin process writes."""
        with self._stores_lock:
            stores = [s for s in self._stores.values() if s.writable and s.index_opened]
        for store in stores:
            if _locked_step(store, store.fill_vectors):
                return True
        for store in stores:
            if store.index.compaction_due(OPTIMIZE_AFTER_WRITES) and _locked_step(store, store.index.optimize, True):
                return True
        for store in stores:
            if _locked_step(store, lambda s=store: s.index.ensure_filter_indexes() or s.index.ensure_vector_index()):
                return True
        return False

    def _compact_due(self) -> None:
        with self._stores_lock:
            stores = [s for s in self._stores.values() if s.writable and s.index_opened]
        for store in stores:
            if store.index.exists and store.index.compaction_due(OPTIMIZE_AFTER_WRITES):
                _locked_step(store, store.index.optimize)

    def flush(self, timeout: float | None = None) -> None:
        self.writer.flush(timeout)

    def close(self) -> None:
        """Drain the writer (no accepted commit is dropped), compact what many small writes left
        behind (a command-line edit or delete at a time never idles long enough to), release the
        projects, hang up."""
        if self.writer.closed:
            return
        try:
            self.writer.call(self._compact_due).result()
        except Exception:  # upkeep; never in the way of closing
            log.warning("compacting the index on the way out failed; it is retried next time", exc_info=True)
        self.writer.close()
        self._legs.shutdown(wait=True)
        with self._stores_lock:
            for store in self._stores.values():
                store.close()
        self.embedder.close()

    # ---- reading -----------------------------------------------------------------------------------
    def _readable(self, project: str | None, all_projects: bool) -> list[ProjectStore]:
        stores = [self.store(p) for p in self.projects()] if all_projects else [self.store(project)]
        stores = [s for s in stores if s.exists()]
        for s in stores:
            self.caught_up(s)
        return [s for s in stores if s.index.exists]

    def caught_up(self, store: ProjectStore, thorough: bool = False) -> ProjectStore:
        """A project as it is now, whoever wrote it: what other Kelvin processes wrote since the
        last read (cheap when nothing changed). Before this process's first read of it, events
        journaled but never projected (a writer killed in between) are projected, and what a gap in
        the journal lost is rescued — unless another process is writing the project, which then does
        it itself. ``thorough``: look for lines cut out of the journal too (stats, doctor), every time."""
        store.refresh()
        if store.name in self._caught_up and not thorough:
            return store
        self._caught_up.add(store.name)
        if store.behind(thorough):
            try:
                self.writer.call(lambda: store.catch_up(wait_s=0)).result()
            except StoreLocked:
                log.info("project %s is being written by another Kelvin process; reading it as it is", store.name)
            except Exception as exc:  # a full disk, a damaged file: reading still works
                log.debug("catching up %s failed", store.name, exc_info=True)
                self._notice(f"the memory of {store.name!r} could not be brought up to date "
                             f"({getattr(exc, 'strerror', None) or exc}); showing what is indexed")
        return store

    def changes(self, project: str | None = None) -> tuple:
        """What the project's journal and projections look like now — compare two to know whether
        anything was written since (by any Kelvin process). Two ``stat`` calls; no lock."""
        store = self.store(project)
        return store.change_mark() if store.exists() else ()

    def _query_vector(self, query: str, stores: list[ProjectStore]) -> list[float] | None:
        if self.embedder.spec == "none" or time.monotonic() < self._query_embed_down_until:
            return None
        try:
            if not any(s.index.vector_dim() for s in stores):
                # no vectors stored yet (the embedder was away when they were written): check once
                # whether it is reachable now, so the artist hears why search is full-text only
                self.embedder.dim()
                self._query_embed_down_until = float("inf")
                return None
            return self.embedder.embed([query], kind="query")[0]
        except EmbedderUnavailable as exc:
            self._query_embed_down_until = time.monotonic() + 30.0
            self._notice(f"{exc}; searching by full text until it is back")
            return None

    def search(self, query: str, k: int = 5, filters: Filters = Filters(), *, project: str | None = None,
               all_projects: bool = False, query_vector: list[float] | None = None,
               drop_status: tuple[str, ...] = (), only_matches: bool = False) -> list[Hit]:
        """Hybrid search: full-text and vector candidates, their scores mixed (app.core.fusion); whole
        messages, best first.
        ``drop_status`` leaves out messages with those statuses (e.g. answers quoted from memory).
        ``only_matches``: only messages that share a word (or its stem) with the query, or that are
        about as near in meaning as the nearest one — what a person browsing calls a match; without
        it, the best ``k`` whatever they are (what fills the model's window)."""
        if k < 1:
            raise RecordError("k must be at least 1")
        stores = self._readable(project, all_projects)
        if not stores or not query.strip():
            return []
        vector = query_vector if query_vector is not None else self._query_vector(query, stores)
        where = where_clause(filters)
        legs = []
        for s in stores:
            limit = max(TEXT_CANDIDATES, k * CANDIDATES_PER_K)
            legs.append((s, "text", self._legs.submit(s.index.search_text, query, where, limit)))
            if vector is not None and s.index.vector_dim() == len(vector):
                limit = max(VECTOR_CANDIDATES, k * CANDIDATES_PER_K)
                legs.append((s, "vector", self._legs.submit(s.index.search_vector, vector, where, limit)))
        text_hits: list[tuple[dict, float]] = []
        vector_hits: list[tuple[dict, float]] = []
        for s, kind, future in legs:
            for row, score in future.result():
                if row.get("status") in drop_status:
                    continue
                row["_key"] = s.folder.name + "\x1f" + row["message_id"]
                (text_hits if kind == "text" else vector_hits).append((row, score))
        text_hits.sort(key=lambda h: -h[1])  # BM25: higher is better
        vector_hits.sort(key=lambda h: h[1])  # cosine distance: lower is better
        rows = {row["_key"]: row for row, _ in vector_hits + text_hits}
        # messages from before a project's last day rollover are archived: still found, ranked a little lower
        cutoffs = {s.folder.name: s.archive_cutoff() for s in stores}

        def archived(r: dict) -> bool:
            cutoff = cutoffs[r["_key"].partition("\x1f")[0]]
            return cutoff is not None and r["ts_ms"] < cutoff

        fused = fuse([Candidate(r["_key"], r["ts_ms"], r["text"], archived(r), score) for r, score in text_hits],
                     [Candidate(r["_key"], r["ts_ms"], r["text"], archived(r), 1.0 - distance)
                      for r, distance in vector_hits], query)
        if only_matches:  # a word of the query (or its stem) said in it, or as near in meaning as the nearest
            near = vector_hits[0][1] + VECTOR_MARGIN if vector_hits else -1.0
            matched = {r["_key"] for r, _ in text_hits if spans(r["text"], query)}  # not by its context alone
            matched |= {r["_key"] for r, d in vector_hits if d <= near}
            fused = [f for f in fused if f.message_id in matched]
        fused = fused[:k]
        # fetch the winners whole: one-chunk messages by row id, longer ones (or rows moved by a
        # compaction since the legs ran) put back together from their chunks
        by_store = {s.folder.name: s for s in stores}
        take: dict[str, list[str]] = {}
        for f in fused:
            if rows[f.message_id]["n_chunks"] == 1:
                take.setdefault(f.message_id.partition("\x1f")[0], []).append(f.message_id)
        found: dict[str, Message] = {}
        for folder, keys in take.items():
            try:
                taken = by_store[folder].index.rows_by_row_id([rows[key]["_rowid"] for key in keys])
            except (OSError, RuntimeError, ValueError):  # ids out of range after a compaction
                taken = []
            for row in taken:
                key = folder + "\x1f" + row["message_id"]
                if key in keys and row["n_chunks"] == 1:
                    found[key] = message_from_rows([row])
        wanted: dict[str, list[str]] = {}
        for f in fused:
            if f.message_id not in found:
                folder, _, mid = f.message_id.partition("\x1f")
                wanted.setdefault(folder, []).append(mid)
        for folder, mids in wanted.items():
            for mid, msg in by_store[folder].index.messages(mids).items():
                found[folder + "\x1f" + mid] = msg
        return [Hit(found[f.message_id], f.score) for f in fused if f.message_id in found]

    def show(self, message_id: str, project: str | None = None) -> Message | None:
        stores = self._readable(project, False)
        return stores[0].index.messages([message_id]).get(message_id) if stores else None

    def list(self, project: str | None = None, limit: int = 20, filters: Filters = Filters()) -> list[Message]:
        """The latest messages, newest last."""
        ids = self.message_ids(project, filters, limit)[::-1]
        found = self.messages(ids, project)
        return [found[i] for i in ids if i in found]

    def message_ids(self, project: str | None = None, filters: Filters = Filters(), limit: int = 0) -> list[str]:
        """Every message id that passes the filters (the newest ``limit``, if given), newest first
        (cheap: no text is read)."""
        stores = self._readable(project, False)
        if not stores:
            return []
        return stores[0].index.newest_ids(where_clause(filters), limit)

    def messages(self, ids: list[str], project: str | None = None) -> dict[str, Message]:
        """Whole messages by id (a browser's page of rows)."""
        stores = self._readable(project, False)
        return stores[0].index.messages(ids) if stores and ids else {}

    def memories(self, project: str | None = None) -> list[Memory]:
        stores = self._readable(project, False)
        return stores[0].index.memories() if stores else []

    def search_memories(self, query: str, k: int = 5, project: str | None = None) -> list[tuple[Memory, float]]:
        stores = self._readable(project, False)
        return stores[0].index.search_memories(query, k) if stores else []

    def stats(self, project: str | None = None) -> dict:
        store = self.store(project)
        if store.exists():
            self.caught_up(store, thorough=True)
        out: dict = {"project": store.name, "folder": str(store.folder), "messages": 0, "chunks": 0,
                     "memories": 0, "conversations": 0, "by_domain": {}, "by_type": {}, "by_engine": {},
                     "first": None, "last": None}
        journal = store.journal
        last_seq = journal.last_seq()
        out["journal"] = {"events": last_seq, "bytes": journal.size_bytes()}
        out["embedder"] = {"configured": self.embedder.spec, "indexed_with": store.state.embedder or None}
        out["markdown_files"] = {p.name: p.stat().st_size for p in store.book.files()}
        out["set_aside"] = self.set_aside(project)
        if not (store.exists() and store.index.exists):
            return out
        ix = store.index
        heads = ix.message_heads()
        out.update(messages=len(heads), chunks=ix.count_chunks(), memories=ix.count_memories(),
                   conversations=len({h["conversation_id"] for h in heads}))
        for key, col in (("by_domain", "domain"), ("by_type", "type"), ("by_engine", "engine")):
            counts: dict[str, int] = {}
            for h in heads:
                counts[h[col] or "none"] = counts.get(h[col] or "none", 0) + 1
            out[key] = dict(sorted(counts.items(), key=lambda kv: -kv[1]))
        if heads:
            from app.core.records import format_ts

            out["first"] = format_ts(min(h["ts_ms"] for h in heads))
            out["last"] = format_ts(max(h["ts_ms"] for h in heads))
        out["index"] = {"uri": ix.uri, "version": ix.version(), "vector_dim": ix.vector_dim(),
                        "chunks_without_vectors": ix.count_without_vectors(),
                        "bytes": _folder_bytes(Path(ix.uri)) if "://" not in ix.uri else None}
        out["projections_behind"] = max(0, last_seq - min(store.state.index_seq, store.state.markdown_seq))
        return out

    def set_aside(self, project: str | None = None) -> list[str]:
        """What the project's journal moved aside (torn tails, damaged lines) and is still there, in
        words, until the artist removes the files."""
        store = self.store(project)
        if not store.exists():
            return []
        said = [rec.describe() for rec in store.journal.set_aside()]
        # gaps not yet recorded (another Kelvin holds the project): said as found
        said += [f"{gap.describe()}; they are taken back from the index or the Markdown when Kelvin next writes "
                 "this project" for gap in completeness.unexplained(store.journal)]
        return said


def kelvin_id(data_dir: Path) -> str:
    """This data folder's Kelvin, as a team's events name it (a UUID made once, kept in the folder)."""
    path = data_dir / "kelvin-id"
    try:
        return path.read_text(encoding="ascii").strip()[:64]
    except (FileNotFoundError, UnicodeDecodeError):
        pass
    except OSError:
        return ""
    import uuid

    from app.durable import write_atomically

    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        write_atomically(path, str(uuid.uuid4()) + "\n")
        return path.read_text(encoding="ascii").strip()
    except OSError:
        return ""


class MemoryBehind(JournalError):
    """Written to the journal, but the index or Markdown could not follow (they catch up later)."""


def _folder_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0



def _locked_step(store: ProjectStore, step: Callable[[], object], done: object = None):
    """One upkeep step under the project's write lock, or None when another process is writing."""
    try:
        with store.writing(wait_s=0):
            result = step()
            return done if done is not None else result
    except StoreLocked:
        return None

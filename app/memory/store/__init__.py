"""One project's memory on disk, as the rest of Kelvin sees it: the journal and its projections
(Markdown, the search index, the settings ledger, the turn notes).

``write()`` journals events durably, then projects them. ``open_for_write()`` replays whatever the
projections missed (a crash between journal and index), idempotently. ``rebuild()`` makes every
projection again from the journal alone.

Several Kelvin processes share a project (the window, commands in a terminal, the Blender add-on):
every write runs inside :meth:`ProjectStore.writing`, which holds the project's write lock for that
one write and, first thing inside it, catches this process up with what the others wrote since
(``catching_up``). A reader catches up the same way without the lock
(:meth:`ProjectStore.refresh`).

``ProjectStore`` is the façade; each job is a module of this package, working on the store's state:
opening and recovery (``opening``), catching up with other processes (``catching_up``), a write
(``journaling``), projecting events (``projecting``), the day's end (``day_end``), rebuilding
(``rebuilding``; what it takes back from the projections the journal lost: ``rescue``), tagging
messages (``tagging``), vectors (``vectors``), room on the disk (``disk_room``), the journal folded
(``fold``), the projections' positions (``projections``), and the events themselves (``events``).

Threads: the project's writer thread (app.services.commit_queue) calls ``write``, ``roll_over``,
``rebuild``, ``fill_vectors`` and owns ``message_ids``; readers on other threads call ``refresh``,
``rollovers``, ``behind`` and ``index``. ``_sync`` (an RLock) keeps a reader's catch-up apart from the
writer's; ``state_lock`` guards replacing ``state`` (and its rollovers), which searches read; the
project's write lock (the journal's ``LOCK`` file) is taken inside ``_sync``, once per write.
"""
from __future__ import annotations

import logging
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from app.core import projects
from app.core.embedding import Embedder
from app.core.records import Message, RecordError
from app.core.tagging import Tagger
from app.durable import NotRegularFile, UnsafePath, refuse_links
from app.memory import completeness, team_ledger
from app.memory.index import ProjectIndex, version_on_disk
from app.memory.journal import Entry, Journal, JournalError, StoreLocked
from app.memory.markdown import MarkdownBook
from app.memory.project_lock import InUse
from app.memory.settings_book import SettingsBook
from app.memory.store import catching_up, day_end, journaling, opening, rebuilding
from app.memory.store.disk_room import DiskFull
from app.memory.store.events import (
    CONTEXT_ENGINE,
    OP_DAY_ROLLOVER,
    OP_MEMORY_ADD,
    OP_MEMORY_DELETE,
    OP_MESSAGE_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
    OPS,
    edit_event,
    whole_event,
    with_engine,
)
from app.memory.store.fold import Folded, fold_journal
from app.memory.store.projections import PROJECT_META, Projections, stored_name
from app.memory.store.tagging import MessageTagging
from app.memory.store.vectors import Vectors
from app.memory.team_file import TeamFile
from app.memory.turn_notes import TurnNotes

if TYPE_CHECKING:
    from app.core.render_settings.extraction import Extractor
    from app.core.render_settings.parameters import Catalogue
    from app.core.render_settings.trust import TrustModel

__all__ = [
    "CONTEXT_ENGINE", "LOCK_WAIT_S", "OPS", "OP_DAY_ROLLOVER", "OP_MEMORY_ADD", "OP_MEMORY_DELETE", "OP_MESSAGE_ADD",
    "OP_MESSAGE_DELETE", "OP_MESSAGE_EDIT", "OP_MESSAGE_RESTORE", "PROJECT_META", "DiskFull", "Folded", "ProjectStore",
    "Projections", "edit_event", "stored_name", "with_engine",
]

log = logging.getLogger("kelvin.store")

# how long a write waits for another Kelvin process's write (an import of a big file holds the lock
# for its whole length) before it gives up and says who is writing (the lock_wait_s setting)
LOCK_WAIT_S = 60.0
_INDEXED_OPS = (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE, OP_MESSAGE_EDIT, OP_MESSAGE_DELETE, OP_MEMORY_ADD, OP_MEMORY_DELETE)


class ProjectStore:
    """One project's journal and projections: what the services read and write through (the jobs
    themselves are the package's modules; see the module's doc)."""

    def __init__(self, data_dir: Path, name: str, tagger: Tagger, embedder: Embedder, index_uri: str = "",
                 extractor: Extractor | Callable[[], Extractor] | None = None, lock_wait_s: float = LOCK_WAIT_S,
                 catalogue: Catalogue | None = None, trust: TrustModel | None = None):
        self.data_dir = data_dir
        self.folder = data_dir / projects.folder_name(name)
        refuse_links(self.folder)  # a project folder linked elsewhere: said as such
        # one spelling per project: the one it was created (or renamed) with, whatever spelling of it
        # the caller used ("dup TEST" for "Dup test"); a new project takes the caller's
        self.name = stored_name(self.folder) or name
        if self.folder.resolve().parent != data_dir.resolve():
            raise RecordError(f"project name {name!r} does not map to a folder inside the data folder")
        self.journal = Journal(self.folder / "journal", accept=whole_event)
        self.team: TeamFile | None = None  # shared with a team (app.memory.team_file); None: personal
        # this artist's name and this Kelvin's id: the author of what it journals when shared
        self.identity: Callable[[], tuple[str, str]] = lambda: ("", "")
        # how far the ledger has taken this machine's events the server has not ordered yet (a journal
        # position; None: not known, made again from the last settled position): app.memory.team_ledger
        self.tentative_at: tuple[str, int] | None = None
        self.load_team()
        self.book = MarkdownBook(self.folder, name)
        # the settings rules may come as a function that builds them when a message is first read for
        # settings: reading the ledger needs only the catalogue
        self.settings = SettingsBook(self.folder, extractor, name, catalogue, trust) if extractor is not None else None
        self.turns = TurnNotes(self.folder)  # what each answer looked at, its chips and their answers
        if self.settings is not None:
            self.settings.on_unapplied = lambda ev, exc: self.journal.note_unapplied(ev, "the settings ledger", exc)
        self.tagging = MessageTagging(tagger, self.name, self.settings)
        self.embedder = embedder
        self.vectors = Vectors(embedder, lambda: self.index)  # .on_problem: told when the embedder fails
        self.index_uri = index_uri.format(project=self.folder.name) if index_uri else str(self.folder / "memory.lance")
        self.state_path = self.folder / "journal" / "projections.json"
        self.state = Projections.load(self.state_path)
        self.state_lock = threading.Lock()  # a search may read the rollovers while the writer adds one
        self._index: ProjectIndex | None = None
        self._index_lock = threading.Lock()
        self.lock_wait_s = lock_wait_s
        self.lock_waited_s = 0.0  # how long the last write waited for another process's
        self.in_use = InUse(self.folder / "journal" / "IN-USE")  # shared while this process has it open
        self._opened = False  # the first write's checks (replay, rebuild, index) have run in this process
        self._replayed_at_open = 0  # events the first write in this process replayed
        self._held = 0  # writing() nesting depth (a rebuild inside a write)
        self._sync = threading.RLock()  # this process's writer, and its readers catching up
        self.seen_mark: tuple = ()  # the journal's end and projections.json as last caught up with
        self.message_ids: set[str] | None = None  # message ids stored, once loaded (writer thread only)
        self.rescued: list[str] = []  # messages the last rebuild found only in the index, journaled again
        self.gaps: list[completeness.Gap] = []  # numbers the journal lacks, found when it was opened
        self.projection_error = ""  # why the last write's projection failed ("" when it did not)

    # ---- the project and its index -----------------------------------------------------------------
    def load_team(self) -> None:
        """Read whether (and how far) the project is shared (after sharing or joining it, too)."""
        self.team = TeamFile.load(self.journal.folder, previous=self.team)
        if self.team is not None:
            self.journal.namespace = uuid.UUID(self.team.namespace)

    def exists(self) -> bool:
        return self.journal.folder.is_dir()

    @property
    def index(self) -> ProjectIndex:
        with self._index_lock:  # the writer and a reader may both be first
            if self._index is None:
                self._index = ProjectIndex(self.index_uri)
            return self._index

    @property
    def writable(self) -> bool:
        """Whether this process has written (or opened for writing) the project."""
        return self._opened

    @property
    def index_opened(self) -> bool:
        """Whether this process has opened the index (a command that wrote only settings has not)."""
        return self._index is not None

    def check_folders(self) -> None:
        """Refuse a project in which a folder or a file Kelvin writes is a symbolic link."""
        opening.check_folders(self)

    def behind(self, thorough: bool = False) -> bool:
        """Whether the projections need catching up (a reader asks before its first read), or the
        journal has a gap nobody has looked into yet (``thorough``: lost lines too, not only segments)."""
        return opening.behind(self, thorough)

    def close(self) -> None:
        self.journal.close()
        self.in_use.release()
        self._opened = False
        self.seen_mark = ()
        self.tentative_at = None

    def open_for_write(self) -> int:
        """Make the project ready for this process's writes: under the write lock, for this once,
        catch the projections up — replay what they missed, or rebuild them from the journal when
        they cannot be trusted (a rebuild that was interrupted, projections ahead of the journal, a
        missing index). Returns the events replayed. The lock is not kept: each write takes it."""
        if self._opened:
            return 0
        with self.writing():
            return self._replayed_at_open

    # ---- sharing the project with other Kelvin processes ---------------------------------------------
    @contextmanager
    def writing(self, wait_s: float | None = None, index: bool = True):
        """The project's write lock, held for one write (journal append and projections), waiting
        up to ``wait_s`` (default ``lock_wait_s``) for another process's write — then StoreLocked,
        naming it. Inside it this process has caught up with every other one: projections.json
        and the settings ledger as the last writer left them, the message ids it added or deleted,
        and events a writer journaled but never projected (killed in between) projected now.
        ``index=False``: a write that touches no message (settings alone, as a scene import writes)
        does not open the index before the lock (LanceDB's import: 1-2 s)."""
        if self._held:  # a rebuild or a replay inside a write: the lock is already held
            self._held += 1
            try:
                yield
            finally:
                self._held -= 1
            return
        with self._sync:
            if not self._opened:
                self.check_folders()
                if self._index is None and self.exists() and index and not opening.index_gone(self):
                    _ = self.index  # LanceDB's import and its tables opened (reads: 1-2 s) before the lock, not in it
            self.lock_waited_s = self.journal.lock(self.lock_wait_s if wait_s is None else wait_s)
            self._held = 1
            try:
                if not self.in_use.share():
                    raise StoreLocked(f"the project {self.name!r} is being renamed by another Kelvin process; "
                                      "nothing was written — try again in a moment")
                catching_up.catch_up_files(self)
                self.journal.open_tail(floor_seq=self.projected_seq())
                try:
                    if self._opened:
                        catching_up.follow(self)
                    else:
                        self._replayed_at_open = opening.open_locked(self)
                        self._opened = True
                    if self.team is not None:  # what was written since the files were read (a mended tail)
                        team_ledger.follow(self, full=False)
                except (JournalError, UnsafePath, NotRegularFile):
                    raise  # the journal itself, or a link or a FIFO in the project: nothing is written
                except Exception as exc:  # the projections, not the journal
                    # a projection that cannot catch up (a full disk, an index that fails) must not keep
                    # this write from the journal (a question is never lost to it): it goes on, and the
                    # projections catch up with a later write (the open is tried again then)
                    self.projection_error = str(getattr(exc, "strerror", None) or exc)
                    log.warning("project %s: the index or Markdown could not be brought up to date (%s); the "
                                "journal takes the write, they catch up later", self.name, self.projection_error,
                                exc_info=not isinstance(exc, OSError))
                yield
            finally:
                self._held = 0
                self.seen_mark = catching_up.mark(self)  # what this process wrote it has seen
                self.journal.unlock()

    def refresh(self) -> bool:
        """A reader's catch-up, without the lock: projections.json, the settings ledger and the
        index's tables as the last writer (of any process) left them. Cheap when nothing changed
        (two ``stat`` calls). Returns whether anything had changed. Skipped while this process's
        own writer is writing: it catches up itself."""
        if not self.journal.folder.is_dir() or not self._sync.acquire(blocking=False):
            return False
        try:
            try:
                self.in_use.share()
            except OSError:  # another user's project, or a read-only disk: it is read all the same
                pass
            return catching_up.catch_up_files(self)
        finally:
            self._sync.release()

    def catch_up(self, wait_s: float | None = None) -> None:
        """Take the lock once to catch up (and, the first time, open): what a crashed writer left
        unprojected is projected."""
        with self.writing(wait_s):
            pass

    def change_mark(self) -> tuple:
        """Changes whenever any process writes the project (the journal's end, projections.json, the
        team's files, the ledger's state)."""
        return catching_up.mark(self)

    def projected_seq(self) -> int:
        """The furthest any projection has seen."""
        return max(self.state.seen_seq, self.state.index_seq, self.state.markdown_seq,
                   self.settings.seq if self.settings else 0)

    def save_state(self) -> None:
        """Save how far the projections have caught up, with the index's version that goes with it."""
        version = version_on_disk(self.index_uri) if opening.local_index(self) else None
        if version is not None:
            self.state.index_version = version
        self.state.save(self.state_path)

    # ---- writing -----------------------------------------------------------------------------------
    def write(self, items: Sequence[tuple[str, dict]],
              progress: Callable[[int, int], None] = lambda done, total: None) -> list[Entry]:
        """Journal the events durably in one append (all or nothing), then project them a batch at a
        time. A message whose id is already stored is left out, so committing or importing the same
        message twice changes nothing. A projection that fails leaves the events journaled and
        caught up later; ``projection_error`` says why."""
        with self.writing(index=any(op in _INDEXED_OPS for op, _ in items)):
            return journaling.write(self, items, progress)

    def stamp(self) -> dict | None:
        """Who makes the events journaled now, and what they had seen of the shared order."""
        if self.team is None:
            return None
        by, kv = self.identity()
        return {"by": by, "kv": kv, "seen": self.team.cursor}

    def known_ids(self) -> set[str]:
        """The ids of the stored messages (the writer's thread only)."""
        self.open_for_write()
        return journaling.known_ids(self)

    def fill_vectors(self, batch: int = 256) -> int:
        """Embed up to ``batch`` chunks that have no vector yet. Returns how many got one."""
        if not self.index_opened:  # an index this process has not opened has nothing new of its doing to embed
            return 0
        return self.vectors.fill(batch)

    # ---- the day's end ------------------------------------------------------------------------------
    def rollovers(self) -> list[list]:
        """[seq, cutoff_ms, day] of every day rollover, in journal order."""
        return day_end.rollovers(self)

    def archive_cutoff(self) -> int | None:
        """The latest day's cutoff: messages from before it are archived (None: no day rolled over yet)."""
        return max((r[1] for r in self.rollovers()), default=None)

    def roll_over(self, cutoff_ms: int) -> int:
        """End of day: journal a ``day.rollover`` moving every live Markdown block from before
        ``cutoff_ms`` into ``archive/<day>/``. Returns how many blocks move; nothing is journaled when
        none would (the check reads no file while the live files are known to be newer)."""
        with self.writing():
            return day_end.roll_over(self, cutoff_ms)

    # ---- messages ------------------------------------------------------------------------------------
    def lookup(self, message_id: str) -> Message | None:
        """A stored message as the index has it, or None."""
        return self.index.messages([message_id]).get(message_id)

    def bare_message(self, data: dict) -> Message:
        """The message of a journal event without its tags (what the settings ledger reads)."""
        return self.tagging.bare(data)

    def to_message(self, data: dict) -> Message:
        """The message of a journal event, tagged."""
        return self.tagging.tagged(data)

    def journal_messages(self) -> list[Message]:
        """Every live message as the journal has it (for checks and tools)."""
        return list(fold_journal(self).messages.values())

    def in_order(self) -> list[Entry] | Iterator[Entry]:
        """The journal's events in the order the projections fold them: the journal's own, or in a
        shared project the server's order (each with its place in ``ss``), then this Kelvin's
        events the server has not ordered yet."""
        if self.team is None:
            return self.journal.read()
        return sorted((self.team.shared_view(e) for e in self.journal.read()), key=lambda e: (e.ss, e.seq))

    # ---- rebuilding ------------------------------------------------------------------------------------
    def rebuild(self, progress: Callable[[int, int], None] = lambda done, total: None, rescue: bool = False) -> int:
        """Build the index, the Markdown files and the settings ledger again from the journal alone.

        Crash-safe: the projections are marked as rebuilding before anything is dropped, so a kill
        at any moment leaves a store whose next open rebuilds again. Where the journal shows a loss
        (a damaged line it could not read back, a torn tail, projections ahead of it) — or when
        ``rescue`` — messages the old index still holds and the journal no longer does are
        journaled again first (as restores), so a rebuild never drops what only the index kept."""
        with self.writing():
            done = rebuilding.rebuild(self, progress, rescue)
            self.journal.read_to_end()
            return done

    def rebuild_ledger(self) -> None:
        """The settings ledger again from the journal alone (a project just shared: its entries are
        named after their events' ids and placed in the shared order from now on)."""
        if self.settings is None:
            return
        with self.writing():
            rebuilding.ledger_again(self)

    def missing_ranges(self) -> list[tuple[int, int]]:
        """The runs of event numbers the journal is known to lack (recorded beside it)."""
        return rebuilding.missing_ranges(self)

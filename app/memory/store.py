"""One project's memory on disk: the journal and its two projections (Markdown and the index).

``write()`` journals events durably, then projects them. ``open_for_write()`` replays whatever the
projections missed (a crash between journal and index), idempotently. ``rebuild()`` makes both
projections again from the journal alone.

Several Kelvin processes share a project (the window, commands in a terminal, the Blender add-on):
every write runs inside :meth:`ProjectStore.writing`, which holds the project's write lock for that
one write and, first thing inside it, catches this process up with what the others wrote since —
projections.json, the settings ledger, the index's tables, the message ids it knows. A reader
catches up the same way without the lock (:meth:`ProjectStore.refresh`), and only when the
journal's end or projections.json changed, so a read where nothing changed costs a few ``stat`` calls.
In a project shared with a team the catch-up also reads the team file again when another process
synced (``team.json``, ``acks.jsonl``), and keeps the ledger's unsent part made from the journal all
the processes share (app.memory.team_ledger), so each shows what the others have not sent yet.

The day's end is an event too (``day.rollover``): the Markdown blocks from before its cutoff move
to ``archive/<day>/``, and ``rebuild()`` puts them there again from the journal.
"""
from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from app.core import projects
from app.core.embedding import Embedder, EmbedderUnavailable
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
)
from app.durable import NotRegularFile, UnsafePath, read_regular, refuse_links, refuse_links_within
if TYPE_CHECKING:
    from app.core.extraction import Extractor
from app.core.tagging import Tagger
from app.memory.index import (
    CHUNKS,
    INDEX_FORMAT,
    MEMORIES,
    version_on_disk,
    ProjectIndex,
    context_for,
    embed_text,
    message_rows,
    search_text,
)
from app.memory import completeness
from app.memory.journal import Entry, Journal, JournalError, StoreLocked
from app.memory.project_lock import InUse
from app.memory.markdown import MarkdownBook, before
from app.memory import replies
from app.memory.replies import OP_REPLY_PART
from app.memory.rescue import rescue
from app.memory.settings_book import SETTING_OPS, SETTINGS_STATE, SettingsBook
from app.memory.turn_notes import TURN_OPS, TurnNotes
from app.memory.turn_notes import whole as whole_turn_event
from app.memory import team_ledger
from app.memory.team_file import ACKS_FILE, TEAM_FILE, TeamFile

log = logging.getLogger("kelvin.store")

OP_MESSAGE_ADD = "message.add"
OP_MESSAGE_EDIT = "message.edit"
OP_MESSAGE_DELETE = "message.delete"
CONTEXT_ENGINE = "context_engine"  # in a message event: the engine its conversation was about when it was said
OP_MESSAGE_RESTORE = "message.restore"  # a deleted message put back (undo): the whole message, as it was
OP_MEMORY_ADD = "memory.add"
OP_MEMORY_DELETE = "memory.delete"
# the day's end: {"day": "YYYY-MM-DD", "cutoff_ms": int}; live Markdown blocks from before the cutoff
# move to archive/<day>/ (day: the local date of the newest block moved)
OP_DAY_ROLLOVER = "day.rollover"
OPS = (OP_MESSAGE_ADD, OP_MESSAGE_EDIT, OP_MESSAGE_DELETE, OP_MESSAGE_RESTORE, OP_MEMORY_ADD, OP_MEMORY_DELETE,
       OP_DAY_ROLLOVER, OP_REPLY_PART, *SETTING_OPS, *TURN_OPS)
EMBEDDER_RETRY_S = 30.0
PROJECT_BATCH = 2000  # events projected into Markdown and the index at a time
COMPACT_EVERY_WRITES = 200  # index writes without a quiet moment before the writer compacts anyway
# how long a write waits for another Kelvin process's write (an import of a big file holds the lock
# for its whole length) before it gives up and says who is writing (the lock_wait_s setting)
LOCK_WAIT_S = 60.0
_WRITTEN = {".md", ".json", ".jsonl", ".bin", ".lance"}  # what Kelvin writes in a project's folders
_LOCKS = ("LOCK", "IN-USE")


# what a projection raises for an event it cannot take (bad data), as against the disk or the index
# failing (OSError and the index's own errors), after which the projections catch up later
DATA_ERRORS = (KeyError, TypeError, ValueError, OverflowError, AttributeError, IndexError, RecursionError)


GAP_WHY = "a segment deleted, lines cut out, or the journal's end lost"


class DiskFull(JournalError):
    """The disk cannot hold a write; nothing of it was written."""


# What a message costs on disk, measured at 100k messages (docs/benchmarks.md §4): the journal, the
# Markdown and the index each hold about the text again (≈4.2× an import file right after the
# import, old index versions included), and a 384-d vector ≈ 3.9 kB per message with its index.
DISK_PER_TEXT_BYTE = 4.5
DISK_PER_MESSAGE = 1_000
DISK_PER_VECTOR = 4_000
DISK_MARGIN = 1 * 2**20  # LanceDB's manifests and index files for one more version


def disk_needed(texts: Sequence[str], vectors: bool) -> int:
    """Bytes a write of these texts takes on disk, generously (journal, Markdown, index)."""
    size = sum(len(t.encode("utf-8", "surrogatepass")) for t in texts)
    return int(DISK_PER_TEXT_BYTE * size + len(texts) * (DISK_PER_MESSAGE + (DISK_PER_VECTOR if vectors else 0))
               + DISK_MARGIN)


def _size(n: int) -> str:
    return f"{n / 2**20:,.0f} MB" if n >= 2**20 else f"{n / 1024:,.0f} kB"


@dataclass
class Projections:
    """How far each projection has caught up with the journal, what built the vectors, the day
    rollovers projected so far, and a bound on the oldest live Markdown block."""

    markdown_seq: int = 0
    index_seq: int = 0
    embedder: str = ""
    # [seq, cutoff_ms, day] of every day.rollover, in journal order; None: not known here (read from
    # the journal when needed). Replaced, never changed in place: searches read it from other threads.
    rollovers: list[list] | None = None
    # no live Markdown block was said before this (a lower bound; None: not known), so the check at
    # the day's first turn reads no file
    live_since_ms: int | None = None
    # a rebuild began and has not finished (a kill mid-reindex): the next open finishes it
    rebuilding: bool = False
    # the highest event number any projection has seen: new events are numbered above it, even if
    # the journal lost its tail
    seen_seq: int = 0
    # the layout of the index (app.memory.index.INDEX_FORMAT); an older one is rebuilt once
    index_format: int = 1
    # the index's newest version when the positions above were saved: an index found at an older
    # version was restored from an older copy (a backup, a sync tool) and holds less than index_seq says
    index_version: int = 0
    # replies seen streaming (reply.part) with no whole message yet: id → [first part's seq, pid, start]
    unfinished: dict = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> "Projections":
        try:
            data = json.loads(read_regular(path, MAX_META_BYTES * 16))
            rolls = data.get("rollovers")
            rollovers = [[int(r[0]), int(r[1]), str(r[2])] for r in rolls] if isinstance(rolls, list) else None
            since = data.get("live_since_ms")
            return cls(int(data["markdown_seq"]), int(data["index_seq"]), str(data.get("embedder", "")),
                       rollovers, int(since) if since is not None else None, bool(data.get("rebuilding", False)),
                       int(data.get("seen_seq") or 0), int(data.get("index_format") or 1),
                       int(data.get("index_version") or 0),
                       {str(k): [int(v[0]), int(v[1]), float(v[2])] for k, v in (data.get("unfinished") or {}).items()})
        except FileNotFoundError:
            return cls()
        except (UnsafePath, NotRegularFile):
            raise  # a link or a FIFO in its place: said as such, never read through nor written over
        except (ValueError, KeyError, TypeError, IndexError, OSError, RecursionError):
            log.warning("%s is unreadable; the projections will be replayed from the journal", path)
            return cls()

    def save(self, path: Path) -> None:
        self.seen_seq = max(self.seen_seq, self.index_seq, self.markdown_seq)
        fd, tmp = tempfile.mkstemp(prefix=".projections.", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(self.__dict__, fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)


PROJECT_META = "project.json"  # the project's name and its current conversation (app.services.projects)
MAX_META_BYTES = 1 << 20


def stored_name(folder: Path) -> str | None:
    """The name a project's folder was created or renamed with (its ``project.json``), or None."""
    try:
        data = json.loads(read_regular(folder / PROJECT_META, MAX_META_BYTES))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, RecursionError):
        return None  # unreadable: the folder's own name stands (app.services.projects says why)
    name = data.get("name") if isinstance(data, dict) else None
    return name.strip() if isinstance(name, str) and name.strip() and len(name) <= 200 else None


def with_engine(m: Message) -> dict:
    """A stored message as a restore event: the whole message, and the engine it was tagged with
    (so it comes back tagged as it was)."""
    return {**m.to_event(), **({CONTEXT_ENGINE: m.tags.engine} if m.tags.engine else {})}


class ProjectStore:
    def __init__(self, data_dir: Path, name: str, tagger: Tagger, embedder: Embedder, index_uri: str = "",
                 extractor: Extractor | None = None, lock_wait_s: float = LOCK_WAIT_S):
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
        self.settings = SettingsBook(self.folder, extractor, name) if extractor is not None else None
        self.turns = TurnNotes(self.folder)  # what each answer looked at, its chips and their answers
        if self.settings is not None:
            self.settings.on_unapplied = lambda ev, exc: self.journal.note_unapplied(ev, "the settings ledger", exc)
        self.tagger = tagger
        self._talk: dict[str, str] = {}  # conversation id → the engine it is about, as new messages are journaled
        self._fresh: dict[str, tuple] = {}  # message id → (text, context engine, tags) tagged when journaled
        self.embedder = embedder
        self.index_uri = index_uri.format(project=self.folder.name) if index_uri else str(self.folder / "memory.lance")
        self._state_path = self.folder / "journal" / "projections.json"
        self.state = Projections.load(self._state_path)
        self._index: ProjectIndex | None = None
        self._index_lock = threading.Lock()
        self.lock_wait_s = lock_wait_s
        self.lock_waited_s = 0.0  # how long the last write waited for another process's
        self.in_use = InUse(self.folder / "journal" / "IN-USE")  # shared while this process has it open
        self._opened = False  # the first write's checks (replay, rebuild, index) have run in this process
        self._replayed_at_open = 0  # events the first write in this process replayed
        self._held = 0  # writing() nesting depth (a rebuild inside a write)
        self._sync = threading.RLock()  # this process's writer, and its readers catching up
        self._seen: tuple = ()  # the journal's end and projections.json as last caught up with
        self._known: set[str] | None = None  # message ids stored, once loaded (writer thread only)
        self._rollover_lock = threading.Lock()  # a search may read the rollovers while the writer adds one
        self._embedder_down_until = 0.0
        self.rescued: list[str] = []  # messages the last rebuild found only in the index, journaled again
        self._gaps: list[completeness.Gap] = []  # numbers the journal lacks, found when it was opened
        self.projection_error = ""  # why the last write's projection failed ("" when it did not)
        self.on_embedder_problem: Callable[[str], None] = lambda msg: log.warning("%s", msg)

    # ---- opening -----------------------------------------------------------------------------------
    def load_team(self) -> None:
        """Read whether (and how far) the project is shared (after sharing or joining it, too)."""
        import uuid

        self.team = TeamFile.load(self.journal.folder, previous=self.team)
        if self.team is not None:
            self.journal.namespace = uuid.UUID(self.team.namespace)

    def _stamp(self) -> dict | None:
        """Who makes the events journaled now, and what they had seen of the shared order."""
        if self.team is None:
            return None
        by, kv = self.identity()
        return {"by": by, "kv": kv, "seen": self.team.cursor}

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

    def open_for_write(self) -> int:
        """Make the project ready for this process's writes: under the write lock, for this once,
        catch the projections up — replay what they missed, or rebuild them from the journal when
        they cannot be trusted (a rebuild that was interrupted, projections ahead of the journal, a
        missing index). Returns the events replayed. The lock is not kept: each write takes it."""
        if self._opened:
            return 0
        with self.writing():
            return self._replayed_at_open

    # ---- sharing the project with other Kelvin processes -------------------------------------------------
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
                if self._index is None and self.exists() and index and not self._index_gone():
                    _ = self.index  # LanceDB's import and its tables opened (reads: 1-2 s) before the lock, not in it
            self.lock_waited_s = self.journal.lock(self.lock_wait_s if wait_s is None else wait_s)
            self._held = 1
            try:
                if not self.in_use.share():
                    raise StoreLocked(f"the project {self.name!r} is being renamed by another Kelvin process; "
                                      "nothing was written — try again in a moment")
                self._catch_up_files()
                self.journal.open_tail(floor_seq=self._projected_seq())
                try:
                    if self._opened:
                        self._follow()
                    else:
                        self._replayed_at_open = self._open_locked()
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
                self._seen = self._mark()  # what this process wrote it has seen
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
            return self._catch_up_files()
        finally:
            self._sync.release()

    def catch_up(self, wait_s: float | None = None) -> None:
        """Take the lock once to catch up (and, the first time, open): what a crashed writer left
        unprojected is projected."""
        with self.writing(wait_s):
            pass

    def change_mark(self) -> tuple:
        """Changes whenever any process writes the project (see :meth:`_mark`)."""
        return self._mark()

    def _mark(self) -> tuple:
        """The journal's end, projections.json, the team's files (team.json, acks.jsonl) and the
        ledger's state as they are now: changed means someone wrote."""
        jf = self.journal.folder
        return (self.journal.mark(), _stat(self._state_path), (_stat(jf / TEAM_FILE), _stat(jf / ACKS_FILE)),
                _stat(self.folder / SETTINGS_STATE))

    def _catch_up_files(self) -> bool:
        mark = self._mark()
        if mark == self._seen:
            return False
        seen = self._seen or ((), None, None, None)
        if mark[1] != seen[1]:
            loaded = Projections.load(self._state_path)
            with self._rollover_lock:
                self.state = loaded
        settled_elsewhere = False
        if mark[2] != seen[2]:  # shared, joined or synced by another process on this machine
            before = self._team_place()
            self.load_team()
            settled_elsewhere = self._team_place() != before
        if self.settings is not None and self.team is None:
            self.settings.follow()
        elif self.settings is not None:  # settled or rebuilt elsewhere: the tentative part is made again
            team_ledger.follow(self, full=settled_elsewhere or mark[3] != seen[3])
        self.turns.follow()
        if self._index is not None:
            self._index.refresh()
        self._seen = mark
        return True

    def _team_place(self) -> tuple | None:
        """Where the shared order stands here (what a settlement moves; sending moves only the acks)."""
        team = self.team
        return None if team is None else (team.server_project, team.cursor, tuple(team.settled_at))

    def _follow(self) -> None:
        """Under the lock: the events other processes journaled since this one last looked — the
        message ids they added or deleted (the duplicate check), the conversations they spoke in
        (whose engine this process then reads from the ledger again) — and a replay of what no one
        projected."""
        for e in self.journal.read_new():
            d = e.data
            if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
                if self._known is not None:
                    self._known.add(d["id"])
                self._talk.pop(d.get("conversation_id", ""), None)
            elif e.op == OP_MESSAGE_DELETE and self._known is not None:
                self._known.discard(d["id"])
        if self._projections_behind():
            self._replay()
        self._keep_cut_replies()

    def _projections_behind(self) -> bool:
        settled = min(self.state.index_seq, self.state.markdown_seq,
                      self.settings.seq if self.settings is not None else self.state.index_seq)
        return settled < self.journal.last_event_seq

    def _open_locked(self) -> int:
        # the journal's numbers prove it whole: a gap nothing accounts for (a segment deleted from the
        # middle, lines cut out, a lost end the next event would number past) is recorded now and
        # rescued by the rebuild below (app.memory.completeness, app.memory.rescue)
        self._gaps = completeness.unexplained(self.journal, thorough=True, upto=self.journal.next_seq - 1)
        for gap in self._gaps:
            log.warning("project %s: %s", self.name, gap.describe())
            self.journal.note_missing(gap.first, gap.last, gap.count, GAP_WHY)
        replayed = self._open_projections()
        self._keep_cut_replies()
        return replayed

    def _keep_cut_replies(self) -> None:
        """A reply whose writer died mid-stream (a kill -9): what had streamed is kept, marked as cut off
        (app.memory.replies). Under the lock."""
        if self.state.unfinished:
            cut = replies.finish_cut(self.state.unfinished, lambda after: self.journal.read(after_seq=after),
                                     self._known_ids())
            if cut:
                self._write(cut, lambda done, total: None)

    def _open_projections(self) -> int:
        why = self._why_rebuild()
        if why:
            log.warning("project %s: %s; rebuilding the index and Markdown from the journal", self.name, why)
            self._rebuild(rescue=True)
            self.journal.read_to_end()
            return self.journal.last_seq()
        # (the local index is looked at on disk first: a write of settings alone never imports LanceDB)
        if self._index_gone():
            self.index.create(self._embedder_dim())
            self.state = replace(self.state, index_seq=0, embedder=self.embedder.spec, index_format=INDEX_FORMAT)
            self.save_state()
        elif self.state.embedder != self.embedder.spec:
            self._switch_embedder()
        replayed = self._replay()
        self.journal.read_to_end()
        self._known = None  # loaded from the index at the first write
        return replayed

    def check_folders(self) -> None:
        """Refuse a project in which a folder or a file Kelvin writes is a symbolic link: writes would
        land outside the data folder (appends and locks also refuse links one by one)."""
        refuse_links(self.folder, self.data_dir)
        archive = self.folder / "archive"
        days = [d for d in archive.iterdir()] if archive.is_dir() and not archive.is_symlink() else []
        for folder in (self.folder, self.journal.folder, archive, *days):
            if folder.is_symlink():
                refuse_links(folder)
            if folder.is_dir():
                for child in folder.iterdir():
                    if child.is_symlink() and (child.suffix in _WRITTEN or child.name in _LOCKS or child.is_dir()):
                        refuse_links(child)
        for index in self._local_index():
            refuse_links_within(index)  # LanceDB writes anywhere in it: its tables, versions, data, indexes

    def _local_index(self) -> list[Path]:
        default = self.folder / "memory.lance"
        return [default] if self.index_uri == str(default) else []

    def _projected_seq(self) -> int:
        """The furthest any projection has seen."""
        return max(self.state.seen_seq, self.state.index_seq, self.state.markdown_seq,
                   self.settings.seq if self.settings else 0)

    def _why_rebuild(self) -> str:
        last = self.journal.last_seq()
        if self.state.rebuilding:
            return "a rebuild of the index was interrupted"
        if self._gaps:
            return "; ".join(g.describe() for g in self._gaps)
        ahead = max(self.state.index_seq, self.state.markdown_seq, self.settings.seq if self.settings else 0)
        if ahead > last:
            return f"the index and Markdown are ahead of the journal (event {ahead}, the journal ends at {last})"
        if last and self._index_gone():
            return "the search index is missing"
        if self._index_rolled_back():
            return (f"the search index is an older copy (version {version_on_disk(self.index_uri)}; Kelvin had written "
                    f"version {self.state.index_version}): it holds less than it claims")
        if last and self.state.index_format < INDEX_FORMAT:
            return "the search index was made by an older Kelvin (no stemming, no context)"
        return ""

    def behind(self, thorough: bool = False) -> bool:
        """Whether the projections need catching up (a reader asks before its first read), or the
        journal has a gap nobody has looked into yet (``thorough``: lost lines too, not only segments)."""
        if self.state.rebuilding:
            return True
        if completeness.unexplained(self.journal, thorough=thorough):
            return True
        if any(not replies.alive(pid, started) for _seq, pid, started in self.state.unfinished.values()):
            return True  # a reply cut off by a kill mid-stream: kept by the next writer
        last = self.journal.last_seq()
        if last == 0:
            return False
        settled = min(self.state.index_seq, self.state.markdown_seq, self.settings.seq if self.settings else last)
        # behind, ahead, the index gone, restored from an older copy, or made by an older Kelvin
        return settled != last or self._index_gone() or self._index_rolled_back() or \
            self.state.index_format < INDEX_FORMAT

    def _index_rolled_back(self) -> bool:
        """Whether the local index is at an older version than the one the positions were saved with."""
        if not self.state.index_version or not self._local_index():
            return False
        version = version_on_disk(self.index_uri)
        return version is not None and version < self.state.index_version

    def _index_gone(self) -> bool:
        """Whether the index is missing; for the default local index without importing LanceDB
        (1.5 s), so a command that reads only the ledger or the journal stays quick."""
        if self._local_index() and self._index is None:
            return not all((Path(self.index_uri) / f"{t}.lance").is_dir() for t in (CHUNKS, MEMORIES))
        return not self.index.exists

    def close(self) -> None:
        self.journal.close()
        self.in_use.release()
        self._opened = False
        self._seen = ()
        self.tentative_at = None

    def _embedder_dim(self) -> int:
        try:
            return self.embedder.dim()
        except EmbedderUnavailable as exc:
            self._embedder_failed(str(exc))
            return 0

    def _switch_embedder(self) -> None:
        """Vectors from another embedder cannot be compared with the new one's: drop them, then
        fill them in again in the background (``fill_vectors``)."""
        log.info("embedder changed from %r to %r: re-embedding %s", self.state.embedder, self.embedder.spec, self.name)
        self.index.set_vector_dim(self._embedder_dim())
        self.state.embedder = self.embedder.spec
        self.save_state()

    def _embedder_failed(self, why: str) -> None:
        first = self._embedder_down_until == 0.0
        self._embedder_down_until = time.monotonic() + EMBEDDER_RETRY_S
        if first:
            self.on_embedder_problem(f"{why}; searching by full text until it is back")

    def _replay(self) -> int:
        start = min(self.state.markdown_seq, self.state.index_seq, self.settings.seq if self.settings else 1 << 62)
        pending = [e for e in self.journal.read(after_seq=start)]
        if not pending:
            return 0
        log.info("project %s: replaying %d journaled events into the index and Markdown", self.name, len(pending))
        present = self.book.ids_present()
        for i in range(0, len(pending), PROJECT_BATCH):
            self._project(pending[i : i + PROJECT_BATCH], replay=True, present=present)
        return len(pending)

    # ---- writing -----------------------------------------------------------------------------------
    def write(self, items: Sequence[tuple[str, dict]],
              progress: Callable[[int, int], None] = lambda done, total: None) -> list[Entry]:
        """Journal the events durably in one append (all or nothing), then project them a batch at a
        time. A message whose id is already stored is left out, so committing or importing the same
        message twice changes nothing. A projection that fails leaves the events journaled and
        caught up later; ``projection_error`` says why."""
        with self.writing(index=any(op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE, OP_MESSAGE_EDIT, OP_MESSAGE_DELETE,
                                           OP_MEMORY_ADD, OP_MEMORY_DELETE) for op, _ in items)):
            return self._write(items, progress)

    def _write(self, items: Sequence[tuple[str, dict]], progress: Callable[[int, int], None]) -> list[Entry]:
        messages = any(op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE) for op, _ in items)
        known = self._known_ids() if messages else set()  # (settings alone: no index to ask)
        batch: set[str] = set()
        kept = []
        for op, d in items:
            if op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
                if d["id"] in known or d["id"] in batch:
                    continue  # already stored (a restore of a message that is there changes nothing)
                batch.add(d["id"])
            if op == OP_MESSAGE_ADD and CONTEXT_ENGINE not in d:
                d = self._with_context(d)
            kept.append((op, d))
        if not kept:
            return []
        self._check_room(kept)
        entries = self.journal.append(kept, self._stamp())
        if messages:
            known |= batch
        self.projection_error = ""
        try:
            for i in range(0, len(entries), PROJECT_BATCH):
                self._project(entries[i : i + PROJECT_BATCH], shared="tentative")
                progress(min(i + PROJECT_BATCH, len(entries)), len(entries))
            team_ledger.written(self)  # (a shared project's ledger took them tentatively)
        except Exception as exc:  # the events are durable; the projections catch up later
            self.projection_error = str(getattr(exc, "strerror", None) or exc)
            if isinstance(exc, OSError):  # expected (a disk that filled up meanwhile): no traceback
                log.warning("saved to the journal, but the index or Markdown could not be updated (%s); they catch "
                            "up with the next write or the next start", self.projection_error)
            else:
                log.exception("saved to the journal, but updating the index or Markdown failed; "
                              "it will be retried with the next write or the next start")
            return entries
        if self._index is not None and self._index.writes_since_optimize >= COMPACT_EVERY_WRITES:
            # a long run of writes with no quiet moment for upkeep (a script editing hundreds of
            # messages): compact now, or every later write and read gets slower (~1 s at 100k)
            try:
                self.index.optimize()
            except Exception:  # upkeep: the idle writer tries again
                log.warning("compacting the index failed; it is retried later", exc_info=True)
        return entries

    def _check_room(self, items: Sequence[tuple[str, dict]]) -> None:
        """Refuse a write the disk cannot hold before anything of it is journaled."""
        try:
            free = shutil.disk_usage(self.folder).free
        except OSError:
            return
        texts = [str(d.get("text", "")) for _op, d in items]
        vectors = self.embedder.spec != "none"  # (generous: whether the index holds vectors yet or not)
        need = disk_needed(texts, vectors)
        if need > free:
            raise DiskFull(f"not enough free space in {self.folder.parent} for this: it needs about {_size(need)}, "
                           f"{_size(free)} are free; nothing was written (free some space and try again)")

    def _known_ids(self) -> set[str]:
        """Ids of the stored messages, kept in memory by the writer: the duplicate check on every
        commit is a set lookup, not an index query (which grows with the table's versions). From the
        journal when the index cannot be read: a write never waits on the index to be journaled."""
        if self._known is None:
            try:
                self._known = self.index.message_ids()
            except Exception as exc:  # noqa: BLE001 — a damaged or unreadable index
                log.warning("project %s: the index cannot be read (%s); the journal says which messages are stored",
                            self.name, exc)
                self._known = set(self._fold_all(tag=False).messages)
        return self._known

    @property
    def index_opened(self) -> bool:
        """Whether this process has opened the index (a command that wrote only settings has not)."""
        return self._index is not None

    def known_ids(self) -> set[str]:
        """The ids of the stored messages (the writer's thread only)."""
        self.open_for_write()
        return self._known_ids()

    def save_state(self) -> None:
        """Save how far the projections have caught up, with the index's version that goes with it."""
        version = version_on_disk(self.index_uri) if self._local_index() else None
        if version is not None:
            self.state.index_version = version
        self.state.save(self._state_path)

    def _project(self, entries: list[Entry], replay: bool = False, present: set[str] | None = None,
                 force: bool = False, shared: str = "") -> None:
        """Apply journal entries to Markdown, the index and the ledger, in order. An event that cannot be
        applied (bad data, not a full disk) is set aside and reported; the others are applied.
        ``force``: whatever the projections' marks say (a shared project's events applied again in
        the server's order: app.memory.team_settle). In a shared project the settings ledger takes
        them as ``shared`` ("settled" or "tentative"; "" on a replay, whose ledger part is made again
        when the project opens)."""
        try:
            self._apply_all(entries, replay, present, force)
        except DATA_ERRORS:
            log.warning("project %s: an event in %d..%d cannot be projected; applying them one at a time",
                        self.name, entries[0].seq, entries[-1].seq)
            present = self.book.ids_present()  # what the batch may have written already (idempotent from here)
            for entry in entries:
                try:
                    self._apply_all([entry], True, present, force)
                except DATA_ERRORS as exc:
                    self.journal.note_unapplied(entry, "the index and Markdown", exc)
        if self.settings is not None and self.team is None:
            self.settings.project(entries, self._lookup, self.bare_message)
        elif self.settings is not None and shared:
            self.settings.project([self.team.shared_view(e) for e in entries], self._lookup, self.bare_message,
                                  shared=shared)
        self.turns.project(entries)
        replies.track(self.state.unfinished, entries)
        last = max(e.seq for e in entries)
        self.state.markdown_seq = max(self.state.markdown_seq, last)
        self.state.index_seq = max(self.state.index_seq, last)
        self.save_state()

    def _apply_all(self, entries: list[Entry], replay: bool, present: set[str] | None, force: bool = False) -> None:
        """Apply journal entries to Markdown and the index, in order, batching runs of adds."""
        run: list[Entry] = []
        for entry in entries:
            if entry.op in (OP_MESSAGE_ADD, OP_MEMORY_ADD) and (not run or run[-1].op == entry.op):
                run.append(entry)
                continue
            self._apply_run(run, replay, present, force)
            run = [entry] if entry.op in (OP_MESSAGE_ADD, OP_MEMORY_ADD) else []
            if not run:
                self._apply_one(entry, replay, force)
        self._apply_run(run, replay, present, force)

    def _apply_run(self, run: list[Entry], replay: bool, present: set[str] | None, force: bool = False) -> None:
        if not run:
            return
        md_todo = [e for e in run if force or e.seq > self.state.markdown_seq]
        ix_todo = [e for e in run if force or e.seq > self.state.index_seq]
        if run[0].op == OP_MEMORY_ADD:
            memories = [Memory(**e.data) for e in ix_todo]
            vectors = self._embed({m.id: m.text for m in memories})
            self.index.put_memories(memories, vectors, upsert=replay)
            return
        tagged = {e.seq: self.to_message(e.data) for e in run if force or e.seq > min(self.state.markdown_seq,
                                                                                       self.state.index_seq)}
        if md_todo:
            msgs = [tagged[e.seq] for e in md_todo]
            self._lower_live_since(min(m.ts_ms for m in msgs))  # new messages go to the live files
            if present is not None:
                msgs = [m for m in msgs if m.id not in present]
            self.book.append(msgs)
        if ix_todo:
            msgs = [tagged[e.seq] for e in ix_todo]
            rows, neighbours = self._rows_in_context(msgs)
            self.index.put_messages(msgs, self._embed_rows(rows), upsert=replay, rows=rows)
            self.index.set_search_text(neighbours)

    def _rows_in_context(self, msgs: list[Message]) -> tuple[list[dict], dict[str, str]]:
        """The chunk rows of new messages, each first chunk's search_text with the message before it
        in its conversation (from this batch or the index); and new search_text for the indexed
        messages that now follow one of them (an older day imported into a conversation)."""
        rows: list[dict] = []
        neighbours: dict[str, str] = {}
        by_conv: dict[str, list[Message]] = {}
        for m in msgs:
            by_conv.setdefault(m.conversation_id, []).append(m)
        for conv, new in by_conv.items():
            ids = {m.id for m in new}
            indexed = [r for r in self.index.around(conv, min(m.ts_ms for m in new), max(m.ts_ms for m in new))
                       if r["message_id"] not in ids]
            # in the conversation's order: by time, then by id (as around() and rebuild order them, so
            # that messages said in the same millisecond get the same neighbours whichever way they came)
            line = sorted([(r["ts_ms"], r["message_id"], 0, r) for r in indexed]
                          + [(m.ts_ms, m.id, 1, m) for m in new], key=lambda x: x[:2])
            prev = None
            for n, (_ts, _id, is_new, item) in enumerate(line):
                if is_new:
                    rows += message_rows(item, context_for(prev, item))
                elif n and line[n - 1][2]:  # an indexed message now after a new one
                    neighbours[f"{item['message_id']}#0"] = search_text(item["speaker"], item["text"],
                                                                        context_for(prev, item))
                prev = item
        return rows, neighbours

    def _recontext(self, conversation_id: str, ts_ms: int) -> None:
        """Set again the search_text of the messages said at ``ts_ms`` and of the one after them, from
        their neighbours as the index has them now (after an edit, a delete, a restore)."""
        line = self.index.around(conversation_id, ts_ms, ts_ms)
        texts = {f"{r['message_id']}#0": search_text(r["speaker"], r["text"], context_for(p, r))
                 for p, r in zip(line, line[1:])}
        self.index.set_search_text(texts)

    def _embed_rows(self, rows: list[dict]) -> dict[str, list[float]]:
        return self._embed({r["chunk_id"]: embed_text(r["speaker"], r["text"]) for r in rows})

    def _apply_one(self, entry: Entry, replay: bool, force: bool = False) -> None:
        data = entry.data
        if entry.op == OP_MESSAGE_DELETE:
            if self._known is not None:
                self._known.discard(data["id"])
            gone = self.index.messages([data["id"]]).get(data["id"])
            self.index.delete_messages([data["id"]])
            if gone is not None:  # the message after it now follows the one before it
                self._recontext(gone.conversation_id, gone.ts_ms)
            self.book.remove(data["id"])
        elif entry.op == OP_MESSAGE_EDIT:
            old = self.index.messages([data["id"]]).get(data["id"])
            if old is None:
                log.warning("journal edits message %s, which is not in the index; skipped", data["id"])
                return
            new = self.to_message({**old.to_event(), "text": data["text"],
                                   CONTEXT_ENGINE: data.get(CONTEXT_ENGINE, old.tags.engine or "")})
            self.index.delete_messages([old.id])
            rows = message_rows(new)
            self.index.put_messages([new], self._embed_rows(rows), rows=rows)
            self._recontext(new.conversation_id, new.ts_ms)  # its own context, and the next message's
            self.book.upsert(new, self._place(new.ts_ms))  # edited where it is, live or archived
        elif entry.op == OP_MESSAGE_RESTORE:
            msg = self.to_message(data)
            if self._known is not None:
                self._known.add(msg.id)
            self.index.delete_messages([msg.id])  # idempotent on replay
            rows = message_rows(msg)
            self.index.put_messages([msg], self._embed_rows(rows), rows=rows)
            self._recontext(msg.conversation_id, msg.ts_ms)
            self.book.upsert(msg, self._place(msg.ts_ms))  # back in its domain file (or archived day's), in time order
        elif entry.op == OP_DAY_ROLLOVER:
            cutoff = int(data["cutoff_ms"])
            self._note_rollover([entry.seq, cutoff, str(data["day"])])
            if force or entry.seq > self.state.markdown_seq:  # a replay from an index behind must not move later blocks
                self.book.roll_over(cutoff, str(data["day"]))
                since = self.state.live_since_ms  # nothing live is older now (the events after lower it again)
                self.state.live_since_ms = cutoff if since is None else max(since, cutoff)
        elif entry.op == OP_MEMORY_DELETE:
            self.index.delete_memories([data["id"]])
        elif entry.op in SETTING_OPS or entry.op in TURN_OPS or entry.op == OP_REPLY_PART:
            pass  # the settings ledger's and the turn notes' own events; a reply's parts as it streams (app.memory.replies)
        else:
            log.warning("journal event %d has an unknown operation %r; skipped", entry.seq, entry.op)

    # ---- the day's end ------------------------------------------------------------------------------
    def rollovers(self) -> list[list]:
        """[seq, cutoff_ms, day] of every day rollover, in journal order."""
        with self._rollover_lock:
            if self.state.rollovers is None:  # state from before rollovers, or lost: the journal knows
                self.state.rollovers = [[e.seq, int(e.data["cutoff_ms"]), str(e.data["day"])]
                                        for e in self.journal.read() if e.op == OP_DAY_ROLLOVER]
            return self.state.rollovers

    def archive_cutoff(self) -> int | None:
        """The latest day's cutoff: messages from before it are archived (None: no day rolled over yet)."""
        return max((r[1] for r in self.rollovers()), default=None)

    def _note_rollover(self, roll: list) -> None:
        known = self.rollovers()  # (read from the journal if not known, this one included)
        if all(r[0] != roll[0] for r in known):
            with self._rollover_lock:
                self.state.rollovers = [*known, roll]

    def _place(self, ts_ms: int) -> str | None:
        """Where a message said at ``ts_ms`` goes back to: the archived day whose range covers it,
        or None (the live files). The same rule as :func:`_place_in`, which ``rebuild`` uses."""
        day = _place_in(self.rollovers(), ts_ms)
        if day is None:
            self._lower_live_since(ts_ms)
        return day

    def _lower_live_since(self, ts_ms: int) -> None:
        if self.state.live_since_ms is not None and ts_ms < self.state.live_since_ms:
            self.state.live_since_ms = ts_ms

    def roll_over(self, cutoff_ms: int) -> int:
        """End of day: journal a ``day.rollover`` moving every live Markdown block from before
        ``cutoff_ms`` into ``archive/<day>/``. Returns how many blocks move; nothing is journaled when
        none would (the check reads no file while the live files are known to be newer)."""
        with self.writing():
            return self._roll_over(cutoff_ms)

    def _roll_over(self, cutoff_ms: int) -> int:
        since = self.state.live_since_ms
        if since is not None and not before(since, cutoff_ms):
            return 0
        times = self.book.live_times()
        old = [t for t in times if before(t, cutoff_ms)]
        if not old:
            self.state.live_since_ms = min(times, default=cutoff_ms)
            self.save_state()
            return 0
        self.write([(OP_DAY_ROLLOVER, {"day": local_day(max(old)), "cutoff_ms": cutoff_ms})])
        return len(old)

    def _lookup(self, message_id: str) -> Message | None:
        return self.index.messages([message_id]).get(message_id)

    def _with_context(self, d: dict) -> dict:
        """The message event with the engine its conversation is about now (the one it names, else
        the one named earlier in the conversation, else the project's lately), kept in the journal so
        that every replay tags it the same way."""
        conv = d["conversation_id"]
        around = self._talk.get(conv)
        if around is None:  # the first message of this conversation in this process: as the ledger read it
            around = self.settings.engine_of(conv) if self.settings is not None else ""
        tags = self.tagger.tag(d["text"], around)
        if len(self._fresh) > 10_000:  # projections that failed left theirs: they are tagged again later
            self._fresh.clear()
        self._fresh[d["id"]] = (d["text"], around, tags)  # the projection right after reuses them
        engine = tags.engine or ""
        self._talk[conv] = engine
        if len(self._talk) > 64:  # old conversations: their engine no longer matters here
            for old in list(self._talk)[:-32]:
                self._talk.pop(old, None)
        return {**d, CONTEXT_ENGINE: around} if around else d

    def bare_message(self, data: dict) -> Message:
        """The message of a journal event without its tags (what the settings ledger reads)."""
        fields = {k: data[k] for k in ("id", "conversation_id", "role", "speaker", "text", "ts_ms")}
        return Message(**fields, project=self.name, turn_id=data.get("turn_id", ""), status=data.get("status", ""))

    def to_message(self, data: dict) -> Message:
        fields = {k: data[k] for k in ("id", "conversation_id", "role", "speaker", "text", "ts_ms")}
        # the engine its conversation was about when it was said (stamped in the journal by write()):
        # a message in an Octane day is Octane's even where its words hint at another engine
        around = str(data.get(CONTEXT_ENGINE) or "")
        fresh = self._fresh.pop(data["id"], None)
        tags = fresh[2] if fresh is not None and fresh[:2] == (data["text"], around) else self.tagger.tag(data["text"], around)
        # the project's name now (the journal keeps the name it had when the message was said)
        return Message(**fields, project=self.name, turn_id=data.get("turn_id", ""), tags=tags,
                       status=data.get("status", ""))

    # ---- vectors -----------------------------------------------------------------------------------
    def _embed(self, texts: dict[str, str]) -> dict[str, list[float]]:
        if not texts or not self.index.vector_dim() or time.monotonic() < self._embedder_down_until:
            return {}
        try:
            vectors = self.embedder.embed(list(texts.values()))
        except EmbedderUnavailable as exc:
            self._embedder_failed(str(exc))
            return {}
        if vectors and len(vectors[0]) != self.index.vector_dim():
            self._embedder_failed(f"{self.embedder.spec} now gives {len(vectors[0])}-d vectors where the index holds "
                                  f"{self.index.vector_dim()}-d (another model answers under that name?): load the "
                                  "model the index was built with, or run `kelvin memory reindex` to embed every "
                                  "message with this one")
            return {}
        self._embedder_down_until = 0.0
        return dict(zip(texts, vectors))

    def fill_vectors(self, batch: int = 256) -> int:
        """Embed up to ``batch`` chunks that have no vector yet. Returns how many got one."""
        if self.embedder.spec == "none" or time.monotonic() < self._embedder_down_until or self._index is None:
            return 0  # (an index this process has not opened has nothing new of its doing to embed)
        if not self.index.vector_dim():
            dim = self._embedder_dim()
            if not dim:
                return 0
            self.index.set_vector_dim(dim)
        done = 0
        for table, rows in ((MEMORIES, self.index.memories_without_vectors()),
                            (CHUNKS, self.index.chunks_without_vectors(batch))):
            if rows:
                vectors = self._embed(dict(rows))
                self.index.set_vectors(vectors, table)
                done += len(vectors)
        return done

    # ---- rebuilding --------------------------------------------------------------------------------
    def rebuild(self, progress: Callable[[int, int], None] = lambda done, total: None, rescue: bool = False) -> int:
        """Build the index, the Markdown files and the settings ledger again from the journal alone.

        Crash-safe: the projections are marked as rebuilding before anything is dropped, so a kill
        at any moment leaves a store whose next open rebuilds again. Where the journal shows a loss
        (a damaged line it could not read back, a torn tail, projections ahead of it) — or when
        ``rescue`` — messages the old index still holds and the journal no longer does are
        journaled again first (as restores), so a rebuild never drops what only the index kept."""
        with self.writing():
            done = self._rebuild(progress, rescue)
            self.journal.read_to_end()
            return done

    def _rebuild(self, progress: Callable[[int, int], None] = lambda done, total: None, rescue: bool = False) -> int:
        self.journal.damaged_lines = 0
        folded = self._fold_all()
        # always: a rebuild never drops what a projection still holds and the journal lost (and never
        # deleted) — a segment deleted, a tail lost, a damaged line, a journal rolled back
        before_rescue = self.journal.last_seq()
        self.rescued = self._rescue(folded)
        if self.journal.last_seq() != before_rescue:
            folded = self._fold_all()
        for gap in self._gaps:  # the gaps found when the journal was opened: say what came back
            self.journal.note_missing(gap.first, gap.last, gap.count, GAP_WHY, len(self.rescued))
        self._gaps = []
        messages, memories = folded.messages, folded.memories
        last = self.journal.last_seq()
        with self._rollover_lock:
            self.state = replace(self.state, markdown_seq=0, index_seq=0, rebuilding=True,
                                 seen_seq=max(self._projected_seq(), last))
        self.save_state()
        self._known = None
        kept = self._vectors_to_keep()
        self.index.create(self._embedder_dim())
        ordered = sorted(messages.values(), key=lambda m: m.ts_ms)  # stable: ties keep journal order
        before: dict[str, str] = {}  # what of its predecessor in its conversation (by time, then id) it answers
        latest: dict[str, Message] = {}
        for m in sorted(ordered, key=lambda m: (m.ts_ms, m.id)):
            before[m.id] = context_for(latest.get(m.conversation_id), m)
            latest[m.conversation_id] = m
        for i in range(0, len(ordered), PROJECT_BATCH):
            batch = ordered[i : i + PROJECT_BATCH]
            rows = [r for m in batch for r in message_rows(m, before[m.id])]
            wanted = {r["chunk_id"]: embed_text(r["speaker"], r["text"]) for r in rows}
            vectors = {cid: kept[cid][1] for cid, text in wanted.items() if cid in kept and kept[cid][0] == text}
            vectors |= self._embed({cid: text for cid, text in wanted.items() if cid not in vectors})
            self.index.put_messages(batch, vectors, rows=rows)
            progress(min(i + PROJECT_BATCH, len(ordered)), len(ordered))
        self.index.put_memories(list(memories.values()), self._embed({m.id: m.text for m in memories.values()}))
        self.book.rebuild(list(messages.values()), folded.archived)  # the order they came in (sorted by minute there)
        if self.settings is not None and self.team is None:
            self.settings.rebuild(self.journal.read(), self._lookup, self.bare_message)
        elif self.settings is not None:  # the server's order, then this Kelvin's events it has not ordered yet
            self.rebuild_ledger()
        self.turns.rebuild(self.journal.read())
        live = [m.ts_ms for m in ordered if m.id not in folded.archived]
        with self._rollover_lock:
            self.state = Projections(markdown_seq=last, index_seq=last, embedder=self.embedder.spec,
                                     rollovers=folded.rollovers, live_since_ms=min(live, default=None),
                                     seen_seq=self.state.seen_seq, index_format=INDEX_FORMAT,
                                     unfinished=folded.unfinished)
        self.save_state()
        self.index.optimize()
        return len(ordered)

    def _vectors_to_keep(self) -> dict[str, tuple[str, list[float]]]:
        """The old index's vectors and the text each was made from, where the embedder is the same:
        a rebuild embeds again only what changed (a format upgrade re-embeds nothing said by no one)."""
        try:
            if not self.index.exists or self.state.embedder != self.embedder.spec:
                return {}
            return self.index.old_vectors()
        except Exception as exc:  # noqa: BLE001 — a damaged index: everything is embedded again
            log.info("project %s: the old vectors could not be read (%s); embedding again", self.name, exc)
            return {}

    def _rescue(self, folded: "Folded") -> list[str]:
        """Journal again what the journal lost and a projection still holds (app.memory.rescue).
        Returns the ids of the messages journaled again or corrected."""
        events = rescue(self, folded, self.missing_ranges())
        if not events:
            return []
        self.journal.append(events)
        ids = [d["id"] for op, d in events if op in (OP_MESSAGE_EDIT, OP_MESSAGE_RESTORE)]
        log.warning("project %s: %d message(s) the journal had lost or misread were taken back from the index or "
                    "the Markdown and journaled again: %s", self.name, len(ids), ", ".join(ids[:10]))
        return ids

    def missing_ranges(self) -> list[tuple[int, int]]:
        """The runs of event numbers the journal is known to lack (recorded beside it)."""
        return [(r.seq, r.seq + r.size - 1) for r in self.journal._manifest()
                if r.kind == "missing" and r.seq is not None]

    def _fold(self) -> tuple[dict[str, Message], dict[str, Memory]]:
        """The live messages and memories, as the journal has them after every edit and delete."""
        folded = self._fold_all()
        return folded.messages, folded.memories

    def _fold_all(self, tag: bool = True) -> Folded:
        """The messages and memories the journal holds, and which archived day each archived message
        is in — placed as the projection places them: added live, moved by a rollover, restored into
        the day whose range covers it. An event that cannot be read as what it says is set aside.
        ``tag=False``: the messages untagged (only their ids matter)."""
        acc = _Fold()
        for e in self.in_order():
            try:
                acc.fold(e)
            except DATA_ERRORS as exc:
                self.journal.note_unapplied(e, "the index and Markdown", exc)
        out: dict[str, Message] = {}
        for k, v in acc.messages.items():
            try:
                out[k] = self.to_message(v) if tag else self.bare_message(v)
            except DATA_ERRORS as exc:
                log.warning("project %s: message %s cannot be rebuilt (%s); skipped", self.name, k, exc)
        return Folded(out, acc.memories, acc.archived, acc.rollovers, acc.deleted - acc.messages.keys(), acc.salvaged,
                      acc.touched, acc.forgotten - acc.memories.keys(), acc.unfinished)

    def rebuild_ledger(self) -> None:
        """The settings ledger again from the journal alone (a project just shared: its entries are
        named after their events' ids and placed in the shared order from now on)."""
        if self.settings is None:
            return
        with self.writing():
            if self.team is None:
                self.settings.rebuild(self.journal.read(), self._lookup, self.bare_message)
                return
            events = self.in_order()
            settled = [e for e in events if e.ss <= self.team.cursor]
            with self.settings.changing():
                self.settings.undo_tentative()
                self.settings.rebuild(settled, self._lookup, self.bare_message, shared="settled")
                self.settings.project(events[len(settled):], self._lookup, self.bare_message, shared="tentative")
                self.settings.seq = max(self.settings.seq, self.journal.last_seq())
            team_ledger.written(self)

    def in_order(self) -> list[Entry] | Iterator[Entry]:
        """The journal's events in the order the projections fold them: the journal's own, or in a
        shared project the server's order (each with its place in ``ss``), then this Kelvin's
        events the server has not ordered yet."""
        if self.team is None:
            return self.journal.read()
        return sorted((self.team.shared_view(e) for e in self.journal.read()), key=lambda e: (e.ss, e.seq))

    def journal_messages(self) -> list[Message]:
        """Every live message as the journal has it (for checks and tools)."""
        return list(self._fold()[0].values())


class _Fold:
    """What the journal holds, event by event (see ``ProjectStore._fold_all``)."""

    def __init__(self) -> None:
        self.messages: dict[str, dict] = {}
        self.memories: dict[str, Memory] = {}
        self.live: dict[str, int] = {}  # id → ts of the messages in the live files
        self.archived: dict[str, str] = {}
        self.rollovers: list[list] = []
        self.deleted: set[str] = set()
        self.salvaged: set[str] = set()  # messages whose text the journal read back from a damaged line
        self.touched: dict[str, int] = {}  # message id → the last event about it
        self.forgotten: set[str] = set()  # kept memories deleted
        self.unfinished: dict[str, list] = {}  # replies seen streaming, not finished

    def fold(self, e: Entry) -> None:
        d, messages = e.data, self.messages
        replies.track(self.unfinished, [e])
        if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE) and d["id"] not in messages:
            whole_message(d)
            messages[d["id"]] = d
            (self.salvaged.add if e.salvaged else self.salvaged.discard)(d["id"])
            day = _place_in(self.rollovers, d["ts_ms"]) if e.op == OP_MESSAGE_RESTORE else None
            if day is None:
                self.live[d["id"]] = d["ts_ms"]
            else:
                self.archived[d["id"]] = day
        elif e.op == OP_MESSAGE_EDIT and d["id"] in messages:
            if not isinstance(d["text"], str):
                raise TypeError("an edit's text is a string")
            messages[d["id"]] = {**messages[d["id"]], "text": d["text"],
                                 **({CONTEXT_ENGINE: d[CONTEXT_ENGINE]} if CONTEXT_ENGINE in d else {})}
            (self.salvaged.add if e.salvaged else self.salvaged.discard)(d["id"])
        elif e.op == OP_MESSAGE_DELETE:
            self.deleted.add(d["id"])
            messages.pop(d["id"], None)
            self.live.pop(d["id"], None)
            self.archived.pop(d["id"], None)
        elif e.op == OP_DAY_ROLLOVER:
            cutoff, day = int(d["cutoff_ms"]), str(d["day"])
            self.rollovers.append([e.seq, cutoff, day])
            for mid in [mid for mid, ts in self.live.items() if before(ts, cutoff)]:
                self.archived[mid] = day
                del self.live[mid]
        elif e.op == OP_MEMORY_ADD:
            self.memories[d["id"]] = Memory(**d)
        elif e.op == OP_MEMORY_DELETE:
            self.memories.pop(d["id"], None)
            self.forgotten.add(d["id"])
        if e.op.startswith("message."):
            self.touched[d["id"]] = e.seq


@dataclass
class Folded:
    """What the journal holds, folded: messages, memories, the archived day of each archived
    message, and the day rollovers ([seq, cutoff_ms, day])."""

    messages: dict[str, Message]
    memories: dict[str, Memory]
    archived: dict[str, str] = field(default_factory=dict)
    rollovers: list[list] = field(default_factory=list)
    deleted: set[str] = field(default_factory=set)  # deleted and not restored since
    salvaged: set[str] = field(default_factory=set)  # text read back from a damaged journal line
    touched: dict[str, int] = field(default_factory=dict)  # message id → the last event about it
    forgotten: set[str] = field(default_factory=set)  # kept memories deleted (and not kept again)
    unfinished: dict[str, list] = field(default_factory=dict)  # replies seen streaming, never finished


def _place_in(rollovers: list[list], ts_ms: int) -> str | None:
    """The archived day whose range covers ``ts_ms`` (the first rollover by cutoff that it falls
    before; ties in journal order), or None for the live files."""
    for _seq, cutoff, day in sorted(rollovers, key=lambda r: r[1]):
        if before(ts_ms, cutoff):
            return day
    return None


def _stat(path: Path) -> tuple:
    """What says a file changed (another process replaces or appends to it): () when it is not there."""
    try:
        st = path.stat()
    except OSError:
        return ()
    return st.st_ino, st.st_mtime_ns, st.st_size


def local_day(ts_ms: int) -> str:
    """The local calendar date of a moment, as YYYY-MM-DD (the name of an archived day)."""
    return datetime.fromtimestamp(ts_ms / 1000).date().isoformat()


def whole_message(d: dict) -> None:
    """Raise KeyError or TypeError unless ``d`` has what a stored message needs, of the right types (the
    content rules are the writers'; an older Kelvin's messages stay readable)."""
    if not all(isinstance(d[k], str) for k in ("id", "text", "role", "speaker", "conversation_id")) \
            or not d["id"] or not isinstance(d.get("turn_id", ""), str) or not isinstance(d.get("status", ""), str):
        raise TypeError("a message's id, text, role, speaker, conversation, turn and status are strings")
    if not isinstance(d["ts_ms"], int) or isinstance(d["ts_ms"], bool) or not -2**62 < d["ts_ms"] < 2**62:
        raise TypeError("a message's time is a whole number of milliseconds")


def whole_event(e: Entry) -> bool:
    """Whether an event read back from a damaged journal line is whole enough to project."""
    d = e.data
    try:
        if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
            check_id(d["id"]), check_text(d["text"]), check_role(d["role"]), check_speaker(d["speaker"])
            check_name(d["conversation_id"], "conversation_id"), check_status(d.get("status", ""))
            return isinstance(d["ts_ms"], int) and isinstance(d.get("turn_id", ""), str)
        if e.op == OP_MESSAGE_EDIT:
            return bool(check_id(d["id"]) and check_text(d["text"]))
        if e.op in (OP_MESSAGE_DELETE, OP_MEMORY_DELETE):
            return bool(check_id(d["id"]))
        if e.op == OP_MEMORY_ADD:
            Memory(**d)
            return bool(check_id(d["id"]) and check_text(d["text"])) and isinstance(d["ts_ms"], int)
        if e.op == OP_DAY_ROLLOVER:
            return isinstance(d["cutoff_ms"], int) and bool(str(d["day"]))
        if e.op in SETTING_OPS:
            return isinstance(d.get("parameter", ""), str) and isinstance(d.get("ts_ms", 0), int)
        if e.op in TURN_OPS:
            return whole_turn_event(e.op, d)
        if e.op == OP_REPLY_PART:
            return bool(check_id(d["id"])) and isinstance(d.get("text", ""), str)
    except (RecordError, KeyError, TypeError, ValueError):
        return False
    return False

"""Catching up with the other Kelvin processes that share a project (the window, commands in a
terminal, the Blender add-on).

A write catches up first thing under the project's write lock (``ProjectStore.writing``); a reader
catches up without it (``ProjectStore.refresh``), and only when the journal's end, projections.json,
the team's files or the ledger's state changed — so a read where nothing changed costs a few
``stat`` calls. In a project shared with a team the team file is read again when another process
synced, and the ledger's unsent part is made again from the journal all the processes share
(app.memory.team_ledger)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from app.memory import replies, team_ledger
from app.memory.settings_book import SETTINGS_STATE
from app.memory.store import journaling, projecting
from app.memory.store.events import OP_MESSAGE_ADD, OP_MESSAGE_DELETE, OP_MESSAGE_RESTORE
from app.memory.store.projections import Projections
from app.memory.team_file import ACKS_FILE, TEAM_FILE

if TYPE_CHECKING:
    from app.memory.store import ProjectStore


def mark(store: ProjectStore) -> tuple:
    """The journal's end, projections.json, the team's files (team.json, acks.jsonl) and the
    ledger's state as they are now: changed means someone wrote."""
    jf = store.journal.folder
    return (store.journal.mark(), _stat(store.state_path), (_stat(jf / TEAM_FILE), _stat(jf / ACKS_FILE)),
            _stat(store.folder / SETTINGS_STATE))


def catch_up_files(store: ProjectStore) -> bool:
    """projections.json, the team file, the settings ledger, the turn notes and the index's tables
    as the last writer (of any process) left them, if any of them changed. Returns whether any had."""
    now = mark(store)
    if now == store.seen_mark:
        return False
    seen = store.seen_mark or ((), None, None, None)
    if now[1] != seen[1]:
        loaded = Projections.load(store.state_path)
        with store.state_lock:
            store.state = loaded
    settled_elsewhere = False
    if now[2] != seen[2]:  # shared, joined or synced by another process on this machine
        was = _team_place(store)
        store.load_team()
        settled_elsewhere = _team_place(store) != was
    if store.settings is not None and store.team is None:
        store.settings.follow()
    elif store.settings is not None:  # settled or rebuilt elsewhere: the tentative part is made again
        team_ledger.follow(store, full=settled_elsewhere or now[3] != seen[3])
    store.turns.follow()
    if store.index_opened:
        store.index.refresh()
    store.seen_mark = now
    return True


def _team_place(store: ProjectStore) -> tuple | None:
    """Where the shared order stands here (what a settlement moves; sending moves only the acks)."""
    team = store.team
    return None if team is None else (team.server_project, team.cursor, tuple(team.settled_at))


def follow(store: ProjectStore) -> None:
    """Under the lock: the events other processes journaled since this one last looked — the
    message ids they added or deleted (the duplicate check), the conversations they spoke in
    (whose engine this process then reads from the ledger again) — and a replay of what no one
    projected."""
    for e in store.journal.read_new():
        d = e.data
        if e.op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
            if store.message_ids is not None:
                store.message_ids.add(d["id"])
            store.tagging.spoke_elsewhere(d.get("conversation_id", ""))
        elif e.op == OP_MESSAGE_DELETE and store.message_ids is not None:
            store.message_ids.discard(d["id"])
    if _projections_behind(store):
        projecting.replay(store)
    keep_cut_replies(store)


def _projections_behind(store: ProjectStore) -> bool:
    settled = min(store.state.index_seq, store.state.markdown_seq,
                  store.settings.seq if store.settings is not None else store.state.index_seq)
    return settled < store.journal.last_event_seq


def keep_cut_replies(store: ProjectStore) -> None:
    """A reply whose writer died mid-stream (a kill -9): what had streamed is kept, marked as cut off
    (app.memory.replies). Under the lock."""
    if store.state.unfinished:
        cut = replies.finish_cut(store.state.unfinished, lambda after: store.journal.read(after_seq=after),
                                 journaling.known_ids(store))
        if cut:
            journaling.write(store, cut, lambda done, total: None)


def _stat(path: Path) -> tuple:
    """What says a file changed (another process replaces or appends to it): () when it is not there."""
    try:
        st = path.stat()
    except OSError:
        return ()
    return st.st_ino, st.st_mtime_ns, st.st_size

"""Projecting: journal events applied to the project's Markdown, its search index, the settings
ledger and the turn notes, in order — new events as they are written, and a replay of whatever the
projections missed (a crash between the journal and the index), idempotently."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from app.core.records import Memory, Message
from app.memory import replies
from app.memory.index import context_for, message_rows, search_text
from app.memory.journal import Entry
from app.memory.replies import OP_REPLY_PART
from app.memory.settings_book import SETTING_OPS
from app.memory.store import day_end
from app.memory.store.fold import fold_journal
from app.memory.store.events import (
    CONTEXT_ENGINE,
    DATA_ERRORS,
    OP_DAY_ROLLOVER,
    OP_MEMORY_ADD,
    OP_MEMORY_DELETE,
    OP_MESSAGE_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
)
from app.memory.turn_notes import TURN_OPS

if TYPE_CHECKING:
    from app.memory.store import ProjectStore

log = logging.getLogger("kelvin.store")

PROJECT_BATCH = 2000  # events projected into Markdown and the index at a time


def replay(store: ProjectStore) -> int:
    """Project every event some projection has not taken yet (under the lock). Returns how many."""
    start = min(store.state.markdown_seq, store.state.index_seq, store.settings.seq if store.settings else 1 << 62)
    pending = [e for e in store.journal.read(after_seq=start)]
    if not pending:
        return 0
    log.info("project %s: replaying %d journaled events into the index and Markdown", store.name, len(pending))
    present = store.book.ids_present()
    for i in range(0, len(pending), PROJECT_BATCH):
        project(store, pending[i : i + PROJECT_BATCH], replay=True, present=present)
    return len(pending)


def project(store: ProjectStore, entries: list[Entry], replay: bool = False, present: set[str] | None = None,
            force: bool = False, shared: str = "") -> None:
    """Apply journal entries to Markdown, the index and the ledger, in order. An event that cannot be
    applied (bad data, not a full disk) is set aside and reported; the others are applied.
    ``force``: whatever the projections' marks say (a shared project's events applied again in
    the server's order: app.memory.team_settle). In a shared project the settings ledger takes
    them as ``shared`` ("settled" or "tentative"; "" on a replay, whose ledger part is made again
    when the project opens)."""
    try:
        _apply_all(store, entries, replay, present, force)
    except DATA_ERRORS:
        log.warning("project %s: an event in %d..%d cannot be projected; applying them one at a time",
                    store.name, entries[0].seq, entries[-1].seq)
        present = store.book.ids_present()  # what the batch may have written already (idempotent from here)
        for entry in entries:
            try:
                _apply_all(store, [entry], True, present, force)
            except DATA_ERRORS as exc:
                store.journal.note_unapplied(entry, "the index and Markdown", exc)
    if store.settings is not None and store.team is None:
        store.settings.project(entries, store.lookup, store.bare_message)
    elif store.settings is not None and shared:
        store.settings.project([store.team.shared_view(e) for e in entries], store.lookup, store.bare_message,
                               shared=shared)
    store.turns.project(entries)
    replies.track(store.state.unfinished, entries)
    last = max(e.seq for e in entries)
    store.state.markdown_seq = max(store.state.markdown_seq, last)
    store.state.index_seq = max(store.state.index_seq, last)
    store.save_state()


def _apply_all(store: ProjectStore, entries: list[Entry], replay: bool, present: set[str] | None,
               force: bool = False) -> None:
    """Apply journal entries to Markdown and the index, in order, batching runs of adds."""
    run: list[Entry] = []
    for entry in entries:
        if entry.op in (OP_MESSAGE_ADD, OP_MEMORY_ADD) and (not run or run[-1].op == entry.op):
            run.append(entry)
            continue
        _apply_run(store, run, replay, present, force)
        run = [entry] if entry.op in (OP_MESSAGE_ADD, OP_MEMORY_ADD) else []
        if not run:
            _apply_one(store, entry, replay, force)
    _apply_run(store, run, replay, present, force)


def _apply_run(store: ProjectStore, run: list[Entry], replay: bool, present: set[str] | None,
               force: bool = False) -> None:
    if not run:
        return
    md_todo = [e for e in run if force or e.seq > store.state.markdown_seq]
    ix_todo = [e for e in run if force or e.seq > store.state.index_seq]
    if run[0].op == OP_MEMORY_ADD:
        memories = [Memory(**e.data) for e in ix_todo]
        vectors = store.vectors.embed({m.id: m.text for m in memories})
        store.index.put_memories(memories, vectors, upsert=replay)
        return
    tagged = {e.seq: store.to_message(e.data) for e in run if force or e.seq > min(store.state.markdown_seq,
                                                                                    store.state.index_seq)}
    if md_todo:
        msgs = [tagged[e.seq] for e in md_todo]
        day_end.lower_live_since(store, min(m.ts_ms for m in msgs))  # new messages go to the live files
        if present is not None:
            msgs = [m for m in msgs if m.id not in present]
        store.book.append(msgs)
    if ix_todo:
        msgs = [tagged[e.seq] for e in ix_todo]
        rows, neighbours = _rows_in_context(store, msgs)
        store.index.put_messages(msgs, store.vectors.embed_rows(rows), upsert=replay, rows=rows)
        store.index.set_search_text(neighbours)


def _rows_in_context(store: ProjectStore, msgs: list[Message]) -> tuple[list[dict], dict[str, str]]:
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
        indexed = [r for r in store.index.around(conv, min(m.ts_ms for m in new), max(m.ts_ms for m in new))
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


def _recontext(store: ProjectStore, conversation_id: str, ts_ms: int) -> None:
    """Set again the search_text of the messages said at ``ts_ms`` and of the one after them, from
    their neighbours as the index has them now (after an edit, a delete, a restore)."""
    line = store.index.around(conversation_id, ts_ms, ts_ms)
    texts = {f"{r['message_id']}#0": search_text(r["speaker"], r["text"], context_for(p, r))
             for p, r in zip(line, line[1:])}
    store.index.set_search_text(texts)


def _apply_one(store: ProjectStore, entry: Entry, replay: bool, force: bool = False) -> None:
    data = entry.data
    if entry.op == OP_MESSAGE_DELETE:
        if store.message_ids is not None:
            store.message_ids.discard(data["id"])
        gone = store.index.messages([data["id"]]).get(data["id"])
        store.index.delete_messages([data["id"]])
        if gone is not None:  # the message after it now follows the one before it
            _recontext(store, gone.conversation_id, gone.ts_ms)
        store.book.remove(data["id"])
    elif entry.op == OP_MESSAGE_EDIT:
        old = store.index.messages([data["id"]]).get(data["id"])
        folded = None
        if old is None:  # a kill between this edit's delete and its put, replayed: the journal still has it
            folded = fold_journal(store)
            old = folded.messages.get(data["id"])
        if old is None:
            if data["id"] in folded.deleted:  # a teammate's edit that crossed the deletion: nothing to edit
                log.info("journal edits message %s, deleted before; skipped", data["id"])
            else:
                log.warning("journal edits message %s, which is neither in the index nor in the journal; skipped",
                            data["id"])
            return
        new = store.to_message({**old.to_event(), "text": data["text"],
                                CONTEXT_ENGINE: data.get(CONTEXT_ENGINE, old.tags.engine or "")})
        store.index.delete_messages([old.id])
        rows = message_rows(new)
        store.index.put_messages([new], store.vectors.embed_rows(rows), rows=rows)
        _recontext(store, new.conversation_id, new.ts_ms)  # its own context, and the next message's
        store.book.upsert(new, day_end.place(store, new.ts_ms))  # edited where it is, live or archived
    elif entry.op == OP_MESSAGE_RESTORE:
        msg = store.to_message(data)
        if store.message_ids is not None:
            store.message_ids.add(msg.id)
        store.index.delete_messages([msg.id])  # idempotent on replay
        rows = message_rows(msg)
        store.index.put_messages([msg], store.vectors.embed_rows(rows), rows=rows)
        _recontext(store, msg.conversation_id, msg.ts_ms)
        # back in its domain file (or archived day's), in time order
        store.book.upsert(msg, day_end.place(store, msg.ts_ms))
    elif entry.op == OP_DAY_ROLLOVER:
        day_end.project_rollover(store, entry, force)
    elif entry.op == OP_MEMORY_DELETE:
        store.index.delete_memories([data["id"]])
    elif entry.op in SETTING_OPS or entry.op in TURN_OPS or entry.op == OP_REPLY_PART:
        pass  # the settings ledger's and the turn notes' own events; a reply's parts as it streams (app.memory.replies)
    else:
        log.warning("journal event %d has an unknown operation %r; skipped", entry.seq, entry.op)

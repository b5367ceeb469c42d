"""Rebuilding: the index, the Markdown files, the settings ledger and the turn notes made again from
the journal alone — crash-safe (marked as rebuilding before anything is dropped, so a kill at any
moment leaves a store whose next open rebuilds again), and never dropping what only a projection
still holds: whatever the journal lost is journaled again first (app.memory.store.rescue)."""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import TYPE_CHECKING, Callable

from app.core.records import Message
from app.memory import team_ledger
from app.memory.index import INDEX_FORMAT, context_for, embed_text, message_rows
from app.memory.store.events import OP_MESSAGE_EDIT, OP_MESSAGE_RESTORE
from app.memory.store.fold import Folded, fold_journal
from app.memory.store.projecting import PROJECT_BATCH
from app.memory.store.projections import Projections
from app.memory.store.rescue import rescue as rescued_events

if TYPE_CHECKING:
    from app.memory.store import ProjectStore

log = logging.getLogger("kelvin.store")

GAP_WHY = "a segment deleted, lines cut out, or the journal's end lost"


def rebuild(store: ProjectStore, progress: Callable[[int, int], None] = lambda done, total: None,
            rescue: bool = False) -> int:
    """Under the write lock: build every projection again from the journal (see :meth:`ProjectStore.rebuild`).
    Returns how many messages it holds."""
    store.journal.damaged_lines = 0
    folded = fold_journal(store)
    # always: a rebuild never drops what a projection still holds and the journal lost (and never
    # deleted) — a segment deleted, a tail lost, a damaged line, a journal rolled back
    before_rescue = store.journal.last_seq()
    store.rescued = _journal_lost(store, folded)
    if store.journal.last_seq() != before_rescue:
        folded = fold_journal(store)
    for gap in store.gaps:  # the gaps found when the journal was opened: say what came back
        store.journal.note_missing(gap.first, gap.last, gap.count, GAP_WHY, len(store.rescued))
    store.gaps = []
    messages, memories = folded.messages, folded.memories
    last = store.journal.last_seq()
    with store.state_lock:
        store.state = replace(store.state, markdown_seq=0, index_seq=0, rebuilding=True,
                              seen_seq=max(store.projected_seq(), last))
    store.save_state()
    store.message_ids = None
    kept = _vectors_to_keep(store)
    store.index.create(store.vectors.dim())
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
        vectors |= store.vectors.embed({cid: text for cid, text in wanted.items() if cid not in vectors})
        store.index.put_messages(batch, vectors, rows=rows)
        progress(min(i + PROJECT_BATCH, len(ordered)), len(ordered))
    store.index.put_memories(list(memories.values()), store.vectors.embed({m.id: m.text for m in memories.values()}))
    store.book.rebuild(list(messages.values()), folded.archived)  # the order they came in (sorted by minute there)
    if store.settings is not None and store.team is None:
        store.settings.rebuild(store.journal.read(), store.lookup, store.bare_message)
    elif store.settings is not None:  # the server's order, then this Kelvin's events it has not ordered yet
        ledger_again(store)
    store.turns.rebuild(store.journal.read())
    live = [m.ts_ms for m in ordered if m.id not in folded.archived]
    with store.state_lock:
        store.state = Projections(markdown_seq=last, index_seq=last, embedder=store.embedder.spec,
                                  rollovers=folded.rollovers, live_since_ms=min(live, default=None),
                                  seen_seq=store.state.seen_seq, index_format=INDEX_FORMAT,
                                  unfinished=folded.unfinished)
    store.save_state()
    store.index.optimize()
    return len(ordered)


def _vectors_to_keep(store: ProjectStore) -> dict[str, tuple[str, list[float]]]:
    """The old index's vectors and the text each was made from, where the embedder is the same:
    a rebuild embeds again only what changed (a format upgrade re-embeds nothing said by no one)."""
    try:
        if not store.index.exists or store.state.embedder != store.embedder.spec:
            return {}
        return store.index.old_vectors()
    except Exception as exc:  # noqa: BLE001 — a damaged index: everything is embedded again
        log.info("project %s: the old vectors could not be read (%s); embedding again", store.name, exc)
        return {}


def _journal_lost(store: ProjectStore, folded: Folded) -> list[str]:
    """Journal again what the journal lost and a projection still holds (app.memory.store.rescue).
    Returns the ids of the messages journaled again or corrected."""
    events = rescued_events(store, folded, missing_ranges(store))
    if not events:
        return []
    store.journal.append(events)
    ids = [d["id"] for op, d in events if op in (OP_MESSAGE_EDIT, OP_MESSAGE_RESTORE)]
    log.warning("project %s: %d message(s) the journal had lost or misread were taken back from the index or "
                "the Markdown and journaled again: %s", store.name, len(ids), ", ".join(ids[:10]))
    return ids


def missing_ranges(store: ProjectStore) -> list[tuple[int, int]]:
    """The runs of event numbers the journal is known to lack (recorded beside it)."""
    return [(r.seq, r.seq + r.size - 1) for r in store.journal._manifest()
            if r.kind == "missing" and r.seq is not None]


def ledger_again(store: ProjectStore) -> None:
    """Under the write lock: the settings ledger again from the journal alone (see
    :meth:`ProjectStore.rebuild_ledger`)."""
    if store.settings is None:
        return
    if store.team is None:
        store.settings.rebuild(store.journal.read(), store.lookup, store.bare_message)
        return
    events = store.in_order()
    settled = [e for e in events if e.ss <= store.team.cursor]
    with store.settings.changing():
        store.settings.undo_tentative()
        store.settings.rebuild(settled, store.lookup, store.bare_message, shared="settled")
        store.settings.project(events[len(settled):], store.lookup, store.bare_message, shared="tentative")
        store.settings.seq = max(store.settings.seq, store.journal.last_seq())
    team_ledger.written(store)

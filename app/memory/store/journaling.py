"""A write: the events journaled durably in one append (all or nothing), then projected a batch at a
time. A message already stored is left out, so the same message committed or imported twice
changes nothing; a projection that fails leaves the events journaled, caught up later."""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Callable, Sequence

from app.memory import team_ledger
from app.memory.journal import Entry
from app.memory.store import disk_room, projecting
from app.memory.store.events import CONTEXT_ENGINE, OP_MESSAGE_ADD, OP_MESSAGE_RESTORE
from app.memory.store.fold import fold_journal
from app.memory.store.projecting import PROJECT_BATCH

if TYPE_CHECKING:
    from app.memory.store import ProjectStore

log = logging.getLogger("kelvin.store")

COMPACT_EVERY_WRITES = 200  # index writes without a quiet moment before the writer compacts anyway


def write(store: ProjectStore, items: Sequence[tuple[str, dict]],
          progress: Callable[[int, int], None]) -> list[Entry]:
    """Under the write lock: journal ``items`` and project them (see :meth:`ProjectStore.write`)."""
    messages = any(op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE) for op, _ in items)
    known = known_ids(store) if messages else set()  # (settings alone: no index to ask)
    batch: set[str] = set()
    kept = []
    for op, d in items:
        if op in (OP_MESSAGE_ADD, OP_MESSAGE_RESTORE):
            if d["id"] in known or d["id"] in batch:
                continue  # already stored (a restore of a message that is there changes nothing)
            batch.add(d["id"])
        if op == OP_MESSAGE_ADD and CONTEXT_ENGINE not in d:
            d = store.tagging.with_context(d)
        kept.append((op, d))
    if not kept:
        return []
    disk_room.check_room(store.folder, kept, vectors=store.embedder.spec != "none")
    entries = store.journal.append(kept, store.stamp())
    if messages:
        known |= batch
    store.projection_error = ""
    try:
        for i in range(0, len(entries), PROJECT_BATCH):
            projecting.project(store, entries[i : i + PROJECT_BATCH], shared="tentative")
            progress(min(i + PROJECT_BATCH, len(entries)), len(entries))
        team_ledger.written(store)  # (a shared project's ledger took them tentatively)
    except Exception as exc:  # the events are durable; the projections catch up later
        store.projection_error = str(getattr(exc, "strerror", None) or exc)
        if isinstance(exc, OSError):  # expected (a disk that filled up meanwhile): no traceback
            log.warning("saved to the journal, but the index or Markdown could not be updated (%s); they catch "
                        "up with the next write or the next start", store.projection_error)
        else:
            log.exception("saved to the journal, but updating the index or Markdown failed; "
                          "it will be retried with the next write or the next start")
        return entries
    if store.index_opened and store.index.writes_since_optimize >= COMPACT_EVERY_WRITES:
        # a long run of writes with no quiet moment for upkeep (a script editing hundreds of
        # messages): compact now, or every later write and read gets slower (~1 s at 100k)
        try:
            store.index.optimize()
        except Exception:  # upkeep: the idle writer tries again
            log.warning("compacting the index failed; it is retried later", exc_info=True)
    return entries


def known_ids(store: ProjectStore) -> set[str]:
    """Ids of the stored messages, kept in memory by the writer: the duplicate check on every
    commit is a set lookup, not an index query (which grows with the table's versions). From the
    journal when the index cannot be read: a write never waits on the index to be journaled."""
    if store.message_ids is None:
        try:
            store.message_ids = store.index.message_ids()
        except Exception as exc:  # noqa: BLE001 — a damaged or unreadable index
            log.warning("project %s: the index cannot be read (%s); the journal says which messages are stored",
                        store.name, exc)
            store.message_ids = set(fold_journal(store, tag=False).messages)
    return store.message_ids

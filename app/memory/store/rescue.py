"""Taking back what the journal lost from the projections that still hold it.

The journal is the source of truth, but not the only copy: the index holds every message whole, the
Markdown files hold them as a person reads them, and the settings ledger holds every value set by
hand or read from a scene. Before a rebuild drops the projections, whatever they hold that the
journal lost (and never deleted) is journaled again — so a rebuild never drops what any projection
still holds:

* a message the index holds and the journal does not is restored from the index; one only the
  Markdown still has is restored from its block (its time to the minute);
* where the journal misread a message (a damaged line) or lost its later edit (a gap after its
  last event), the index's text wins, journaled as an edit;
* a message read back under an id the index never had (a flipped byte in the id) gives way to its
  twin in the index;
* a kept memory only the index holds is kept again; a value set by hand or from a scene whose event
  was in a gap is journaled again from the ledger.
"""
from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from app.core.render_settings.ledger import UNSET
from app.memory.settings_book import OP_SETTING_SCENE, OP_SETTING_SET, OP_SETTING_UNSET
from app.memory.store.events import (
    OP_MEMORY_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
    edit_event,
    with_engine,
)

if TYPE_CHECKING:
    from app.memory.store import ProjectStore
    from app.memory.store.fold import Folded

log = logging.getLogger("kelvin.store")


def _in(seq: int, gaps: list[tuple[int, int]]) -> bool:
    return any(a <= seq <= b for a, b in gaps)


def rescue(store: "ProjectStore", folded: "Folded", gaps: list[tuple[int, int]]) -> list[tuple[str, dict]]:
    """The events that put back what the journal lost (see the module's doc), in the order to journal
    them. ``gaps``: the runs of event numbers the journal is known to lack."""
    events: list[tuple[str, dict]] = []
    index_ids: set[str] = set()
    back = []
    try:
        if store.index.exists:
            index_ids = store.index.message_ids()
            lost = index_ids - folded.messages.keys() - folded.deleted
            misread = folded.salvaged & folded.messages.keys()
            # a later edit lost in a gap: the index's text is the newer one
            edited = {mid for mid, seq in folded.touched.items() if mid in folded.messages and mid in index_ids
                      and any(a > seq for a, _ in gaps)} if gaps else set()
            wanted = sorted(lost | ((misread | edited) & index_ids))
            copies = store.index.messages(wanted) if wanted else {}
            back = sorted((copies[i] for i in lost if i in copies), key=lambda m: (m.ts_ms, m.id))
            for mid in sorted(misread):
                mine = folded.messages[mid]
                if mid in copies:
                    if copies[mid].text != mine.text:
                        events.append((OP_MESSAGE_EDIT, edit_event(copies[mid], copies[mid].text)))
                elif any((m.ts_ms, m.conversation_id, m.role) == (mine.ts_ms, mine.conversation_id, mine.role)
                         for m in back):
                    events.append((OP_MESSAGE_DELETE, {"id": mid}))
            for mid in sorted(edited - misread):
                if mid in copies and copies[mid].text != folded.messages[mid].text:
                    events.append((OP_MESSAGE_EDIT, edit_event(copies[mid], copies[mid].text)))
            events += [(OP_MESSAGE_RESTORE, with_engine(m)) for m in back]
            kept = {m.id for m in folded.memories.values()}
            for mem in store.index.memories():
                if mem.id not in kept and mem.id not in folded.forgotten:
                    events.append((OP_MEMORY_ADD, mem.to_event()))
    except Exception as exc:  # noqa: BLE001 — a damaged index (why one rebuilds): the Markdown may still help
        log.warning("project %s: the old index could not be read for what the journal lost: %s", store.name, exc)
    try:
        restored = {m.id for m in back}
        from_markdown = [m for mid, m in store.book.messages().items()
                         if mid not in folded.messages and mid not in folded.deleted and mid not in index_ids
                         and mid not in restored]
        events += [(OP_MESSAGE_RESTORE, with_engine(m)) for m in sorted(from_markdown, key=lambda m: (m.ts_ms, m.id))]
    except (OSError, ValueError) as exc:
        log.warning("project %s: the Markdown files could not be read for what the journal lost: %s", store.name, exc)
    if gaps and store.settings is not None:
        events += _settings_in(store, gaps)
    return events


def _settings_in(store: "ProjectStore", gaps: list[tuple[int, int]]) -> list[tuple[str, dict]]:
    """Values set by hand or read from a scene whose events were lost in a gap, as the ledger holds them."""
    out: list[tuple[int, tuple[str, dict]]] = []
    book = store.settings
    for key in book.keys():
        for e in book.history(*key):
            if e.by not in ("artist", "scene") or not _in(e.order, gaps):
                continue
            value = list(e.value) if isinstance(e.value, tuple) else e.value
            data = {"engine": e.engine, "parameter": e.parameter, "value": value, "unit": e.unit, "ts_ms": e.ts_ms,
                    "name": e.name, "domain": e.domain, "note": e.note}
            if e.by == "scene":
                out.append((e.order, (OP_SETTING_SCENE, {**data, "candidate": e.candidate})))
            else:
                out.append((e.order, (OP_SETTING_UNSET if e.status == UNSET else OP_SETTING_SET, data)))
    return [ev for _, ev in sorted(out, key=lambda x: x[0])]

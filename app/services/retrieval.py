"""Pointing, the first step of a turn: what the memory holds for a question — whole past messages
(LanceDB's full-text and vector search, app.memory.index), the artist's kept memories and the current
render settings (the ledger) — leaving out what the window holds already.

Called by ``Conversation.ask`` on the turn's thread, under the conversation lock; reads only. Qt-free.
"""
from __future__ import annotations

import logging
from typing import Callable

from app.core.context import Seen
from app.core.records import Memory, Message
from app.services.memory import MemoryService

log = logging.getLogger("kelvin.conversation")

RETRIEVE_K = 8
MEMORIES_K = 4
SEARCH_CHARS = 2000
NOT_FOR_RETRIEVAL = ("recall", "failed")  # quotes of other messages and empty replies

SettingsLookup = Callable[[str, str], tuple[str, ...]]  # (project, question) → "Octane GI clamp = 10 (…)"


def point(memory: MemoryService, settings_lookup: SettingsLookup, project: str, text: str, question_id: str,
      recent: list[Message]) -> tuple[tuple[Message, ...], tuple[Memory, ...], tuple[str, ...], int]:
    """Search the memory: whole past messages, kept memories, current settings, and how many
    past messages were left out as repeats of what the window holds. A search that breaks leaves
    the turn without memory, not without an answer."""
    skip = {m.id for m in recent} | {question_id}
    said = Seen([text, *(m.text for m in recent)])  # the window holds these already
    recalled: tuple[Message, ...] = ()
    memories: tuple[Memory, ...] = ()
    settings: tuple[str, ...] = ()
    repeats = 0
    query = text[:SEARCH_CHARS]  # a pasted log searches by its head: a 50k-character query costs ~1 s
    try:
        hits = memory.search(query, k=3 * RETRIEVE_K + len(skip), project=project, drop_status=NOT_FOR_RETRIEVAL)
        found = []
        for h in hits:  # not what the window holds, not the question asked again (another day too), nothing
            # twice (a similar answer): the best ranked of each is kept, so what answers comes up
            if h.message.id not in skip and not said.repeats(h.message.text):
                said.add(h.message.text)
                found.append(h.message)
            elif len(found) < RETRIEVE_K:  # one the window would have held, but holds already
                repeats += 1
        # a decision or standing instruction the search found (priority 2: "final", "always", "the client
        # wants") goes before the rest, in the search's order: it is what a question about it wants
        found.sort(key=lambda m: m.tags.priority < 2)
        recalled = tuple(found[:RETRIEVE_K])
        memories = tuple(m for m, _ in memory.search_memories(query, k=MEMORIES_K, project=project))
    except Exception:  # the turn goes on; the log has the cause
        log.exception("memory search failed; answering without retrieved memories")
    try:
        settings = tuple(settings_lookup(project, text))
    except Exception:
        log.exception("settings lookup failed; answering without current settings")
    return recalled, memories, settings, repeats

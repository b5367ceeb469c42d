"""Messages as the index and the Markdown get them: a journal event read back as a Message, tagged
(domain, engine, parameters) in the light of the engine its conversation was about when it was said.

The engine of the conversation is stamped into each new message's event when it is journaled
(``context_engine``), so that every replay and rebuild tags it the same way; the tags made then
are kept for the projection right after, so a new message is tagged once."""
from __future__ import annotations

from typing import TYPE_CHECKING

from app.core.records import Message
from app.core.tagging import Tagger
from app.memory.store.events import CONTEXT_ENGINE

if TYPE_CHECKING:
    from app.memory.settings_book import SettingsBook

_FIELDS = ("id", "conversation_id", "role", "speaker", "text", "ts_ms")


class MessageTagging:
    """Tags one project's messages. Used by the project's writer (and by readers folding the journal);
    what it remembers between calls only saves work."""

    def __init__(self, tagger: Tagger, project: str, settings: SettingsBook | None) -> None:
        self.tagger = tagger
        self.project = project  # the project's name now (the journal keeps the name it had when said)
        self.settings = settings
        self._talk: dict[str, str] = {}  # conversation id → the engine it is about, as new messages are journaled
        self._fresh: dict[str, tuple] = {}  # message id → (text, context engine, tags) tagged when journaled

    def with_context(self, d: dict) -> dict:
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

    def spoke_elsewhere(self, conversation_id: str) -> None:
        """Another process journaled in this conversation: its engine is read from the ledger again."""
        self._talk.pop(conversation_id, None)

    def bare(self, data: dict) -> Message:
        """The message of a journal event without its tags (what the settings ledger reads)."""
        fields = {k: data[k] for k in _FIELDS}
        return Message(**fields, project=self.project, turn_id=data.get("turn_id", ""), status=data.get("status", ""))

    def tagged(self, data: dict) -> Message:
        """The message of a journal event, tagged."""
        fields = {k: data[k] for k in _FIELDS}
        # the engine its conversation was about when it was said (stamped in the journal by write()):
        # a message in an Octane day is Octane's even where its words hint at another engine
        around = str(data.get(CONTEXT_ENGINE) or "")
        fresh = self._fresh.pop(data["id"], None)
        tags = fresh[2] if fresh is not None and fresh[:2] == (data["text"], around) else self.tagger.tag(data["text"], around)
        return Message(**fields, project=self.project, turn_id=data.get("turn_id", ""), tags=tags,
                       status=data.get("status", ""))

"""Which messages a search or a listing keeps: a domain, a kind of message, a render engine, a time
range, one conversation. A plain value, asked for by the window, the command line and the services;
the index turns it into its own query language (:func:`app.memory.index.where_clause`)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Filters:
    domain: str | None = None
    type: str | None = None
    engine: str | None = None
    since_ms: int | None = None  # inclusive, milliseconds since the epoch (UTC)
    until_ms: int | None = None  # inclusive
    conversation_id: str | None = None

"""Journals a test starts from: real ones, written through ``Journal.append`` and closed."""
from __future__ import annotations

from pathlib import Path

from app.memory.journal import Journal


def message_ops(n: int, start: int = 0) -> list[tuple[str, dict]]:
    """``n`` message.add events, ids ``m{start}``…, texts ``t{start}``…"""
    return [("message.add", {"id": f"m{i}", "text": f"t{i}"}) for i in range(start, start + n)]


def written_journal(folder: Path, messages: int) -> Journal:
    """A journal in ``folder`` holding ``messages`` message events (seq 1…n), written and closed."""
    journal = Journal(folder)
    journal.open_for_write()
    journal.append(message_ops(messages))
    journal.close()
    return journal

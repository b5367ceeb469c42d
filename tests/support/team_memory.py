"""What two data folders are compared by when a shared project must end the same everywhere."""
from __future__ import annotations


def memory_of(svc, project: str) -> dict:
    """Everything a data folder shows of a project, as comparable values."""
    from app.services.settings_ledger import SettingsLedger

    store = svc.store(project)
    folder = store.folder
    msgs = sorted((m.id, m.text, m.speaker, m.role, m.ts_ms, m.conversation_id) for m in svc.list(project, limit=0))
    markdown = {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
                for p in sorted(folder.rglob("*.md")) if "journal" not in p.parts}
    ledger = SettingsLedger(svc)
    book = ledger.book(project)
    history = {k: [e.to_json() for e in book.history(*k)] for k in sorted(book.keys())}
    return {"messages": msgs, "markdown": markdown, "index_ids": sorted(store.index.message_ids()),
            "memories": sorted((m.id, m.text) for m in svc.memories(project)),
            "ledger": [c.to_json() for c in ledger.current(project, candidates=True)], "history": history}


def journal_ids(svc, project: str) -> list[str]:
    return [e.uid for e in svc.store(project).journal.read()]


def differences(mine: dict, reference: dict, part: str, limit: int = 6) -> str:
    """The first entries of ``part`` where two memories differ, for a failure message that says
    what differs rather than that something does (a convergence failure is rare and costly to
    reproduce)."""
    a, b = mine[part], reference[part]
    if isinstance(a, dict):
        keys = sorted(set(a) | set(b), key=repr)
        lines = []
        for k in keys:
            if a.get(k) != b.get(k):
                only_a = [x for x in a.get(k, []) if x not in b.get(k, [])] if isinstance(a.get(k), list) else a.get(k)
                only_b = [x for x in b.get(k, []) if x not in a.get(k, [])] if isinstance(b.get(k), list) else b.get(k)
                lines.append(f"{k!r}: here only {only_a!r}; there only {only_b!r}")
        return "\n".join(lines[:limit])
    only_a = [x for x in a if x not in b]
    only_b = [x for x in b if x not in a]
    if not only_a and not only_b:
        return "same entries in another order"
    return f"here only {only_a[:limit]!r}; there only {only_b[:limit]!r}"

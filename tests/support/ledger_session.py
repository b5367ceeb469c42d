"""A working session on the forest shot that ends with the GI clamp at 12 (after 25, 8, 12, 15 and
a step back): the ledger's classic day, committed through the real memory service."""
from __future__ import annotations

SESSION = [
    ("user", "Forest shot in Octane today. GI clamp is at 25 from yesterday."),
    ("assistant", "The fireflies come from the sun on the wet leaves; you could lower the GI clamp to 8."),
    ("user", "ok, using 8"),
    ("user", "too flat now, set the gi clamp to 12"),
    ("user", "actually make it 15"),
    ("user", "that made it worse, back to 12"),
]


def commit_session(svc, project="forest", t0=1_763_800_000_000):
    for i, (role, text) in enumerate(SESSION):
        svc.commit(text, role=role, project=project, conversation_id="day1", ts_ms=t0 + i * 60_000)
    svc.flush()

"""The settings ledger reads a journal the same whichever way it gets there: live, one event at a time;
after a restart that read the conversations' contexts back from the state file; or rebuilt from the
journal alone. What it reads from an event depends on that event and the ones before it in the
order — never on what the index holds when the ledger gets there (a message deleted later, a message
taken out while a team's order is settled)."""
from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path

import pytest

from app.memory.store import OP_MESSAGE_DELETE, OP_MESSAGE_EDIT, edit_event

DATA = Path(__file__).resolve().parent.parent / "bench" / "data"


def ledger_of(svc, project: str) -> dict:
    from app.services.settings_ledger import SettingsLedger

    book = SettingsLedger(svc).book(project)
    return {k: [(e.value, e.status, e.source_id, e.scope, e.sure) for e in book.history(*k)] for k in sorted(book.keys())}


def test_an_edit_of_a_message_deleted_later_reads_the_same_live_and_rebuilt(make_service):
    svc = make_service()
    asked = svc.commit("Octane for this one.", project="spot", conversation_id="c", turn_id="t1")[0]
    svc.flush()
    # the edit makes it a proposal; the next message takes it; then the edited message is deleted
    svc.edit(asked.id, "Octane: should we try HDRI intensity 2.5?", "spot")
    svc.commit("yes, do that", project="spot", conversation_id="c", turn_id="t2")
    svc.flush()
    svc.delete(asked.id, "spot")
    live = ledger_of(svc, "spot")
    assert live == {("", "hdri_intensity", ""): [(2.5, "applied", live[("", "hdri_intensity", "")][0][2], "", True)]}
    svc.reindex("spot")  # the rebuild reads the edit where it stands, though the index no longer has its message
    assert ledger_of(svc, "spot") == live


def test_an_edit_that_arrives_after_its_messages_deletion_changes_nothing(make_service, caplog):
    """A teammate's edit made before the deletion reached them, ordered after it: the ledger takes
    nothing from it, live and rebuilt (the index has nothing to edit either)."""
    svc = make_service()
    msg = svc.commit("Octane. GI clamp 10 for the forest.", project="spot", conversation_id="c", turn_id="t1")[0]
    svc.flush()
    store = svc.store("spot")
    late = edit_event(msg, "Octane. GI clamp 4 for the forest.")
    with caplog.at_level(logging.INFO, logger="kelvin.store"):
        svc.writer.submit(store.name, [(OP_MESSAGE_DELETE, {"id": msg.id}), (OP_MESSAGE_EDIT, late)]).result()
        svc.flush()
    assert f"journal edits message {msg.id}, deleted before; skipped" in caplog.text  # expected, not a warning
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and r.name == "kelvin.store"]
    assert ledger_of(svc, "spot") == {}
    assert svc.show(msg.id, "spot") is None
    svc.reindex("spot")
    assert ledger_of(svc, "spot") == {}
    svc.close()
    again = make_service()  # and read back from the ledger's own files
    assert ledger_of(again, "spot") == {}


def test_a_restart_between_any_two_messages_reads_the_next_one_the_same(make_service, tmp_path):
    """Forty conversations, twenty at a time taken in turns (more than the ledger keeps contexts for), with proposals
    taken by "ok" and questions answered by a bare value: a Kelvin restarted every 23 messages
    ends with the same ledger as one that ran throughout, and as a rebuild."""
    said = [("user", "Octane. Should we try GI clamp {n}?"), ("assistant", "Yes, GI clamp {n} should tame it."),
            ("user", "ok, done"), ("user", "what's your max samples?"), ("user", "{m}")]
    script = [(f"conv{c:02d}", role, text.format(n=c % 7 + 2, m=256 * (c % 3 + 1)))  # twenty at a time
              for group in (range(20), range(20, 40)) for role, text in said for c in group]
    kept = make_service(data_dir=str(tmp_path / "kept"))
    for i, (conv, role, text) in enumerate(script):
        kept.commit(text, project="spot", conversation_id=conv, role=role, turn_id=f"t{i}", ts_ms=1_763_000_000_000 + i)
    kept.flush()
    restarted = None
    for i, (conv, role, text) in enumerate(script):
        if i % 23 == 0:
            if restarted is not None:
                restarted.close()
            restarted = make_service(data_dir=str(tmp_path / "restarted"))
        restarted.commit(text, project="spot", conversation_id=conv, role=role, turn_id=f"t{i}",
                         ts_ms=1_763_000_000_000 + i)  # (close() drains the writer before the restart)
    restarted.close()
    restarted = make_service(data_dir=str(tmp_path / "restarted"))

    def values(svc):  # (the message ids differ between the two folders)
        return {k: [(v, s, sc, sure) for v, s, _id, sc, sure in h] for k, h in ledger_of(svc, "spot").items()}

    reference = values(kept)
    assert len(reference[("octane", "gi_clamp", "")]) >= 80  # the proposals, and "ok, done" took them
    assert len(reference[("octane", "max_samples", "")]) == 40  # the bare values answered the questions
    assert values(restarted) == reference
    kept.reindex("spot")
    assert values(kept) == reference


def _labelled_sessions() -> list[list[dict]]:
    sessions: dict[str, list[dict]] = {}
    for path in sorted(DATA.glob("settings_labelled_*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip() and "text" in (row := json.loads(line)):  # (a session's "final" line has none)
                sessions.setdefault(f"{path.stem}/{row.get('session', '')}", []).append(row)
    return list(sessions.values())


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    from app.memory.settings_book import SettingsBook
    from app.services.memory import load_extractor, load_taxonomy

    return SettingsBook(tmp_path_factory.mktemp("book"), load_extractor(load_taxonomy()), "spot")


def test_every_context_of_every_labelled_conversation_survives_the_state_file_whole(book):
    """The state file keeps a conversation's context whole — every field of every mention it carries
    and the parameters just asked about — so that a restart never changes how the next message reads."""
    from app.core.render_settings.mentions import Context

    seen = 0
    for session in _labelled_sessions()[::2]:  # (every other conversation of every set: ~2,300 messages)
        ctx = Context()
        for row in session:
            _got, ctx = book.extractor.extract(row["text"], row["role"], ctx)
            back = book._context_from_json(json.loads(json.dumps(book._context_json(ctx))))
            assert dataclasses.astuple(back) == dataclasses.astuple(ctx), row["text"]
            seen += bool(ctx.proposals or ctx.applied or ctx.asked)
    assert seen > 250

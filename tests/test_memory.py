"""The memory core end to end, on a real LanceDB in tmp_path (embedder: none, full text only)."""
from __future__ import annotations

import json
import time

import pytest

from app.core.records import RecordError, now_ms, parse_ts
from app.core.filters import Filters
from app.memory.journal import Journal
from app.memory.store import Projections


def _commit(svc, text, **kw):
    msg, fut = svc.commit(text, **kw)
    return msg, fut


def _ids(hits):
    return [h.message.id for h in hits]


def test_commit_returns_at_once_then_is_searchable_by_exact_string(service):
    # one millisecond apart: messages said in the same millisecond are in id order (random), and the
    # one after carries the other's words as its context, which would decide the ranking by chance
    t = now_ms()
    msg, fut = service.commit("Octane: set GI clamp to 10, the fireflies on the chrome are gone", role="user",
                              speaker="Mara", conversation_id="c1", turn_id="t1", ts_ms=t)
    service.commit("We tried GI clamp 25 this morning, too many fireflies", conversation_id="c1", ts_ms=t - 1)
    service.commit("maxsubdivs 4 keeps the displacement under control", role="assistant", conversation_id="c1",
                   ts_ms=t + 1)
    fut.result(timeout=30)
    service.flush()
    hits = service.search("GI clamp 10", k=3)
    assert hits[0].message.id == msg.id
    assert hits[0].message.text == msg.text and hits[0].message.speaker == "Mara"
    assert hits[0].message.tags.engine == "octane" and hits[0].message.tags.type == "setting"
    assert service.search("maxsubdivs 4", k=1)[0].message.text.startswith("maxsubdivs 4")
    assert service.search("zebra quokka", k=3) == []


def test_long_messages_come_back_whole_and_once(service):
    log = "\n\n".join(f"line {i}: render log noise " + "x" * 200 for i in range(60))
    text = "Crash log from redshiftCmdLine:\n\n" + log + "\n\nTail mentions OUTOFVRAM near the end."
    msg, fut = service.commit(text)
    fut.result(timeout=30)
    assert service.store().index.count_chunks() > 5
    hits = service.search("OUTOFVRAM", k=5)
    assert _ids(hits) == [msg.id]
    assert hits[0].message.text == text
    hits = service.search("render log noise", k=5)
    assert _ids(hits) == [msg.id]  # many chunks match; one message comes back


def test_filters_by_domain_type_engine_and_time(service):
    service.commit("Redshift: the key light intensity 5 looks right", ts_ms=parse_ts("2026-11-20T10:00:00Z"))
    service.commit("Octane: the key light looks too harsh", ts_ms=parse_ts("2026-11-21T10:00:00Z"))
    service.commit("Octane camera 85mm lens, f-stop 2.8 on the key light shot", ts_ms=parse_ts("2026-11-22T10:00:00Z"))
    service.flush()
    q = "key light"
    assert len(service.search(q, k=10)) == 3
    assert [h.message.tags.engine for h in service.search(q, 10, Filters(engine="redshift"))] == ["redshift"]
    assert [h.message.tags.type for h in service.search(q, 10, Filters(type="critique"))] == ["critique"]
    assert [h.message.tags.domain for h in service.search(q, 10, Filters(domain="camera"))] == ["camera"]
    since = service.search(q, 10, Filters(since_ms=parse_ts("2026-11-21T00:00:00Z")))
    assert len(since) == 2
    window = service.search(q, 10, Filters(since_ms=parse_ts("2026-11-21T00:00:00Z"),
                                           until_ms=parse_ts("2026-11-21T23:59:59Z")))
    assert [h.message.text for h in window] == ["Octane: the key light looks too harsh"]
    quoted = service.search(q, 10, Filters(engine="it's"))  # quotes in a filter cannot break the query
    assert quoted == []


def test_a_message_is_tagged_with_the_engine_its_conversation_is_about(make_service):
    """Issue 24: in an Octane and Redshift day, messages about adaptive sampling and caustics were
    tagged cycles (the words hint at Cycles), so a search filtered to Octane missed them."""
    service = make_service()
    t = parse_ts("2026-11-20T10:00:00Z")
    service.commit("C4D + Octane for the perfume bottle today.", conversation_id="oct", ts_ms=t)
    service.commit("Adaptive sampling on, noise threshold 0.03; the caustics on the base are still grainy.",
                   conversation_id="oct", ts_ms=t + 1000)
    service.commit("Blender Cycles on the side project: light paths and caustics look fine.", conversation_id="cyc",
                   ts_ms=t + 2000)
    service.commit("Redshift for the car shot.", conversation_id="rs", ts_ms=t + 3000)
    service.commit("adaptive sampling threshold 0.01 for the car too, caustics off", conversation_id="rs",
                   ts_ms=t + 4000)
    service.flush()
    octane = service.search("adaptive sampling", 10, Filters(engine="octane"))
    assert [h.message.conversation_id for h in octane] == ["oct"]
    assert {h.message.conversation_id: h.message.tags.engine for h in service.search("caustics", 10)} == {
        "oct": "octane", "cyc": "cycles", "rs": "redshift"}
    # a reindex tags them the same way again, from the journal
    service.reindex()
    assert [h.message.conversation_id for h in service.search("adaptive sampling", 10, Filters(engine="octane"))] \
        == ["oct"]
    # and a new session (a fresh process) goes on with the conversation's engine
    service.close()
    again = make_service()
    again.commit("the caustic blur at 0.2 helped", conversation_id="oct", ts_ms=t + 5000)
    again.flush()
    assert again.search("caustic blur", 10)[0].message.tags.engine == "octane"


def test_recency_breaks_ties(service):
    old, _ = service.commit("HDRI rotation 90 degrees", ts_ms=1_000_000)
    new, _ = service.commit("HDRI rotation 90 degrees", ts_ms=2_000_000)
    service.flush()
    assert _ids(service.search("HDRI rotation 90", k=2)) == [new.id, old.id]


def test_projects_are_isolated_unless_asked(service):
    a, _ = service.commit("Nike shoe: GI clamp 8", project="Nike Ad")
    b, _ = service.commit("Perfume bottle: GI clamp 12", project="Perfume / Shot 010")
    service.flush()
    assert _ids(service.search("GI clamp", k=5, project="Nike Ad")) == [a.id]
    assert _ids(service.search("GI clamp", k=5, project="Perfume / Shot 010")) == [b.id]
    assert set(_ids(service.search("GI clamp", k=5, all_projects=True))) == {a.id, b.id}
    assert service.search("GI clamp", k=5) == []  # the default project has none
    assert sorted(service.projects()) == ["nike-ad", "perfume-shot-010"]


def test_edit_and_delete_are_journaled_and_reach_markdown(service):
    msg, _ = service.commit("Octane AO distance 5 on the interior")
    keep, _ = service.commit("Octane AO distance 2 was too dark")
    service.flush()
    edited = service.edit(msg.id, "Octane AO distance 3 on the interior, final")
    assert edited.text.endswith("final")
    assert _ids(service.search("AO distance 3", k=1)) == [msg.id]
    assert service.search("5", k=5) == []  # the old text is gone from the index
    folder = service.store().folder
    md = "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())
    assert "AO distance 3 on the interior, final" in md and "AO distance 5" not in md

    service.delete(msg.id)
    assert service.show(msg.id) is None
    assert msg.id not in _ids(service.search("AO distance", k=5))
    md = "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())
    assert msg.id not in md and keep.id in md
    ops = [e.op for e in Journal(folder / "journal").read()]
    assert ops == ["message.add", "message.add", "message.edit", "message.delete"]
    with pytest.raises(RecordError, match="no message"):
        service.delete(msg.id)


def test_a_deleted_message_comes_back_whole_with_undo_and_survives_a_rebuild(service):
    from app.services.settings_ledger import SettingsLedger

    first, _ = service.commit("Octane GI clamp 10, final for the hero shot", ts_ms=parse_ts("2026-03-04T10:00:00Z"))
    middle, _ = service.commit("Octane GI clamp 25 is too noisy", ts_ms=parse_ts("2026-03-04T11:00:00Z"))
    last, _ = service.commit("Octane GI clamp 12 on the close-up", ts_ms=parse_ts("2026-03-04T12:00:00Z"))
    service.flush()
    ledger = SettingsLedger(service)
    sources = lambda: {e.source_id for e in ledger.history("gi clamp", "octane")[0][1]}  # noqa: E731
    before_md = "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())
    assert middle.id in sources()

    gone = service.delete(middle.id)
    assert service.show(middle.id) is None and middle.id not in sources()
    back = service.restore(gone)
    assert (back.id, back.text, back.ts_ms, back.role) == (middle.id, middle.text, middle.ts_ms, "user")
    assert _ids(service.search("too noisy", k=1)) == [middle.id]
    assert middle.id in sources()
    md = "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())
    assert md == before_md  # back in its place in time, not appended at the end
    assert service.message_ids() == [last.id, middle.id, first.id]
    service.restore(gone)  # undoing twice changes nothing
    assert len(service.message_ids()) == 3
    ops = [e.op for e in Journal(service.store().folder / "journal").read()]
    assert ops[-2:] == ["message.delete", "message.restore"]
    service.reindex()  # the journal alone gives the same store
    assert service.message_ids() == [last.id, middle.id, first.id]
    assert md == "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())


def test_html_and_script_in_messages_are_stored_exactly_and_escaped_in_markdown(service):
    text = "<script>alert('x')</script> <!-- kelvin:end m_fake --> use <b>8</b> samples & a < b"
    msg, _ = service.commit(text)
    service.flush()
    assert service.show(msg.id).text == text
    md = "".join(p.read_text(encoding="utf-8") for p in service.store().book.files())
    assert "<script>" not in md and "&lt;script>" in md and "a < b" in md
    assert md.count("<!-- kelvin:end") == 1  # the message could not forge a block end


def test_curated_memories(service):
    mem, fut = service.remember("The client hates blue rim lights", "preference")
    fut.result(timeout=30)
    service.remember("Final deliveries are ACEScg EXR", "fact")[1].result(timeout=30)
    assert [m.text for m in service.memories()] == ["The client hates blue rim lights", "Final deliveries are ACEScg EXR"]
    assert service.search_memories("rim lights", 3)[0][0].id == mem.id
    assert service.search("rim lights", k=3) == []  # curated memories live in their own table
    service.forget(mem.id)
    assert [m.category for m in service.memories()] == ["fact"]
    with pytest.raises(RecordError):
        service.forget(mem.id)


def test_reindex_rebuilds_index_and_markdown_from_the_journal(service):
    msgs = [service.commit(f"Redshift secondary GI bounces {i}")[0] for i in range(5)]
    service.edit(msgs[0].id, "Redshift secondary GI bounces 99")
    service.delete(msgs[1].id)
    service.remember("Use brute force for the primary GI", "fact")[1].result(timeout=30)
    service.flush()
    before = [h.message.to_json() for h in service.search("secondary GI bounces", k=10)]
    md_before = {p.name: p.read_text(encoding="utf-8") for p in service.store().book.files()}
    assert service.reindex() == 4
    after = [h.message.to_json() for h in service.search("secondary GI bounces", k=10)]
    assert sorted(after, key=lambda m: m["id"]) == sorted(before, key=lambda m: m["id"])
    assert {p.name: p.read_text(encoding="utf-8") for p in service.store().book.files()} == md_before
    assert [m.text for m in service.memories()] == ["Use brute force for the primary GI"]


def test_journaled_events_missing_from_the_projections_are_replayed_once(make_service, tmp_path):
    svc = make_service()
    first, _ = svc.commit("Octane max samples 4096 for the final")
    svc.flush()
    store = svc.store()
    svc.close()
    # a crash after the journal write, before the index and Markdown: append straight to the journal
    j = Journal(store.folder / "journal")
    j.open_for_write()
    j.append([("message.add", {"id": "m_lost", "project": "default", "conversation_id": "default", "turn_id": "",
                               "role": "user", "speaker": "", "text": "Octane max samples 8192 for the hero",
                               "ts_ms": 5})])
    j.close()
    svc2 = make_service()
    assert svc2.open() == 1
    assert {h.message.id for h in svc2.search("max samples", k=5)} == {first.id, "m_lost"}
    assert "m_lost" in (store.folder / "optimization.md").read_text(encoding="utf-8")
    svc2.close()
    # a crash after the index write, before its checkpoint: everything replays, nothing doubles
    Projections().save(store.folder / "journal" / "projections.json")
    svc3 = make_service()
    assert svc3.open() == 2
    assert svc3.stats()["messages"] == 2 and svc3.stats()["chunks"] == 2
    md = (store.folder / "optimization.md").read_text(encoding="utf-8")
    assert md.count("kelvin:begin m_lost") == 1 and md.count(f"kelvin:begin {first.id}") == 1


def test_a_half_written_markdown_block_is_mended(make_service):
    svc = make_service()
    msg, fut = svc.commit("Arnold camera AA samples 6")
    fut.result(timeout=30)
    store = svc.store()
    path = store.book.path(svc.show(msg.id).tags.domain)
    svc.close()
    with open(path, "a", encoding="utf-8") as fh:
        fh.write("<!-- kelvin:begin m_half -->\n### 2026")  # died mid-append
    Projections(markdown_seq=0, index_seq=1, embedder="none").save(store.folder / "journal" / "projections.json")
    svc2 = make_service()
    svc2.open()
    text = path.read_text(encoding="utf-8")
    assert "m_half" not in text and text.count("kelvin:begin") == 1


def test_committing_the_same_id_twice_stores_it_once(service):
    service.commit("Cycles noise threshold 0.01", message_id="dup-1")[1].result(timeout=30)
    again = service.commit("Cycles noise threshold 0.01", message_id="dup-1")[1].result(timeout=30)
    assert again == []
    assert service.stats()["messages"] == 1


def test_bad_input_is_refused_before_anything_is_written(service):
    for bad in ("", "\x00\x01binary", "x" * 1_000_001):
        with pytest.raises(RecordError):
            service.commit(bad)
    with pytest.raises(RecordError):
        service.commit("ok", role="wizard")
    with pytest.raises(RecordError):
        service.commit("ok", project="\n")
    service.flush()
    assert service.stats()["messages"] == 0


def test_stats_report_counts_and_sizes(service):
    service.commit("Octane GI clamp 10", conversation_id="a")
    service.commit("the rim light looks too strong", conversation_id="b")
    service.flush()
    s = service.stats()
    assert (s["messages"], s["chunks"], s["conversations"]) == (2, 2, 2)
    assert s["by_domain"] == {"optimization": 1, "lighting": 1}
    assert s["journal"]["events"] == 2 and s["journal"]["bytes"] > 0
    assert s["index"]["bytes"] > 0 and s["projections_behind"] == 0
    assert set(s["markdown_files"]) == {"optimization.md", "lighting.md"}
    json.dumps(s)


def test_the_idle_writer_compacts_old_versions(service, monkeypatch):
    from datetime import timedelta

    import app.memory.index as index_mod
    import app.services.memory as memory

    monkeypatch.setattr(memory, "OPTIMIZE_AFTER_WRITES", 10)
    monkeypatch.setattr(index_mod, "KEEP_OLD_VERSIONS", timedelta(milliseconds=1))
    for i in range(30):
        service.commit(f"test render {i}")[1].result(timeout=30)
    index = service.store().index
    grown = index.disk_versions()
    assert grown > 30  # every add is a new table version
    deadline = time.monotonic() + 30
    while index.disk_versions() >= grown and time.monotonic() < deadline:
        time.sleep(0.2)  # the writer compacts once it has been idle for a moment
    assert index.disk_versions() < 10
    assert index.writes_since_optimize == 0
    assert service.stats()["messages"] == 30


def test_small_writes_left_by_short_lived_processes_are_compacted_and_long_runs_compact_as_they_go(
        make_service, monkeypatch):
    import app.memory.store.journaling as journaling
    import app.services.memory as memory

    monkeypatch.setattr(memory, "OPTIMIZE_AFTER_WRITES", 8)
    for i in range(12):  # twelve `kelvin memory …` commands, each one write and gone before it idles
        svc = make_service()
        svc.commit(f"Octane GI clamp {i} on shot {i}")[1].result(timeout=30)
        index = svc.store().index
        fragments = index._chunks.stats()["fragment_stats"]["num_small_fragments"]
        svc.close()
        assert fragments <= 8  # never more than the threshold left behind: the closing command compacted
    monkeypatch.setattr(journaling, "COMPACT_EVERY_WRITES", 20)
    svc = make_service()
    svc.writer.idle_after_s = 3600  # no quiet moment at all
    ids = [svc.commit(f"note {i}")[0].id for i in range(5)]
    svc.flush()
    for i in range(45):  # a script editing one message after another
        svc.edit(ids[i % 5], f"note {i} edited")
    assert svc.store().index.writes_since_optimize < 20
    assert {m.text for m in svc.list(limit=0) if m.id in ids} == {f"note {i} edited" for i in range(40, 45)}


def test_an_index_failure_after_journaling_keeps_the_message_and_catches_up(service, monkeypatch):
    first, _ = service.commit("Karma pixel samples 9")
    service.flush()
    index = service.store().index
    real_put = index.put_messages
    calls = {"n": 0}

    def flaky_put(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError("disk hiccup")
        return real_put(*args, **kwargs)

    monkeypatch.setattr(index, "put_messages", flaky_put)
    msg, fut = service.commit("Karma path traced samples 4")
    assert [e.data["id"] for e in fut.result(timeout=30)] == [msg.id]  # journaled: committed
    assert index.messages([msg.id]) == {}  # the index missed it
    later, _ = service.commit("Karma light sampling quality 2")
    service.flush()
    assert {h.message.id for h in service.search("Karma", k=5)} == {first.id, msg.id, later.id}
    assert service.stats()["projections_behind"] == 0


def test_search_falls_back_when_row_ids_went_stale(service, monkeypatch):
    msgs = [service.commit(f"Corona noise level limit {i}")[0] for i in range(3)]
    service.flush()
    fresh = [h.message for h in service.search("noise level limit", k=3)]
    index = service.store().index
    monkeypatch.setattr(index, "rows_by_row_id", lambda ids: [])  # as if a compaction moved every row
    stale = [h.message for h in service.search("noise level limit", k=3)]
    assert stale == fresh and {m.id for m in stale} == {m.id for m in msgs}


def test_reply_status_is_stored_shown_in_markdown_and_survives_a_rebuild(service):
    msg, fut = service.commit("Lower the GI clamp to", role="assistant", status="cut")
    fut.result()
    assert service.show(msg.id).status == "cut"
    md = (service.store().folder / f"{service.show(msg.id).tags.domain}.md").read_text(encoding="utf-8")
    assert "reply cut off" in md
    service.reindex()
    assert service.show(msg.id).status == "cut"
    with pytest.raises(RecordError):
        service.commit("x", status="maybe")


def test_an_index_from_before_reply_status_is_upgraded_in_place(make_service):
    svc = make_service()
    msg, fut = svc.commit("Octane kernel: path tracing")
    fut.result()
    svc.store().index._chunks.drop_columns(["status"])  # as written by Kelvin before statuses existed
    svc.close()
    again = make_service()
    assert again.show(msg.id).text == "Octane kernel: path tracing" and again.show(msg.id).status == ""
    assert [h.message.id for h in again.search("path tracing")] == [msg.id]
    m2, fut = again.commit("a stopped reply", role="assistant", status="cancelled")
    fut.result()
    assert again.show(m2.id).status == "cancelled"


def test_the_latest_messages_are_the_newest_n_without_listing_every_id(service):
    """The transcript asks for its last page after every write (a 100k project's ids as Python
    strings held the GIL ~15 ms each time): the newest ``limit`` are picked in Arrow, and they are
    exactly the newest of the full listing, filters and all."""
    t = now_ms()
    for i in range(30):
        service.commit(f"note {i}: Octane GI clamp {i}" if i % 3 else f"note {i}: Redshift samples {i}",
                       ts_ms=t - (i * 7919) % 30_000)  # stored out of time order
    service.flush()
    every = service.message_ids()
    assert len(every) == 30 and service.message_ids(limit=5) == every[:5]
    assert service.message_ids(limit=100) == every
    octane = Filters(engine="octane")
    assert service.message_ids(filters=octane, limit=4) == service.message_ids(filters=octane)[:4]
    latest = service.list(limit=6)
    assert [m.id for m in latest] == every[:6][::-1]  # newest last
    assert [m.ts_ms for m in latest] == sorted(m.ts_ms for m in latest)

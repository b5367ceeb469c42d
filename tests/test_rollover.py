"""End of day: yesterday's domain files move to archive/YYYY-MM-DD/, journaled, rebuildable, searchable.

Times are local (the artist's day), so every test runs the same in any time zone.
"""
from __future__ import annotations

import logging
import shutil
from dataclasses import replace
from datetime import datetime
from pathlib import Path

import pytest

from app.core.fusion import Candidate, fuse
from app.core.records import RecordError
from app.memory.index import INDEX_FORMAT
from app.memory.journal import Journal
from app.memory.store import Projections

DAY1, DAY2, TODAY = "2026-03-03", "2026-03-04", "2026-03-05"


def _at(day: str, hhmm: str) -> int:
    return int(datetime.fromisoformat(f"{day}T{hhmm}").timestamp() * 1000)


def _seed(svc) -> dict[str, object]:
    said = {
        "key": ("the key light intensity 5 looks right", _at(DAY1, "10:00")),  # lighting
        "chrome": ("raise the roughness of the chrome material to 0.3", _at(DAY1, "11:00")),  # shading
        "rim": ("the rim light is too strong", _at(DAY2, "10:00")),  # lighting
        "clamp": ("Octane GI clamp 10 on the hero shot", _at(DAY2, "15:00")),  # optimization
        "hdri": ("HDRI rotation 90 degrees", _at(TODAY, "09:00")),  # lighting
        "glass": ("roughness 0.2 on the glass shader", _at(TODAY, "09:30")),  # shading
    }
    out = {name: svc.commit(text, ts_ms=ts)[0] for name, (text, ts) in said.items()}
    svc.flush()
    return out


def _layout(folder: Path) -> dict[str, str]:
    """Every domain file of the project, live and archived, by path inside the project folder (the
    settings ledger's settings.md is not the domain book's)."""
    return {p.relative_to(folder).as_posix(): p.read_text(encoding="utf-8")
            for p in sorted(folder.rglob("*.md")) if "journal" not in p.parts and p.name != "settings.md"}


def _ops(folder: Path) -> list:
    return list(Journal(folder / "journal").read())


def _blocks(layout: dict[str, str]) -> list[str]:
    return [line for text in layout.values() for line in text.splitlines() if line.startswith("<!-- kelvin:begin")]


def test_each_day_rolls_over_into_its_archive_folder_once(service, caplog):
    caplog.set_level(logging.WARNING)
    m = _seed(service)
    folder = service.store().folder
    assert service.roll_over(None, DAY2) == 2  # the first turn of day 2: day 1 is archived
    assert service.roll_over(None, TODAY) == 2
    layout = _layout(folder)
    assert set(layout) == {"lighting.md", "shading.md",
                           f"archive/{DAY1}/lighting.md", f"archive/{DAY1}/shading.md",
                           f"archive/{DAY2}/lighting.md", f"archive/{DAY2}/optimization.md"}
    assert m["key"].id in layout[f"archive/{DAY1}/lighting.md"] and m["chrome"].id in layout[f"archive/{DAY1}/shading.md"]
    assert m["rim"].id in layout[f"archive/{DAY2}/lighting.md"] and m["clamp"].id in layout[f"archive/{DAY2}/optimization.md"]
    assert layout[f"archive/{DAY2}/lighting.md"].startswith(f"# Lighting — default — {DAY2}\n")
    live = layout["lighting.md"] + layout["shading.md"]
    assert m["hdri"].id in live and m["glass"].id in live
    assert all(m[k].id not in live for k in ("key", "chrome", "rim", "clamp"))
    assert len(_blocks(layout)) == 6  # moved, not copied
    rolls = [e for e in _ops(folder) if e.op == "day.rollover"]
    assert [e.data for e in rolls] == [{"day": DAY1, "cutoff_ms": _at(DAY2, "00:00")},
                                      {"day": DAY2, "cutoff_ms": _at(TODAY, "00:00")}]

    events = len(_ops(folder))
    store = service.store()
    store.book.live_times = lambda: pytest.fail("the check on a day already rolled over read the files")
    assert service.roll_over(None, TODAY) == 0  # nothing older than today is live: no event, no file read
    assert len(_ops(folder)) == events and _layout(folder) == layout
    assert not [r for r in caplog.records if r.name.startswith("kelvin")]  # e.g. no "unknown operation"

    # archived messages are still found by their exact words, and shown whole
    hits = service.search("rim light is too strong", k=3)
    assert hits[0].message.id == m["rim"].id and hits[0].message.text == "the rim light is too strong"


def test_days_missed_roll_over_together_named_after_the_newest(service):
    m = _seed(service)
    folder = service.store().folder
    assert service.roll_over(None, TODAY) == 4  # Kelvin was closed on day 2's morning
    layout = _layout(folder)
    assert sorted(p for p in layout if p.startswith("archive/")) == [
        f"archive/{DAY2}/lighting.md", f"archive/{DAY2}/optimization.md", f"archive/{DAY2}/shading.md"]
    lighting = layout[f"archive/{DAY2}/lighting.md"]
    assert lighting.index(m["key"].id) < lighting.index(m["rim"].id)  # merged in time order


def test_nothing_to_move_journals_nothing(service, tmp_path):
    assert service.roll_over("never used", TODAY) == 0
    assert not service.store("never used").folder.exists()  # a project is not created by the check
    service.commit("HDRI rotation 90 degrees", ts_ms=_at(TODAY, "09:00"))[1].result()
    assert service.roll_over(None, TODAY) == 0
    assert [e.op for e in _ops(service.store().folder)] == ["message.add"]
    with pytest.raises(RecordError, match="ISO date"):
        service.roll_over(None, "yesterday")


def test_edits_deletes_and_restores_of_archived_messages_stay_in_the_archive(service):
    m = _seed(service)
    folder = service.store().folder
    service.roll_over(None, DAY2)
    service.roll_over(None, TODAY)

    service.edit(m["key"].id, "the key light intensity 6 looks right")
    layout = _layout(folder)
    assert "intensity 6" in layout[f"archive/{DAY1}/lighting.md"]
    assert "intensity 5" not in "".join(layout.values()) and "intensity 6" not in layout["lighting.md"]

    service.edit(m["rim"].id, "camera 85mm lens on the close-up")  # now about the camera: same day, camera.md
    layout = _layout(folder)
    assert m["rim"].id in layout[f"archive/{DAY2}/camera.md"]
    assert f"archive/{DAY2}/lighting.md" not in layout and "camera.md" not in layout  # emptied file goes

    before_delete = _layout(folder)
    gone = service.delete(m["chrome"].id)
    layout = _layout(folder)
    assert m["chrome"].id not in "".join(layout.values())
    assert f"archive/{DAY1}/shading.md" not in layout  # it was the day's only shading block
    service.restore(gone)
    assert _layout(folder) == before_delete  # back in its archive file, not in today's shading.md

    gone = service.delete(m["clamp"].id)
    service.restore(gone)
    assert _layout(folder) == before_delete

    # a late import of an old message lands live, and the next check moves it to its day
    late, _ = service.commit("the fill light is too dim", ts_ms=_at(DAY2, "18:00"))
    service.flush()
    assert late.id in _layout(folder)["lighting.md"]
    assert service.roll_over(None, TODAY) == 1
    assert late.id in _layout(folder)[f"archive/{DAY2}/lighting.md"]

    before = _layout(folder)
    assert service.reindex() == 7  # the journal alone gives the same files, byte for byte
    assert _layout(folder) == before
    assert service.roll_over(None, TODAY) == 0


def test_reindex_puts_every_message_back_in_the_same_place(service):
    _seed(service)
    folder = service.store().folder
    service.roll_over(None, DAY2)
    service.roll_over(None, TODAY)
    before = _layout(folder)
    shutil.rmtree(folder / "archive")  # even with the archive gone
    (folder / "lighting.md").unlink()
    service.reindex()
    assert _layout(folder) == before


@pytest.mark.parametrize("crash", ["after the archive was written", "before anything was moved", "state lost"])
def test_a_crash_in_the_middle_of_a_rollover_is_mended_by_the_replay(make_service, crash):
    svc = make_service()
    m = _seed(svc)
    store = svc.store()
    folder = store.folder
    svc.roll_over(None, DAY2)
    live_before = {name: (folder / name).read_text(encoding="utf-8") for name in ("lighting.md", "shading.md",
                                                                                   "optimization.md")}
    svc.roll_over(None, TODAY)
    after = _layout(folder)
    seq = _ops(folder)[-1].seq
    svc.close()

    for name, text in live_before.items():  # the live files were not cut yet
        (folder / name).write_text(text, encoding="utf-8")
    if crash == "before anything was moved":
        shutil.rmtree(folder / "archive" / DAY2)
    state = folder / "journal" / "projections.json"
    if crash == "state lost":
        Projections().save(state)
    else:  # what the rollover saved is lost with it: the Markdown is one event behind
        Projections(markdown_seq=seq - 1, index_seq=seq, embedder="none").save(state)

    again = make_service()
    again.open()
    layout = _layout(folder)
    assert layout == after
    blocks = _blocks(layout)
    assert len(blocks) == len(set(blocks)) == 6
    assert again.search("rim light is too strong", k=1)[0].message.id == m["rim"].id
    assert again.roll_over(None, TODAY) == 0


def test_archived_messages_rank_below_recent_ones_that_match_as_well(service):
    old, _ = service.commit("dome light exposure 2 on the set", ts_ms=_at(DAY2, "10:00"))
    new, _ = service.commit("dome light exposure 2 on the set", ts_ms=_at(TODAY, "08:00"))  # said again today
    service.commit("dome light exposure 3", ts_ms=_at(TODAY, "10:00"))
    service.flush()
    service.roll_over(None, TODAY)
    assert [h.message.id for h in service.search("dome light exposure 2", k=3)][:2] == [new.id, old.id]

    said, _ = service.commit("Octane GI clamp 10 on the hero shot", ts_ms=_at(DAY2, "11:00"))
    vague, _ = service.commit("clamp the GI to about 10 or so", ts_ms=_at(TODAY, "11:00"))
    service.flush()
    service.roll_over(None, TODAY)
    assert [h.message.id for h in service.search("GI clamp 10", k=2)] == [said.id, vague.id]  # verbatim first


def test_fusion_lowers_archived_candidates_but_not_their_verbatim_bonus():
    old = Candidate("old", 1000, "dome light exposure 2", archived=True, score=2.0)
    new = Candidate("new", 2000, "dome light exposure 2 on the set", score=2.0)
    other = Candidate("other", 3000, "exposure", score=1.0)
    assert [f.message_id for f in fuse([replace(old, archived=False, ts_ms=3000), new, other])][:2] == ["old", "new"]
    assert [f.message_id for f in fuse([replace(old, ts_ms=3000), new, other])][:2] == ["new", "old"]  # as good: the recent one
    # a message that says the query word for word beats a recent one that does not, even archived
    # and scored below it in both legs
    said = Candidate("said", 1000, "GI clamp 10 on the hero", archived=True, score=1.0)
    vague = Candidate("vague", 2000, "clamp the GI to about 10", score=3.0)
    assert [f.message_id for f in fuse([vague, said], [vague, said], "GI clamp 10")] == ["said", "vague"]
    assert [f.message_id for f in fuse([replace(old, ts_ms=3000), new, other], archived_weight=1.0)][:2] == ["old", "new"]


def test_a_replay_from_scratch_leaves_edited_archived_messages_where_they_are(make_service):
    svc = make_service()
    m = _seed(svc)
    folder = svc.store().folder
    svc.roll_over(None, DAY2)
    svc.roll_over(None, TODAY)
    svc.edit(m["rim"].id, "camera 85mm lens on the close-up")
    svc.restore(svc.delete(m["chrome"].id))
    after = _layout(folder)
    svc.close()
    Projections().save(folder / "journal" / "projections.json")  # every projection replays from the start
    again = make_service()
    assert again.open() == len(_ops(folder))
    assert _layout(folder) == after


def test_an_index_replay_does_not_roll_the_markdown_over_again(make_service):
    svc = make_service()
    _seed(svc)
    folder = svc.store().folder
    svc.roll_over(None, TODAY)
    late, _ = svc.commit("the fill light is too dim", ts_ms=_at(DAY2, "18:00"))  # an old message, added later: live
    svc.flush()
    after = _layout(folder)
    assert late.id in after["lighting.md"]
    last = _ops(folder)[-1].seq
    svc.close()
    Projections(markdown_seq=last, index_seq=0, embedder="none", index_format=INDEX_FORMAT).save(
        folder / "journal" / "projections.json")
    again = make_service()
    again.open()
    assert _layout(folder) == after  # the index caught up; the Markdown, already there, was left alone
    assert again.roll_over(None, TODAY) == 1

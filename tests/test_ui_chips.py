"""Chips that mean what they say, and stay (issue 33): a table comparing values suggests only what the
answer proposes; "in use" only for the engine the turn is about, and only while no newer value has
replaced it; chips and "What Kelvin looked at" are kept with the turn in the journal, so after a
project switch, a restart and a rebuild every answer still shows them, answerable, with what was
done and when. A real window, real services, the test server's replies; what is read is what the
transcript shows."""
from __future__ import annotations

import re

from PySide6.QtCore import Qt, QUrl


CLOCK = r"(\d\d:\d\d|yesterday \d\d:\d\d)"


def _turn(qtbot, w, server, question: str, reply: str, chips: int = 1):
    server.queue_reply(reply)
    w.chat.composer.setPlainText(question)  # pasted (a log's lines too)
    qtbot.keyClick(w.chat.composer, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: w.turns.turn is None, timeout=15_000)
    answer = w.chat.entries[-1]
    qtbot.waitUntil(lambda: len(answer.chips) >= chips, timeout=10_000)
    return answer


def chip_lines(w) -> list[str]:
    """The chips' lines as the transcript shows them."""
    return [ln for ln in w.chat.transcript.toPlainText().splitlines() if ln.startswith("●")]


def _act(w, answer, value, action: str) -> None:
    n = next(k for k, c in enumerate(answer.chips) if c.entry.value == value)
    w.chat._anchor(QUrl(f"chip:{action}:{w.chat.entries.index(answer)}.{n}"))


def test_a_table_comparing_values_suggests_only_what_the_answer_proposes(qtbot, window, server):
    w = window(server)
    w.resize(400, 900)  # a sidebar
    answer = _turn(qtbot, w, server, "Octane: the forest is noisy, what should I change?",
                   "Here is what I would change:\n\n| Setting | Current | Suggested |\n|---|---|---|\n"
                   "| Max samples | 256 | 512 |\n| GI clamp | 25 | 10 |\n\nRaise the samples first.", chips=2)
    assert sorted((c.label, c.words) for c in answer.chips) == [("Octane GI clamp 10", "suggested"),
                                                                ("Octane Max samples 512", "suggested")]
    lines = chip_lines(w)
    assert not any("256" in ln or "GI clamp 25" in ln for ln in lines), lines
    # the row keeps its arrow: "suggested ▾" on one line, even at 400 px
    doc = w.chat.transcript.document()
    found = doc.find("512 · suggested")
    block = found.block()
    line = block.layout().lineForTextPosition(found.position() - block.position())
    arrow = block.text().index("▾")
    assert line.isValid() and block.layout().lineForTextPosition(arrow).lineNumber() == line.lineNumber()


def test_a_pasted_log_of_another_engine_is_not_in_use_in_this_project(qtbot, window, server):
    w = window(server)
    first = _turn(qtbot, w, server, "Cycles in Blender for the kitchen. We set samples to 1024.",
                  "1024 samples is fine for the kitchen.")
    assert [(c.label, c.words) for c in first.chips] == [("Cycles Max samples 1024", "in use")]
    second = _turn(qtbot, w, server, "Why is this frame so slow? The log from the farm:\n"
                   "[Redshift] Unified sampling: max samples 512\n[Redshift] Frame rendered in 14m 22s",
                   "The farm's log is Redshift's, not your Cycles scene.")
    redshift = [c for c in second.chips if c.entry.engine == "redshift"]
    assert redshift and all(c.words == "another engine" for c in redshift), [(c.label, c.words) for c in second.chips]
    assert not any("Redshift" in ln and "in use" in ln for ln in chip_lines(w)), chip_lines(w)
    assert "● Cycles Max samples 1024 · in use ▾" in chip_lines(w)


def test_a_newer_value_retires_the_older_chips_in_use(qtbot, window, server):
    w = window(server)
    older = _turn(qtbot, w, server, "In Octane we set the GI clamp to 25.", "Noted.")
    assert [c.words for c in older.chips] == ["in use"]
    newer = _turn(qtbot, w, server, "ok, GI clamp 10 it is, the fireflies are gone.", "Good.")
    assert [c.words for c in newer.chips] == ["in use"]
    qtbot.waitUntil(lambda: older.chips[0].words == "replaced by 10", timeout=10_000)
    lines = chip_lines(w)
    assert "● Octane GI clamp 25 · replaced by 10 ▾" in lines and "● Octane GI clamp 10 · in use ▾" in lines, lines


def test_chips_and_sources_stay_with_the_turn_through_a_switch_a_restart_and_a_rebuild(qtbot, window, server):
    w = window(server)
    w.services.memory.commit("We set the Octane GI clamp to 25 for the forest shot.", conversation_id="yesterday")
    w.services.memory.flush()
    answer = _turn(qtbot, w, server, "In Octane we went with a GI clamp of 25. Too noisy, what now?",
                   "Try a GI clamp of 8 in Octane, and keep max samples at 2048.", chips=3)
    assert answer.looked_at and any("GI clamp to 25" in x for x in answer.looked_at)
    _act(w, answer, 8, "confirm")
    qtbot.waitUntil(lambda: any(c.answer == "used" for c in answer.chips), timeout=10_000)
    _act(w, answer, 2048, "reject")
    qtbot.waitUntil(lambda: any(c.answer == "turned down" for c in answer.chips), timeout=10_000)
    qtbot.waitUntil(lambda: any(c.words == "replaced by 8" for c in answer.chips), timeout=10_000)
    seen = chip_lines(w)
    assert any(re.fullmatch(rf"● Octane GI clamp 8 · used {CLOCK}", ln) for ln in seen), seen
    assert any(re.fullmatch(rf"● Octane Max samples 2048 · turned down {CLOCK}", ln) for ln in seen), seen
    assert "● Octane GI clamp 25 · replaced by 8 ▾" in seen  # not answered: still answerable
    fold = f"What Kelvin looked at ({len(answer.looked_at)})"
    assert fold in w.chat.transcript.toPlainText()

    def shown_again(win) -> None:
        qtbot.waitUntil(lambda: not win.chat.composer.isReadOnly() and chip_lines(win) == seen, timeout=10_000)
        assert fold in win.chat.transcript.toPlainText()
        again = next(e for e in win.chat.entries if e.chips)
        assert again.looked_at == answer.looked_at

    w.projects.switch_project("perfume")
    qtbot.waitUntil(lambda: w.project == "perfume" and not w.chat.composer.isReadOnly(), timeout=10_000)
    assert chip_lines(w) == []
    w.projects.switch_project("default")
    shown_again(w)

    w.quit()  # a restart
    w = window(server)
    shown_again(w)

    folder = w.services.memory.store().folder
    (folder / "turns.jsonl").unlink()  # the notes' file lost: the journal has them
    w.services.memory.reindex()
    w.projects.project_now("default")
    shown_again(w)

    # the one not answered is still answerable after all that
    again = next(e for e in w.chat.entries if e.chips)
    _act(w, again, 25, "confirm")
    qtbot.waitUntil(lambda: any(c.entry.value == 25 and c.answer == "used" for c in again.chips), timeout=10_000)
    assert w.services.conversation.ledger.current_of(("octane", "gi_clamp")).entry.value == 25

"""Content that holds in a 360–400 px sidebar (issue 33): a long code line wraps inside its own block
(the chat never scrolls sideways), no word of a table breaks (a table too wide for the room becomes
a list, and a table again at full width), and dates read as an artist reads them in the memory list,
its preview, the settings and the chat. A real window, real services; what the transcript lays
out is what is checked."""
from __future__ import annotations

import re
import time
from datetime import date, datetime

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication, QTextTable


ISO = re.compile(r"\d{4}-\d\d-\d\d|\d\d:\d\d(:\d\d)?[+-]\d\d:\d\d|\dT\d")
WIDE_TABLE = ("| Parameter | Currently | Recommended | Difference | Reasoning |\n|---|---|---|---|---|\n"
              "| Max samples | 256 | 512 | doubled | less noise in the leaves |\n"
              "| GI clamp | 25 | 10 | lower | fireflies |")


def _answer(qtbot, w, server, reply: str):
    server.queue_reply(reply)
    w.turns.ask("show me")
    qtbot.waitUntil(lambda: w.turns.turn is None, timeout=15_000)
    return w.chat.entries[-1]


def broken_words(doc) -> list[str]:
    """Words that a line break cuts in two, anywhere in the document's tables."""
    out = []
    for frame in doc.rootFrame().childFrames():
        if not isinstance(frame, QTextTable):
            continue
        for r in range(frame.rows()):
            for c in range(frame.columns()):
                cell = frame.cellAt(r, c)
                block = cell.firstCursorPosition().block()
                while block.isValid() and block.position() <= cell.lastCursorPosition().position():
                    text, layout = block.text(), block.layout()
                    for n in range(1, layout.lineCount()):
                        at = layout.lineAt(n).textStart()
                        if 0 < at < len(text) and text[at - 1] != " " and text[at] != " ":
                            out.append(text)
                    block = block.next()
    return out


def test_a_long_code_line_wraps_inside_its_block_and_copies_whole(qtbot, window, server):
    w = window(server)
    w.resize(400, 900)
    line = "node.parm('" + "very_long_parameter_path_" * 10 + "').set(1024)"
    answer = _answer(qtbot, w, server, f"Run this:\n\n```python\n{line}\n```\n\nAnd a path: "
                     "/home/artist/projects/nike/forest/renders/final_v012_beauty_denoised_aces.exr")
    t = w.chat.transcript

    def wrapped():
        assert t.horizontalScrollBar().maximum() == 0  # never the whole chat sideways
        doc = t.document()
        block = doc.begin()
        while "very_long_parameter_path_" not in block.text().replace("\u200b", ""):  # (soft breaks in long words)
            block = block.next()
        assert block.layout().lineCount() > 2  # wrapped inside its own block
        assert doc.documentLayout().blockBoundingRect(block).right() <= t.viewport().width()

    qtbot.waitUntil(wrapped, timeout=5000)  # once the answer is laid out
    w.chat._anchor(QUrl(f"copy:{w.chat.entries.index(answer)}.0"))
    assert QGuiApplication.clipboard().text() == line + "\n"


def test_no_word_of_a_table_breaks_a_table_too_wide_becomes_a_list_and_a_table_again(qtbot, window, server):
    w = window(server)
    w.resize(1600, 900)
    _answer(qtbot, w, server, "Compare:\n\n" + WIDE_TABLE + "\n\nThat is all.")
    _answer(qtbot, w, server, "| Setting | Current | Suggested | Why |\n|---|---|---|---|\n"  # fits a sidebar,
            "| Max samples | 4000 | 6000 | grain in the fog's shadows |\n"  # and a long column must not squeeze
            "| GI clamp | 10 | 10 | keeps the fireflies away |")  # the header's "Suggested"
    t = w.chat.transcript
    doc = t.document()
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable) and f.format().border() > 0]
    assert [t.columns() for t in tables] == [5, 4] and broken_words(doc) == []
    for width in (400, 360, 900, 400, 1600):
        w.resize(width, 900)

        def laid_out(width=width):
            doc = t.document()
            assert broken_words(doc) == [], width
            assert t.horizontalScrollBar().maximum() == 0, width
            tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable) and f.format().border() > 0]
            text = t.toPlainText()
            if width <= 400:
                assert [t.columns() for t in tables] == [4] and "Max samples — Parameter" not in text
                assert "Max samples — Currently: 256 · Recommended: 512 · Difference: doubled" in text, text
            else:
                assert [t.columns() for t in tables] == [5, 4], width  # room enough: a table again

        qtbot.waitUntil(laid_out, timeout=5000)  # once the transcript has followed the new width


def test_dates_read_as_an_artist_reads_them_everywhere(qtbot, window, server):
    w = window(server)
    w.resize(400, 900)
    memory = w.services.memory
    now = int(time.time() * 1000)
    midnight = int(datetime.combine(date.today(), datetime.min.time()).timestamp() * 1000)  # local, as shown
    # (calendar days, not hours: at 00:10 "26 hours ago" is the day before yesterday — a .ci/run saw it)
    memory.commit("Octane GI clamp 25 this morning", ts_ms=max(now - 60_000, midnight + 1000))
    memory.commit("ok, GI clamp 10 it is", ts_ms=midnight - 12 * 3_600_000)
    memory.commit("| Setting | Value |\n|---|---|\n| Max samples | 512 |", ts_ms=midnight - 60 * 3_600_000)
    memory.flush()
    w.show_view(1)
    model = w.memory.model
    qtbot.waitUntil(lambda: model.rowCount() == 3 and all(model.index(r, 4).data() != "…" for r in range(3)),
                    timeout=10_000)
    when = [model.index(r, 0).data() for r in range(3)]
    assert re.fullmatch(r"\d\d:\d\d", when[0]) and re.fullmatch(r"yesterday \d\d:\d\d", when[1]), when
    assert re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri|Sat|Sun) \d\d:\d\d", when[2]), when
    assert model.index(2, 4).data() == "Setting · Value; Max samples · 512;"  # no pipes, no rule
    w.memory.table.setCurrentIndex(model.index(1, 4))
    assert w.memory.preview.toPlainText().startswith("yesterday ")
    w.memory.pages.setCurrentIndex(1)
    panel = w.memory.settings
    qtbot.waitUntil(lambda: panel.current.rowCount() > 0, timeout=10_000)
    shown = [str(panel.current.index(r, c).data() or "") for r in range(panel.current.rowCount())
             for c in range(panel.current.columnCount())]
    w.show_view(0)
    w.projects.project_now("default")
    qtbot.waitUntil(lambda: len(w.chat.entries) == 3, timeout=10_000)
    shown += [w.chat.transcript.toPlainText(), *when]
    assert not [s for s in shown if ISO.search(s)], [s for s in shown if ISO.search(s)]
    assert "— Today —" in w.chat.transcript.toPlainText() and "— Yesterday —" in w.chat.transcript.toPlainText()

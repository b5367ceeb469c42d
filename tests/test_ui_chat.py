"""The chat as artists know it (issue 23): You / Kelvin blocks with their time, bordered tables,
coloured code with a Copy that says so, long pastes folded, an input that grows, jump-to-latest,
and a greeting on an empty project — a real window, real services, the test server's replies."""
from __future__ import annotations

import re

from PySide6.QtCore import QUrl
from PySide6.QtGui import QGuiApplication, QTextTable
from PySide6.QtWidgets import QAbstractSlider

from tests.support.window import send

REPLY = ("Here is the script and the table:\n\n```python\nimport bpy\nscene = bpy.context.scene  # the scene\n"
         "scene.cycles.samples = 1024\n```\n\n| setting | value |\n|---|---|\n| GI clamp | 10 |\n| samples | 1024 |\n")


def _done(w):
    return w.turns.turn is None and w.chat.entries and w.chat.entries[-1].status != "streaming"


def test_an_empty_project_greets_the_artist(qtbot, window, server):
    w = window(server)
    assert "Hello — Kelvin remembers this project for you." in w.chat.transcript.toPlainText()
    assert "End of day" in w.chat.transcript.toPlainText()


def test_blocks_have_their_time_tables_borders_and_code_its_colours_and_copy_says_so(qtbot, window, server):
    w = window(server)
    server.queue_reply(REPLY)
    send(qtbot, w, "a script for the samples?")
    qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    text = w.chat.transcript.toPlainText()
    assert re.search(r"You · \d\d:\d\d\na script for the samples\?", text)
    assert re.search(r"Kelvin · \d\d:\d\d\n", text)
    assert "Hello — Kelvin" not in text  # the greeting is gone once there is a conversation
    doc = w.chat.transcript.document()
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    you = [t for t in tables if t.format().border() == 0]  # the question: one block in one colour
    assert len(you) == 1 and you[0].format().background().color().name() == "#2b3038"
    tables = [t for t in tables if t.format().border() > 0]  # the answer's own table, bordered
    assert tables and tables[0].rows() == 3
    # the code block: its words in more than two colours (keywords, names, numbers, the comment)
    colours = set()
    block = doc.findBlock(text.index("import bpy"))
    for _ in range(3):
        it = block.begin()
        while not it.atEnd():
            colours.add(it.fragment().charFormat().foreground().color().name())
            it += 1
        block = block.next()
    assert len(colours) >= 3, colours
    i = len(w.chat.entries) - 1
    w.chat._anchor(QUrl(f"copy:{i}.0"))
    assert QGuiApplication.clipboard().text().startswith("import bpy\nscene = bpy.context.scene")
    assert "Copied ✓" in w.chat.transcript.toPlainText()
    qtbot.waitUntil(lambda: "Copied ✓" not in w.chat.transcript.toPlainText(), timeout=5000)


def test_a_long_paste_is_folded_with_show_all(qtbot, window, server):
    w = window(server)
    paste = "\n".join(f"[render] frame {n:04d}: 1024 samples, 12.4 s, peak VRAM 18.2 GB" for n in range(700))
    server.queue_reply("The peak is stable.")
    w.chat.composer.setPlainText(paste)
    w.chat._submit()
    qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    shown = w.chat.transcript.toPlainText()
    assert "frame 0000" in shown and "frame 0699" not in shown and "show all" in shown
    assert f"{len(paste):,} characters, 700 lines" in shown
    i = next(n for n, e in enumerate(w.chat.entries) if e.role == "user")
    w.chat._anchor(QUrl(f"unfold:{i}"))
    assert "frame 0699" in w.chat.transcript.toPlainText()
    w.services.memory.flush()
    assert paste in [m.text for m in w.services.memory.list(limit=0)]  # stored whole all along


def test_the_input_grows_with_its_text_up_to_a_limit(qtbot, window, server):
    w = window(server)
    c = w.chat.composer
    one = c.height()
    c.setPlainText("\n".join(["line"] * 5))
    five = c.height()
    c.setPlainText("\n".join(["line"] * 60))
    many = c.height()
    c.setPlainText("")
    assert one < five < many and c.height() == one
    assert many <= 10 * c.fontMetrics().lineSpacing() + 40  # then it scrolls


def test_scrolled_up_a_button_goes_back_to_the_latest_and_sending_jumps_there(qtbot, window, server):
    w = window(server)
    for n in range(12):
        server.queue_reply("A long answer.\n\n" + "More detail on the lighting. " * 40)
        send(qtbot, w, f"question {n}")
        qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    bar = w.chat.transcript.verticalScrollBar()
    assert bar.maximum() > 0 and not w.chat.jump.isVisible()
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)  # the artist scrolls up
    qtbot.waitUntil(lambda: w.chat.jump.isVisible(), timeout=8000)
    qtbot.mouseClick(w.chat.jump, __import__("PySide6.QtCore").QtCore.Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: bar.value() == bar.maximum() and not w.chat.jump.isVisible(), timeout=8000)
    bar.triggerAction(QAbstractSlider.SliderAction.SliderToMinimum)
    qtbot.waitUntil(lambda: w.chat.jump.isVisible(), timeout=8000)
    server.queue_reply("ok")
    send(qtbot, w, "and the fog?")  # sending while scrolled up shows the new message
    qtbot.waitUntil(lambda: _done(w) and bar.value() == bar.maximum(), timeout=15_000)
    assert not w.chat.jump.isVisible()


def test_the_memory_list_reads_as_words_and_the_selected_message_shows_whole(qtbot, window, server):
    w = window(server)
    server.queue_reply("You settled on a **GI clamp of 10**; keep `max samples`:\n\n```text\nGI clamp 10\n```")
    send(qtbot, w, "what clamp?")
    qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    w.services.memory.flush()
    w.tabs.setCurrentIndex(w.views.indexOf(w.memory))
    model = w.memory.model
    qtbot.waitUntil(lambda: model.rowCount() == 2 and all(model.index(r, 4).data() != "…" for r in range(2)),
                    timeout=10_000)
    row = next(r for r in range(2) if "settled" in model.index(r, 4).data())
    shown = model.index(row, 4).data()
    assert shown == "You settled on a GI clamp of 10; keep max samples: GI clamp 10"  # no ** ` or fences
    w.memory.table.setCurrentIndex(model.index(row, 4))
    preview = w.memory.preview.toPlainText()
    assert "Kelvin" in preview.splitlines()[0] and "GI clamp of 10" in preview and "**" not in preview
    assert w.memory.preview.document().toHtml().count("font-weight") >= 1  # bold, rendered


def test_chips_are_one_per_setting_and_value_and_an_answer_never_moves_the_others(qtbot, window, server):
    w = window(server)
    w.resize(420, 900)  # a sidebar: where a reflow would move things most
    server.queue_reply("Keep the GI clamp at 25 in Octane; or try a GI clamp of 8, and max samples 2048.")
    send(qtbot, w, "In Octane we went with a GI clamp of 25. Too noisy, what now?")
    qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    answer = w.chat.entries[-1]
    qtbot.waitUntil(lambda: len(answer.chips) >= 3, timeout=10_000)
    labels = [(c.label, c.entry.status) for c in answer.chips]
    assert len({label for label, _ in labels}) == len(labels), labels  # 25 is in use: not also suggested
    assert ("Octane GI clamp 25", "applied") in labels
    doc = w.chat.transcript.document()

    def tops() -> dict:
        out = {}
        for c in answer.chips:
            found = doc.find(c.label)
            block = found.block()
            out[c.label] = (doc.documentLayout().blockBoundingRect(block).top(), block.layout().lineCount())
        return out

    before = tops()
    n = next(k for k, c in enumerate(answer.chips) if c.entry.value == 8)
    w.chat._anchor(QUrl(f"chip:menu:{w.chat.entries.index(answer)}.{n}"))  # a click on the setting: its menu
    menu = w.chat.chip_menu
    qtbot.waitUntil(lambda: menu.isVisible(), timeout=5_000)
    words = [a.text() for a in menu.actions() if not a.isSeparator()]
    assert words == ["✓  Use this value", "✎  Correct the value…", "✗  Not this setting: take it out"], words
    assert any(a.isSeparator() and a.text() == answer.chips[n].label for a in menu.actions())  # titled
    assert tops() == before  # opening the menu moves nothing
    menu.actions()[1].trigger()  # ✓ use
    menu.close()
    qtbot.waitUntil(lambda: answer.chips[n].answer == "used", timeout=10_000)
    assert tops() == before  # every chip where it was, the answered one included
    assert w.chat.chip_menu is None or not w.chat.chip_menu.isVisible()


def test_a_suggestion_of_the_value_already_in_use_says_so_instead_of_asking(qtbot, window, server):
    w = window(server)
    w.services.memory.commit("Octane in Cinema 4D. ok, GI clamp 10 it is.", conversation_id="yesterday")
    w.services.memory.flush()
    server.queue_reply("Keep the GI clamp at 10 in Octane, and try max samples 2048.")
    send(qtbot, w, "Fireflies again in the forest, what now?")
    qtbot.waitUntil(lambda: _done(w), timeout=15_000)
    answer = w.chat.entries[-1]
    qtbot.waitUntil(lambda: len(answer.chips) >= 2, timeout=10_000)
    states = {c.entry.value: (c.words, c.answerable) for c in answer.chips}
    assert states[10] == ("in use already", False) and states[2048] == ("suggested", True), states
    html = w.chat.transcript.toHtml()
    n = next(k for k, c in enumerate(answer.chips) if c.entry.value == 10)
    assert f"chip:menu:{w.chat.entries.index(answer)}.{n}" not in html  # nothing to answer
    assert "GI clamp 10 · in use already" in w.chat.transcript.toPlainText()


def test_an_answer_from_memory_says_why_once_with_the_fix_and_quotes_only_what_was_asked(qtbot, window, server):
    w = window(server)
    for text in ("Octane in Cinema 4D. Set the GI clamp to 25.", "ok, GI clamp 10 it is.", "AO distance 5",
                 "Output resolution 1920x1080", "Camera f-stop 2.8, focal length 50mm", "exposure 1.2"):
        w.services.memory.commit(text, conversation_id="yesterday")
    w.services.memory.flush()
    server.stop()  # Ollama goes away
    send(qtbot, w, "What GI clamp did we settle on?")
    qtbot.waitUntil(lambda: _done(w), timeout=20_000)
    answer = w.chat.entries[-1]
    assert answer.status == "recall"
    text = w.chat.transcript.toPlainText()
    assert text.count("Ollama is not running") == 1 and "not reachable" not in text
    assert "Start Ollama from the Setup panel" in text and "KELVIN_OLLAMA_HOST" not in text
    assert "Octane GI clamp = 10" in text  # the setting the question is about, with its date
    for unrelated in ("AO distance", "1920x1080", "f-stop", "exposure"):
        assert unrelated not in answer.text, unrelated
    assert "You, " in answer.text and "ok, GI clamp 10 it is." in answer.text

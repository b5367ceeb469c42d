"""No developer's words on screen (issue 33): through a day's states — answers, chips, a stopped
reply, an edit, Ollama gone (an answer from memory, the mode box, Setup, the brief written without
a model) — nothing the window shows or says on hover names a command, a flag, an environment
variable, one of Kelvin's files, an ISO time, the journal or the index, or shows a stored reply's
end-mark. A real window, real services, every text collected as the artist could read it."""
from __future__ import annotations

import re
import time

from PySide6.QtCore import QUrl

from tests.support.ollama_server import OllamaTestServer
from tests.support.seen import words_shown

DEVELOPER = re.compile(r"`|\bKELVIN_[A-Z_]+|\bOLLAMA_[A-Z_]+|(?<![\w-])--[a-z][\w-]+|\b[\w-]+\.(?:md|toml|jsonl?|lance|ini)\b"
                       r"|\d{4}-\d\d-\d\d|\d\d:\d\d(?::\d\d)?[+-]\d\d:\d\d|\bjournal\b|\bMarkdown\b|\bindex\b|committing"
                       r"|\[stopped|\[reply cut|\[no reply|recall mode|\(no model\)|\bvram_guard\b|\bkelvin [a-z]+ [a-z-]+")


def test_the_window_speaks_the_artists_language_all_day(qtbot, window):
    srv = OllamaTestServer(delay_s=0.05).start()
    said: list[str] = []
    seen: list[str] = []
    try:
        w = window(srv)
        w.statusBar().messageChanged.connect(lambda m: said.append(m) if m else None)
        memory = w.services.memory
        now = int(time.time() * 1000)
        for i, text in enumerate(("Octane in Cinema 4D for the forest. Set the GI clamp to 25.",
                                  "ok, GI clamp 10 it is, the fireflies are gone.",
                                  "| Setting | Value |\n|---|---|\n| Max samples | 4000 |")):
            memory.commit(text, conversation_id="yesterday", ts_ms=now - 90_000_000 + i * 60_000)
        memory.flush()
        w.projects.project_now("default")
        qtbot.waitUntil(lambda: not w.chat.composer.isReadOnly() and len(w.chat.entries) == 3, timeout=10_000)

        srv.queue_reply("Keep the **GI clamp at 10**; try max samples 2048.\n\n```python\nscene.cycles.samples = 2048\n```")
        w.turns.ask("What GI clamp did we settle on for the forest?")
        qtbot.waitUntil(lambda: w.turns.turn is None and bool(w.chat.entries[-1].chips), timeout=15_000)
        w.chat._anchor(QUrl(f"look:{len(w.chat.entries) - 1}"))
        seen += words_shown(w)

        srv.queue_reply(" ".join(f"word{i}" for i in range(80)))  # a reply stopped by a switch
        w.turns.ask("a long answer please")
        qtbot.waitUntil(lambda: "word3" in w.chat.entries[-1].text, timeout=10_000)
        w.projects.switch_project("perfume")
        qtbot.waitUntil(lambda: w.project == "perfume" and not w.chat.composer.isReadOnly(), timeout=10_000)
        w.projects.switch_project("default")
        qtbot.waitUntil(lambda: w.project == "default" and not w.chat.composer.isReadOnly(), timeout=10_000)
        assert "stopped when you switched project" in w.chat.transcript.toPlainText()
        seen += words_shown(w)

        w.show_view(1)
        model = w.memory.model
        qtbot.waitUntil(lambda: model.rowCount() >= 5 and model.index(0, 4).data() != "…", timeout=10_000)
        w.memory.table.setCurrentIndex(model.index(model.rowCount() - 1, 4))
        model.setData(model.index(model.rowCount() - 1, 4), "Octane in Cinema 4D for the forest. GI clamp 25.")
        qtbot.waitUntil(lambda: w.memory.undo_button.isEnabled(), timeout=10_000)
        w.memory.pages.setCurrentIndex(1)
        qtbot.waitUntil(lambda: w.memory.settings.current.rowCount() > 0, timeout=10_000)
        seen += words_shown(w)

        srv.stop()  # Ollama goes away
        qtbot.waitUntil(lambda: w.status.problem != "", timeout=5000)
        w.show_view(0)
        w.turns.ask("What GI clamp did we settle on?")
        qtbot.waitUntil(lambda: w.turns.turn is None, timeout=15_000)
        answer = w.chat.entries[-1]
        assert answer.status == "recall" and "in the optimization notes" in answer.text
        w.show_view(3)
        w.brief.button.click()
        qtbot.waitUntil(lambda: not w.briefing.running and "memory alone" in w.brief.status.text(), timeout=10_000)
        seen += words_shown(w)
        w.show_setup()
        qtbot.waitUntil(lambda: w.setup_panel.rows["ollama"].status == "fail", timeout=10_000)
        seen += words_shown(w, said)
    finally:
        srv.stop()
    bad = sorted({f"{m.group(0)!r} in {t[max(0, m.start() - 60):m.end() + 40]!r}"
                  for t in seen for m in DEVELOPER.finditer(t)})
    assert bad == [], "\n".join(bad)

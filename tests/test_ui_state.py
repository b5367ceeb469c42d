"""State follows reality (issue 33): Setup, the header, the tray (and the window's icon) agree within
a second of Ollama going or coming back; a project's brief says its own things, and what it said for
want of the model goes when the model is back; without a model the brief gives what it can, and the
mode box has one mode without a model, named plainly. A real window, real services, the
Ollama-protocol test server stopped and started again on its port."""
from __future__ import annotations

import time

from PySide6.QtGui import QImage

from app.ui.icon import STATE_COLOURS
from tests.support.ollama_server import OllamaTestServer

AGREE_MS = 3000  # looks come every second; this is the bound of the wait, not a speed target


def colours(icon, size: int = 22) -> set[str]:
    image = icon.pixmap(size, size).toImage().convertToFormat(QImage.Format.Format_ARGB32)
    return {image.pixelColor(x, y).name() for x in range(image.width()) for y in range(image.height())
            if image.pixelColor(x, y).alpha() == 255}


def near(colour: str, seen: set[str], tolerance: int = 24) -> bool:
    want = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return any(sum(abs(int(c[i:i + 2], 16) - w) for i, w in zip((1, 3, 5), want)) <= tolerance for c in seen)


def everyone_says(w, running: bool) -> bool:
    row = w.setup_panel.rows["ollama"]
    header = (w.header.ollama_label.property("health") == "ok") == running
    tray = ("Ollama: not running" not in w.tray.icon.toolTip()) == running
    setup = (row.status == "ok") == running
    icon = near(STATE_COLOURS["ok" if running else "bad"], colours(w.tray.icon.icon()))
    return header and tray and setup and icon and w.windowIcon().cacheKey() == w.tray.icon.icon().cacheKey()


def test_setup_the_header_and_the_tray_agree_within_a_second_of_ollama_going_and_coming(qtbot, window):
    srv = OllamaTestServer().start()
    try:
        w = window(srv)
        w.show_setup()
        qtbot.waitUntil(lambda: everyone_says(w, True), timeout=10_000)
        port = srv.port
        srv.stop()  # Ollama goes
        gone = time.monotonic()
        qtbot.waitUntil(lambda: everyone_says(w, False), timeout=AGREE_MS)
        print(f"\nall agree {time.monotonic() - gone:.2f} s after Ollama went")
        assert w.header.mode_box.currentText() == "Memory only"
        srv = OllamaTestServer(port=port).start()  # and comes back, where it was
        back = time.monotonic()
        qtbot.waitUntil(lambda: everyone_says(w, True), timeout=AGREE_MS)
        print(f"all agree {time.monotonic() - back:.2f} s after Ollama came back")
        assert w.header.mode_box.currentText() == "GPU"
    finally:
        srv.stop()


def test_without_a_model_the_brief_gives_what_it_can_and_says_the_summaries_come_later(qtbot, window):
    srv = OllamaTestServer().start()
    try:
        w = window(srv)
        memory = w.services.memory
        now = int(time.time() * 1000)
        for i, text in enumerate(("Octane in Cinema 4D: set the GI clamp to 25", "ok, GI clamp 10 it is, fireflies gone",
                                  "Key light 2 stops brighter, the fog reads better")):
            memory.commit(text, ts_ms=now - 600_000 + i * 1000)
        memory.flush()
        port = srv.port
        srv.stop()
        qtbot.waitUntil(lambda: w.status.problem.startswith("Ollama is not running"), timeout=AGREE_MS)
        assert [w.header.mode_box.itemText(i) for i in range(w.header.mode_box.count())] == ["GPU", "CPU", "Memory only"]
        w.show_view(3)
        assert "summaries come when the model is back" in w.brief.button.toolTip()
        w.brief.button.click()
        qtbot.waitUntil(lambda: not w.briefing.running, timeout=10_000)
        page = w.brief.page.toPlainText()
        assert "Current settings" in page and "GI clamp" in page and "10" in page
        assert "GI clamp: 10 (was 25)" in page  # decided today
        assert "Today's messages by domain" in page and "3 messages in all" in page
        assert "The summaries of the day come when the model is back" in page
        said = w.brief.status.text()
        assert said.startswith("Written from memory alone") and "when the model is back" in said

        # a project's words stay with it
        w.projects.switch_project("perfume")
        qtbot.waitUntil(lambda: w.project == "perfume", timeout=10_000)
        assert w.brief.status.text() == ""
        w.projects.switch_project("default")
        qtbot.waitUntil(lambda: w.project == "default", timeout=10_000)
        assert w.brief.status.text() == said

        # the model is back: what was said for want of it goes; End of day now writes the summaries
        srv = OllamaTestServer(port=port).start()
        qtbot.waitUntil(lambda: w.brief.status.text() == "This brief was written without the model: End of day "
                        "now adds the summaries.", timeout=AGREE_MS + 5000)
        for reply in ("### What worked\n- GI clamp 10 removed the fireflies.", "### What worked\n- key light +2.",
                      "## Where the project stands\nClean at GI clamp 10.\n## Open questions\n- none"):
            srv.queue_reply(reply)
        w.brief.button.click()
        qtbot.waitUntil(lambda: not w.briefing.running, timeout=20_000)
        assert "Clean at GI clamp 10" in w.brief.page.toPlainText()
        assert w.brief.status.text().startswith("Written from 3 messages")
    finally:
        srv.stop()


def test_kelvins_icon_is_its_thermometer_with_the_state_as_its_colour(qtbot):
    from app.ui.icon import kelvin_icon

    glass = "#e8eaf0"
    for size in (16, 22):
        own = colours(kelvin_icon(None), size)
        warm = [c for c in own if int(c[1:3], 16) > 220 and int(c[5:7], 16) < 150]  # the column's warm end
        assert near(glass, own) and warm, own
        for health, colour in STATE_COLOURS.items():
            seen = colours(kelvin_icon(health), size)
            assert near(glass, seen) and near(colour, seen), (size, health)
            if health in ("ok", "bad"):  # green or red, never both
                assert not near(STATE_COLOURS["bad" if health == "ok" else "ok"], seen, 12), (size, health)

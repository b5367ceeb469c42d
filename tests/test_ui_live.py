"""The window follows reality (issue 33): the project list follows the data folder while the window is
open (a project made from the command line appears), and an error is said once, where the artist is
looking — not in the tray, the chat and the status bar at once. A real window, real services; the
command line run as the artist would, beside it."""
from __future__ import annotations


from tests.support.cli import kelvin


def listed(box) -> list[str]:
    return [box.itemText(i) for i in range(box.count()) if not str(box.itemData(i) or "").startswith("\x00")
            and box.itemText(i)]


def test_a_project_made_from_the_command_line_appears_in_the_open_window(qtbot, window, server):
    w = window(server)
    box = w.header.project_box
    qtbot.waitUntil(lambda: listed(box) == ["default"], timeout=10_000)
    kelvin("project", "create", "Nike / Summer")  # a terminal beside the window
    qtbot.waitUntil(lambda: "Nike / Summer" in listed(box), timeout=5000)
    kelvin("project", "rename", "Nike / Summer", "Nike / Autumn")
    qtbot.waitUntil(lambda: listed(box) == ["default", "Nike / Autumn"], timeout=5000)
    assert w.project == "default" and box.currentText() == "default"  # the window stays where the artist was


def test_a_name_that_exists_is_said_once_in_the_dialog_that_asked_for_it(qtbot, window, server, monkeypatch):
    w = window(server)
    w.services.memory.commit("a note", project="Nike Spring")
    w.services.memory.flush()
    box = w.header.project_box
    said, balloons = [], []
    w.statusBar().messageChanged.connect(lambda m: said.append(m) if m else None)
    w.tray.available = True
    monkeypatch.setattr(w.tray, "notify", lambda title, text: balloons.append(text) or True)
    asked = []
    answers = iter(["nike spring", "Nike Spring 2"])
    monkeypatch.setattr(box, "_ask", lambda title, label, text: asked.append(label) or next(answers))
    box.activated.emit(box.findData("\x00new"))
    qtbot.waitUntil(lambda: w.project == "Nike Spring 2", timeout=10_000)
    assert len(asked) == 2 and asked[1].startswith("A project named “nike spring” already exists: choose another name.")
    texts = [t for t in said + balloons + [w.banner.text() if w.banner.isVisible() else ""]]
    assert not any("already exists" in t for t in texts), texts  # once: where the artist looked
    assert not any("already exists" in e.text for e in w.chat.entries)
    w.tray.available = False

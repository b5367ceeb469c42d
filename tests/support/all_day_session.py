"""A day at the window, for screenshots looked at one by one (issue 33): a real desktop under Xvfb
with a window manager and a tray host, Kelvin's window driven through tab switches and resizes in
mixed order, the keyboard's sheet, a project made from a terminal, Ollama going and coming back,
and the brief written without a model. Saves PNGs: the window as Qt draws it (``*-400.png``,
``*-1600.png``) and the whole screen with the tray (``*-desktop.png``)::

    Xvfb :7 -screen 0 1600x1000x24 & DISPLAY=:7 openbox & DISPLAY=:7 trayer --align right &
    DISPLAY=:7 .venv/bin/python -m tests.support.all_day_session docs/screenshots
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QTimer, QUrl
from PySide6.QtWidgets import QApplication

from tests.support.ollama_server import OllamaTestServer

SEED = [
    ("user", "Octane in Cinema 4D for the forest shot. Set the GI clamp to 25 and max samples 4000."),
    ("assistant", "For a dense forest you could lower the GI clamp to 10; it removes most fireflies from the leaves."),
    ("user", "ok, GI clamp 10 it is. Fireflies are gone, 14 minutes a frame on the 4090."),
]
REPLY = ("Here is what I would change for the fog:\n\n| Setting | Current | Suggested | Why |\n|---|---|---|---|\n"
         "| Max samples | 4000 | 6000 | grain in the fog's shadows |\n| GI clamp | 10 | 10 | keeps the fireflies away |\n\n"
         "In a script:\n\n```python\nscene[c4d.OCTANERENDER_MAXSAMPLES] = 6000  # "
         "the fog's shadows need more samples than the leaves do\n```")


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="kelvin-all-day-"))
    os.environ["KELVIN_CONFIG_DIR"] = str(data / "config")
    os.environ["KELVIN_DATA_DIR"] = str(data / "data")
    os.environ["KELVIN_EMBEDDER"] = "none"
    srv = OllamaTestServer(delay_s=0.02).start()
    port = srv.port
    from app.config import load
    from app.services.memory import MemoryService
    from app.ui.app import app_icon, open_window, stylesheet  # noqa: F401

    settings = load({"ollama_host": srv.host, "project": "Nike / Forest"})
    seed = MemoryService(settings)
    day = int(time.time() * 1000) - 86_400_000
    for i, (role, text) in enumerate(SEED):
        seed.commit(text, role=role, project="Nike / Forest", conversation_id="yesterday", ts_ms=day + i * 60_000)
    seed.commit("Perfume bottle: caustics on, 12 bounces.", project="Perfume", ts_ms=day)
    seed.close()
    srv.queue_reply(REPLY)
    app = QApplication(sys.argv[:1])
    app.setWindowIcon(app_icon())
    w = open_window(settings, app)
    w.resize(1600, 960)
    steps: list = []
    state = {"srv": srv}

    def grab(name: str) -> None:
        w.grab().save(str(out / name))
        print(f"saved {name} ({w.width()}x{w.height()})", flush=True)

    def desktop(name: str) -> None:
        subprocess.run(["import", "-window", "root", str(out / name)], check=False, timeout=30)
        print(f"saved {name} (the screen)", flush=True)

    def then(ms: int, fn) -> None:
        steps.append(fn)
        QTimer.singleShot(ms, fn)

    def ask() -> None:
        if w.services is None or w.chat.composer.isReadOnly():
            return then(200, ask)
        w.turns.ask("The fog's shadows are grainy; what should I change, and how in a script?")
        then(300, wait_answer)

    def wait_answer() -> None:
        if w.turns.turn is not None or not w.chat.entries[-1].chips:
            return then(200, wait_answer)
        w.chat._anchor(QUrl(f"look:{len(w.chat.entries) - 1}"))
        then(400, full_chat)

    def full_chat() -> None:
        grab("all-day-chat-1600.png")
        w.show_view(1)  # to the memory, then a sidebar, then back: never blank
        w.resize(400, 960)
        then(500, back_at_400)

    def back_at_400() -> None:
        w.show_view(0)
        then(500, lambda: (grab("all-day-chat-after-switch-400.png"), w.show_view(3), w.resize(1600, 960),
                           then(500, back_at_1600)))

    def back_at_1600() -> None:
        w.show_view(0)
        then(500, lambda: (grab("all-day-chat-after-switch-1600.png"), w.showMinimized(), w.resize(400, 960),
                           then(600, restored)))

    def restored() -> None:
        w.showNormal()
        w.activateWindow()
        then(600, lambda: (grab("all-day-restored-400.png"), w.show_view(1), then(600, memory_400)))

    def memory_400() -> None:
        grab("all-day-memory-400.png")
        w.show_view(0)
        w.chat.composer.setFocus()
        w.focusNextChild()  # Tab from the message box: the Send button wears the ring
        then(300, lambda: (grab("all-day-focus-400.png"), w.show_keys(), then(500, keys)))

    def keys() -> None:
        desktop("all-day-keys-desktop.png")
        w.keys_sheet.close()
        subprocess.run([sys.executable, "-m", "app", "project", "create", "Nike / Summer"], check=False, timeout=120,
                       stdout=subprocess.DEVNULL)  # a terminal beside the window
        then(1500, lambda: (w.open_projects(), then(600, projects)))

    def projects() -> None:
        desktop("all-day-projects-live-desktop.png")
        w.header.project_box.hidePopup()
        state["srv"].stop()  # Ollama goes away
        then(2500, ollama_gone)

    def ollama_gone() -> None:
        desktop("all-day-ollama-gone-desktop.png")
        w.turns.ask("What GI clamp did we settle on?")
        then(2500, lambda: (grab("all-day-from-memory-400.png"), w.show_view(3), w.brief.button.click(),
                            then(2500, brief_without_model)))

    def brief_without_model() -> None:
        grab("all-day-brief-no-model-400.png")
        w.resize(1600, 960)
        then(600, lambda: (grab("all-day-brief-no-model-1600.png"), come_back()))

    def come_back() -> None:
        state["srv"] = OllamaTestServer(port=port, delay_s=0.02).start()
        then(2500, lambda: (desktop("all-day-ollama-back-desktop.png"), w.quit(), app.quit()))

    QTimer.singleShot(500, ask)
    app.exec()
    state["srv"].stop()
    return 0 if steps else 1


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")))

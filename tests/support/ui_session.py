"""Drive the real app through a short session and save a screenshot of what it shows.

Starts the Ollama-protocol test server, seeds a throw-away data folder with a day of work, opens
Kelvin's window (a real one on an X display: run it under ``xvfb-run``), asks a question, lets the
reply stream, opens "what Kelvin looked at", plays a recorded Octane render through the VRAM
guard for the GPU view, and saves PNGs::

    xvfb-run -a -s "-screen 0 1920x1080x24" .venv/bin/python -m tests.support.ui_session docs/screenshots
    … ui_session docs/screenshots 400x900 -400     # the same session in a 400 px sidebar: chat-400.png …
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QTimer, QUrl
from PySide6.QtWidgets import QApplication

from tests.support.ollama_server import OllamaTestServer

SEED = [
    ("user", "Octane in Cinema 4D for the forest shot. Set the GI clamp to 25 and max samples 4000."),
    ("assistant", "For a dense forest you could lower the GI clamp to 10; it removes most fireflies from the leaves."),
    ("user", "ok, GI clamp 10 it is. Fireflies are gone, 14 minutes a frame on the 4090."),
]
REPLY = ("You settled on a **GI clamp of 10** (it was 25 before). For the fog, keep it and raise "
         "*max samples* only if the shadows stay grainy:\n\n```text\nGI clamp      10\nMax samples   4000\n```")


BRIEF_REPLIES = (
    "### What worked\n- optimization: GI clamp 10 removed the fireflies in the leaves.\n### Tried and dropped\n"
    "- optimization: GI clamp 25 left fireflies.\n### Open questions\n- fog: grain in the shadows?",
    "## Where the project stands\nThe forest shot renders clean at **GI clamp 10**, 12 minutes a frame on the 4090. "
    "The fog is next.\n## What worked\n- optimization: GI clamp 10 removed the fireflies.\n## Tried and dropped\n"
    "- optimization: GI clamp 25 left fireflies in the leaves.\n## Open questions\n- optimization: raise max samples "
    "if the fog's shadows stay grainy?",
)


def main(out: Path, size: tuple[int, int] = (620, 860), suffix: str = "") -> int:
    out.mkdir(parents=True, exist_ok=True)
    data = Path(tempfile.mkdtemp(prefix="kelvin-ui-session-"))
    os.environ["KELVIN_CONFIG_DIR"] = str(data / "config")
    os.environ["KELVIN_EMBEDDER"] = "none"
    with OllamaTestServer(delay_s=0.03) as srv:
        from app.config import load
        from app.ui.app import open_window

        settings = load({"ollama_host": srv.host, "data_dir": str(data / "data"), "project": "Nike / Forest"})
        from app.services.memory import MemoryService

        seed = MemoryService(settings)
        for i, (role, text) in enumerate(SEED):
            seed.commit(text, role=role, project="Nike / Forest", conversation_id="yesterday",
                        ts_ms=1_763_800_000_000 + i * 60_000)
        seed.close()
        srv.queue_reply(REPLY)
        app = QApplication(sys.argv[:1])
        window = open_window(settings, app)
        window.resize(*size)
        steps = []

        def shot(name: str) -> None:
            name = name.replace(".png", f"{suffix}.png")
            window.grab().save(str(out / name))
            print(f"saved {out / name} ({window.width()}x{window.height()})", flush=True)

        def ask() -> None:
            if window.services is None or window.chat.composer.isReadOnly():  # services, then the transcript
                return QTimer.singleShot(100, ask)
            window.chat.composer.setPlainText("What GI clamp did we settle on for the forest, and what about the fog?")
            window.chat._submit()
            steps.append("asked")
            QTimer.singleShot(250, lambda: shot("chat-streaming.png"))
            QTimer.singleShot(200, wait_answer)

        def wait_answer() -> None:
            if window.turns.turn is not None:
                return QTimer.singleShot(100, wait_answer)
            window.chat._anchor(QUrl(f"look:{len(window.chat.entries) - 1}"))
            QTimer.singleShot(1500, chat_done)  # the chips arrive once the turn is stored

        def chat_done() -> None:
            shot("chat.png")
            window.tabs.setCurrentIndex(1)
            window.memory.search.setText("GI clamp")
            QTimer.singleShot(1500, memory_view)

        def memory_view() -> None:
            # edit a memory in place, as the artist would (double-click, type, Enter)
            model = window.memory.model
            row = next((r for r in range(model.rowCount()) if "14 minutes" in (model.index(r, 4).data() or "")), 0)
            model.setData(model.index(row, 4), SEED[2][1].replace("14 minutes", "12 minutes"))
            QTimer.singleShot(1200, memory_shot)

        def memory_shot() -> None:
            shot("memory.png")
            window.memory.pages.setCurrentIndex(1)
            QTimer.singleShot(800, settings_view)

        def settings_view() -> None:
            panel = window.memory.settings
            if panel.current.rowCount():
                panel.table.selectRow(0)
            QTimer.singleShot(800, settings_shot)

        def settings_shot() -> None:
            shot("settings.png")
            for reply in BRIEF_REPLIES:
                srv.queue_reply(reply)
            window.end_of_day()
            QTimer.singleShot(400, wait_brief)

        def wait_brief() -> None:
            if window.briefing.cancel_event is not None:
                return QTimer.singleShot(200, wait_brief)
            shot("brief.png")
            gpu_view()

        def gpu_view() -> None:
            # the VRAM guard on a recorded Octane render (this machine has no NVIDIA GPU)
            from app.gpu.trace import read_trace
            from app.services.gpu_guard import GpuGuard

            guard = GpuGuard(settings, source=None, conversation=window.services.conversation, synchronous=True)
            window.guard_watch.attach_guard(guard)
            window.tabs.setCurrentIndex(2)
            for sample in read_trace(Path(__file__).resolve().parent.parent / "traces" / "octane_render_start.jsonl"):
                guard.step(sample)
                app.processEvents()
            shot("gpu.png")
            guard.stop()
            window.close()
            app.quit()

        QTimer.singleShot(300, ask)
        app.exec()
    return 0 if steps else 1


if __name__ == "__main__":
    args = sys.argv[1:]
    wanted = tuple(int(x) for x in args[1].split("x")) if len(args) > 1 else (620, 860)
    sys.exit(main(Path(args[0] if args else "docs/screenshots"), wanted, args[2] if len(args) > 2 else ""))

"""The window open on a real desktop while other Kelvin processes write its project, and screenshots
of what it shows (run under an X display with a window manager: Xvfb + openbox)::

    Xvfb :77 -screen 0 1600x1000x24 & DISPLAY=:77 openbox &
    DISPLAY=:77 KELVIN_BLENDER_PYTHON=… .venv/bin/python -m tests.support.shared_session docs/screenshots

A 400 px sidebar first: the window asks a question of its own while a terminal runs `kelvin chat
--once`, `kelvin memory import` and `kelvin settings set`, and Blender's add-on sends the forest scene
(a real bpy session); then the same window maximised. Saves ``shared-*.png`` (the window) and
``shared-desktop-*.png`` (the whole screen, as ``import -window root`` sees it)."""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from tests.support.ollama_server import OllamaTestServer

ROOT = Path(__file__).resolve().parent.parent.parent
ADDON = """
import bpy, sys
bpy.ops.wm.open_mainfile(filepath={forest!r})
bpy.ops.preferences.addon_install(filepath={zipped!r}, overwrite=True)
bpy.ops.preferences.addon_enable(module="kelvin_sync")
bpy.context.preferences.addons["kelvin_sync"].preferences.project = "Forest"
bpy.ops.kelvin.send()
sys.modules["kelvin_sync"].SENDER.done.wait(300)
print(sys.modules["kelvin_sync"].SENDER.status.line())
"""
DAY = [("user", "Blender Cycles for the forest flythrough, shot FR_020."),
       ("assistant", "For the fog, clamp the indirect light at about 7 and keep max samples around 1024."),
       ("user", "Decision: clamp indirect 7 on the hero frames, max samples 1024.")]


def main(out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="kelvin-shared-"))
    os.environ.update(KELVIN_CONFIG_DIR=str(work / "config"), KELVIN_DATA_DIR=str(work / "data"), KELVIN_EMBEDDER="none")
    blender = os.environ.get("KELVIN_BLENDER_PYTHON", "")
    with OllamaTestServer(delay_s=0.02) as srv:
        os.environ["KELVIN_OLLAMA_HOST"] = srv.host
        from app.config import load
        from app.core.records import parse_ts
        from app.services.memory import MemoryService
        from app.services.projects import Projects
        from app.ui.app import open_window

        settings = load({"ollama_host": srv.host, "project": "Forest"})
        seed = MemoryService(settings)
        Projects(seed).ensure("Forest")
        for i, (role, text) in enumerate(DAY):
            seed.commit(text, role=role, project="Forest", conversation_id="tuesday",
                        ts_ms=parse_ts("2026-11-24T10:00:00Z") + i * 60_000)
        seed.close()
        py = [sys.executable, "-m", "app"]
        subprocess.run(py + ["scene", "addon", "--out", str(work / "kelvin_sync.zip")], check=True, cwd=ROOT,
                       capture_output=True)
        forest = work / "forest.blend"
        if blender:
            subprocess.run([blender, str(ROOT / "tests" / "support" / "blend_scene.py"), str(forest)], check=True,
                           capture_output=True, cwd=ROOT)
        day = work / "wednesday.jsonl"
        day.write_text("".join(
            f'{{"project": "Forest", "conversation_id": "wednesday", "text": "Fog card test {i}: density 0.0{i}", '
            f'"timestamp": "2026-11-25T09:{i:02d}:00Z"}}\n' for i in range(1, 9)), encoding="utf-8")
        app = QApplication(sys.argv[:1])
        window = open_window(settings, app)
        window.resize(400, 900)
        window.move(1180, 40)
        procs: list[subprocess.Popen] = []

        def desktop(name: str) -> None:
            subprocess.run(["import", "-window", "root", str(out / name)], check=False)

        def shot(name: str) -> None:
            window.grab().save(str(out / name))
            print(f"saved {out / name} ({window.width()}x{window.height()})", flush=True)

        def started() -> None:
            if window.services is None or window.chat.composer.isReadOnly():
                return QTimer.singleShot(100, started)
            session = work / "addon.py"
            session.write_text(ADDON.format(forest=str(forest), zipped=str(work / "kelvin_sync.zip")), encoding="utf-8")
            env = {**os.environ, "BLENDER_USER_RESOURCES": str(work / "blender-user")}
            run = [py + ["--project", "Forest", "chat", "--once", "What did we decide for the fog?"],
                   py + ["memory", "import", str(day)],
                   py + ["--project", "Forest", "settings", "set", "clamp indirect", "7", "--engine", "cycles",
                         "--note", "set in a terminal"]]
            if blender:
                run.append([blender, str(session)])
            for argv in run:
                procs.append(subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE))
            window.chat.composer.setPlainText("And the max samples for the hero frames?")
            window.chat._submit()
            QTimer.singleShot(500, waiting)

        def waiting() -> None:
            if any(p.poll() is None for p in procs) or window._turn is not None:
                return QTimer.singleShot(200, waiting)
            for p in procs:
                said = p.communicate()[0].decode(errors="replace").strip().splitlines()
                print(p.args[-1] if isinstance(p.args, list) else p.args, "->", said[-1:] if said else "", flush=True)
            QTimer.singleShot(1500, sidebar)

        def sidebar() -> None:
            shot("shared-chat-400.png")
            desktop("shared-desktop-400.png")
            window.tabs.setCurrentIndex(window.views.indexOf(window.memory))
            window.memory.pages.setCurrentIndex(1)
            QTimer.singleShot(1500, settings_tab)

        def settings_tab() -> None:
            shot("shared-settings-400.png")
            window.showMaximized()
            window.memory.pages.setCurrentIndex(0)
            QTimer.singleShot(2000, full)

        def full() -> None:
            shot("shared-memory-full.png")
            desktop("shared-desktop-full.png")
            window.tabs.setCurrentIndex(window.views.indexOf(window.chat))
            QTimer.singleShot(1200, last)

        def last() -> None:
            shot("shared-chat-full.png")
            window.quit()
            app.quit()

        QTimer.singleShot(300, started)
        t0 = time.monotonic()
        app.exec()
        print(f"session took {time.monotonic() - t0:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/screenshots")))

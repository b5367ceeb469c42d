"""A screenshot of the Settings tab after a Blender scene was sent to Kelvin: where the scene
differs from what was decided (run under a display: ``python -m tests.support.scene_shot docs/screenshots
[WxH] [suffix] [--blend FILE.blend]``; with --blend the file is read by real Blender, else the scene
format the add-on sends is used as it is)."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QApplication

from tests.support.ollama_server import OllamaTestServer

DAY = [
    ("user", "Blender 4.2 with Cycles for the forest flythrough, shot FR_020."),
    ("assistant", "For the fog, clamp the indirect light at about 7 and keep max samples around 1024 with denoising."),
    ("user", "Decision: clamp indirect 7 on the hero frames, max samples 1024. Focal length 85mm stays."),
]


def main(out: Path, size: tuple[int, int] = (620, 860), suffix: str = "", blend: str = "") -> int:
    from app.core.records import parse_ts
    from app.core.render_settings.scene import read
    from app.services.memory import MemoryService
    from app.services.settings_ledger import SettingsLedger
    from app.config import load
    from app.ui.app import open_window
    from tests.test_scene_ledger import SCENE

    with tempfile.TemporaryDirectory() as data, OllamaTestServer() as srv:
        settings = load({"ollama_host": srv.host, "data_dir": str(Path(data) / "data"), "project": "Forest"})
        seed = MemoryService(settings)
        for i, (role, text) in enumerate(DAY):
            seed.commit(text, role=role, project="Forest", conversation_id="tuesday", ts_ms=parse_ts("2026-11-24T10:00:00Z") + i * 60_000)
        seed.flush()
        ledger = SettingsLedger(seed)
        if blend:
            from app.services.blender import read_blend

            data_ = read_blend(blend, setting=settings.blender_python)
        else:
            data_ = SCENE
        ledger.import_scene(read(data_, ledger.catalogue), "Forest")
        seed.close()
        app = QApplication(sys.argv[:1])
        window = open_window(settings, app)
        window.resize(*size)

        def show() -> None:
            if window.services is None:
                return QTimer.singleShot(100, show)
            window.tabs.setCurrentIndex(window.views.indexOf(window.memory))
            window.memory.pages.setCurrentIndex(1)
            window.browser.settings()
            QTimer.singleShot(1500, shot)

        def shot() -> None:
            name = out / f"scene-diff{suffix}.png"
            window.grab().save(str(name))
            print(f"saved {name} ({window.width()}x{window.height()})", flush=True)
            window.quit()

        QTimer.singleShot(200, show)
        app.exec()
    return 0


if __name__ == "__main__":
    args = [a for a in sys.argv[1:]]
    blend = ""
    if "--blend" in args:
        blend = args[args.index("--blend") + 1]
        del args[args.index("--blend"):args.index("--blend") + 2]
    w, h = (int(x) for x in (args[1] if len(args) > 1 else "620x860").split("x"))
    sys.exit(main(Path(args[0]), (w, h), args[2] if len(args) > 2 else "", blend))

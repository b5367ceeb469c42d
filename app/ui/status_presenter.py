"""What the header says about the model: whether Ollama answers and has the chat model (looked at on
a worker, every few seconds), and the mode in use — the artist's choice, the VRAM guard's, or
memory only while the model cannot answer."""
from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from app.ui.header import Header
from app.ui.workspace import Workspace

MODES = (("gpu", "GPU"), ("cpu", "CPU"), ("recall", "Recall (no model)"), ("memory", "Memory only"))
CHOSEN_MODES = 3  # the last one is not chosen: it says Kelvin answers from memory because the model cannot
OLLAMA_CHECK_MS = 10_000


class StatusPresenter(QObject):
    ollama_changed = Signal(str)  # why the model cannot answer now ("" when it can)

    def __init__(self, header: Header, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.header = header
        self.workspace = workspace
        self.problem = ""  # why the model cannot answer now ("" when it can, or not known yet)
        box = header.mode_box
        for key, label in MODES:
            box.addItem(label, key)
        box.model().item(CHOSEN_MODES).setEnabled(False)  # shown, never chosen
        box.activated.connect(self.set_mode)
        self.timer = QTimer(self, interval=OLLAMA_CHECK_MS, timeout=self.check_ollama)
        workspace.attached.connect(self._attached)

    def _attached(self, services) -> None:
        self.check_ollama()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()

    # ---- the model -----------------------------------------------------------------------------------
    def check_ollama(self) -> None:
        ws = self.workspace
        if ws.services is None:
            return
        c = ws.conversation

        def probe(report):
            try:
                version = c.backend.version()
            except Exception as exc:  # noqa: BLE001 — any failure is "not reachable", said plainly
                return "Ollama: not running", str(exc), f"Ollama is not running at {c.backend.host}"
            try:
                missing = "" if c.backend.has_model(c.model) else f"Ollama has no model {c.model} (pull it in Setup…)"
            except Exception:  # noqa: BLE001 — the next check tells
                missing = ""
            return f"Ollama {version} · {c.model}", missing or f"Ollama {version} at {c.backend.host}", missing

        def seen(r) -> None:
            self.header.set_state(self.header.ollama_label, r[0], r[1],
                                  "bad" if "not running" in r[0] else "warn" if r[2] else "ok")
            self.model_seen(r[2])

        ws.pools.run(ws.pools.general, probe, returned=seen)

    def model_seen(self, problem: str) -> None:
        """Why the model cannot answer ("" when it can), as a check or a turn just found."""
        changed = problem != self.problem
        self.problem = problem
        self.show_mode()
        if changed:
            self.ollama_changed.emit(problem)

    # ---- the mode ------------------------------------------------------------------------------------
    def set_mode(self, index: int) -> None:
        c = self.workspace.conversation
        box = self.header.mode_box
        if c is not None and index < CHOSEN_MODES:
            c.set_mode(box.itemData(index), reason="the artist")
            self.workspace.say(f"Mode: {box.itemText(index)}", 3000)
        self.show_mode()

    def show_mode(self) -> None:
        """The mode in use, and why: the artist's choice, the VRAM guard's, or memory only because
        the model cannot answer (Ollama down, the model missing)."""
        c = self.workspace.conversation
        chosen = c.mode.value if c is not None else self.workspace.settings.mode
        if chosen != "recall" and self.problem:
            index, tip = CHOSEN_MODES, f"Memory only — {self.problem}. Answers are quoted from memory until " \
                                       "the model is back; the mode you chose comes back with it."
        else:
            index = [k for k, _ in MODES].index(chosen)
            why = c.mode_reason if c is not None and c.mode_reason and c.mode_reason != "the artist" else ""
            tip = {"gpu": "GPU: the model runs on the GPU", "cpu": "CPU: the model runs on the CPU, the render keeps "
                   "the VRAM (slower answers)", "recall": "Recall: no model; answers are quoted from memory"}[chosen]
            tip += f" ({why})" if why else ""
        self.header.mode_box.setCurrentIndex(index)
        self.header.mode_box.setToolTip(tip + "\nGPU · CPU · Recall: choose how Kelvin answers")

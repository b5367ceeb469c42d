"""What the window says about the model, the same everywhere within a second of it changing: whether
Ollama answers and has the chat model — asked every second, on a worker of its own with a short
timeout, so a hung Ollama never holds anything up — and the mode in use: the artist's choice, the
VRAM guard's, or memory only while the model cannot answer. The header, the tray, the Setup panel
and the brief follow :attr:`StatusPresenter.ollama_changed` and :attr:`StatusPresenter.seen`."""
from __future__ import annotations

from PySide6.QtCore import QObject, QThreadPool, QTimer, Signal

from app.ui.header import Header
from app.ui.words import plain_words
from app.ui.worker import Worker
from app.ui.workspace import Workspace

# one mode without a model, named plainly: chosen by the artist, or shown while the model cannot answer
MODES = (("gpu", "GPU"), ("cpu", "CPU"), ("recall", "Memory only"))
NO_MODEL = 2
OLLAMA_CHECK_MS = 1000  # Ollama coming or going is seen within a second
PROBE_TIMEOUT_S = 2.0
MODEL_EVERY = 10  # the chat model's presence is asked every tenth look (and whenever Ollama comes back)


class StatusPresenter(QObject):
    ollama_changed = Signal(str)  # why the model cannot answer now ("" when it can)
    seen = Signal(str, str, str)  # the header's words, their tooltip, their health ("ok", "warn", "bad")

    def __init__(self, header: Header, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.header = header
        self.workspace = workspace
        self.problem = ""  # why the model cannot answer now ("" when it can, or not known yet)
        box = header.mode_box
        for key, label in MODES:
            box.addItem(label, key)
        box.activated.connect(self.set_mode)
        self.timer = QTimer(self, interval=OLLAMA_CHECK_MS, timeout=self.check_ollama)
        self._pool = QThreadPool(self)  # its own thread: a probe never waits behind a search or a pull
        self._pool.setMaxThreadCount(1)
        self._probe = None  # the backend the probes use (a short timeout), made on the first look
        self._looking = False
        self._looks = 0
        self._last: tuple = ()
        workspace.attached.connect(self._attached)

    def _attached(self, services) -> None:
        self.check_ollama()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._pool.waitForDone(int(PROBE_TIMEOUT_S * 1000) + 1000)
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    # ---- the model -----------------------------------------------------------------------------------
    def check_ollama(self) -> None:
        ws = self.workspace
        if ws.services is None or self._looking:
            return
        c = ws.conversation
        if self._probe is None:
            from app.llm.backend import OllamaBackend

            self._probe = OllamaBackend(c.backend.host, PROBE_TIMEOUT_S)
        probe, model, host = self._probe, c.model, c.backend.host
        ask_model = self._looks % MODEL_EVERY == 0 or not self._last or self._last[2] == "bad"
        self._looks += 1
        was_missing = self._last[3] if self._last else ""

        def look(report):
            try:
                version = probe.version()
            except Exception as exc:  # noqa: BLE001 — any failure is "not running", said plainly
                return ("Ollama: not running", f"{plain_words(str(exc))} Setup… starts it.", "bad",
                        f"Ollama is not running at {host}")
            missing = was_missing
            if ask_model:
                try:
                    missing = "" if probe.has_model(model) else f"Ollama has no model {model}"
                except Exception:  # noqa: BLE001 — the next look tells
                    pass
            tip = f"{missing} (Setup… pulls it)" if missing else f"Ollama {version} at {host}"
            return f"Ollama {version} · {model}", tip, "warn" if missing else "ok", missing

        w = Worker(look)
        w.signals.returned.connect(self._seen)
        w.signals.finished.connect(lambda: setattr(self, "_looking", False))
        self._looking = True
        ws.pools.start(self._pool, w)

    def _seen(self, r: tuple) -> None:
        if r == self._last:
            return
        self._last = r
        words, tip, health, problem = r
        self.header.set_state(self.header.ollama_label, words, tip, health)
        self.seen.emit(words, tip, health)
        self.model_seen(problem)

    def model_seen(self, problem: str) -> None:
        """Why the model cannot answer ("" when it can), as a look or a turn just found."""
        changed = problem != self.problem
        self.problem = problem
        self.show_mode()
        if changed:
            self.ollama_changed.emit(problem)
            if self.workspace.services is not None:
                QTimer.singleShot(0, self, self.check_ollama)  # a turn saw it first: the header follows now

    # ---- the mode ------------------------------------------------------------------------------------
    def set_mode(self, index: int) -> None:
        c = self.workspace.conversation
        box = self.header.mode_box
        if c is not None:
            c.set_mode(box.itemData(index), reason="the artist")
            self.workspace.say(f"Mode: {box.itemText(index)}", 3000)
        self.show_mode()

    def show_mode(self) -> None:
        """The mode in use, and why: the artist's choice, the VRAM guard's, or memory only because
        the model cannot answer (Ollama down, the model missing)."""
        c = self.workspace.conversation
        chosen = c.mode.value if c is not None else self.workspace.settings.mode
        if chosen != "recall" and self.problem:
            index = NO_MODEL
            tip = (f"Memory only — {self.problem}. Answers are quoted from memory until the model is back; "
                   f"{dict(MODES)[chosen]}, as you chose, comes back with it.")
        else:
            index = [k for k, _ in MODES].index(chosen)
            why = c.mode_reason if c is not None and c.mode_reason and c.mode_reason != "the artist" else ""
            tip = {"gpu": "GPU: the model runs on the GPU", "cpu": "CPU: the model runs on the CPU, the render keeps "
                   "the VRAM (slower answers)", "recall": "Memory only: no model; answers are quoted from memory"}[chosen]
            tip += f" ({why})" if why else ""
        self.header.mode_box.setCurrentIndex(index)
        self.header.mode_box.setToolTip(tip + "\nGPU · CPU · Memory only: choose how Kelvin answers")

"""What the window says about the model, the same everywhere within a second of it changing: whether
the model server (Ollama, or an OpenAI-compatible one) answers and has the chat model, and the mode
in use — the artist's choice, the VRAM guard's, or memory only while the model cannot answer. The
Setup panel's choice of another server lands here too (:meth:`StatusPresenter.use_server`).

Every second Kelvin knocks at Ollama's port (a connection opened and closed at once, on the UI
thread's event loop: no thread, no waiting); when the answer changes — Ollama came or went — and
every tenth second otherwise, it asks Ollama itself (its version and whether it has the chat model)
on a worker of its own with a short timeout, so a hung Ollama never holds anything up. The header, the tray, the Setup panel
and the brief follow :attr:`StatusPresenter.ollama_changed` and :attr:`StatusPresenter.seen`."""
from __future__ import annotations

from PySide6.QtCore import QObject, QThreadPool, QTimer, QUrl, Signal
from PySide6.QtNetwork import QAbstractSocket, QTcpSocket

from app.ui.header import Header
from app.ui.words import plain_words
from app.ui.worker import Worker
from app.ui.workspace import Workspace

# one mode without a model, named plainly: chosen by the artist, or shown while the model cannot answer
MODES = (("gpu", "GPU"), ("cpu", "CPU"), ("recall", "Memory only"))
NO_MODEL = 2
OLLAMA_CHECK_MS = 1000  # Ollama coming or going is seen within a second
PROBE_TIMEOUT_S = 2.0
MODEL_EVERY = 10  # Ollama itself is asked every tenth second (and whenever its port answers otherwise)
KNOCK_TIMEOUT_MS = 2000


class StatusPresenter(QObject):
    ollama_changed = Signal(str)  # why the model cannot answer now ("" when it can)
    seen = Signal(str, str, str)  # the header's words, their tooltip, their health ("ok", "warn", "bad")
    server_switched = Signal(str)  # Kelvin talks to another server now; why the guard cannot unload there ("" if it can)

    def __init__(self, header: Header, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.header = header
        self.workspace = workspace
        self.problem = ""  # why the model cannot answer now ("" when it can, or not known yet)
        box = header.mode_box
        for key, label in MODES:
            box.addItem(label, key)
        box.activated.connect(self.set_mode)
        self.timer = QTimer(self, interval=OLLAMA_CHECK_MS, timeout=self._knock)
        self._socket = QTcpSocket(self)
        self._socket.connected.connect(lambda: self._answered(True))
        self._socket.errorOccurred.connect(lambda _error: self._answered(False))
        self._knocked_ms = 0
        self._ticks = 0
        self._port_open: bool | None = None
        self._pool = QThreadPool(self)  # its own thread: a probe never waits behind a search or a pull
        self._pool.setMaxThreadCount(1)
        self._probe = None  # the backend the probes use (a short timeout), made on the first look
        self._looking = False
        self._again = False
        self._looks = 0
        self._last: tuple = ()
        workspace.attached.connect(self._attached)

    def _attached(self, services) -> None:
        self.check_ollama()
        self.timer.start()

    def stop(self) -> None:
        self.timer.stop()
        self._socket.abort()
        self._pool.waitForDone(int(PROBE_TIMEOUT_S * 1000) + 1000)
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    # ---- the model -----------------------------------------------------------------------------------
    def _knock(self) -> None:
        """A tick: knock at Ollama's port; every tenth, ask Ollama itself."""
        c = self.workspace.conversation
        if c is None:
            return
        self._ticks += 1
        if self._ticks % MODEL_EVERY == 0:
            self.check_ollama()
        state = self._socket.state()
        if state != QAbstractSocket.SocketState.UnconnectedState:
            if self._ticks * OLLAMA_CHECK_MS - self._knocked_ms >= KNOCK_TIMEOUT_MS:
                self._socket.abort()  # no answer at all: as good as gone
                self._answered(False)
            return
        url = QUrl(c.backend.host if "://" in c.backend.host else f"http://{c.backend.host}")
        self._knocked_ms = self._ticks * OLLAMA_CHECK_MS
        self._socket.connectToHost(url.host(), url.port(11434))

    def _answered(self, open_: bool) -> None:
        self._socket.abort()
        if open_ != self._port_open:
            self._port_open = open_
            self.check_ollama()  # it came or went: Ollama itself says what the header shows

    def check_ollama(self) -> None:
        ws = self.workspace
        if ws.services is None:
            return
        if self._looking:  # asked again while a look is out: one more once it is back
            self._again = True
            return
        c = ws.conversation
        if self._probe is None:
            from app.llm.servers import connect

            self._probe = connect(ws.settings, PROBE_TIMEOUT_S)
        probe, model, host = self._probe, c.model, c.backend.host
        ollama = probe.kind == "ollama"
        ask_model = self._looks % MODEL_EVERY == 0 or not self._last or self._last[2] == "bad"
        self._looks += 1
        was_missing = self._last[3] if self._last else ""

        def look(report):
            try:
                version = probe.version()
            except Exception as exc:  # noqa: BLE001 — any failure is "not running", said plainly
                name = "Ollama" if ollama else "Model server"
                return (f"{name}: not running", f"{plain_words(str(exc))} " + ("Setup… starts it." if ollama else
                        "Setup… chooses another."), "bad", f"{'Ollama' if ollama else 'The model server'} is not "
                        f"running at {host}")
            name = f"Ollama {version}" if ollama else version
            missing = was_missing
            if ask_model:
                try:
                    missing = "" if probe.has_model(model) else f"{probe.label} has no model {model}"
                except Exception:  # noqa: BLE001 — the next look tells
                    pass
            tip = f"{missing} (Setup… {'pulls it' if ollama else 'picks one it has'})" if missing else f"{name} at {host}"
            return f"{name} · {model}", tip, "warn" if missing else "ok", missing

        w = Worker(look)
        w.signals.returned.connect(self._seen)
        w.signals.finished.connect(self._looked)
        self._looking = True
        ws.pools.start(self._pool, w)

    def use_server(self, settings) -> None:
        """The Setup panel saved another model server (or chat model): the conversation and the VRAM
        guard talk to it from now on (switched on a worker: a reply streaming now stops first), and the
        header looks at it at once."""
        ws = self.workspace
        ws.settings = settings
        services = ws.services
        if services is None:
            return
        c, guard = services.conversation, services.guard

        def switch(report) -> str:
            from app.llm.servers import connect

            c.use_server(connect(settings), settings.chat_model)
            if guard is None:
                return ""
            guard.use_server(connect(settings, timeout_s=3.0))
            return guard.unload_problem()

        def switched(cannot: str) -> None:
            if self._probe is not None:
                self._probe.close()
            self._probe, self._last, self._port_open = None, (), None
            self.server_switched.emit(cannot)
            self.check_ollama()

        ws.pools.run(ws.pools.general, switch, returned=switched)

    def _looked(self) -> None:
        self._looking = False
        if self._again and self.timer.isActive():
            self._again = False
            self.check_ollama()

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
        the model cannot answer (its server down, the model missing)."""
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

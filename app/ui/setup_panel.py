"""The setup panel: what Kelvin needs, what is missing, and the fix, one row each.

Shown when the model server is not running or the chat model is missing, and from "Setup…" in the
window. ``app.services.setup`` (the doctor's checks, the pull, saving the choices) does the work, on
workers; the panel only shows the answers and offers the fix: choose the model server (Ollama, or an
OpenAI-compatible one: LM Studio, llama.cpp …) and its address, start Ollama, pull a model with a
progress bar (or pick one the server has, where Kelvin cannot pull), choose the data folder. Nothing here is an error screen: "Continue" always goes on
to the chat (recall mode answers from memory without any model).
"""
from __future__ import annotations

import logging
import sys
from dataclasses import replace

from PySide6.QtCore import QProcess, QProcessEnvironment, Qt, QTimer, Signal
from PySide6.QtWidgets import (QFileDialog, QFrame, QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton,
                               QScrollArea, QVBoxLayout, QWidget)

from app.llm.errors import ModelServerUnavailable
from app.services import doctor, setup
from app.services.doctor import FAIL, INFO, OK, WARN, Check
from app.services.setup import DataChoice, Findings, PullState, ServerChoice
from app.config import ConfigError, save_setting
from app.ui.server_chooser import ModelPicker, ServerChooser
from app.ui.words import plain_words
from app.ui.worker import Pools, Worker

log = logging.getLogger("kelvin.ui.setup")

ROWS = (("ollama", "Model server"), ("chat", "Chat model"), ("embedder", "Embedder"), ("gpu", "GPU"),
        ("data", "Data folder"))
_ROW_OF = {"Ollama": "ollama", doctor.SERVER: "ollama", "models": "chat", "chat model": "chat",
           "embedder": "embedder", "GPU": "gpu", "data folder": "data", "unloading": "unloading"}
OPENAI_START = ("Start it (LM Studio: Developer → Start Server; llama.cpp: llama-server -m MODEL.gguf), or choose "
                "another server below.")
GLYPHS = {OK: "✓", WARN: "!", FAIL: "✕", INFO: "i", "": "·"}
INSTALL_URL = "https://ollama.com/download"
RECALL = "Until then Kelvin answers from memory alone (Memory only, in the mode box)."
NO_GPU = "No NVIDIA GPU found: the VRAM guard is off; Kelvin works normally."
RECHECK_MS = 2000  # after "Start Ollama", look again this often …
START_CHECKS = 8   # … this many times before saying it did not come up


class _Abort:
    """``backend.pull`` polls ``cancel.is_set()``; this asks the worker, so Cancel and quitting
    (``Pools.wait`` aborts every worker) both stop the download."""

    worker: Worker | None = None

    def is_set(self) -> bool:
        return self.worker is not None and self.worker.aborted


def _size(n: int) -> str:
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB"


class SetupRow(QFrame):
    """One thing Kelvin needs: a status mark, what it found, the fix (a hint and maybe a button),
    and a progress bar while a model downloads."""

    def __init__(self, key: str, title: str):
        super().__init__(objectName="setupRow")
        self.key, self.status, self._act = key, "", None
        self.glyph = QLabel(GLYPHS[""], objectName="setupGlyph", alignment=Qt.AlignmentFlag.AlignCenter)
        self.glyph.setFixedWidth(22)
        self.title = QLabel(title, objectName="setupTitle")
        self.detail = QLabel("Checking …", objectName="setupDetail", wordWrap=True)
        self.hint = QLabel(objectName="setupHint", wordWrap=True)
        for label in (self.detail, self.hint):  # selectable: paths and the install address can be copied
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            label.setTextFormat(Qt.TextFormat.PlainText)
        self.hint.hide()
        self.action = QPushButton(objectName="setupAction", clicked=self._clicked)
        self.action.hide()
        self.progress = QProgressBar(objectName="setupProgress", minimum=0, maximum=100)
        self.step = QLabel(objectName="setupStep")
        self.cancel = QPushButton("Cancel", objectName="setupCancel")
        bar = QHBoxLayout()
        bar.setContentsMargins(0, 0, 0, 0)
        bar.addWidget(self.progress, 1)
        bar.addWidget(self.cancel)
        self.pulling = QWidget()
        pulling = QVBoxLayout(self.pulling)
        pulling.setContentsMargins(0, 2, 0, 0)
        pulling.addLayout(bar)
        pulling.addWidget(self.step)
        self.pulling.hide()

        grid = QGridLayout(self)
        grid.setContentsMargins(4, 8, 4, 8)
        grid.setHorizontalSpacing(8)
        grid.addWidget(self.glyph, 0, 0, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.title, 0, 1, Qt.AlignmentFlag.AlignTop)
        grid.addWidget(self.action, 0, 2, 2, 1, Qt.AlignmentFlag.AlignTop)  # beside the title and the detail
        grid.addWidget(self.detail, 1, 1)
        grid.addWidget(self.hint, 2, 1, 1, 2)
        grid.addWidget(self.pulling, 3, 1, 1, 2)
        grid.setColumnStretch(1, 1)
        self._grid = grid

    def add_below(self, widget: QWidget) -> None:
        """A control of the row's own under its text (the server chooser, the model picker)."""
        self._grid.addWidget(widget, 4, 1, 1, 2)

    def show_status(self, status: str, detail: str, hint: str = "", tooltip: str = "") -> None:
        self.status = status
        self.glyph.setText(GLYPHS.get(status, GLYPHS[""]))
        self.glyph.setProperty("status", status)
        self.glyph.style().polish(self.glyph)
        self.detail.setText(detail)
        self.detail.setToolTip(tooltip)
        self.say(hint)

    def say(self, hint: str) -> None:
        self.hint.setText(hint)
        self.hint.setVisible(bool(hint))

    def offer(self, text: str = "", act=None) -> None:
        """The fix button (none when ``text`` is empty)."""
        self._act = act
        self.action.setText(text)
        self.action.setEnabled(True)
        self.action.setVisible(bool(text))

    def _clicked(self) -> None:
        if self._act is not None:
            self._act()

    def text(self) -> str:
        """Everything the row says, for tests and screen readers."""
        return " ".join(t for t in (self.title.text(), self.detail.text(), self.hint.text() if self.hint.isVisible()
                                    else "", self.step.text() if self.pulling.isVisible() else "") if t)


class SetupPanel(QWidget):
    done = Signal()                      # "Continue": go on to the chat
    settings_changed = Signal(object)    # the Config as now saved (a new data folder: after a restart)
    checked = Signal(object)             # list[Check], after every look
    pull_progress = Signal(str, int, str)  # model, overall percent, Ollama's step
    pull_finished = Signal(str, str)     # model, "done" | "cancelled" | "failed"
    server_changed = Signal(object)      # the Config with the model server (and chat model) now in use

    def __init__(self, settings, pools: Pools, parent: QWidget | None = None):
        super().__init__(parent, objectName="setup")
        self.settings, self.pools = settings, pools
        self.checks: list[Check] = []
        self.findings: Findings | None = None
        self._look: Worker | None = None
        self._look_again = False
        self._pulls: dict[str, Worker] = {}
        self._starts_left = 0
        self._data_note = ""
        self._outcome: dict[str, str] = {}  # row key -> how its last pull ended, kept over re-checks
        self.started_ollama = False  # Kelvin ran `ollama serve` (it outlives Kelvin, as the Ollama app would)
        self._recheck = QTimer(self, singleShot=True, interval=RECHECK_MS, timeout=self.refresh)

        heading = QLabel("Set up Kelvin", objectName="setupHeading")
        self.summary = QLabel("Checking what Kelvin needs …", objectName="setupSummary", wordWrap=True)
        self.rows = {key: SetupRow(key, title) for key, title in ROWS}
        for row in self.rows.values():
            row.cancel.clicked.connect(lambda _=False, row=row: self._cancel_row(row))
        self.rows["data"].offer("Choose…", self.choose_data_folder)  # needs no check first
        self.chooser = ServerChooser(settings.model_server, {"ollama": settings.ollama_host,
                                                             "openai": settings.openai_url})
        self.chooser.chosen.connect(self.use_server)
        self.rows["ollama"].add_below(self.chooser)
        self.picker = ModelPicker()
        self.picker.chosen.connect(self.use_model)
        self.rows["chat"].add_below(self.picker)
        self.check_again = QPushButton("Check again", clicked=self.refresh)
        self.go_on = QPushButton("Continue", objectName="send", clicked=lambda: self.done.emit())
        self.go_on.setToolTip("Go to the chat; everything here stays reachable from Setup…")

        body = QWidget()
        rows = QVBoxLayout(body)
        rows.setContentsMargins(0, 0, 0, 0)
        for row in self.rows.values():
            rows.addWidget(row)
        rows.addStretch(1)
        scroll = QScrollArea(widgetResizable=True, frameShape=QFrame.Shape.NoFrame)
        scroll.setWidget(body)
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.check_again)
        buttons.addWidget(self.go_on)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(14, 12, 14, 12)
        layout.addWidget(heading)
        layout.addWidget(self.summary)
        layout.addWidget(scroll, 1)
        layout.addLayout(buttons)

    # ---- looking ---------------------------------------------------------------------------------
    def blocking(self) -> list[Check]:
        """What keeps Kelvin from answering with the model, as last checked (empty: nothing)."""
        return doctor.blocking(self.checks)

    def refresh(self) -> None:
        """Run the checks again (on a worker); the rows update when they are done."""
        if self._look is not None:
            self._look_again = True
            return
        self.check_again.setEnabled(False)
        settings = self.settings
        w = Worker(lambda report: setup.look(settings))
        w.signals.returned.connect(self._show)
        w.signals.errored.connect(self._look_failed)
        w.signals.finished.connect(self._look_over)
        self._look = self.pools.start(self.pools.general, w)

    def _look_over(self) -> None:
        self._look = None
        self.check_again.setEnabled(True)
        if self._look_again:
            self._look_again = False
            self.refresh()

    def _look_failed(self, exc: BaseException) -> None:
        self.summary.setText(f"Kelvin could not finish its checks: {exc}")
        sys.excepthook(type(exc), exc, exc.__traceback__)  # the doctor never raises on purpose: a bug

    def _show(self, findings: Findings) -> None:
        self.findings, self.checks = findings, findings.checks
        found: dict[str, Check] = {}
        for c in findings.checks:
            found.setdefault(_ROW_OF.get(c.name, ""), c)
        self._show_ollama(found["ollama"], findings.ollama_binary)
        server = "Ollama" if self.settings.model_server == "ollama" else "the model server"
        for key in ("chat", "embedder"):
            if key in found:
                self._show_model(self.rows[key], found[key])
            elif not self._pulling(self.rows[key]):
                self.rows[key].show_status("", f"Checked once {server} answers.")
                self.rows[key].offer()
        self.picker.offer(list(findings.models) if found.get("chat") and found["chat"].status == FAIL
                          and not found["chat"].pull else [])
        self._show_gpu(found["gpu"], found.get("unloading"))
        self._show_data(found["data"])
        blocking = doctor.blocking(findings.checks)
        if blocking:
            self.summary.setText(f"Kelvin can answer from memory now (Memory only). For answers from the model, "
                                 f"fix what is marked {GLYPHS[FAIL]} below.")
        elif any(c.status in (WARN, FAIL) for c in findings.checks):
            self.summary.setText(f"Kelvin is ready. What is marked {GLYPHS[WARN]} only limits it.")
        else:
            self.summary.setText("Everything Kelvin needs is in place.")
        self.checked.emit(findings.checks)

    def _show_ollama(self, c: Check, binary: str | None) -> None:
        row = self.rows["ollama"]
        if c.status != FAIL:
            self._starts_left = 0
            row.show_status(c.status, c.detail)
            row.offer()
            return
        local, _ = setup.ollama_address(self.settings.ollama_host)
        plain = c.detail.split(";")[0].rstrip(".") + "."
        if self.settings.model_server != "ollama":
            row.show_status(FAIL, plain_words(plain), f"{OPENAI_START} {RECALL}")
            row.offer()
            return
        if self._starts_left:
            self._starts_left -= 1
            if self._starts_left:
                row.show_status(FAIL, plain, "Starting Ollama … Kelvin looks again in a moment.")
                self._recheck.start()
                return
            row.show_status(FAIL, plain, "Ollama did not come up. Start it by hand (open the Ollama app, or start "
                            "Ollama the way you installed it); Kelvin sees it within a second.")
        elif binary and local:
            row.show_status(FAIL, plain, f"Start Ollama starts it in the background, on this computer. {RECALL}")
        elif not binary and local:
            row.show_status(FAIL, plain, f"Ollama is not installed on this computer. Get it from {INSTALL_URL} and "
                            f"open it; Kelvin sees it within a second. {RECALL}")
        else:
            row.show_status(FAIL, plain, f"Kelvin talks to Ollama at {self.settings.ollama_host}: start it on that "
                            f"computer; Kelvin sees it within a second. {RECALL}")
        if binary and local:
            row.offer("Start Ollama", lambda: self.start_ollama(binary))
        else:
            row.offer()

    def _show_model(self, row: SetupRow, c: Check) -> None:
        if self._pulling(row):
            return
        outcome = self._outcome.get(row.key, "")
        if c.pull:
            why = ("Kelvin answers from memory alone (Memory only) until it is here; pulling downloads it once "
                   "(a few GB)." if row.key == "chat" else "Pulling it turns on search by meaning.")
            row.show_status(c.status, c.detail, outcome or why)
            row.offer(f"Pull {c.pull}", lambda: self.pull(c.pull))
        else:
            row.show_status(c.status, plain_words(c.detail), outcome or (plain_words(c.fix) if c.status != OK else ""))
            row.offer()

    def _show_gpu(self, c: Check, unloading: Check | None = None) -> None:
        if c.status == OK:  # a server that cannot unload: the guard cannot free the VRAM, said here too
            self.rows["gpu"].show_status(OK, c.detail, f"The VRAM guard cannot unload: {unloading.detail}."
                                         if unloading else "")
        else:  # no GPU is not a failure: Kelvin works, only the guard is off
            self.rows["gpu"].show_status(INFO, NO_GPU, tooltip=c.detail)

    # ---- choosing the model server -------------------------------------------------------------
    def use_server(self, kind: str, url: str) -> None:
        """Save the server (and its address) in kelvin.toml; the window talks to it from now on."""
        row, settings = self.rows["ollama"], self.settings
        self.chooser.use.setEnabled(False)
        row.say("Saving …")
        w = Worker(lambda report: setup.choose_server(settings, kind, url))
        w.signals.returned.connect(self._server_chosen)
        w.signals.errored.connect(lambda exc: self._choice_failed(row, exc))
        w.signals.finished.connect(lambda: self.chooser.use.setEnabled(True))
        self.pools.start(self.pools.general, w)

    def _server_chosen(self, choice: ServerChoice) -> None:
        self.settings = choice.settings
        name = "Ollama" if choice.settings.model_server == "ollama" else "the OpenAI-compatible server"
        note = f"Saved: Kelvin talks to {name} at {choice.settings.model_host}."
        if choice.override:
            note += (" This Kelvin was started with another model server set for it from outside the window, which "
                     "wins again at the next start until Kelvin is started without it.")
        self.rows["ollama"].say(note)
        self.server_changed.emit(choice.settings)
        self.refresh()

    def use_model(self, name: str) -> None:
        """Chat with ``name``, one of the models the server has (saved as chat_model)."""
        row = self.rows["chat"]
        w = Worker(lambda report: save_setting("chat_model", name))
        w.signals.returned.connect(lambda path: self._model_chosen(name, path))
        w.signals.errored.connect(lambda exc: self._choice_failed(row, exc))
        self.pools.start(self.pools.general, w)

    def _model_chosen(self, name: str, path) -> None:
        self.settings = replace(self.settings, chat_model=name)
        self._outcome["chat"] = f"Saved: Kelvin chats with {name}."
        self.server_changed.emit(self.settings)
        self.refresh()

    def _choice_failed(self, row: SetupRow, exc: BaseException) -> None:
        if not isinstance(exc, (ConfigError, OSError)):
            sys.excepthook(type(exc), exc, exc.__traceback__)
        row.say(f"Not saved: {exc}")

    def _show_data(self, c: Check) -> None:
        row = self.rows["data"]
        row.show_status(c.status, c.detail, self._data_note or (plain_words(c.fix) if c.status != OK else ""))
        row.offer("Choose…", self.choose_data_folder)

    # ---- fixing: Ollama ------------------------------------------------------------------------
    def start_ollama(self, binary: str | None) -> None:
        """Start ``ollama serve`` detached (it outlives Kelvin) on the host Kelvin talks to."""
        row = self.rows["ollama"]
        if not binary:
            return
        _, address = setup.ollama_address(self.settings.ollama_host)
        proc = QProcess()
        proc.setProgram(binary)
        proc.setArguments(["serve"])
        env = QProcessEnvironment.systemEnvironment()
        env.insert("OLLAMA_HOST", address)
        proc.setProcessEnvironment(env)
        started = proc.startDetached()  # PySide6 6.12 gives a bool here, though its docs promise (bool, pid)
        if not (started[0] if isinstance(started, tuple) else started):
            row.say(f"{binary} could not be started ({proc.errorString()}). Open the Ollama app instead.")
            return
        log.info("started %s serve on %s", binary, address)
        self.started_ollama = True
        row.offer()
        row.say("Starting Ollama … Kelvin looks again in a moment.")
        self._starts_left = START_CHECKS
        self._recheck.start()

    # ---- fixing: models ------------------------------------------------------------------------
    def _row_for(self, model: str) -> SetupRow:
        return self.rows["chat" if model == self.settings.chat_model else "embedder"]

    def _pulling(self, row: SetupRow) -> bool:
        return any(self._row_for(m) is row for m in self._pulls)

    def pull(self, model: str) -> None:
        """Download ``model`` through Ollama on the download thread; the row shows the progress."""
        if model in self._pulls:
            return
        row = self._row_for(model)
        abort, settings = _Abort(), self.settings
        w = abort.worker = Worker(lambda report: setup.pull(settings, model, report, abort))
        w.signals.started.connect(lambda: row.step.setText(f"Asking Ollama for {model} …"))
        w.signals.yielded.connect(lambda value: self._progress(model, value))
        w.signals.returned.connect(lambda ok: self._pulled(model, ok))
        w.signals.errored.connect(lambda exc: self._pull_failed(model, exc))
        w.signals.finished.connect(lambda: self._pull_over(model))
        self._outcome.pop(row.key, None)
        row.offer()
        row.say("")
        row.progress.setValue(0)
        row.step.setText("Waiting for the other download to finish …" if self._pulls else "Starting …")
        row.cancel.setEnabled(True)
        row.pulling.show()
        self._pulls[model] = self.pools.start(self.pools.download, w)

    def cancel_pull(self, model: str) -> None:
        w = self._pulls.get(model)
        if w is not None:
            w.abort()
            row = self._row_for(model)
            row.cancel.setEnabled(False)
            row.step.setText("Stopping …")

    def _cancel_row(self, row: SetupRow) -> None:
        for model in [m for m in self._pulls if self._row_for(m) is row]:
            self.cancel_pull(model)

    def _progress(self, model: str, state: PullState) -> None:
        row = self._row_for(model)
        row.progress.setValue(state.percent)
        pulling = state.total and state.step.startswith("pulling ")
        row.step.setText(f"{state.step} · {_size(state.completed)} of {_size(state.total)}" if pulling else state.step)
        self.pull_progress.emit(model, state.percent, state.step)

    def _pulled(self, model: str, ok: bool) -> None:
        row = self._row_for(model)
        self._outcome[row.key] = (f"{model} is ready." if ok else
                                  "Download stopped. Ollama keeps what it has and goes on from there next time.")
        row.say(self._outcome[row.key])
        self.pull_finished.emit(model, "done" if ok else "cancelled")

    def _pull_failed(self, model: str, exc: BaseException) -> None:
        row = self._row_for(model)
        self._outcome[row.key] = f"{model} could not be pulled: {exc}"
        row.say(self._outcome[row.key])
        self.pull_finished.emit(model, "failed")
        if not isinstance(exc, ModelServerUnavailable):  # expected problems are said above; anything else is a bug
            sys.excepthook(type(exc), exc, exc.__traceback__)

    def _pull_over(self, model: str) -> None:
        self._pulls.pop(model, None)
        self._row_for(model).pulling.hide()
        self.refresh()  # the row says what is there now, with how the pull ended

    # ---- fixing: the data folder ---------------------------------------------------------------
    def choose_data_folder(self) -> None:
        start = str(self.settings.data_path())
        path = QFileDialog.getExistingDirectory(self, "Where Kelvin keeps its memory", start)
        if not path:
            return
        row = self.rows["data"]
        row.action.setEnabled(False)
        row.say(f"Checking {path} …")
        w = Worker(lambda report: setup.keep_data_in(path))
        w.signals.returned.connect(lambda choice: self._data_chosen(path, choice))
        w.signals.errored.connect(self._data_failed)
        w.signals.finished.connect(lambda: row.action.setEnabled(True))
        self.pools.start(self.pools.general, w)

    def _data_chosen(self, path: str, choice: DataChoice) -> None:
        row = self.rows["data"]
        if choice.check.status == FAIL:
            row.say(f"{choice.check.detail}. Choose another folder.")
            return
        self._data_note = f"Saved: Kelvin keeps its memory in {path} after a restart."
        if choice.override:
            self._data_note += (" This Kelvin was started with another data folder set for it from outside the "
                                 "window, which wins until Kelvin is started without it.")
        row.say(self._data_note)
        self.settings_changed.emit(replace(self.settings, data_dir=path))

    def _data_failed(self, exc: BaseException) -> None:
        if not isinstance(exc, (ConfigError, OSError)):
            sys.excepthook(type(exc), exc, exc.__traceback__)
        self.rows["data"].say(f"Not saved: {exc}")

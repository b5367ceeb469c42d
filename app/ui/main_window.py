"""Kelvin's window: a header (project, mode, Ollama, the VRAM guard, always on top), the views, a
status bar that says what Kelvin is doing. It drives the services through workers and adds no
logic of its own."""
from __future__ import annotations

import logging
import sys
import time

from PySide6.QtCore import QCoreApplication, QObject, QSettings, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (QComboBox, QHBoxLayout, QLabel, QMainWindow, QStackedWidget, QTabBar, QToolButton,
                               QVBoxLayout, QWidget)

from app.core.vram import process_key, renderer_names
from app.ui.chat_view import ChatView
from app.core.records import RecordError
from app.ui.brief_view import BriefView
from app.ui.gpu_view import GpuView
from app.ui.memory_view import MemoryView
from app.ui.tray import Tray
from app.ui.worker import Pools, Worker

log = logging.getLogger("kelvin.ui")

MODES = (("gpu", "GPU"), ("cpu", "CPU"), ("recall", "Recall (no model)"))
OLLAMA_CHECK_MS = 10_000
BANNER_MS = 12_000


class _Bridge(QObject):
    """Calls from service threads (the VRAM guard's samples, events, notifications) into the UI thread."""

    notified = Signal(str, str)
    event = Signal(object)
    sample = Signal(object)


def looked_at(result) -> list[str]:
    """What went into the prompt, one line each, for the answer's fold-out."""
    lines = [f"Setting: {s}" for s in result.settings]
    lines += [f"{m.timestamp[:16].replace('T', ' ')} · {m.tags.domain} · {m.role}: "
              f"{' '.join(m.text.split())[:140]}" for m in result.recalled]
    lines += [f"Kept memory: {m.text}" for m in result.memories]
    return lines


def _unexpected(exc: BaseException) -> None:
    """A worker failed where no failure was expected: a bug, for the crash dialog (app.ui.crash)."""
    sys.excepthook(type(exc), exc, exc.__traceback__)


class MainWindow(QMainWindow):
    def __init__(self, settings, window_state: QSettings, pools: Pools | None = None):
        super().__init__()
        self.settings = settings
        self.state = window_state
        self.pools = pools or Pools()
        self.services = None
        self.bridge = _Bridge()
        self.bridge.notified.connect(self.notify)
        self.bridge.event.connect(self._guard_event)
        self.bridge.sample.connect(self._guard_sample)
        self.guard = None
        self._turn: Worker | None = None
        self.setWindowTitle(f"Kelvin — {settings.project}")
        self.setObjectName("kelvin")

        self.project_box = QComboBox(objectName="project")
        self.project_box.setMinimumWidth(160)
        self.project_box.setToolTip("The project Kelvin remembers for")
        self.project_box.activated.connect(self._switch_project)
        self.mode_box = QComboBox(objectName="mode")
        for key, label in MODES:
            self.mode_box.addItem(label, key)
        self.mode_box.setToolTip("GPU: the model on the GPU · CPU: leave the VRAM to renders · Recall: answers "
                                 "quoted from memory, no model")
        self.mode_box.activated.connect(self._set_mode)
        self.ollama_label = QLabel("Ollama: …", objectName="ollama")
        self.gpu_label = QLabel("", objectName="gpu")
        self.on_top = QToolButton(objectName="ontop", text="On top", checkable=True)
        self.on_top.setToolTip("Keep Kelvin above other windows")
        self.on_top.toggled.connect(self._always_on_top)
        self.setup_button = QToolButton(objectName="setupButton", text="Setup…")
        self.setup_button.setToolTip("What Kelvin needs (Ollama, models, GPU, data folder), and the fix for "
                                     "what is missing")
        self.setup_button.clicked.connect(lambda: self.show_setup())  # not clicked(bool) into `check`
        self.setup_panel = None  # app.ui.setup_panel.SetupPanel, made when first needed
        header = QHBoxLayout()
        header.setContentsMargins(8, 6, 8, 0)
        for w in (self.project_box, self.mode_box):
            header.addWidget(w)
        header.addStretch(1)
        for w in (self.gpu_label, self.ollama_label, self.setup_button, self.on_top):
            header.addWidget(w)

        self.banner = QLabel(objectName="banner", wordWrap=True)
        self.banner.hide()
        self._banner_timer = QTimer(self, singleShot=True, interval=BANNER_MS, timeout=self.banner.hide)
        self.tabs = QTabBar(objectName="views")
        self.views = QStackedWidget()
        self.chat = ChatView()
        self._add_view("Chat", self.chat)
        self.memory = MemoryView()
        self._add_view("Memory", self.memory)
        self.memory.query.connect(self._browse)
        self.memory.model.wanted.connect(self._fetch_rows)
        self.memory.edit_requested.connect(self._edit_message)
        self.memory.delete_requested.connect(self._delete_messages)
        self.memory.undo_requested.connect(self._undo)
        self.memory.settings.history_wanted.connect(self._setting_history)
        self.memory.settings.set_requested.connect(self._set_setting)
        self.memory.settings.unset_requested.connect(self._unset_setting)
        self.gpu = GpuView(frozenset(process_key(n) for n in renderer_names(settings.renderer_processes)))
        self._add_view("GPU", self.gpu)
        self.brief = BriefView()
        self._add_view("Brief", self.brief)
        self.brief.wanted.connect(self._load_brief)
        self.brief.end_of_day.connect(self.end_of_day)
        self.brief.cancel.connect(lambda: self._brief_cancel.set() if self._brief_cancel else None)
        self._brief_cancel = None
        self.gpu.free_now.connect(self.free_vram)
        self.gpu.resume.connect(lambda: self.guard.resume() if self.guard else None)
        self.tray = Tray(self)
        self.tray.show_window.connect(self._raise)
        self.tray.free_now.connect(self.free_vram)
        self.tray.end_of_day.connect(lambda: (self._raise(), self.end_of_day()))
        self.tray.quit.connect(self.quit)
        self.tray.keep_running.setChecked(self.state.value("close_to_tray", False, type=bool))
        self.tray.keep_running_changed.connect(lambda on: self.state.setValue("close_to_tray", on))
        self._quitting = False
        self.tabs.currentChanged.connect(self._view_changed)
        self.chat.send.connect(self.ask)
        self.chat.stop.connect(self.stop_reply)
        self.chat.chip_action.connect(self._chip)
        self.chat.link_hovered.connect(lambda url: self.statusBar().showMessage(url.toString(), 4000))

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs)
        layout.addWidget(self.views, 1)
        self.setCentralWidget(body)
        self.statusBar().showMessage("Starting …")

        QShortcut(QKeySequence(Qt.Key.Key_Escape), self, activated=self.stop_reply)
        QShortcut(QKeySequence("Ctrl+K"), self, activated=self._focus_search)
        for n in range(1, 5):
            QShortcut(QKeySequence(f"Ctrl+{n}"), self, activated=lambda n=n: self._show_view(n - 1))
        quit_action = QAction("Quit", self, shortcut=QKeySequence.StandardKey.Quit, triggered=self.quit)
        self.addAction(quit_action)
        self._ollama_timer = QTimer(self, interval=OLLAMA_CHECK_MS, timeout=self._check_ollama)
        self.resize(560, 820)
        geometry = self.state.value("geometry")
        if geometry is not None:
            self.restoreGeometry(geometry)
        if self.state.value("on_top", False, type=bool):
            self.on_top.setChecked(True)
        self._show_view(self.state.value("view", 0, type=int))

    # ---- views -----------------------------------------------------------------------------------
    def _add_view(self, title: str, widget: QWidget) -> None:
        self.tabs.addTab(title)
        self.views.addWidget(widget)

    def _show_view(self, index: int) -> None:
        if index < self.tabs.count():
            self.tabs.setCurrentIndex(index)

    def _view_changed(self, index: int) -> None:
        self.views.setCurrentIndex(index)
        self.state.setValue("view", index)
        if self.views.currentWidget() is self.memory:
            self.memory.refresh()  # what is stored now (turns commit in the background)

    def _focus_search(self) -> None:
        self._show_view(self.views.indexOf(self.memory))
        self.memory.search.setFocus()
        self.memory.search.selectAll()

    # ---- the memory browser ----------------------------------------------------------------------
    def _browse(self, text: str, values: dict) -> None:
        if self.services is None:
            return
        memory = self.services.memory
        values = dict(values)
        project = values.pop("project", None) or self.services.conversation.project
        from app.memory.index import Filters  # here, not at the top: it loads pyarrow (after the first paint)

        filters = Filters(**values)

        def look(report):
            if text:
                hits = memory.search(text, k=200, filters=filters, project=project)
                return [h.message.id for h in hits], {h.message.id: h.message for h in hits}
            return memory.message_ids(project, filters), {}

        self._run(self.pools.memory, look,
                  returned=lambda r: self.memory.show_results(r[0], r[1], text),
                  errored=lambda exc: self.memory.count.setText(f"Search failed: {exc}"))
        self._browse_settings(project)

    def _browsed_project(self) -> str:
        return self.memory.filter_values()["project"] or self.services.conversation.project

    def _fetch_rows(self, ids: list) -> None:
        if self.services is not None:
            memory, project = self.services.memory, self._browsed_project()
            self._run(self.pools.memory, lambda report: memory.messages(ids, project), returned=self.memory.model.fill)

    def _edit_message(self, before, text: str) -> None:
        memory, project = self.services.memory, self._browsed_project()
        self._run(self.pools.memory, lambda report: memory.edit(before.id, text, project),
                  returned=lambda after: (self.memory.edited(before, after), self._changed_memory("Edited; saved")),
                  errored=lambda exc: self.memory.count.setText(f"Not edited: {exc}"))

    def _delete_messages(self, messages: list) -> None:
        memory, project = self.services.memory, self._browsed_project()

        def delete(report):
            done = []
            for m in messages:
                try:
                    memory.delete(m.id, project)
                except RecordError:  # already gone (deleted elsewhere): nothing to undo for it
                    continue
                done.append(m)
            return done

        self._run(self.pools.memory, delete,
                  returned=lambda done: (self.memory.deleted(done), self._changed_memory("Deleted; Undo puts it back")),
                  errored=lambda exc: self.memory.count.setText(f"Not deleted: {exc}"))

    def _undo(self, action) -> None:
        memory, project = self.services.memory, self._browsed_project()
        kind, what = action

        def undo(report):
            if kind == "edit":
                memory.edit(what.id, what.text, project)
                return "Edit undone."
            for m in what:
                memory.restore(m, project)
            return f"Restored {len(what)} message{'s' if len(what) != 1 else ''}."

        self._run(self.pools.memory, undo, returned=lambda said: (self.memory.undone(said), self._changed_memory(said)),
                  errored=lambda exc: self.memory.undone(f"Could not undo: {exc}"))

    def _changed_memory(self, said: str) -> None:
        self.statusBar().showMessage(f"{said} (journal, index and Markdown)", 4000)
        self._browse_settings(self._browsed_project())

    # ---- the settings ledger -----------------------------------------------------------------------
    def _browse_settings(self, project: str) -> None:
        ledger = self.services.conversation.ledger
        self._run(self.pools.memory, lambda report: ledger.current(project, candidates=True),
                  returned=self.memory.settings.show_current,
                  errored=lambda exc: self.memory.settings.count.setText(f"Settings could not be read: {exc}"))
        key = self.memory.settings.selected_key()
        if key is not None:
            self._setting_history(key)

    def _setting_history(self, key) -> None:
        memory, ledger, project = self.services.memory, self.services.conversation.ledger, self._browsed_project()

        def history(report):
            entries = ledger.book(project).history(*key)
            ids = [e.source_id for e in entries if e.source_id and e.by != "artist"]
            return entries, {i: m.text for i, m in memory.messages(ids, project).items()}

        self._run(self.pools.memory, history, returned=lambda r: self.memory.settings.show_history(key, *r))

    def _set_setting(self, key, text: str) -> None:
        ledger, project = self.services.conversation.ledger, self._browsed_project()
        self._run(self.pools.memory, lambda report: ledger.set(key[1], text, key[0] or "any", project,
                                                               note="corrected in the memory browser"),
                  returned=lambda _: self._changed_memory("Setting corrected"),
                  errored=lambda exc: self.memory.settings.count.setText(f"Not changed: {exc}"))

    def _unset_setting(self, key) -> None:
        ledger, project = self.services.conversation.ledger, self._browsed_project()
        self._run(self.pools.memory, lambda report: ledger.unset(key[1], key[0] or "any", project),
                  returned=lambda _: self._changed_memory("Setting unset"),
                  errored=lambda exc: self.memory.settings.count.setText(f"Not unset: {exc}"))

    # ---- services --------------------------------------------------------------------------------
    def attach(self, services) -> None:
        """The services are up (built on a worker while the window painted)."""
        self.services = services
        c = services.conversation
        self.setWindowTitle(f"Kelvin — {c.project}")
        self._fill_projects()
        self.mode_box.setCurrentIndex([k for k, _ in MODES].index(c.mode.value))
        self.chat.set_ready(True, "Ask about lighting, shading, render settings …  (Enter sends, Shift+Enter: new line)")
        self.attach_guard(services.guard, services.gpu_problem)
        for notice in services.memory.notices:
            self.chat.add("notice", notice)
        self.statusBar().showMessage(f"Ready · {services.memory.data_dir}", 5000)
        self._greet()
        self._check_ollama()
        self._ollama_timer.start()
        self._check_setup()

    def attach_guard(self, guard, problem: str = "") -> None:
        """The VRAM guard (None: no NVIDIA GPU, or switched off; ``problem`` says why)."""
        self.guard = guard
        if guard is None:
            self.gpu_label.setText("GPU: guard off")
            self.gpu_label.setToolTip(problem)
            self.gpu.set_available(False, problem or "the VRAM guard is switched off")
            return
        guard.notify = self.bridge.notified.emit
        guard.on_event.append(self.bridge.event.emit)
        guard.on_sample.append(self.bridge.sample.emit)
        self.gpu.set_available(True, "")
        self._guard_state(guard.policy.state, "")

    def free_vram(self) -> None:
        if self.guard is not None:
            self.guard.free_now()
            self.statusBar().showMessage("Freeing the VRAM …", 3000)

    def _guard_event(self, e) -> None:
        self.gpu.add_event(e.t, e.from_state, e.to_state, e.reason)
        self._guard_state(e.to_state, e.reason)

    def _guard_sample(self, s) -> None:
        if self.guard is not None:
            self.gpu.plot.add(s, self.guard.policy.kelvin_mb, self.guard.policy.reserve_mb)

    def _raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    def failed_to_start(self, exc: BaseException) -> None:
        self.chat.set_ready(False, "Kelvin could not start")
        self.chat.add("notice", f"Kelvin could not open its memory: {exc}")
        self.statusBar().showMessage(str(exc))
        self.show_setup()  # where a data folder can be chosen

    # ---- setup -----------------------------------------------------------------------------------
    def _setup(self):
        if self.setup_panel is None:
            from app.ui.setup_panel import SetupPanel  # not at the top: it brings the ollama client

            self.setup_panel = SetupPanel(self.settings, self.pools)
            self.setup_panel.done.connect(self._close_setup)
            self.setup_panel.settings_changed.connect(
                lambda s: self.statusBar().showMessage(f"Saved; Kelvin uses {s.data_dir} after a restart", 8000))
            self.views.addWidget(self.setup_panel)
            self.tabs.currentChanged.connect(lambda _: self.tabs.show())  # Ctrl+1…4 leave the panel too
        return self.setup_panel

    def show_setup(self, check: bool = True) -> None:
        """The setup panel in place of the views; Continue brings them back."""
        panel = self._setup()
        self.tabs.hide()
        self.views.setCurrentWidget(panel)
        if check:
            panel.refresh()

    def _close_setup(self) -> None:
        self.tabs.show()
        self.views.setCurrentIndex(self.tabs.currentIndex())

    def _check_setup(self) -> None:
        """At start, on a worker: Ollama down or the chat model missing brings up the setup panel."""
        panel = self._setup()

        def first_look(checks) -> None:
            if panel.blocking():
                self.show_setup(check=False)

        panel.checked.connect(first_look, Qt.ConnectionType.SingleShotConnection)
        panel.refresh()

    def _fill_projects(self) -> None:
        c = self.services.conversation
        names = [p.name for p in c.projects.list()] or [c.project]
        if c.project not in names:
            names.append(c.project)
        self.project_box.clear()
        self.project_box.addItems(sorted(names, key=str.lower))
        self.project_box.setCurrentText(c.project)
        self.memory.set_projects(sorted(names, key=str.lower), c.project)

    def _switch_project(self, index: int) -> None:
        name = self.project_box.itemText(index)
        c = self.services.conversation if self.services else None
        if c is None or name == c.project or self._turn is not None:
            return
        self._run(self.pools.model, lambda report: c.switch_project(name),
                  returned=lambda _: (self.setWindowTitle(f"Kelvin — {c.project}"),
                                      self.chat.add("notice", f"Project: {c.project}"),
                                      self.memory.use_project(c.project), self._greet()),
                  errored=lambda exc: (self.chat.add("notice", str(exc)), self._fill_projects()))

    def _set_mode(self, index: int) -> None:
        if self.services is not None:
            self.services.conversation.set_mode(self.mode_box.itemData(index), reason="the artist")
            self.statusBar().showMessage(f"Mode: {self.mode_box.itemText(index)}", 3000)

    # ---- a turn ----------------------------------------------------------------------------------
    def ask(self, text: str) -> None:
        if self.services is None or self._turn is not None:
            return
        c = self.services.conversation
        self.chat.add("user", text)
        self.chat.add("assistant", "", "streaming")
        self.chat.set_busy(True)
        self.statusBar().showMessage("Kelvin is answering …")
        started = time.monotonic()

        def done(result) -> None:
            self.chat.finish(result.text, result.status, looked_at(result), result.error)
            self._find_chips(result, self.chat.entries[-1])
            if result.greeting:
                self.chat.add("notice", result.greeting)
            if result.status == "command":
                self.mode_box.setCurrentIndex([k for k, _ in MODES].index(c.mode.value))
                self._fill_projects()
            self.statusBar().showMessage(f"{result.status} in {time.monotonic() - started:.1f} s · committing in the "
                                         "background", 4000)

        self._turn = self._run(self.pools.model, lambda report: c.ask(text, on_token=report),
                               yielded=self.chat.append, returned=done,
                               errored=lambda exc: self.chat.finish("", "failed", [], str(exc)),
                               finished=self._turn_over)

    def _greet(self) -> None:
        """A new day in a project: say that Kelvin resumes from the brief, with the current settings."""
        c = self.services.conversation
        self._run(self.pools.memory, lambda report: c.greeting(),
                  returned=lambda text: self.chat.add("notice", text) if text else None,
                  errored=lambda exc: log.info("no greeting: %s", exc))

    def _find_chips(self, result, entry) -> None:
        """Once the turn is stored, the settings it stated become chips under the answer."""
        ids = [m.id for m in (result.question, result.answer) if m is not None]
        if not ids or self.services is None:
            return
        ledger, stored = self.services.conversation.ledger, result.stored
        project = (result.question or result.answer).project

        def find(report):
            for f in stored:
                f.result(timeout=60)
            book = ledger.book(project)
            return [e for i in ids for e in book.mentions_of(i) if not e.candidate]

        self._run(self.pools.memory, find, returned=lambda found: self.chat.show_chips(entry, found, project))

    def _chip(self, action: str, chip, value: str) -> None:
        if self.services is None:
            return
        ledger, e = self.services.conversation.ledger, chip.entry
        project = chip.project or self.services.conversation.project

        def act(report):
            if action == "confirm":
                ledger.confirm(e, project)
                return "in use"
            if action == "correct":
                ledger.set(e.parameter, value, e.engine or "any", project, note="corrected in the chat")
                if e.status == "applied":
                    ledger.retract(e.id, project)  # it was read wrong
                return f"corrected to {value}"
            ledger.retract(e.id, project)
            return "turned down"

        self._run(self.pools.memory, act, returned=lambda state: (self.chat.chip_done(chip, state),
                                                                 self._changed_memory(f"Setting {state}")),
                  errored=lambda exc: self.chat.add("notice", f"Setting not changed: {exc}"))

    def _turn_over(self) -> None:
        self._turn = None
        self.chat.set_busy(False)

    def stop_reply(self) -> None:
        if self._turn is not None and self.services is not None:
            self.services.conversation.cancel()
            self.statusBar().showMessage("Stopping the reply …", 2000)

    def _run(self, pool, fn, *, yielded=None, returned=None, errored=None, finished=None) -> Worker:
        w = Worker(fn)
        for signal, slot in ((w.signals.yielded, yielded), (w.signals.returned, returned),
                             (w.signals.errored, errored or _unexpected), (w.signals.finished, finished)):
            if slot is not None:
                signal.connect(slot)
        return self.pools.start(pool, w)

    # ---- the brief --------------------------------------------------------------------------------
    def _builder(self):
        from app.services.brief import BriefBuilder

        return BriefBuilder(self.services.conversation)

    def _load_brief(self) -> None:
        if self.services is None or self._brief_cancel is not None:
            return
        builder = self._builder()
        self._run(self.pools.memory, lambda report: (builder.current(), builder.archive()),
                  returned=lambda r: self.brief.show_brief(*r),
                  errored=lambda exc: self.brief.status.setText(f"The brief could not be read: {exc}"))

    def end_of_day(self) -> None:
        """Write the master brief on the model's worker (one model call at a time), with progress."""
        if self.services is None or self._brief_cancel is not None:
            return
        import threading

        from app.services.brief import BriefCancelled

        self._show_view(self.views.indexOf(self.brief))
        builder, cancel = self._builder(), threading.Event()
        self._brief_cancel = cancel
        self.brief.running(True)
        self.statusBar().showMessage("Writing the brief …")

        def done(result) -> None:
            self.brief.show_brief(result.text, builder.archive())
            flagged = f"; numbers to check: {', '.join(result.flagged)}" if result.flagged else ""
            self.brief.status.setText(f"Written from {result.messages} messages in {len(result.domains)} "
                                      f"domain{'s' if len(result.domains) != 1 else ''}"
                                      f"{flagged}. {result.path}")
            self.notify("Brief ready", f"The master brief of {result.project} is written.")

        def failed(exc) -> None:
            said = str(exc) if isinstance(exc, (BriefCancelled, RecordError)) else f"The brief failed: {exc}"
            self.brief.status.setText(said[:1].upper() + said[1:])

        def over() -> None:
            self._brief_cancel = None
            self.brief.running(False)
            self.statusBar().clearMessage()

        self._run(self.pools.model, lambda report: builder.build(progress=lambda d, t, s: report((d, t, s)),
                                                                 cancel=cancel),
                  yielded=lambda p: self.brief.step(*p), returned=done, errored=failed, finished=over)

    # ---- status ----------------------------------------------------------------------------------
    def _check_ollama(self) -> None:
        c = self.services.conversation

        def probe(report):
            try:
                return f"Ollama {c.backend.version()} · {c.model}", ""
            except Exception as exc:  # noqa: BLE001 — any failure is "not reachable", said plainly
                return "Ollama: not running", str(exc)

        self._run(self.pools.general, probe,
                  returned=lambda r: (self.ollama_label.setText(r[0]), self.ollama_label.setToolTip(r[1] or r[0])))

    def _guard_state(self, state: str, reason: str) -> None:
        label = {"normal": "GPU: ok", "yielding": "GPU: leaving …", "yielded": "GPU: yielded to render",
                 "recovering": "GPU: coming back …", "off": "GPU: guard off"}.get(state, state)
        self.gpu_label.setText(label)
        self.tray.set_state(state, reason)
        self.gpu.show_state(state, reason)
        self.gpu_label.setProperty("state", state)
        self.gpu_label.style().polish(self.gpu_label)
        if reason:
            self.gpu_label.setToolTip(reason)
        if self.services is not None:
            self.mode_box.setCurrentIndex([k for k, _ in MODES].index(self.services.conversation.mode.value))

    def notify(self, title: str, text: str) -> None:
        """A notification: a tray balloon where the desktop has a tray, else the window's banner;
        the chat keeps a line of it either way."""
        self.chat.add("notice", f"{title}: {text}")
        if not self.tray.notify(title, text):
            self.banner.setText(f"<b>{title}</b> — {text}")
            self.banner.show()
            self._banner_timer.start()

    def _always_on_top(self, on: bool) -> None:
        self.setWindowFlag(Qt.WindowType.WindowStaysOnTopHint, on)
        self.state.setValue("on_top", on)
        self.show()

    # ---- quitting --------------------------------------------------------------------------------
    def quit(self) -> None:
        """Quit for real (the tray's Quit, Ctrl+Q), even when closing keeps Kelvin in the tray."""
        self._quitting = True
        self.close()

    def closeEvent(self, event: QCloseEvent) -> None:  # noqa: N802
        self.state.setValue("geometry", self.saveGeometry())
        if not self._quitting and self.tray.keep_running.isChecked() and self.tray.available:
            self.hide()  # Kelvin keeps watching the GPU and committing; the tray brings it back
            event.ignore()
            if not self.state.value("told_tray", False, type=bool):
                self.state.setValue("told_tray", True)
                self.tray.notify("Kelvin is still running", "It keeps watching the GPU. Quit from the tray menu.")
            return
        self.state.sync()
        self._ollama_timer.stop()
        if self.services is not None:
            self.services.conversation.cancel()  # the partial reply is stored as stopped
        if self._brief_cancel is not None:
            self._brief_cancel.set()
        self.pools.wait()
        QCoreApplication.sendPostedEvents()  # the workers' last signals, while the services are still up
        self.pools.wait()  # and anything those started
        self._banner_timer.stop()
        self.statusBar().clearMessage()  # and its timeout
        self.tray.hide()
        if self.services is not None:
            self.services.close()  # drains the writer: no accepted turn is dropped
            self.services = None
        event.accept()

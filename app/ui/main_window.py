"""Kelvin's window: a header (project, mode, Ollama, the VRAM guard, always on top), the views, a
status bar that says what Kelvin is doing. It drives the services through workers and adds no
logic of its own.

One project is current, and every view follows it (:meth:`MainWindow.project_now`): the title,
the tray's tooltip, the chat's transcript (that project's messages, the last ones first, earlier
ones a scroll away), the memory browser and its settings, the brief. Whatever was asked for the
project before and lands after a switch is dropped. Kelvin opens on the last project the artist
worked in (saved as ``project`` in kelvin.toml, so the command line follows too)."""
from __future__ import annotations

import html
import logging
import time

from PySide6.QtCore import QCoreApplication, QObject, QPoint, QRect, QSettings, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QFontMetrics, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QHBoxLayout, QLabel, QMainWindow, QMenu, QStackedWidget,
                               QTabBar, QToolButton, QVBoxLayout, QWidget)

from app.core.records import RecordError
from app.core.vram import process_key, renderer_names
from app.ui.brief_view import BriefView
from app.ui.chat_view import ChatView
from app.ui.gpu_view import GpuView
from app.ui.memory_browser import MemoryBrowser
from app.ui.memory_view import MemoryView
from app.ui.project_switcher import ProjectSwitcher
from app.ui.project_watch import ProjectWatch
from app.ui.tray import Tray
from app.ui.worker import Pools, Worker

log = logging.getLogger("kelvin.ui")

MODES = (("gpu", "GPU"), ("cpu", "CPU"), ("recall", "Recall (no model)"), ("memory", "Memory only"))
CHOSEN_MODES = 3  # the last one is not chosen: it says Kelvin answers from memory because the model cannot
OLLAMA_CHECK_MS = 10_000
NARROW_PX = 640  # narrower than this, the window is a sidebar: a compact header
HEALTH_COLOURS = {"ok": "#7fc98a", "warn": "#f0b43c", "bad": "#e06c5a", "": "#9aa0aa"}  # the chips' palette
GPU_HEALTH = {"normal": "ok", "yielding": "warn", "yielded": "warn", "recovering": "warn"}
BANNER_MS = 12_000
TRANSCRIPT_PAGE = 40  # messages read for the transcript at a time
READY = "Ask about lighting, shading, render settings …  (Enter sends, Shift+Enter: new line)"


class _Bridge(QObject):
    """Calls from service threads (the VRAM guard's samples, events, notifications) into the UI thread."""

    notified = Signal(str, str)
    event = Signal(object)
    sample = Signal(object)


def _first_word(text: str) -> str:
    return text.split()[0].rstrip(":") if text.strip() else ""


def looked_at(result) -> list[str]:
    """What went into the prompt, one line each, for the answer's fold-out."""
    lines = [f"Setting: {s}" for s in result.settings]
    lines += [f"{m.timestamp[:16].replace('T', ' ')} · {m.tags.domain} · {m.role}: "
              f"{' '.join(m.text.split())[:140]}" for m in result.recalled]
    lines += [f"Kept memory: {m.text}" for m in result.memories]
    return lines


class MainWindow(QMainWindow):
    def __init__(self, settings, window_state: QSettings, pools: Pools | None = None):
        super().__init__()
        self.settings = settings
        self.state = window_state
        self.pools = pools or Pools()
        self.services = None
        self.project = settings.project  # the current project: every view shows this one
        self.bridge = _Bridge()
        self.bridge.notified.connect(self.notify)
        self.bridge.event.connect(self._guard_event)
        self.bridge.sample.connect(self._guard_sample)
        self.guard = None
        self._turn: Worker | None = None
        self._ollama_problem = ""  # why the model cannot answer now ("" when it can, or not known yet)
        self._reading = ""  # the project whose transcript is being read
        self._waiting: list[str] = []  # questions asked meanwhile
        self.watch = ProjectWatch(self.pools, self)  # another Kelvin process wrote the project
        self.watch.written.connect(self._written_elsewhere)
        self._transcript_behind = False  # written elsewhere while a turn or the transcript was in flight
        self.setWindowTitle(f"Kelvin — {self.project}")
        self.setObjectName("kelvin")

        self.project_box = ProjectSwitcher()
        self.project_box.show_projects([], self.project)
        self.project_box.switch_requested.connect(self.switch_project)
        self.project_box.create_requested.connect(self.create_project)
        self.project_box.rename_requested.connect(self.rename_project)
        self.mode_box = QComboBox(objectName="mode")
        for key, label in MODES:
            self.mode_box.addItem(label, key)
        self.mode_box.model().item(CHOSEN_MODES).setEnabled(False)  # shown, never chosen
        self.mode_box.activated.connect(self._set_mode)
        self.ollama_label = QLabel("Ollama: …", objectName="ollama", textFormat=Qt.TextFormat.RichText)
        self.gpu_label = QLabel("", objectName="gpu", textFormat=Qt.TextFormat.RichText)
        self.on_top = QToolButton(objectName="ontop", text="On top", checkable=True)
        self.on_top.setToolTip("Keep Kelvin above other windows")
        self.on_top.toggled.connect(self._always_on_top)
        self.setup_button = QToolButton(objectName="setupButton", text="Setup…")
        self.setup_button.setToolTip("What Kelvin needs (Ollama, models, GPU, data folder), and the fix for "
                                     "what is missing")
        self.setup_button.clicked.connect(lambda: self.show_setup())  # not clicked(bool) into `check`
        self.setup_panel = None  # app.ui.setup_panel.SetupPanel, made when first needed
        # a narrow window's menu for the rest: Setup… and On top, which take the header's room there
        self.more = QToolButton(objectName="more", text="⋯", popupMode=QToolButton.ToolButtonPopupMode.InstantPopup)
        self.more.setToolTip("Setup and Keep on top")
        more_menu = QMenu(self.more)
        more_menu.addAction("Setup…", lambda: self.show_setup())
        self._on_top_action = more_menu.addAction("Keep Kelvin on top")
        self._on_top_action.setCheckable(True)
        self._on_top_action.toggled.connect(self.on_top.setChecked)
        self.on_top.toggled.connect(self._on_top_action.setChecked)
        self.more.setMenu(more_menu)
        self.more.hide()
        # the header: the project and the mode on the left, the state and the buttons on the right; in
        # a narrow window (a sidebar beside the 3D app) the right group moves to a second row and
        # says less (the whole of it in tooltips)
        self.header_right = QWidget(objectName="headerRight")
        self.header_right.setMinimumWidth(1)  # its width asks for a wide window, never forces one
        right = QHBoxLayout(self.header_right)
        right.setContentsMargins(0, 0, 0, 0)
        for w in (self.gpu_label, self.ollama_label, self.setup_button, self.on_top, self.more):
            right.addWidget(w)
        self._header_top = QHBoxLayout()
        for w in (self.project_box, self.mode_box):
            self._header_top.addWidget(w)
        self._header_top.addStretch(1)
        self._header_top.addWidget(self.header_right)
        self._header_second = QHBoxLayout()
        self._header_second.addStretch(1)
        header = QVBoxLayout()
        header.setContentsMargins(8, 6, 8, 0)
        header.setSpacing(4)
        header.addLayout(self._header_top)
        header.addLayout(self._header_second)
        self._narrow: bool | None = None

        self.banner = QLabel(objectName="banner", wordWrap=True)
        self.banner.hide()
        self._banner_timer = QTimer(self, singleShot=True, interval=BANNER_MS, timeout=self.banner.hide)
        self.tabs = QTabBar(objectName="views")
        self.views = QStackedWidget()
        self.chat = ChatView()
        self._add_view("Chat", self.chat)
        self.memory = MemoryView()
        self._add_view("Memory", self.memory)
        self.browser = MemoryBrowser(self.memory, self.pools, self)
        self.browser.said.connect(lambda said: self.statusBar().showMessage(said, 4000))
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
        self.tray.set_project(self.project)
        self._quitting = False
        self.tabs.currentChanged.connect(self._view_changed)
        self.chat.send.connect(self.ask)
        self.chat.stop.connect(self.stop_reply)
        self.chat.chip_action.connect(self._chip)
        self.chat.earlier_wanted.connect(self._earlier)
        self.chat.link_hovered.connect(lambda words: self.statusBar().showMessage(words, 4000) if words
                                       else self.statusBar().clearMessage())

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(header)
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs)
        layout.addWidget(self.views, 1)
        self.setCentralWidget(body)
        self.statusBar().showMessage("Starting …")

        QShortcut(QKeySequence(Qt.Key.Key_Escape), self.chat, activated=self.stop_reply,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)  # Esc stops a reply from the chat only
        QShortcut(QKeySequence("Ctrl+K"), self, activated=self._focus_search)
        for n in range(1, 5):
            QShortcut(QKeySequence(f"Ctrl+{n}"), self, activated=lambda n=n: self._show_view(n - 1))
        quit_action = QAction("Quit", self, shortcut=QKeySequence.StandardKey.Quit, triggered=self.quit)
        self.addAction(quit_action)
        self._ollama_timer = QTimer(self, interval=OLLAMA_CHECK_MS, timeout=self._check_ollama)
        self._restore_geometry()
        if self.state.value("on_top", False, type=bool):
            self.on_top.setChecked(True)
        self._show_view(self.state.value("view", 0, type=int))
        self._show_mode()

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
        if self.views.currentWidget() is self.memory and self.services is not None:
            self.memory.refresh()  # what is stored now (turns commit in the background)

    def _focus_search(self) -> None:
        self._show_view(self.views.indexOf(self.memory))
        self.memory.search.setFocus()
        self.memory.search.selectAll()

    # ---- narrow and wide -------------------------------------------------------------------------
    def resizeEvent(self, event) -> None:
        super().resizeEvent(event)
        self._fit_header()

    def _fit_header(self) -> None:
        """Where the header's one row would not fit (or below NARROW_PX), it turns compact: the
        states shrink to a coloured dot and a word ("● Ollama", "● GPU"; all of it in the tooltip),
        Setup… and On top go into a "⋯" menu, and the right group takes a second row if even that
        does not fit beside the project and the mode. The right group never holds the window wide:
        its width is not a minimum, and the row is split before it would be cut."""
        left = sum(w.sizeHint().width() for w in (self.project_box, self.mode_box)) + 3 * 12 + 16
        full = left + sum(QFontMetrics(w.font()).horizontalAdvance(w.property("full") or w.text()) + 28
                          for w in (self.gpu_label, self.ollama_label)) + 140
        compact = self.width() < max(NARROW_PX, full)
        if compact != self._narrow:
            self._narrow = compact
            for label in (self.gpu_label, self.ollama_label):
                self._show_state(label)
            self.setup_button.setVisible(not compact)
            self.on_top.setVisible(not compact)
            self.more.setVisible(compact)
        small = sum(QFontMetrics(w.font()).horizontalAdvance("● " + _first_word(w.property("full") or "")) + 16
                    for w in (self.gpu_label, self.ollama_label)) + self.more.sizeHint().width() + 12
        two_rows = compact and self.width() < left + small
        if two_rows == (self._header_second.indexOf(self.header_right) >= 0):
            return
        if two_rows:
            self._header_top.removeWidget(self.header_right)
            self._header_second.addWidget(self.header_right)
        else:
            self._header_second.removeWidget(self.header_right)
            self._header_top.addWidget(self.header_right)

    def _set_state(self, label: QLabel, text: str, tip: str | None = None, health: str = "") -> None:
        """A header label's state: all of it at full width, a dot in its colour and its first word
        when narrow. ``health`` is "ok", "warn", "bad" or "" (not known, or not watched)."""
        label.setProperty("full", text)
        label.setProperty("health", health)
        if tip is not None:
            label.setProperty("tip", tip)
        self._show_state(label)

    def _show_state(self, label: QLabel) -> None:
        full = label.property("full") or ""
        tip = label.property("tip") or ""
        dot = f'<span style="color:{HEALTH_COLOURS.get(label.property("health") or "", HEALTH_COLOURS[""])}">●</span>'
        if self._narrow:
            word = _first_word(full)
            label.setText(f"{dot} {word}" if word else "")
            label.setToolTip("\n".join(x for x in (full, tip) if x))
        else:
            label.setText(f"{dot} {html.escape(full)}" if full else "")
            label.setToolTip(tip)

    # ---- geometry ----------------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        """The size and place the window had, frame included (``pos()`` and ``move()`` both mean the
        frame's corner, so a window manager's frame does not push it down a little each time), and
        never off every screen (a monitor unplugged since)."""
        size = self.state.value("size", type=QSize)
        pos = self.state.value("pos", type=QPoint)
        self.resize(size if isinstance(size, QSize) and size.isValid() else QSize(560, 820))
        if isinstance(pos, QPoint) and self._on_a_screen(QRect(pos, self.size())):
            self.move(pos)
        else:
            screen = QGuiApplication.primaryScreen()
            if screen is not None:
                area = screen.availableGeometry()
                self.resize(self.size().boundedTo(area.size()))
                self.move(area.center() - QRect(QPoint(), self.size()).center())
        if self.state.value("maximized", False, type=bool):
            self.setWindowState(self.windowState() | Qt.WindowState.WindowMaximized)

    @staticmethod
    def _on_a_screen(frame: QRect) -> bool:
        """Whether enough of the title bar is on some screen to grab it."""
        title = QRect(frame.topLeft(), QSize(frame.width(), 32))
        for screen in QGuiApplication.screens():
            seen = title.intersected(screen.availableGeometry())
            if seen.width() >= min(120, frame.width()) and seen.height() >= 16:
                return True
        return False

    def _save_geometry(self) -> None:
        maximized = self.isMaximized()
        self.state.setValue("maximized", maximized)
        if not maximized:
            self.state.setValue("pos", self.pos())
            self.state.setValue("size", self.size())

    # ---- services --------------------------------------------------------------------------------
    def attach(self, services) -> None:
        """The services are up (built on a worker while the window painted)."""
        self.services = services
        self.attach_guard(services.guard, services.gpu_problem)
        self.browser.attach(services, services.conversation.project)
        self.project_now(services.conversation.project, greet=True)
        services.conversation.fix_words = {  # a recall answer's fix, in the window's words
            "not_running": "Start Ollama from the Setup panel (Setup… in the header).",
            "model_missing": f"Pull {services.conversation.model} from the Setup panel (Setup… in the header).",
            "out_of_memory": "Choose CPU in the mode box, or free VRAM in the GPU view."}
        # the memory's own notices (an embedder away: search by full text meanwhile) go to the status
        # bar: the header and the mode box already say that Ollama is away, the transcript need not
        said = "; ".join(services.memory.notices)
        self.statusBar().showMessage(f"Ready · {said}" if said else f"Ready · {services.memory.data_dir}", 8000)
        self._check_ollama()
        self._ollama_timer.start()
        self._check_setup()

    def attach_guard(self, guard, problem: str = "") -> None:
        """The VRAM guard (None: no NVIDIA GPU, or switched off; ``problem`` says why)."""
        self.guard = guard
        if guard is None:
            why = problem or "the VRAM guard is switched off (vram_guard in kelvin.toml)"
            self._set_state(self.gpu_label, "GPU: not watched", f"Nothing to watch: {why}")
            self.gpu.set_available(False, why)
            self.tray.set_gpu(False, why)
            return
        guard.notify = self.bridge.notified.emit
        guard.on_event.append(self.bridge.event.emit)
        guard.on_sample.append(self.bridge.sample.emit)
        self.gpu.set_available(True, "")
        self.tray.set_gpu(True, "")
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

    # ---- the current project -----------------------------------------------------------------------
    def project_now(self, name: str, greet: bool = False) -> None:
        """``name`` is the current project: every view shows it from now on; what lands for the one
        before is dropped. ``greet``: a new day's first look says Kelvin resumes from the brief."""
        self.project = name
        self.setWindowTitle(f"Kelvin — {name}")
        self.tray.set_project(name)
        self.browser.use_project(name)
        self.brief.show_brief("", [])
        if self.brief.isVisible():
            self._load_brief()
        self._fill_projects()
        self._load_transcript(greet)
        self.watch.follow(self.services.memory, name)

    def _written_elsewhere(self, project: str) -> None:
        """Something was written to the project (by a command in a terminal, the Blender add-on, an
        import — or this window): the memory view and its Settings tab read it again if shown, and
        the transcript takes the messages it does not show yet, where they belong."""
        if project != self.project or self.services is None:
            return
        editing = QAbstractItemView.State.EditingState  # a value being typed is never swept away by a re-read
        if self.views.currentWidget() is self.memory and editing not in (self.memory.table.state(),
                                                                        self.memory.settings.table.state()):
            self.memory.refresh()
        if self._turn is not None or self._reading:
            self._transcript_behind = True  # once the turn has its ids (or the transcript is there)
            return
        self._transcript_behind = False
        memory = self.services.memory
        self.pools.run(self.pools.memory, lambda report: memory.list(project, limit=TRANSCRIPT_PAGE),
                       returned=lambda msgs: self.chat.add_from_elsewhere(msgs) if project == self.project else None,
                       errored=lambda exc: None)

    def _fill_projects(self) -> None:
        c, current = self.services.conversation, self.project
        self.pools.run(self.pools.memory, lambda report: [p.name for p in c.projects.list()],
                       returned=lambda names: self.project_box.show_projects(names, self.project)
                       if current == self.project else None)

    def switch_project(self, name: str) -> None:
        """Switch to ``name`` (a reply streaming for the project before is stopped, and kept)."""
        self._change_project(lambda c: c.switch_project(name), f"Switched to {name}")

    def create_project(self, name: str) -> None:
        def create(c) -> None:
            c.projects.create(name)  # a name that folds to an existing project's folder is refused, plainly
            c.switch_project(name)

        self._change_project(create, f"Created {name}")

    def rename_project(self, new: str) -> None:
        old = self.project
        self._change_project(lambda c: c.rename_project(new), f"Renamed {old} to {new}")

    def _change_project(self, change, said: str) -> None:
        if self.services is None:
            return
        c = self.services.conversation
        if self._turn is not None:
            c.cancel("switched project")
        self.chat.set_ready(False, "Switching project …")

        def run(report) -> str:
            change(c)
            self._remember_project(c.project)
            return c.project

        def done(name: str) -> None:
            self.project_now(name, greet=True)
            self.statusBar().showMessage(said, 4000)

        def failed(exc) -> None:
            self.chat.set_ready(True, READY)
            self.project_box.show_projects([], self.project)
            self._fill_projects()
            self.statusBar().showMessage(str(exc)[:1].upper() + str(exc)[1:], 8000)
            self.notify("Project not changed", str(exc))

        self.pools.run(self.pools.model, run, returned=done, errored=failed)  # after the reply (one model thread)

    def _remember_project(self, name: str) -> None:
        """The next start (window or command line) opens on this project, unless told otherwise."""
        from app.config import ConfigError, save_setting

        try:
            save_setting("project", name)
        except (ConfigError, OSError) as exc:
            log.warning("the current project could not be saved in kelvin.toml: %s", exc)

    # ---- the transcript ----------------------------------------------------------------------------
    def _load_transcript(self, greet: bool) -> None:
        """The current project's last messages, then (a new day) the resume greeting below them."""
        memory, c, project = self.services.memory, self.services.conversation, self.project
        self.chat.clear()
        self.chat.set_ready(False, f"Reading {project} …")  # nothing is asked before the transcript is there
        self._reading = project

        def load(report):
            memory.flush()
            msgs = memory.list(project, limit=TRANSCRIPT_PAGE + 1)
            return msgs[-TRANSCRIPT_PAGE:], len(msgs) > TRANSCRIPT_PAGE, c.greeting(project) if greet else ""

        def show(result) -> None:
            if project != self.project:
                return
            msgs, more, greeting = result
            self.chat.set_history(msgs, more)
            if greeting:
                self.chat.add("notice", greeting)

        def failed(exc) -> None:
            self.chat.add("notice", f"The transcript could not be read: {exc}")

        def over() -> None:
            if project != self.project:
                return
            self._reading = ""
            self.chat.set_ready(True, READY)
            if self._transcript_behind:
                self._written_elsewhere(project)
            if self._waiting:  # asked (by the tray, a test, the self-test) while the transcript loaded
                self.ask(self._waiting.pop(0))

        self.pools.run(self.pools.memory, load, returned=show, errored=failed, finished=over)

    def _earlier(self, before_ms: int, shown: list) -> None:
        if self.services is None:
            return
        from app.memory.index import Filters

        memory, project, skip = self.services.memory, self.project, set(shown)

        def load(report):
            msgs = [m for m in memory.list(project, limit=TRANSCRIPT_PAGE + len(skip) + 1,
                                           filters=Filters(until_ms=before_ms)) if m.id not in skip]
            return msgs[-TRANSCRIPT_PAGE:], len(msgs) > TRANSCRIPT_PAGE

        self.pools.run(self.pools.memory, load,
                       returned=lambda r: self.chat.prepend_history(*r) if project == self.project else None)

    # ---- modes ---------------------------------------------------------------------------------------
    def _set_mode(self, index: int) -> None:
        if self.services is not None and index < CHOSEN_MODES:
            self.services.conversation.set_mode(self.mode_box.itemData(index), reason="the artist")
            self.statusBar().showMessage(f"Mode: {self.mode_box.itemText(index)}", 3000)
        self._show_mode()

    def _show_mode(self) -> None:
        """The mode in use, and why: the artist's choice, the VRAM guard's, or memory only because
        the model cannot answer (Ollama down, the model missing)."""
        c = self.services.conversation if self.services is not None else None
        chosen = c.mode.value if c is not None else self.settings.mode
        if chosen != "recall" and self._ollama_problem:
            index, tip = CHOSEN_MODES, f"Memory only — {self._ollama_problem}. Answers are quoted from memory until " \
                                       "the model is back; the mode you chose comes back with it."
        else:
            index = [k for k, _ in MODES].index(chosen)
            why = c.mode_reason if c is not None and c.mode_reason and c.mode_reason != "the artist" else ""
            tip = {"gpu": "GPU: the model runs on the GPU", "cpu": "CPU: the model runs on the CPU, the render keeps "
                   "the VRAM (slower answers)", "recall": "Recall: no model; answers are quoted from memory"}[chosen]
            tip += f" ({why})" if why else ""
        self.mode_box.setCurrentIndex(index)
        self.mode_box.setToolTip(tip + "\nGPU · CPU · Recall: choose how Kelvin answers")

    # ---- a turn ----------------------------------------------------------------------------------
    def ask(self, text: str) -> None:
        if self.services is None or self._turn is not None:
            return
        if self._reading:  # the transcript is on its way: the question goes below it
            self._waiting.append(text)
            return
        c, project = self.services.conversation, self.project
        asked = self.chat.add("user", text)
        said = self.chat.add("assistant", "", "streaming")
        self.chat.set_busy(True)
        self.statusBar().showMessage("Kelvin is answering …")
        started = time.monotonic()

        def token(piece: str) -> None:
            if project == self.project:
                self.chat.append(piece)

        def done(result) -> None:
            if result.error_kind in ("not_running", "model_missing"):
                self._ollama_problem = result.error.rstrip(".")
            elif result.status == "complete":
                self._ollama_problem = ""
            if result.status == "command" and c.project != self.project:  # /project, /rename
                self.chat.add("assistant", result.text)  # (replaced by the new project's transcript)
                self.project_now(c.project, greet=True)
                self.pools.run(self.pools.general, lambda report: self._remember_project(c.project))
                return
            if project != self.project:
                return  # the artist switched project meanwhile: the reply is stored in its own
            self.chat.finish(result.text, result.status, looked_at(result), result.error)
            for entry, stored in ((asked, result.question), (said, result.answer)):
                if stored is not None:  # the stored messages it shows: never shown twice when they are read back
                    entry.message_id, entry.ts_ms = stored.id, stored.ts_ms
            self._find_chips(result, self.chat.entries[-1])
            if result.greeting:
                self.chat.add("notice", result.greeting)
            self._show_mode()
            self.statusBar().showMessage(f"{result.status} in {time.monotonic() - started:.1f} s · committing in the "
                                         "background", 4000)

        self._turn = self.pools.run(self.pools.model, lambda report: c.ask(text, on_token=report),
                                    yielded=token, returned=done,
                                    errored=lambda exc: self.chat.finish("", "failed", [], str(exc))
                                    if project == self.project else None,
                                    finished=self._turn_over)

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
            in_use = {(c.entry.engine, c.entry.parameter): c.entry.value for c in book.currents()}
            return ([e for i in ids for e in book.mentions_of(i) if not e.candidate], in_use)

        self.pools.run(self.pools.memory, find, returned=lambda r: self.chat.show_chips(entry, r[0], project, r[1])
                       if project == self.project else None)

    def _chip(self, action: str, chip, value: str) -> None:
        if self.services is None:
            return
        ledger, e = self.services.conversation.ledger, chip.entry
        project = chip.project or self.project

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

        self.pools.run(self.pools.memory, act, returned=lambda state: (self.chat.chip_done(chip, state),
                                                                      self.browser.changed(f"Setting {state}")),
                       errored=lambda exc: self.chat.add("notice", f"Setting not changed: {exc}"))

    def _turn_over(self) -> None:
        self._turn = None
        self.chat.set_busy(False)
        if self._transcript_behind:
            self._written_elsewhere(self.project)

    def stop_reply(self) -> None:
        if self._turn is not None and self.services is not None:
            self.services.conversation.cancel()
            self.statusBar().showMessage("Stopping the reply …", 2000)

    # ---- the brief --------------------------------------------------------------------------------
    def _builder(self):
        from app.services.brief import BriefBuilder

        return BriefBuilder(self.services.conversation)

    def _load_brief(self) -> None:
        if self.services is None or self._brief_cancel is not None:
            return
        builder, project = self._builder(), self.project
        self.pools.run(self.pools.memory, lambda report: (builder.current(project), builder.archive(project)),
                       returned=lambda r: self.brief.show_brief(*r) if project == self.project else None,
                       errored=lambda exc: self.brief.status.setText(f"The brief could not be read: {exc}"))

    def end_of_day(self) -> None:
        """Write the master brief on the model's worker (one model call at a time), with progress."""
        if self.services is None or self._brief_cancel is not None:
            return
        import threading

        from app.services.brief import BriefCancelled

        self._show_view(self.views.indexOf(self.brief))
        builder, cancel, project = self._builder(), threading.Event(), self.project
        self._brief_cancel = cancel
        self.brief.running(True)
        self.statusBar().showMessage("Writing the brief …")

        def done(result) -> None:
            self.notify("Brief ready", f"The master brief of {result.project} is written.")
            if project != self.project:
                return
            self.brief.show_brief(result.text, builder.archive(project))
            flagged = f"; numbers to check: {', '.join(result.flagged)}" if result.flagged else ""
            self.brief.status.setText(f"Written from {result.messages} messages in {len(result.domains)} "
                                      f"domain{'s' if len(result.domains) != 1 else ''}"
                                      f"{flagged}. {result.path}")

        def failed(exc) -> None:
            said = str(exc) if isinstance(exc, (BriefCancelled, RecordError)) else f"The brief failed: {exc}"
            self.brief.status.setText(said[:1].upper() + said[1:])

        def over() -> None:
            self._brief_cancel = None
            self.brief.running(False)
            self.statusBar().clearMessage()

        self.pools.run(self.pools.model, lambda report: builder.build(project, progress=lambda d, t, s: report((d, t, s)),
                                                                      cancel=cancel),
                       yielded=lambda p: self.brief.step(*p) if project == self.project else None, returned=done,
                       errored=failed, finished=over)

    # ---- status ----------------------------------------------------------------------------------
    def _check_ollama(self) -> None:
        c = self.services.conversation

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
            self._set_state(self.ollama_label, r[0], r[1], "bad" if "not running" in r[0] else "warn" if r[2] else "ok")
            self._ollama_problem = r[2]
            self._show_mode()

        self.pools.run(self.pools.general, probe, returned=seen)

    def _guard_state(self, state: str, reason: str) -> None:
        label = {"normal": "GPU: ok", "yielding": "GPU: leaving …", "yielded": "GPU: yielded to render",
                 "recovering": "GPU: coming back …", "off": "GPU: guard off"}.get(state, state)
        self._set_state(self.gpu_label, label, reason or None, GPU_HEALTH.get(state, ""))
        self.tray.set_state(state, reason)
        self.gpu.show_state(state, reason)
        self._show_mode()

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
        self._save_geometry()
        if not self._quitting and self.tray.keep_running.isChecked() and self.tray.available:
            self.hide()  # Kelvin keeps watching the GPU and committing; the tray brings it back
            event.ignore()
            if not self.state.value("told_tray", False, type=bool):
                self.state.setValue("told_tray", True)
                doing = "watches the GPU and saves your turns" if self.guard is not None else "saves your turns"
                self.tray.notify("Kelvin is still running", f"It {doing} in the background. Quit from the tray menu.")
            return
        self.state.sync()
        self._ollama_timer.stop()
        self.watch.stop()
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

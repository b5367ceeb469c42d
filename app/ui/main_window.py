"""Kelvin's window: a header (project, mode, Ollama, the VRAM guard, always on top), the views, a
status bar that says what Kelvin is doing. The window only composes: each feature has its presenter
(the chat's turns and chips, the memory browser, the brief, the VRAM guard, the projects, the
model's state), which drives the services through workers and talks to its view; the window wires
them together, switches views, keeps its geometry and says what the presenters tell it to.

One project is current, and every view follows it (:class:`app.ui.workspace.Workspace`): the title,
the tray's tooltip, the chat's transcript (that project's messages, the last ones first, earlier
ones a scroll away), the memory browser and its settings, the brief. Whatever was asked for the
project before and lands after a switch is dropped. Kelvin opens on the last project the artist
worked in (saved as ``project`` in kelvin.toml, so the command line follows too)."""
from __future__ import annotations

import html
import logging

from PySide6.QtCore import QCoreApplication, QPoint, QRect, QSettings, QSize, Qt, QTimer
from PySide6.QtGui import QCloseEvent, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import QAbstractItemView, QLabel, QMainWindow, QStackedWidget, QTabBar, QVBoxLayout, QWidget

from app.core.vram import process_key, renderer_names
from app.ui.brief_presenter import BriefPresenter
from app.ui.brief_view import BriefView
from app.ui.chat_presenter import ChatPresenter
from app.ui.chat_view import ChatView
from app.ui.gpu_presenter import GpuPresenter
from app.ui.gpu_view import GpuView
from app.ui.header import Header
from app.ui.icon import kelvin_icon
from app.ui.memory_browser import MemoryBrowser
from app.ui.memory_view import MemoryView
from app.ui.project_watch import ProjectWatch
from app.ui.projects_presenter import ProjectsPresenter, remember_project
from app.ui.quiet_collect import QuietCollector
from app.ui.shortcuts import WINDOW_KEYS, ShortcutSheet
from app.ui.status_presenter import StatusPresenter
from app.ui.team_state import TeamPresenter
from app.ui.tray import Tray
from app.ui.worker import Pools
from app.ui.workspace import Workspace

log = logging.getLogger("kelvin.ui")

BANNER_MS = 12_000


class MainWindow(QMainWindow):
    def __init__(self, settings, window_state: QSettings, pools: Pools | None = None):
        super().__init__()
        self.settings = settings
        self.state = window_state
        self.workspace = ws = Workspace(settings, pools, self)
        self.pools = ws.pools
        self.setWindowTitle(f"Kelvin — {ws.project}")
        self.setObjectName("kelvin")

        # the views
        self.header = Header()
        self.banner = QLabel(objectName="banner", wordWrap=True)
        self.banner.hide()
        self._banner_timer = QTimer(self, singleShot=True, interval=BANNER_MS, timeout=self.banner.hide)
        self.tabs = QTabBar(objectName="views")
        self.views = QStackedWidget()
        self.chat = ChatView()
        self.memory = MemoryView()
        self.gpu = GpuView(frozenset(process_key(n) for n in renderer_names(settings.renderer_processes)))
        self.brief = BriefView()
        for title, view in (("Chat", self.chat), ("Memory", self.memory), ("GPU", self.gpu), ("Brief", self.brief)):
            self.tabs.addTab(title)
            self.views.addWidget(view)
        self.setup_panel = None  # app.ui.setup_panel.SetupPanel, made when first needed
        self.tray = Tray(self)

        # the presenters, one per feature
        self.status = StatusPresenter(self.header, ws, self)
        self.guard_watch = GpuPresenter(self.gpu, ws, self)
        self.turns = ChatPresenter(self.chat, ws, self)
        self.browser = MemoryBrowser(self.memory, self.pools, self)
        self.briefing = BriefPresenter(self.brief, ws, self)
        self.projects = ProjectsPresenter(self.header.project_box, ws, self)
        self.watch = ProjectWatch(self.pools, self)  # another Kelvin process wrote the project
        self.team = TeamPresenter(self.header, ws, self)  # a shared project's state; hidden for a personal one
        self.collector = QuietCollector(lambda: self.pools.busy() > 0, self)  # full garbage collections when nobody can feel them
        self._wire()

        body = QWidget()
        layout = QVBoxLayout(body)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.header)
        layout.addWidget(self.banner)
        layout.addWidget(self.tabs)
        layout.addWidget(self.views, 1)
        self.setCentralWidget(body)
        self.statusBar().showMessage("Starting …")
        self._quitting = False

        QShortcut(QKeySequence(Qt.Key.Key_Escape), self.chat, activated=self.turns.stop_reply,
                  context=Qt.ShortcutContext.WidgetWithChildrenShortcut)  # Esc stops a reply from the chat only
        does = {"chat": lambda: self.show_view(0), "memory": lambda: self.show_view(1), "search": self._focus_search,
                "gpu": lambda: self.show_view(2), "brief": lambda: self.show_view(3), "projects": self.open_projects,
                "keys": self.show_keys, "quit": self.quit}
        for keys, _, name in WINDOW_KEYS:
            QShortcut(QKeySequence(keys), self, activated=does[name])
        self.keys_sheet: ShortcutSheet | None = None
        self._restore_geometry()
        if self.state.value("on_top", False, type=bool):
            self.header.on_top.setChecked(True)
        self.show_view(self.state.value("view", 0, type=int))
        self._focus_work()  # the view the window opens on: the cursor where its work is
        self.status.show_mode()

    def _wire(self) -> None:
        """Who follows whom: the presenters say, the window and the other presenters listen."""
        ws, tray = self.workspace, self.tray
        ws.said.connect(lambda text, ms: self.statusBar().showMessage(text, ms) if text
                        else self.statusBar().clearMessage())
        ws.project_changed.connect(self._project_changed)
        self.header.setup_wanted.connect(lambda: self.show_setup())  # not clicked(bool) into `check`
        self.header.on_top_toggled.connect(self._always_on_top)
        self.guard_watch.state_changed.connect(self._guard_state)
        self.guard_watch.watched.connect(tray.set_gpu)
        self.guard_watch.notified.connect(self.notify)
        self.guard_watch.cannot_unload.connect(tray.set_unload_problem)
        self.status.server_switched.connect(self.guard_watch.show_unload_problem)
        self.status.server_switched.connect(lambda _cannot: self.turns.server_switched())
        self.briefing.notified.connect(self.notify)
        self.turns.model_seen.connect(self.status.model_seen)
        self.status.ollama_changed.connect(self.briefing.model_changed)
        self.status.ollama_changed.connect(self._model_state)
        self.status.seen.connect(tray.set_model)
        tray.health_changed.connect(lambda health: self.setWindowIcon(kelvin_icon(health)))
        self.turns.mode_seen.connect(self.status.show_mode)
        self.turns.moved.connect(self._moved)
        self.turns.setting_changed.connect(self.browser.changed)
        self.browser.said.connect(lambda said: ws.say(said, 4000))
        self.projects.stop_reply = self.turns.stop_reply
        self.projects.changing.connect(self.turns.switching)
        self.projects.refused.connect(self._project_refused)
        self.watch.written.connect(self._written_elsewhere)
        self.chat.link_hovered.connect(lambda words: ws.say(words, 4000) if words else self.statusBar().clearMessage())
        self.tabs.currentChanged.connect(self._view_changed)
        self.chat.composer.textChanged.connect(self.collector.typing)
        self.memory.search.textEdited.connect(self.collector.typing)
        tray.show_window.connect(self._raise)
        tray.free_now.connect(self.guard_watch.free_vram)
        tray.end_of_day.connect(lambda: (self._raise(), self.end_of_day()))
        tray.quit.connect(self.quit)
        tray.keep_running.setChecked(self.state.value("close_to_tray", False, type=bool))
        tray.keep_running_changed.connect(lambda on: self.state.setValue("close_to_tray", on))
        tray.set_project(ws.project)

    @property
    def services(self):
        return self.workspace.services

    @property
    def project(self) -> str:
        return self.workspace.project

    # ---- views -----------------------------------------------------------------------------------
    def show_view(self, index: int) -> None:
        if index < self.tabs.count():
            self.tabs.setCurrentIndex(index)

    def _view_changed(self, index: int) -> None:
        if self.views.currentWidget() is self.memory:
            self.collector.soon()  # the browser's listing and searches: collected once the next view painted
        self.views.setCurrentIndex(index)
        self.state.setValue("view", index)
        if self.views.currentWidget() is self.memory and self.services is not None:
            self.memory.refresh()  # what is stored now (turns commit in the background)
        self._focus_work()

    def _focus_work(self) -> None:
        """The cursor where the view's work is: the message box, the search field, End of day, Free
        VRAM now — so typing after Ctrl+1…4 goes where the artist means."""
        view = self.views.currentWidget()
        where = {self.chat: self.chat.composer, self.memory: self.memory.search, self.brief: self.brief.button,
                 self.gpu: self.gpu.free_button if self.gpu.free_button.isEnabled() else self.gpu.events}.get(view)
        if where is not None:
            where.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if where is self.memory.search:
            self.memory.search.selectAll()

    def _focus_search(self) -> None:
        self.show_view(self.views.indexOf(self.memory))
        self._focus_work()

    def open_projects(self) -> None:
        """Ctrl+P: the project switcher, open, with the current project selected."""
        box = self.header.project_box
        box.setFocus(Qt.FocusReason.ShortcutFocusReason)
        box.showPopup()

    def show_keys(self) -> None:
        """F1 or ?: every key the window answers to."""
        if self.keys_sheet is None:
            self.keys_sheet = ShortcutSheet(self)
        self.keys_sheet.show()
        self.keys_sheet.raise_()
        self.keys_sheet.activateWindow()

    def end_of_day(self) -> None:
        self.show_view(self.views.indexOf(self.brief))
        self.briefing.end_of_day()

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
        self.guard_watch.attach_guard(services.guard, services.gpu_problem)
        self.browser.attach(services, services.conversation.project)
        self.workspace.attach(services)
        self.collector.start()  # after start_services froze what lives as long as Kelvin
        self.projects.project_now(services.conversation.project, greet=True)
        # the memory's own notices (an embedder away: search by full text meanwhile) go to the status
        # bar: the header and the mode box already say that Ollama is away, the transcript need not
        said = "; ".join(services.memory.notices)
        self.statusBar().showMessage(f"Ready · {said}" if said else f"Ready · {services.memory.data_dir}", 8000)
        self._check_setup()

    def failed_to_start(self, exc: BaseException) -> None:
        self.chat.set_ready(False, "Kelvin could not start")
        self.chat.add("notice", f"Kelvin could not open its memory: {exc}")
        self.statusBar().showMessage(str(exc))
        self.show_setup()  # where a data folder can be chosen

    def _project_changed(self, name: str, _greet: bool) -> None:
        self.setWindowTitle(f"Kelvin — {name}")
        self.tray.set_project(name)
        self.browser.use_project(name)
        if self.services is not None:
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
        self.turns.written_elsewhere(project)

    def _moved(self, name: str) -> None:
        """A command in the chat (/project, /rename) moved the conversation: the window follows."""
        self.projects.project_now(name, greet=True)
        self.pools.run(self.pools.general, lambda report: remember_project(name))

    def _project_refused(self, why: str) -> None:
        self.turns.switch_refused()
        if why:
            self.say_here("Project not changed", why)

    def _guard_state(self, words: str, reason: str, health: str, state: str) -> None:
        self.header.set_state(self.header.gpu_label, words, reason or None, health)
        if state != "off":
            self.tray.set_gpu_state(words, reason, health)
        self.status.show_mode()

    def _model_state(self, _problem: str) -> None:
        """Ollama came or went: the Setup panel looks again (the header and the tray already follow)."""
        if self.setup_panel is not None:
            self.setup_panel.refresh()

    def _raise(self) -> None:
        self.showNormal()
        self.raise_()
        self.activateWindow()

    # ---- setup -----------------------------------------------------------------------------------
    def _setup(self):
        if self.setup_panel is None:
            from app.ui.setup_panel import SetupPanel  # not at the top: it brings the ollama client

            self.setup_panel = SetupPanel(self.settings, self.pools)
            self.setup_panel.done.connect(self._close_setup)
            self.setup_panel.settings_changed.connect(
                lambda s: self.statusBar().showMessage(f"Saved; Kelvin uses {s.data_dir} after a restart", 8000))
            self.setup_panel.server_changed.connect(self.status.use_server)
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

    # ---- saying ----------------------------------------------------------------------------------
    def notify(self, title: str, text: str) -> None:
        """A notification, said once, where the artist is looking: in the window's banner while the
        window is in front of them, else a tray balloon (the banner where the desktop has no tray)."""
        if self.isActiveWindow() or not self.tray.notify(title, text):
            self.say_here(title, text)

    def say_here(self, title: str, text: str) -> None:
        """In the window's banner, under the header, for a while."""
        self.banner.setText(f"<b>{html.escape(title)}</b> — {html.escape(text)}")
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

    def closeEvent(self, event: QCloseEvent) -> None:
        self._save_geometry()
        if not self._quitting and self.tray.keep_running.isChecked() and self.tray.available:
            self.hide()  # Kelvin keeps watching the GPU and committing; the tray brings it back
            event.ignore()
            if not self.state.value("told_tray", False, type=bool):
                self.state.setValue("told_tray", True)
                doing = "watches the GPU and saves your turns" if self.guard_watch.guard is not None \
                    else "saves your turns"
                self.tray.notify("Kelvin is still running", f"It {doing} in the background. Quit from the tray menu.")
            return
        self.state.sync()
        self.collector.stop()
        self.status.stop()
        self.projects.stop()
        self.watch.stop()
        self.memory.stop()
        if self.services is not None:
            self.services.conversation.cancel()  # the partial reply is stored as stopped
        self.briefing.cancel()
        self.pools.wait()
        QCoreApplication.sendPostedEvents()  # the workers' last signals, while the services are still up
        self.pools.wait()  # and anything those started
        self.chat.stop_drawing()  # what those signals set drawing stops with the window
        self._banner_timer.stop()
        self.statusBar().clearMessage()  # and its timeout
        self.tray.hide()
        if self.services is not None:
            self.services.close()  # drains the writer: no accepted turn is dropped
            self.workspace.detach()
        event.accept()

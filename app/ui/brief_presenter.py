"""The window's side of the brief: the current project's live brief and archive, read when the view
is shown; "End of day" runs on the model's worker (one model call at a time) with its progress in
the view, and Cancel stops it with the previous brief left as it was. What lands for another
project than the current one is dropped."""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from app.core.dates import as_read
from app.core.records import RecordError
from app.ui.brief_view import BriefView
from app.ui.words import plain_words
from app.ui.workspace import Workspace


class BriefPresenter(QObject):
    notified = Signal(str, str)  # "Brief ready" …

    def __init__(self, view: BriefView, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.view = view
        self.workspace = workspace
        self.cancel_event: threading.Event | None = None  # set while a brief is being written
        self.model_problem = ""  # why the model cannot write summaries now ("" when it can)
        self._said: dict[str, tuple[str, bool]] = {}  # project → what the view says of its brief, whether about the model
        view.wanted.connect(self.load)
        view.end_of_day.connect(self.end_of_day)
        view.cancel.connect(self.cancel)
        workspace.project_changed.connect(self._project_changed)
        self._show_button()

    @property
    def running(self) -> bool:
        return self.cancel_event is not None

    def _builder(self):
        from app.services.brief import BriefBuilder

        return BriefBuilder(self.workspace.conversation)

    def _no_model(self) -> str:
        """Why the brief's summaries cannot be written now ("" when they can)."""
        c = self.workspace.conversation
        if c is not None and c.mode.value == "recall" and c.mode_reason in ("", "the artist"):
            return "Kelvin answers from memory alone (Memory only, in the mode box)"
        return self.model_problem

    # ---- what the view says, per project --------------------------------------------------------------
    def _say(self, project: str, text: str, about_model: bool = False) -> None:
        """A word about ``project``'s brief: shown while it is the current project, never for another."""
        self._said[project] = (text, about_model)
        if project == self.workspace.project:
            self.view.status.setText(text)

    def model_changed(self, problem: str) -> None:
        """Ollama came or went: what was said because of the model goes with it."""
        self.model_problem = problem
        if not problem:
            self._said = {p: s for p, s in self._said.items() if not s[1]}
        self.view.status.setText(self._said.get(self.workspace.project, ("", False))[0])
        self._show_button()
        if not problem and self.view.isVisible():
            self.load()  # the model is back: a brief written without it says its summaries are due

    def _show_button(self) -> None:
        why = self._no_model()
        self.view.button.setToolTip(
            "Summarise the day into the master brief; the old one goes to the archive" if not why else
            f"{why}: End of day writes what Kelvin can without the model — the settings, today's decisions and "
            "messages; the summaries come when the model is back")

    def _project_changed(self, project: str, _greet: bool) -> None:
        self.view.show_brief("", [])
        self.view.status.setText(self._said.get(project, ("", False))[0])
        if self.view.isVisible():
            self.load()

    # ---- reading and writing ---------------------------------------------------------------------------
    def load(self) -> None:
        ws = self.workspace
        if ws.services is None or self.running:
            return
        builder, project = self._builder(), ws.project
        self._show_button()

        def shown(r) -> None:
            if project != ws.project:
                return
            self.view.show_brief(r[0], r[1])
            if r[2] and not self._no_model():
                self._say(project, "This brief was written without the model: End of day now adds the summaries.")

        ws.pools.run(ws.pools.memory, lambda report: (builder.current(project), builder.archive(project),
                                                      builder.summaries_due(project)),
                     returned=shown, errored=lambda exc: self._say(project, f"The brief could not be read: {exc}"))

    def cancel(self) -> None:
        if self.cancel_event is not None:
            self.cancel_event.set()

    def end_of_day(self) -> None:
        """Write the master brief on the model's worker, with progress — or, with no model, what the
        brief can say without it, on the memory's worker."""
        ws = self.workspace
        if ws.services is None or self.running:
            return
        from app.services.brief import BriefCancelled, NoModel, NothingNew

        builder, cancel, project, no_model = self._builder(), threading.Event(), ws.project, self._no_model()
        self.cancel_event = cancel
        self.view.running(True)
        ws.say("Writing the brief …", 0)

        def write(report):
            if no_model:
                return builder.without_model(project, no_model)
            try:
                return builder.build(project, progress=lambda d, t, s: report((d, t, s)), cancel=cancel)
            except NoModel:  # the model went away half way: what can be said without it
                return builder.without_model(project, "the model went away while the brief was being written")

        def done(result) -> None:
            if project != ws.project or not self.view.isVisible():  # said once: the Brief view says it itself
                self.notified.emit("Brief ready", f"The master brief of {result.project} is written.")
            if project != ws.project:
                return
            self.view.show_brief(result.text, builder.archive(project))
            if result.mode == "memory":
                self._say(project, f"Written from memory alone: the settings, today's decisions and "
                                   f"{result.messages} message{'s' if result.messages != 1 else ''} by domain. The "
                                   "summaries come when the model is back — End of day again then.", about_model=True)
                return
            flagged = f"; numbers to check: {', '.join(result.flagged)}" if result.flagged else ""
            self._say(project, f"Written from {result.messages} messages in {len(result.domains)} "
                               f"domain{'s' if len(result.domains) != 1 else ''}{flagged}.")

        def failed(exc) -> None:
            if isinstance(exc, NothingNew):
                said = f"Nothing new since the last brief ({as_read(exc.since_ms)}): it stays as it is."
            elif isinstance(exc, BriefCancelled):
                said = "Stopped: the previous brief is unchanged."
            elif isinstance(exc, RecordError):
                said = plain_words(str(exc))
            else:
                said = f"The brief failed: {plain_words(str(exc))}"
            self._say(project, said[:1].upper() + said[1:])

        def over() -> None:
            self.cancel_event = None
            self.view.running(False)
            ws.say("", 0)

        pool = ws.pools.memory if no_model else ws.pools.model
        ws.pools.run(pool, write, yielded=lambda p: self.view.step(*p) if project == ws.project else None,
                     returned=done, errored=failed, finished=over)

"""The window's side of the brief: the current project's live brief and archive, read when the view
is shown; "End of day" runs on the model's worker (one model call at a time) with its progress in
the view, and Cancel stops it with the previous brief left as it was. What lands for another
project than the current one is dropped."""
from __future__ import annotations

import threading

from PySide6.QtCore import QObject, Signal

from app.core.records import RecordError
from app.ui.brief_view import BriefView
from app.ui.workspace import Workspace


class BriefPresenter(QObject):
    notified = Signal(str, str)  # "Brief ready" …

    def __init__(self, view: BriefView, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.view = view
        self.workspace = workspace
        self.cancel_event: threading.Event | None = None  # set while a brief is being written
        view.wanted.connect(self.load)
        view.end_of_day.connect(self.end_of_day)
        view.cancel.connect(self.cancel)
        workspace.project_changed.connect(self._project_changed)

    @property
    def running(self) -> bool:
        return self.cancel_event is not None

    def _builder(self):
        from app.services.brief import BriefBuilder

        return BriefBuilder(self.workspace.conversation)

    def _project_changed(self, _name: str, _greet: bool) -> None:
        self.view.show_brief("", [])
        if self.view.isVisible():
            self.load()

    def load(self) -> None:
        ws = self.workspace
        if ws.services is None or self.running:
            return
        builder, project = self._builder(), ws.project
        ws.pools.run(ws.pools.memory, lambda report: (builder.current(project), builder.archive(project)),
                     returned=lambda r: self.view.show_brief(*r) if project == ws.project else None,
                     errored=lambda exc: self.view.status.setText(f"The brief could not be read: {exc}"))

    def cancel(self) -> None:
        if self.cancel_event is not None:
            self.cancel_event.set()

    def end_of_day(self) -> None:
        """Write the master brief on the model's worker, with progress."""
        ws = self.workspace
        if ws.services is None or self.running:
            return
        from app.services.brief import BriefCancelled

        builder, cancel, project = self._builder(), threading.Event(), ws.project
        self.cancel_event = cancel
        self.view.running(True)
        ws.say("Writing the brief …", 0)

        def done(result) -> None:
            self.notified.emit("Brief ready", f"The master brief of {result.project} is written.")
            if project != ws.project:
                return
            self.view.show_brief(result.text, builder.archive(project))
            flagged = f"; numbers to check: {', '.join(result.flagged)}" if result.flagged else ""
            self.view.status.setText(f"Written from {result.messages} messages in {len(result.domains)} "
                                     f"domain{'s' if len(result.domains) != 1 else ''}"
                                     f"{flagged}. {result.path}")

        def failed(exc) -> None:
            said = str(exc) if isinstance(exc, (BriefCancelled, RecordError)) else f"The brief failed: {exc}"
            self.view.status.setText(said[:1].upper() + said[1:])

        def over() -> None:
            self.cancel_event = None
            self.view.running(False)
            ws.say("", 0)

        ws.pools.run(ws.pools.model, lambda report: builder.build(project, progress=lambda d, t, s: report((d, t, s)),
                                                                  cancel=cancel),
                     yielded=lambda p: self.view.step(*p) if project == ws.project else None, returned=done,
                     errored=failed, finished=over)

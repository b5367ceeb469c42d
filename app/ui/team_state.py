"""The team's state in the window's header, and what the team adds shown as it lands.

The background rounds (app.services.team.TeamSync) run on their own thread; what they report
crosses to the UI thread through a signal. The header says "Team: synced", "Team: 3 waiting to
send", "Team: offline since 10:42", "Team: server refused: …"; a round that brought the team's
messages refreshes the memory view and the settings at once (the same queries the views run
themselves, on the memory pool), so another artist's words appear within a round of being sent.
Nothing here waits on the network.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

HEALTH = {"synced": "ok", "sending": "ok", "offline": "warn", "refused": "bad", "personal": ""}


class _Bridge(QObject):
    changed = Signal(object, int)


class TeamPresenter(QObject):
    def __init__(self, window, label):
        super().__init__(window)
        self.window = window
        self.label = label
        self.sync = None
        self._bridge = _Bridge()
        self._bridge.changed.connect(self._changed)
        label.hide()

    def attach(self, sync) -> None:
        """The background rounds (None: no studio server is set; the label stays hidden)."""
        self.sync = sync
        if sync is not None:
            sync.on_change = self._bridge.changed.emit

    def follow(self, project: str) -> None:
        """The window's project is now ``project``: keep it in step (if it is shared), and say so."""
        if self.sync is None:
            return
        self.sync.follow(project)
        team = self.sync.team
        window = self.window

        def look(report):
            return team.status(project)

        window.pools.run(window.pools.memory, look,
                         returned=lambda status: self._changed(status, 0) if project == window.project else None)

    def share(self, project: str) -> None:
        """Put the current project on the studio's server (on a worker: it sends all of it)."""
        if self.sync is None:
            return
        team, window = self.sync.team, self.window
        window.statusBar().showMessage(f"Sharing {project} with the team …")

        def done(shared) -> None:
            window.statusBar().showMessage(f"{project} is shared: the team can join it as “{shared.name}”", 8000)
            self.follow(project)

        window.pools.run(window.pools.general, lambda report: team.share(project), returned=done,
                         errored=lambda exc: window.notify("Not shared", str(exc)))

    def _changed(self, status, pulled: int) -> None:
        if status.project != self.window.project:
            return
        box = self.window.project_box
        if box.can_share != (not status.shared):
            box.can_share = not status.shared
            box.show_projects([box.itemData(i) for i in range(box.count())
                               if isinstance(box.itemData(i), str) and not box.itemData(i).startswith("\x00")],
                              status.project)
        if not status.shared:
            self.label.hide()
            return
        self.label.show()
        tip = {"synced": "Everything you wrote is on the studio's server, and what the team wrote is here.",
               "sending": "Saved here; it goes to the studio's server in a moment.",
               "offline": f"{status.problem}. You can keep working: it is sent when the server is back.",
               "refused": f"{status.problem}."}[status.state]
        self.window._set_state(self.label, f"Team: {status.words()}", tip, HEALTH.get(status.state, ""))
        self.window._fit_header()
        if pulled:
            self.window.team_added(pulled)

"""The team's state in the window's header, and what the team adds shown as it lands.

The background rounds (app.services.team_sync.TeamSync) run on their own thread; what they report
crosses to the UI thread through a signal. The header says "Team: synced", "Team: 3 waiting to
send", "Team: offline since 10:42", "Team: server refused: …" (hidden for a personal project); a
round that brought the team's messages refreshes the memory view (and its settings) at once, so
another artist's words appear within a round of being sent. Nothing here waits on the network.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

HEALTH = {"synced": "ok", "sending": "ok", "offline": "warn", "refused": "bad", "personal": ""}
TIPS = {"synced": "Everything you wrote is on the studio's server, and what the team wrote is here.",
        "sending": "Saved here; it goes to the studio's server in a moment."}


class TeamPresenter(QObject):
    changed = Signal(object, int)  # a round's status and how many of the team's events it brought (any thread)

    def __init__(self, header, workspace, window):
        super().__init__(window)
        self.header, self.ws, self.window = header, workspace, window
        self.label = header.team_label
        self.sync = None
        self.changed.connect(self._changed)
        workspace.attached.connect(lambda services: self.attach(getattr(services, "team", None)))
        workspace.project_changed.connect(lambda name, _greet: self.follow(name))
        header.project_box.share_requested.connect(self.share)

    def attach(self, sync) -> None:
        """The background rounds (None: no studio server is set; the label stays hidden)."""
        self.sync = sync
        if sync is not None:
            sync.on_change = self.changed.emit
            self.follow(self.ws.project)

    def follow(self, project: str) -> None:
        """The window's project is now ``project``: keep it in step (if it is shared), and say so."""
        if self.sync is None:
            return
        self.sync.follow(project)
        team, ws = self.sync.team, self.ws
        ws.pools.run(ws.pools.memory, lambda report: team.status(project),
                     returned=lambda status: self._changed(status, 0) if project == ws.project else None)

    def share(self, project: str) -> None:
        """Put the current project on the studio's server (on a worker: it sends all of it)."""
        if self.sync is None:
            return
        team, ws = self.sync.team, self.ws
        ws.say(f"Sharing {project} with the team …", 0)

        def done(shared) -> None:
            ws.say(f"{project} is shared: the team can join it as “{shared.name}”", 8000)
            self.follow(project)

        ws.pools.run(ws.pools.general, lambda report: team.share(project), returned=done,
                     errored=lambda exc: self.window.notify("Not shared", str(exc)))

    def _changed(self, status, pulled: int) -> None:
        if status.project != self.ws.project:
            return
        box = self.header.project_box
        if box.can_share != (not status.shared):
            box.can_share = not status.shared
            box.show_projects([box.itemData(i) for i in range(box.count())
                               if isinstance(box.itemData(i), str) and not box.itemData(i).startswith("\x00")],
                              status.project)
        self.label.setVisible(status.shared)
        if not status.shared:
            return
        tip = TIPS.get(status.state) or f"{status.problem}." + (
            " You can keep working: it is sent when the server is back." if status.state == "offline" else "")
        self.header.set_state(self.label, f"Team: {status.words()}", tip, HEALTH.get(status.state, ""))
        self.header.fit(self.header.width())
        if pulled:
            self._arrived(pulled)

    def _arrived(self, events: int) -> None:
        """A round brought the team's messages or decisions: the memory view and its settings show
        them now (if on screen), the status bar says so briefly."""
        w = self.window
        if w.views.currentWidget() is w.memory:
            w.memory.refresh()  # (and the settings with it)
        self.ws.say(f"The team added {events:,} change{'s' if events != 1 else ''} to {self.ws.project}", 4000)

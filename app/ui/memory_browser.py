"""The window's side of the memory view: what the view asks for (a search, a page of rows, an
edit, a delete, an undo, the settings and a setting's history) runs on the memory pool against the
window's current project, and comes back only if it still belongs there.

Every request carries the project it was made for and the query it answers; the answer of an
earlier project or an earlier query is dropped, so a switch while a search, a page load or an edit
is in flight never shows — or lets anyone edit — another project's rows. Edits and deletes act on
the project of the messages they were made on; an undo puts a message back where it came from.
"""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.core.filters import Filters
from app.core.records import RecordError
from app.ui.memory_view import MemoryView
from app.ui.worker import Pools


class MemoryBrowser(QObject):
    said = Signal(str)  # a change was stored ("Edited; saved"): the window's status bar says it

    def __init__(self, view: MemoryView, pools: Pools, parent=None):
        super().__init__(parent)
        self.view = view
        self.pools = pools
        self.services = None
        self.project = ""
        self._query = 0  # the newest query's number: older answers are dropped
        view.query.connect(self.query)
        view.model.wanted.connect(self._fetch_rows)
        view.edit_requested.connect(self._edit)
        view.delete_requested.connect(self._delete)
        view.undo_requested.connect(self._undo)
        view.settings.history_wanted.connect(self._history)
        view.settings.set_requested.connect(self._set_setting)
        view.settings.unset_requested.connect(self._unset_setting)
        view.settings.adopt_requested.connect(self._adopt_setting)

    def attach(self, services, project: str) -> None:
        self.services = services
        self.use_project(project)

    def use_project(self, name: str) -> None:
        """The window's current project is now ``name``: nothing of the one before stays listed,
        and what is in flight for it is dropped when it lands."""
        self.project = name
        self._query += 1
        self.view.clear(f"Loading {name} …" if self.view.isVisible() else "")
        if self.view.isVisible():
            self.view.refresh()

    # ---- reading -----------------------------------------------------------------------------------
    def query(self, text: str, values: dict) -> None:
        if self.services is None:
            return
        memory, project, filters = self.services.memory, self.project, Filters(**values)
        self._query += 1
        number = self._query

        def look(report):
            if text:
                hits = memory.search(text, k=200, filters=filters, project=project, only_matches=True)
                return [h.message.id for h in hits], {h.message.id: h.message for h in hits}
            return memory.message_ids(project, filters), {}

        def landed(result) -> None:
            if number == self._query and project == self.project:
                self.view.show_results(result[0], result[1], text)

        def failed(exc) -> None:
            if number == self._query:
                self.view.count.setText(f"Search failed: {exc}")

        self.pools.run(self.pools.memory, look, returned=landed, errored=failed)
        self.settings()

    def _fetch_rows(self, ids: list) -> None:
        if self.services is None:
            return
        memory, project, generation = self.services.memory, self.project, self.view.model.generation
        self.pools.run(self.pools.memory, lambda report: memory.messages(ids, project),
                       returned=lambda found: self.view.model.fill(found, generation)
                       if project == self.project else None)

    def settings(self) -> None:
        """The current value of every setting of the project, and the selected one's history. Read
        again only when something was written to the project since they were shown (its change mark
        moved): each search typed asks, and reading a big project's ledger again each time (thousands
        of settings and candidates, sorted in Python) held the GIL the window needs."""
        if self.services is None:
            return
        memory, ledger, project = self.services.memory, self.services.conversation.ledger, self.project
        panel = self.view.settings
        shown = panel.shown_mark

        def read(report):
            memory.flush()  # what this window asked to write is in the mark
            mark = (project, memory.changes(project))
            if mark == shown:
                return None  # nothing written since: the settings shown are the settings
            rows = ledger.current(project, candidates=True)
            scene = ledger.scene_answer(project, say_none=False)
            return rows, scene, mark

        def show(found) -> None:
            if found is not None and project == self.project:
                panel.show_current(found[0])
                panel.show_scene(found[1])
                panel.shown_mark = found[2]

        self.pools.run(self.pools.memory, read, returned=show,
                       errored=lambda exc: self.view.settings.count.setText(f"Settings could not be read: {exc}"))
        key = self.view.settings.selected_key()
        if key is not None:
            self._history(key)

    def _history(self, key) -> None:
        memory, ledger, project = self.services.memory, self.services.conversation.ledger, self.project

        def history(report):
            entries = ledger.book(project).history(*key)
            ids = [e.source_id for e in entries if e.source_id and e.by != "artist"]
            return entries, {i: m.text for i, m in memory.messages(ids, project).items()}

        self.pools.run(self.pools.memory, history,
                       returned=lambda r: self.view.settings.show_history(key, *r) if project == self.project else None)

    # ---- changing ----------------------------------------------------------------------------------
    def _edit(self, before, text: str) -> None:
        memory, project = self.services.memory, before.project

        def stored(after) -> None:
            if project == self.project:
                self.view.edited(before, after)
            self.changed("Edited and saved")

        self.pools.run(self.pools.memory, lambda report: memory.edit(before.id, text, project), returned=stored,
                       errored=lambda exc: self.view.count.setText(f"Not edited: {exc}"))

    def _delete(self, messages: list) -> None:
        memory = self.services.memory

        def delete(report):
            done = []
            for m in messages:
                try:
                    memory.delete(m.id, m.project)
                except RecordError:  # already gone (deleted elsewhere): nothing to undo for it
                    continue
                done.append(m)
            return done

        self.pools.run(self.pools.memory, delete, returned=lambda done: (self.view.deleted(done),
                                                                       self.changed("Deleted; Undo puts it back")),
                       errored=lambda exc: self.view.count.setText(f"Not deleted: {exc}"))

    def _undo(self, action) -> None:
        memory = self.services.memory
        kind, what = action

        def undo(report):
            if kind == "edit":
                memory.edit(what.id, what.text, what.project)
                return "Edit undone."
            for m in what:
                memory.restore(m, m.project)
            return f"Restored {len(what)} message{'s' if len(what) != 1 else ''}."

        self.pools.run(self.pools.memory, undo, returned=lambda said: (self.view.undone(said), self.changed(said)),
                       errored=lambda exc: self.view.undone(f"Could not undo: {exc}"))

    def _set_setting(self, key, text: str) -> None:
        ledger, project = self.services.conversation.ledger, self.project
        self.pools.run(self.pools.memory, lambda report: ledger.set(key[1], text, key[0] or "any", project,
                                                                    note="corrected in the memory browser",
                                                                    scope=key[2]),
                       returned=lambda _: self.changed("Setting corrected"),
                       errored=lambda exc: self.view.settings.count.setText(f"Not changed: {exc}"))

    def _unset_setting(self, key) -> None:
        ledger, project = self.services.conversation.ledger, self.project
        self.pools.run(self.pools.memory, lambda report: ledger.unset(key[1], key[0] or "any", project, scope=key[2]),
                       returned=lambda _: self.changed("Setting unset"),
                       errored=lambda exc: self.view.settings.count.setText(f"Not unset: {exc}"))

    def _adopt_setting(self, key) -> None:
        """The file's value becomes the decision (journaled like any correction)."""
        ledger, project = self.services.conversation.ledger, self.project
        self.pools.run(self.pools.memory, lambda report: ledger.adopt(key[1], key[0] or "any", project, scope=key[2]),
                       returned=lambda _: self.changed("The file's value is now the decided one"),
                       errored=lambda exc: self.view.settings.count.setText(f"Not adopted: {exc}"))

    def changed(self, said: str) -> None:
        self.said.emit(said)
        self.settings()

"""The window's side of the chat: the current project's transcript (its last messages, earlier ones a
page at a time), a turn run on the model's worker with its tokens streamed into the view, and the
settings the turn stated shown as chips the artist answers (through the settings ledger).

A question asked while the transcript is still being read waits and goes below it; whatever lands
for another project than the current one (a reply, a page, chips) is dropped — the reply is stored
in its own project all the same."""
from __future__ import annotations

import time

from PySide6.QtCore import QObject, Signal

from app.core.dates import as_read
from app.core.filters import Filters
from app.ui.chat_view import ChatView
from app.ui.workspace import Workspace

TRANSCRIPT_PAGE = 40  # messages read for the transcript at a time
READY = "Ask about lighting, shading, render settings …  (Enter sends, Shift+Enter: new line)"
FIX_WORDS = {  # a recall answer's fix, in the window's words
    "not_running": "Start Ollama from the Setup panel (Setup… in the header).",
    "model_missing": "Pull {model} from the Setup panel (Setup… in the header).",
    "out_of_memory": "Choose CPU in the mode box, or free VRAM in the GPU view.",
    "context": "Load the model with a larger context in the model server.",
    "recall": "Memory only (the mode box): answering from memory, without a model."}
OPENAI_FIX_WORDS = {**FIX_WORDS,  # an OpenAI-compatible server (LM Studio, llama.cpp): Kelvin cannot start or pull
                    "not_running": "Start the model server, or choose another in the Setup panel (Setup… in the header).",
                    "model_missing": "Load {model} in the model server, or pick a model it has in the Setup panel "
                                     "(Setup… in the header)."}


def fix_words(c) -> dict[str, str]:
    """The fixes a recall answer names, for the server the conversation talks to now."""
    words = FIX_WORDS if c.backend.kind == "ollama" else OPENAI_FIX_WORDS
    return {k: v.format(model=c.model) for k, v in words.items()}


def looked_at(sources: list[dict]) -> list[str]:
    """What went into the prompt (a turn's note, app.services.conversation.sources_of), one line
    each, for the answer's fold-out: the settings, the past messages with when and who, the kept
    memories."""
    lines = []
    for s in sources:
        kind, text = s.get("kind"), str(s.get("text", ""))
        if kind == "setting":
            lines.append(f"Setting: {text}")
        elif kind == "message":
            who = {"user": "You", "assistant": "Kelvin"}.get(s.get("role"), "")
            head = " · ".join(x for x in (as_read(int(s.get("ts_ms") or 0)), str(s.get("domain") or ""), who) if x)
            lines.append(f"{head}: {' '.join(text.split())[:140]}")
        elif kind == "memory":
            lines.append(f"Kept memory: {text}")
    return lines


def _extras():
    """app.services.turn_extras, imported when first needed (it brings the extractor: not before the
    window's first paint)."""
    from app.services import turn_extras

    return turn_extras


def _shown(extras: dict) -> dict:
    """app.services.turn_extras' answers, as the view takes them: (lines, chips, noted) by id."""
    return {mid: (looked_at(x.sources), x.chips, x.noted) for mid, x in extras.items()}


class ChatPresenter(QObject):
    model_seen = Signal(str)  # after a turn: why the model could not answer ("" when it did)
    mode_seen = Signal()  # a turn or a command may have changed the mode
    moved = Signal(str)  # a command (/project, /rename) moved the conversation to this project
    setting_changed = Signal(str)  # a chip was answered: what happened to the setting

    def __init__(self, view: ChatView, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.view = view
        self.workspace = workspace
        self.turn = None  # the Worker of the turn in progress
        self._reading = ""  # the project whose transcript is being read
        self._waiting: list[str] = []  # questions asked meanwhile
        self._behind = False  # written elsewhere while a turn or the transcript was in flight
        view.send.connect(self.ask)
        view.stop.connect(self.stop_reply)
        view.chip_action.connect(self._chip)
        view.earlier_wanted.connect(self._earlier)
        workspace.project_changed.connect(self._load_transcript)
        workspace.attached.connect(self._attached)

    def _attached(self, services) -> None:
        self.server_switched()

    def server_switched(self) -> None:
        """The conversation talks to another server (or model) now: its fixes follow."""
        c = self.workspace.conversation
        if c is not None:
            c.fix_words = fix_words(c)

    @property
    def busy(self) -> bool:
        return self.turn is not None

    # ---- the transcript ----------------------------------------------------------------------------
    def _load_transcript(self, project: str, greet: bool) -> None:
        """The current project's last messages, then (a new day) the resume greeting below them."""
        ws = self.workspace
        if ws.services is None:
            return
        memory, c = ws.services.memory, ws.conversation
        ledger = c.ledger
        self.view.clear()
        self.view.set_ready(False, f"Reading {project} …")  # nothing is asked before the transcript is there
        self._reading = project

        def load(report):
            memory.flush()
            msgs = memory.list(project, limit=TRANSCRIPT_PAGE + 1)
            page = msgs[-TRANSCRIPT_PAGE:]
            return (page, len(msgs) > TRANSCRIPT_PAGE, c.greeting(project) if greet else "",
                    _shown(_extras().extras_of(page, project, memory, ledger)))

        def show(result) -> None:
            if project != ws.project:
                return
            msgs, more, greeting, extras = result
            self.view.set_history(msgs, more, extras)
            if greeting:
                self.view.add("notice", greeting)

        def failed(exc) -> None:
            self.view.add("notice", f"The transcript could not be read: {exc}")

        def over() -> None:
            if project != ws.project:
                return
            self._reading = ""
            self.view.set_ready(True, READY)
            if self._behind:
                self.written_elsewhere(project)
            if self._waiting:  # asked (by the tray, a test, the self-test) while the transcript loaded
                self.ask(self._waiting.pop(0))

        ws.pools.run(ws.pools.memory, load, returned=show, errored=failed, finished=over)

    def written_elsewhere(self, project: str) -> None:
        """Another Kelvin process (or this window) stored messages in the project: the transcript
        takes those it does not show yet, where they belong — once the turn in flight has its ids,
        or the transcript is there."""
        ws = self.workspace
        if ws.services is None or project != ws.project:
            return
        if self.turn is not None or self._reading:
            self._behind = True
            return
        self._behind = False
        memory, ledger = ws.services.memory, ws.conversation.ledger

        def load(report):
            msgs = memory.list(project, limit=TRANSCRIPT_PAGE)
            return msgs, _shown(_extras().extras_of(msgs, project, memory, ledger))

        ws.pools.run(ws.pools.memory, load, errored=lambda exc: None,
                     returned=lambda r: self.view.add_from_elsewhere(*r) if project == ws.project else None)

    def _earlier(self, before_ms: int, shown: list) -> None:
        ws = self.workspace
        if ws.services is None:
            return
        memory, ledger, project, skip = ws.services.memory, ws.conversation.ledger, ws.project, set(shown)

        def load(report):
            msgs = [m for m in memory.list(project, limit=TRANSCRIPT_PAGE + len(skip) + 1,
                                           filters=Filters(until_ms=before_ms)) if m.id not in skip]
            page = msgs[-TRANSCRIPT_PAGE:]
            return page, len(msgs) > TRANSCRIPT_PAGE, _shown(_extras().extras_of(page, project, memory, ledger))

        ws.pools.run(ws.pools.memory, load,
                     returned=lambda r: self.view.prepend_history(*r) if project == ws.project else None)

    def switching(self) -> None:
        """A switch of project is on its way: nothing is asked until its transcript is there."""
        self.view.set_ready(False, "Switching project …")

    def switch_refused(self) -> None:
        self.view.set_ready(True, READY)

    # ---- a turn ------------------------------------------------------------------------------------
    def ask(self, text: str) -> None:
        ws = self.workspace
        if ws.services is None or self.turn is not None:
            return
        if self._reading:  # the transcript is on its way: the question goes below it
            self._waiting.append(text)
            return
        c, project = ws.conversation, ws.project
        asked = self.view.add("user", text)
        said = self.view.add("assistant", "", "streaming")
        self.view.set_busy(True)
        ws.say("Kelvin is answering …", 0)
        started = time.monotonic()

        def token(piece: str) -> None:
            if project == ws.project:
                self.view.append(piece)

        def done(result) -> None:
            if result.error_kind in ("not_running", "model_missing"):
                self.model_seen.emit(f"Ollama is not running at {c.backend.host}" if result.error_kind == "not_running"
                                     else f"Ollama has no model {c.model}")
            elif result.status == "complete":
                self.model_seen.emit("")
            if result.status == "command" and c.project != ws.project:  # /project, /rename
                self.view.add("assistant", result.text)  # (replaced by the new project's transcript)
                self.moved.emit(c.project)
                return
            if project != ws.project:
                return  # the artist switched project meanwhile: the reply is stored in its own
            self.view.finish(result.text, result.status, looked_at(_extras().sources_of(result)), result.error)
            for entry, stored in ((asked, result.question), (said, result.answer)):
                if stored is not None:  # the stored messages it shows: never shown twice when read back
                    entry.message_id, entry.ts_ms = stored.id, stored.ts_ms
            self._find_chips(result, self.view.entries[-1])
            if result.greeting:
                self.view.add("notice", result.greeting)
            self.mode_seen.emit()
            took = f"{time.monotonic() - started:.1f} s"
            ws.say({"complete": f"Answered in {took}", "recall": f"Answered from memory in {took}",
                    "cancelled": "Stopped; what was written is kept", "cut": "The reply was cut off; what came is kept",
                    "failed": "No reply"}.get(result.status, ""), 4000)

        self.turn = ws.pools.run(ws.pools.model, lambda report: c.ask(text, on_token=report),
                                 yielded=token, returned=done,
                                 errored=lambda exc: self.view.finish("", "failed", [], str(exc))
                                 if project == ws.project else None,
                                 finished=self._turn_over)

    def _turn_over(self) -> None:
        self.turn = None
        self.view.set_busy(False)
        if self._behind:
            self.written_elsewhere(self.workspace.project)

    def stop_reply(self, reason: str = "") -> None:
        ws = self.workspace
        if self.turn is not None and ws.services is not None:
            ws.conversation.cancel(reason)
            if not reason:
                ws.say("Stopping the reply …", 2000)

    # ---- chips -------------------------------------------------------------------------------------
    def _find_chips(self, result, entry) -> None:
        """Once the turn is stored, the settings it stated become chips under the answer (noted with
        the turn), and every chip on screen is stated again: a newer value retires an older "in use"."""
        ws = self.workspace
        if result.answer is None or ws.services is None:
            return
        memory, ledger, stored = ws.services.memory, ws.conversation.ledger, result.stored
        project = result.answer.project

        def find(report):
            for f in stored:
                f.result(timeout=60)
            x = _extras()
            return x.found_chips(result.answer, result.question, project, memory, ledger), x.currents_of(ledger, project)

        def show(found) -> None:
            if project != ws.project:
                return
            chips, currents = found
            self.view.show_chips(entry, chips)
            self._restate(currents)

        ws.pools.run(ws.pools.memory, find, returned=show)

    def _restate(self, currents: dict) -> None:
        changed = [c for c in self.view.all_chips() if c.restate(currents.get(c.entry.key))]
        self.view.redraw_chips(changed)

    def _chip(self, action: str, chip, value: str) -> None:
        ws = self.workspace
        entry = self.view.entry_of(chip)
        if ws.services is None or entry is None:
            return
        memory, ledger, e = ws.services.memory, ws.conversation.ledger, chip.entry
        project, turn_chips, noted = chip.project or ws.project, list(entry.chips), entry.chips_noted

        def act(report):
            if action == "confirm":
                ledger.confirm(e, project)
                answer = "used"
            elif action == "correct":
                ledger.set(e.parameter, value, e.engine or "any", project, note="corrected in the chat", scope=e.scope)
                if e.status == "applied":
                    ledger.retract(e.id, project)  # it was read wrong
                answer = f"corrected to {value}"
            else:
                ledger.retract(e.id, project)
                answer = "turned down"
            x = _extras()
            return answer, x.note_answer(chip, answer, turn_chips, memory, noted), x.currents_of(ledger, project)

        def done(r) -> None:
            chip.answer, chip.answered_ms = r[0], r[1]
            entry.chips_noted = True
            self.view.redraw_chips([chip])
            if project == ws.project:
                self._restate(r[2])
            self.setting_changed.emit(f"Setting {r[0]}")

        ws.pools.run(ws.pools.memory, act, returned=done,
                     errored=lambda exc: self.view.add("notice", f"Setting not changed: {exc}"))

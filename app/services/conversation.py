"""Conversation: the core loop — point, fetch, answer, commit — shared by the terminal and the app.

Each turn the question is committed at once, the memory is searched, a fixed-size window is
packed (app.core.context) and the reply streams from the model server (Ollama, or any
OpenAI-compatible server: :mod:`app.llm.servers`); the finished turn goes to the
commit queue and ``ask`` returns without waiting for it. No history and no KV ``context`` is
carried between calls. Without a model (recall mode, or the server away) the answer is quoted from
memory. This module is the turn loop; its rooms: slash commands, which never become turns
(app.services.chat_commands); pointing, the memory search of a turn (app.services.retrieval); the
reply journaled while it streams and when it ends (app.services.reply_journal); and, after a reply,
in the background, overflow summaries (app.services.overflow_summaries) and the optional model pass
(app.services.model_pass). A turn and its result: app.services.turn. Qt-free.

Threads and the state each owns
-------------------------------

============================  ===============================================================================
thread                        what it does to a Conversation
============================  ===============================================================================
the caller of ``ask``         the window's ``kelvin-model`` pool (app.ui.worker), the terminal's main thread:
                              runs the turn under the conversation lock; also ``switch_project``,
                              ``rename_project``, ``new_conversation``, ``use_server``, the slash commands
the brief's thread            the window's ``kelvin-model`` pool, ``kelvin brief``'s worker: holds
                              ``inference_lock`` for each model call of the brief (app.services.brief)
``kelvin-after-turn``         this conversation's :class:`~app.services.background.NamedPool` (one thread, alive
                              only while it has work): overflow summaries and the model pass, one model call at
                              a time, each under the conversation lock
``kelvin-model-stream``       one per streamed reply (app.llm.stream): reads the server; touches nothing here
``kelvin-writer``             the commit queue's thread (app.services.commit_queue): its commit callbacks
                              append to ``commit_problems`` (``_watch``)
``kelvin-gpu-action``         the VRAM guard's actions (app.services.gpu_guard): ``set_mode`` and ``cancel``
the window's UI thread        ``cancel`` (the Stop button); reads ``project``, ``mode``, ``model``
the window's memory pool      ``greeting`` (a project's first look at its transcript, app.ui.chat_presenter)
============================  ===============================================================================

One lock, ``inference_lock`` (re-entrant; also taken by the brief, app.services.brief), guards the
conversation's state — the current project, conversation and day, the last turns (``_recent``) and
their notes (``_notes``), the model server and what is known of its models, the calibration — and
means one model call at a time. Whoever changes that state holds it: ``ask`` for the whole turn,
``switch_project``, ``rename_project``, ``new_conversation``, ``use_server`` and each background job.
Those that change it first stop the background job (``_stop_background``), so a switch never waits for
a summary, and a summary never writes a note into the project switched to.

Never under the lock, from any thread, so that they never wait for the turn they act on:
``cancel`` (the current turn's ``stop`` event, the stream published in ``_stream``, ``_cancel_reason``)
and ``set_mode`` (``mode``, ``mode_reason``, ``on_mode``): each is one reference assignment, and a turn
reads them once when it starts (:class:`~app.services.turn.Turn`). ``_greeted`` has a lock of its own,
held for a set look-up and never while taking another. Lock order: ``inference_lock`` before the memory
service's and the stores' own locks (a turn commits while holding it), never the other way round.
"""
from __future__ import annotations

import logging
import threading
from concurrent.futures import Future
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Callable

from app import resources
from app.core import commands, tools
from app.core.commands import Mode
from app.core.context import RECENT_TURNS, Budget, Ingredients, Window, pack, when
from app.core.recall import recall_answer
from app.core.records import Message, RecordError, check_text, clean_output, new_id
from app.core.tokens import Calibration, clip, estimate_messages
from app.llm.errors import (ContextTooSmall, ModelMissing, ModelServerUnavailable, NotCompatible, NotRunning,
                            OutOfMemory, StreamCut)
from app.llm.model_server import ChatChunk, ModelInfo, ModelServer, ToolCall
from app.llm.servers import connect
from app.llm.stream import ChatStream
from app.core.filters import Filters
from app.services import chat_commands, model_pass, overflow_summaries, reply_journal, retrieval
from app.services.retrieval import NOT_FOR_RETRIEVAL, SettingsLookup
from app.services.background import NamedPool
from app.services.turn import Turn, TurnResult
from app.services.memory import MemoryService
from app.services.projects import Projects
from app.services.settings_ledger import SettingsLedger, setting_label, value_text
from app.config import Config

log = logging.getLogger("kelvin.conversation")

BRIEF_FILE = "Master_Project_Brief.md"





class Conversation:
    def __init__(self, settings: Config, memory: MemoryService, backend: ModelServer | None = None, *,
                 projects: Projects | None = None, mode: Mode = Mode.GPU, settings_lookup: SettingsLookup | None = None):
        self.settings = settings
        self.memory = memory
        self.backend: ModelServer = backend or connect(settings)
        self._own_backend = backend is None
        self.projects = projects or Projects(memory)
        self.model = settings.chat_model
        self.budget = Budget(num_ctx=settings.num_ctx)  # the window on the GPU (CPU mode: budget_for)
        self._context_limit: dict[str, int] = {}  # model → the most tokens its server takes per request
        self.mode = mode
        self.ledger = SettingsLedger(memory)
        self.settings_lookup = settings_lookup or self.ledger.relevant
        self.calibration: dict[str, Calibration] = {}
        self.commit_problems: list[str] = []  # commits that failed in the background, for the caller to show
        self._model_info: dict[str, ModelInfo | None] = {}
        self._inference = threading.RLock()  # the conversation lock: its state, one model call at a time
        self.inference_lock = self._inference  # for the other users of the model (the brief)
        self.on_mode: list[Callable[[Mode], None]] = []  # called (any thread) when the mode changes
        self.mode_reason = ""  # why the mode is what it is ("the artist", or the VRAM guard's reason)
        self._greeted: set[tuple[str, str]] = set()  # (project, day) greeted with yesterday's brief
        self._greeted_lock = threading.Lock()
        self._turn_stop = threading.Event()  # the current turn's cancel token (a new one each turn)
        self._summary_stop = threading.Event()
        self._stream: tuple[str, ChatStream] | None = None  # ("turn" | "summary", the stream)
        self._streaming_mode: Mode | None = None  # the mode of the reply streaming now
        self._cancel_reason = ""
        self._after_turn_jobs = NamedPool("kelvin-after-turn")  # summaries and the model pass, one at a time
        self._notes: dict[str, str] = {}
        self.project = ""
        self.conversation_id = ""
        self._day = ""
        self._recent: list[Message] | None = None
        self.switch_project(settings.project)
        self.set_mode(mode)

    # ---- projects, conversations, modes ------------------------------------------------------------
    def switch_project(self, name: str, create: bool = True) -> None:
        """Make ``name`` the current project (created if new, when ``create``; else a name that is no
        project is refused, naming the nearest). Takes its write lock now, so a project held by another
        Kelvin is refused here, with a message, rather than failing a commit later."""
        self._stop_background(wait=True)  # not while a summary of the project before writes its note
        with self._inference:
            self._switch(name, create)

    def _switch(self, name: str, create: bool = True) -> None:
        if not create:
            self.projects.require(name, f"/project new {name}")
        info = self.projects.ensure(name)
        self.memory.open(info.name)
        self.project = info.name
        self.conversation_id = self.projects.conversation(info.name)
        self._day = self.projects.today()
        self._recent = None
        self._notes = {}
        # the first start or first turn of a day: yesterday's domain files go to archive/YYYY-MM-DD/
        moved = self.memory.roll_over(info.name, self._day)
        if moved:
            log.info("project %s: %d earlier messages moved to the Markdown archive", info.name, moved)

    def new_conversation(self) -> str:
        self._stop_background(wait=True)
        with self._inference:
            self.conversation_id = self.projects.new_conversation(self.project)
            self._day = self.projects.today()
            self._recent = []
            self._notes = {}
            return self.conversation_id

    def rename_project(self, new: str) -> None:
        self._stop_background(wait=True)
        with self._inference:  # not while a turn or a summary writes to it
            info = self.projects.rename(self.project, new)
            self.memory.open(info.name)
            self.project = info.name

    def use_server(self, backend: ModelServer, model: str = "") -> None:
        """Talk to another model server (and ``model`` on it) from the next turn on; any thread. A reply
        streaming now stops (kept, marked as stopped); what was learned about the old server's models
        (their context, their tokenizer's calibration stays: it belongs to the model) is forgotten."""
        self.cancel("Kelvin switched to another model server")
        self._stop_background(wait=True)
        with self._inference:
            old, own = self.backend, self._own_backend
            self.backend, self._own_backend = backend, True
            self._model_info.clear()
            self._context_limit.clear()
            self.model = model or self.model
        log.info("now talking to %s at %s (chat model %s)", backend.kind, backend.host, self.model)
        if own:
            old.close()

    def set_mode(self, mode: Mode | str, reason: str = "") -> None:
        """Any thread (the artist, the VRAM guard). A summary in the background stops at once; a
        reply already streaming finishes in the mode it started in unless cancelled."""
        mode = Mode.parse(mode) if isinstance(mode, str) else mode
        if mode != self.mode:
            log.info("mode %s → %s%s", self.mode.value, mode.value, f" ({reason})" if reason else "")
            self._stop_background(wait=False)
        changed, self.mode, self.mode_reason = mode != self.mode, mode, reason
        if hasattr(self.memory.embedder, "cpu"):  # off the GPU means the embeddings too
            self.memory.embedder.cpu = mode is not Mode.GPU
        if changed:
            for listener in list(self.on_mode):
                listener(mode)

    def cancel(self, reason: str = "") -> None:
        """Stop the reply being streamed (any thread). The partial answer is kept, marked as stopped
        (by the artist, or ``reason``: "Kelvin gave the GPU to a render in Octane")."""
        self._cancel_reason = reason
        self._turn_stop.set()
        current = self._stream
        if current is not None and current[0] == "turn":
            current[1].cancel()

    @property
    def replying_on_gpu(self) -> bool:
        """A reply (or a background summary) is streaming from the model on the GPU right now."""
        return self._stream is not None and self._streaming_mode is Mode.GPU

    def close(self) -> None:
        """Stop what runs, wait (bounded) for it to let go, hang up."""
        self.cancel()
        self._stop_background(wait=True)
        if self._inference.acquire(timeout=10):
            self._inference.release()
        else:
            log.warning("a model call did not stop within 10 s of closing")
        if self._own_backend:
            self.backend.close()

    # ---- the turn ----------------------------------------------------------------------------------
    def ask(self, text: str, on_token: Callable[[str], None] = lambda s: None, *, fallback: bool = True) -> TurnResult:
        """One turn. ``fallback``: answer from memory when the model cannot (else status "failed").

        Whatever happens after the question is accepted — a cancel, the server vanishing, a bug — the
        question and a reply with its status are committed and the rolling window moves on."""
        done = chat_commands.dispatch(self, text)  # a slash command is no turn: nothing below runs for it
        if done is not None:
            return done
        text = check_text(commands.unescape(text), "question")
        stop = threading.Event()
        self._turn_stop, self._cancel_reason = stop, ""  # a cancel from now on stops this turn, and only this one
        self._stop_background(wait=True)  # a new question wins over a summary in progress
        with self._inference:
            greeting = ""
            if self.projects.today() != self._day:  # Kelvin left open overnight: a new day starts clean
                try:
                    self._switch(self.project)
                    greeting = self.greeting()
                except Exception:  # the question is kept all the same (in yesterday's conversation)
                    log.exception("starting the new day's conversation failed")
            turn = self._new_turn(stop)
            # the question is journaled before anything else can fail: searching, the window, the model
            question, stored = self.memory.commit(text, role="user", conversation_id=turn.conversation_id,
                                                  turn_id=turn.id, project=turn.project)
            self._watch(stored, "question")
            try:
                recent = [m for m in self.recent() if m.id != question.id]
            except Exception:  # an unreadable index: the turn goes on without its last turns
                log.exception("the last turns could not be read; answering without them")
                recent = []
            # a model sees the last turns in its window; a recall answer must be able to quote them
            recalled, memories, settings, repeats = self._point(turn, text, question.id,
                                                                recent if turn.mode is not Mode.RECALL else [])
            if turn.mode is Mode.RECALL:
                result = self._recall(question, recalled, memories, settings,
                                      (self.fix_words or {}).get("recall", "Recall mode: answering from memory, no model."))
            else:
                result = self._answer(turn, question, recent, recalled, memories, settings, on_token, repeats)
                if result.status == "failed" and fallback and result.error_kind in self.FALLBACK:
                    reason = self._why_from_memory(result)
                    failed = result
                    result = self._recall(question, recalled, memories, settings, reason)
                    result.error, result.error_kind = failed.error, failed.error_kind
            result.question = question
            result.stored = (stored,)
            result.greeting = greeting
            reply_journal.store(self.memory, self._watch, turn, result)
            self._remember_turn(turn, question, result.answer)
            if result.status == "complete":
                self._after_turn(turn, [question] + ([result.answer] if result.answer else []))
        return result

    def run_command(self, cmd: commands.Command) -> TurnResult:
        """Run a parsed slash command (app.services.chat_commands)."""
        return chat_commands.run(self, cmd)

    def _new_turn(self, stop: threading.Event | None = None) -> Turn:
        return Turn(id=new_id("t"), project=self.project, conversation_id=self.conversation_id, model=self.model,
                     mode=self.mode, stop=stop or threading.Event(), budget=self.budget_for(self.mode, self.model))

    def budget_for(self, mode: Mode, model: str) -> Budget:
        """The window for a turn: ``num_ctx`` on the GPU, the smaller ``cpu_num_ctx`` on the CPU (where a
        model reads its prompt many times slower), and never more than the server takes per request."""
        size = self.settings.cpu_num_ctx if mode is Mode.CPU else self.budget.num_ctx
        with self._inference:  # what is known of the server's models (asked once, kept)
            limit = self._context_limit.get(model)
            if limit is None:
                info = self._info(model) if mode is not Mode.RECALL else None
                limit = info.context_length if info and info.context_length else 0
        if limit and limit < size:
            size = max(1024, limit)
        return self.budget if size == self.budget.num_ctx else replace(self.budget, num_ctx=size)

    def _watch(self, stored: Future, what: str) -> None:
        """A commit failing in the background (disk full, project locked) must not go unnoticed."""
        def done(fut: Future) -> None:
            exc = fut.exception()
            if exc is not None:
                problem = f"the {what} could not be stored: {exc}"
                log.error("%s", problem)
                self.commit_problems.append(problem)
        stored.add_done_callback(done)

    def _point(self, turn: Turn, text: str, question_id: str, recent: list[Message]):
        """What the memory holds for this question (app.services.retrieval.point)."""
        return retrieval.point(self.memory, self.settings_lookup, turn.project, text, question_id, recent)

    # what the front end says to fix a missing model, in its own words (the window: its Setup panel);
    # None: the error's own words (the terminal's: `ollama serve`, `ollama pull …`)
    fix_words: dict[str, str] | None = None
    FALLBACK = ("not_running", "model_missing", "out_of_memory", "context")  # answered from memory instead

    def short_why(self, kind: str) -> str:
        label = self.backend.label
        return {"not_running": f"{label} is not running", "model_missing": f"the chat model is not in {label}",
                "out_of_memory": "the model does not fit in memory right now",
                "context": f"{label} takes fewer tokens per request than Kelvin's smallest window"}.get(kind, kind)

    def _why_from_memory(self, failed: TurnResult) -> str:
        """The one line that says why this answer comes from memory, and the fix."""
        if self.fix_words and failed.error_kind in self.fix_words:
            return f"{self.short_why(failed.error_kind)[:1].upper()}{self.short_why(failed.error_kind)[1:]}, so this " \
                   f"answer comes from memory. {self.fix_words[failed.error_kind]}"
        return f"{failed.error.rstrip('. ')}. Answering from memory meanwhile."

    def _recall(self, question: Message, recalled, memories, settings, reason: str) -> TurnResult:
        answer = recall_answer(question.text, reason=reason, settings=settings, memories=memories, messages=recalled)
        return TurnResult(text=answer, status="recall", mode=Mode.RECALL, memories=memories,
                          recalled=recalled[:5], settings=settings)

    def _system_prompt(self, project: str, tools_on: bool) -> str:
        hint = ("- You can keep durable facts with save_to_model_memory and look things up with recall."
                if tools_on else "")
        return resources.read_text("prompts/system.md").format(
            project=project, today=self.projects.today(), tools_hint=hint,
            host_apps="Cinema 4D, Houdini, Maya, Blender or 3ds Max")

    def greeting(self, project: str | None = None) -> str:
        """Once per project and day, when the live brief was written on an earlier day: a line
        saying Kelvin resumes from it, with the current settings. No model call."""
        project = project or self.project
        day = self.projects.today()
        with self._greeted_lock:
            if (project, day) in self._greeted:
                return ""
            self._greeted.add((project, day))
        path: Path = self.memory.store(project).folder / BRIEF_FILE
        try:
            written = datetime.fromtimestamp(path.stat().st_mtime).astimezone()
        except OSError:
            return ""
        if written.date().isoformat() >= day:
            return ""
        current = self.ledger.current(project)
        settings = "; ".join(f"{setting_label(c.entry)} = {value_text(c)}" for c in current[:12])
        more = f" and {len(current) - 12} more" if len(current) > 12 else ""
        return (f"Resuming from the brief of {written:%A} {written.day} {written:%B %H:%M} (Kelvin keeps it in mind "
                "for every answer). "
                + (f"Current settings: {settings}{more}." if settings else "No settings recorded yet."))

    def _brief(self, project: str) -> str:
        path: Path = self.memory.store(project).folder / BRIEF_FILE
        try:
            return clean_output(path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            return ""

    def _answer(self, turn: Turn, question, recent, recalled, memories, settings, on_token,
                repeats: int = 0) -> TurnResult:
        result = TurnResult(text="", status="complete", mode=turn.mode, memories=memories, recalled=recalled[:5],
                            settings=settings)
        parts: list[str] = []
        try:
            try:
                self._converse(turn, question, recent, recalled, memories, settings, on_token, result, parts, repeats)
            except ContextTooSmall as exc:  # the server holds less than the window: pack one that fits, once
                limit = exc.limit or turn.budget.num_ctx // 2  # it did not say how much: try half
                if parts or not 1024 <= limit < turn.budget.num_ctx:
                    raise
                log.info("%s takes %d tokens per request; packing %s's window to fit", self.backend.label, limit,
                         turn.model)
                self._context_limit[turn.model] = limit
                turn = replace(turn, budget=self.budget_for(turn.mode, turn.model))
                self._converse(turn, question, recent, recalled, memories, settings, on_token, result, parts, repeats)
        except ContextTooSmall as exc:
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), "context"
        except StreamCut as exc:
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), "cut"
        except ModelMissing as exc:
            result.status, result.error, result.error_kind = "failed", str(exc), "model_missing"
        except (NotRunning, NotCompatible) as exc:  # gone mid-reply: what came is kept, as cut
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), "not_running"
        except ModelServerUnavailable as exc:
            kind = "out_of_memory" if isinstance(exc, OutOfMemory) else "server"
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), kind
        except Exception as exc:  # a bug (or a broken on_token) must not lose the turn
            log.exception("the reply failed unexpectedly")
            result.status = "cut" if parts else "failed"
            result.error, result.error_kind = f"Kelvin hit an unexpected error ({exc.__class__.__name__}: {exc})", "internal"
        result.text = "".join(parts)
        if turn.stop.is_set() and result.status in ("complete", "cut"):
            result.status, result.error = "cancelled", self._cancel_reason
        if result.status == "complete" and not result.text.strip():
            result.status, result.error, result.error_kind = "failed", "the model gave an empty reply", "empty"
        return result

    def _converse(self, turn: Turn, question, recent, recalled, memories, settings, on_token,
                  result: TurnResult, parts: list[str], repeats: int = 0) -> None:
        """Pack the window, stream the reply, run the model's tool calls (a few rounds at most)."""
        cal = self.calibration.setdefault(turn.model, Calibration())
        window = self._window(turn, question.text, question.id, recent, recalled, memories, settings, repeats)
        result.window, result.memories, result.recalled = window, window.memories, window.recalled
        tools_on = window.tools
        messages = list(window.messages)
        num_predict = window.num_predict
        offer = tools_on
        schemas = tools.SCHEMA_TOKENS if tools_on else 0
        for round_ in range(tools.MAX_TOOL_ROUNDS + 1):
            final, calls = self._stream_once(messages, num_predict, turn, offer, parts, on_token, kind="turn",
                                             stop=turn.stop)
            if final is not None and final.prompt_eval_count and round_ == 0:
                result.prompt_tokens = final.prompt_eval_count
                cal.observe(estimate_messages(window.messages) + schemas, final.prompt_eval_count)
            if turn.stop.is_set() or not calls or round_ == tools.MAX_TOOL_ROUNDS:
                return
            messages.append({"role": "assistant", "content": "".join(parts),
                             "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]})
            # tool results share what the answer's reserve can spare; the answer keeps the rest
            used = cal.scale(estimate_messages(messages) + (schemas if offer else 0))
            spare = turn.budget.num_ctx - used - turn.budget.reserve // 2
            each = spare // len(calls)
            for call in calls:
                if each < 48:
                    reply = "no room left in the window for more lookups: answer with what you have"
                else:
                    reply, _ = clip(self._run_tool(turn, call.name, call.arguments, question, result),
                                    min(tools.RESULT_TOKENS, int(each / cal.ratio)) - 8)
                messages.append({"role": "tool", "tool_name": call.name, "content": reply})
            offer = offer and each >= 48 and round_ + 1 < tools.MAX_TOOL_ROUNDS
            used = cal.scale(estimate_messages(messages) + (schemas if offer else 0))
            num_predict = max(64, turn.budget.num_ctx - used - turn.budget.num_ctx // 32)

    def _window(self, turn: Turn, text: str, question_id: str, recent, recalled, memories, settings,
                repeats: int = 0) -> Window:
        """The window for this turn (no model call): tools offered if the model has them and they fit."""
        cal = self.calibration.setdefault(turn.model, Calibration())
        info = self._info(turn.model)
        tools_on = bool(info and info.supports_tools)
        brief = self._brief(turn.project)
        while True:
            window = pack(Ingredients(system=self._system_prompt(turn.project, tools_on), question=text,
                                      question_id=question_id, brief=brief, settings=settings, memories=memories,
                                      recalled=recalled, recent=tuple(recent), notes=dict(self._notes),
                                      repeats=repeats,
                                      tools=tools.SCHEMA_TOKENS if tools_on else 0), turn.budget, cal)
            if window.tools == tools_on:
                return window
            tools_on = False  # the window is too small for the schemas: no tools, and no word of them

    def _stream_once(self, messages, num_predict, turn: Turn, tools_on: bool, parts: list[str], on_token, *,
                     kind: str, stop: threading.Event) -> tuple[ChatChunk | None, list[ToolCall]]:
        """One streamed call; text goes to ``parts`` and ``on_token``. Returns the final chunk and
        the tool calls (a server may stream them in a chunk of their own)."""
        stream = self.backend.chat(turn.model, messages, tools=tools.SCHEMAS if tools_on else None,
                                   num_ctx=turn.budget.num_ctx, cpu=turn.mode is Mode.CPU, num_predict=num_predict)
        self._stream = (kind, stream)  # published before the check below: a cancel sees one or the other
        self._streaming_mode = turn.mode
        final, calls = None, []
        try:
            if stop.is_set():
                stream.cancel()
            for chunk in stream:
                if chunk.text:
                    text = clean_output(chunk.text)
                    parts.append(text)
                    on_token(text)
                    if kind == "turn":
                        reply_journal.checkpoint(self.memory, self._watch, turn, parts)
                calls += [c for c in chunk.tool_calls if c not in calls]
                if chunk.done:
                    final = chunk
        finally:
            self._stream, self._streaming_mode = None, None
            stream.close()
        return final, calls

    def _info(self, model: str) -> ModelInfo | None:
        """The chat model's capabilities (asked once; unknown if the server cannot say)."""
        if model not in self._model_info:
            try:
                self._model_info[model] = self.backend.show(model)
            except ModelServerUnavailable as exc:
                log.info("cannot ask %s about %s: %s", self.backend.label, model, exc)
                return None
        return self._model_info[model]

    def _run_tool(self, turn: Turn, name: str, arguments, question: Message, result: TurnResult) -> str:
        try:
            call = tools.check_call(name, arguments)
        except RecordError as exc:
            result.tool_log.append(f"refused a {name} call: {exc}")
            return f"error: {exc}"
        if isinstance(call, tools.Save):
            mem, stored = self.memory.remember(call.text, call.category, project=turn.project, source_id=question.id)
            self._watch(stored, "kept memory")
            result.tool_log.append(f"kept ({call.category}): {call.text}")
            return f"saved as {mem.id}"
        hits = self.memory.search(call.query, k=4, project=turn.project, drop_status=NOT_FOR_RETRIEVAL)
        kept = self.memory.search_memories(call.query, k=3, project=turn.project)
        result.tool_log.append(f"looked up: {call.query}")
        lines = [f"- (kept {when(m.ts_ms)}) {m.text}" for m, _ in kept]
        lines += [f"- [{when(h.message.ts_ms)} · {h.message.tags.domain}] {clip(h.message.text, 200)[0]}"
                  for h in hits if h.message.id != question.id]
        return "\n".join(lines) if lines else "nothing found in memory"

    # ---- the rolling window -----------------------------------------------------------------------
    def recent(self) -> list[Message]:
        """The last turns of the current conversation, oldest first (loaded from memory once)."""
        with self._inference:
            if self._recent is None:
                self.memory.flush()
                msgs = self.memory.list(self.project, limit=4 * RECENT_TURNS,
                                        filters=Filters(conversation_id=self.conversation_id))
                self._recent = _last_turns(msgs)
            return list(self._recent)

    def _remember_turn(self, turn: Turn, question: Message, answer: Message | None) -> None:
        if (turn.project, turn.conversation_id) != (self.project, self.conversation_id):
            return  # the artist moved on to another project or conversation meanwhile
        new = [question] + ([answer] if answer else [])
        ids = {m.id for m in new}  # (the question may be in the last turns already, read after it was stored)
        self._recent = _last_turns([m for m in (self._recent or []) if m.id not in ids] + new)
        self._notes = {k: v for k, v in self._notes.items() if any(m.id == k for m in self._recent)}

    # ---- after the reply: overflow summaries and the model pass ------------------------------------
    def _after_turn(self, turn: Turn, messages: list[Message]) -> None:
        """After a reply (under the lock), in the background and only while no question waits (a new
        one stops it): summarise the long messages of the window that the next turn would have to
        fold, so the note is a good one (app.services.overflow_summaries); and, if an extraction model
        is set, let it read the turn for settings the rules missed (app.services.model_pass)."""
        if turn.mode is Mode.RECALL or self.mode is Mode.RECALL:
            return
        summaries = overflow_summaries.needing_notes(self, turn)
        extract = list(messages) if self.settings.extract_model else []
        if not summaries and not extract:
            return
        stop = threading.Event()
        self._summary_stop = stop
        self._after_turn_jobs.submit(self._background, summaries, extract, turn, stop)

    def _background(self, summaries: list[Message], extract: list[Message], turn: Turn, stop: threading.Event) -> None:
        for m in summaries:
            if not overflow_summaries.summarise(self, m, turn, stop):
                return
        for m in extract:
            if not model_pass.read_for_settings(self, m, turn, stop):
                return

    def _stop_background(self, wait: bool) -> None:
        """Stop the background summary or model pass (the extractive note is used instead)."""
        if not self._after_turn_jobs.busy:
            return
        self._summary_stop.set()
        current = self._stream
        if current is not None and current[0] == "summary":
            current[1].cancel()
        if wait:
            self._after_turn_jobs.wait(timeout=5)

    @property
    def busy_in_background(self) -> bool:
        """A summary or the model pass after the last reply is queued or running."""
        return self._after_turn_jobs.busy

    def wait_background(self, timeout: float | None = None) -> bool:
        """Wait until the summaries and the model pass after the last reply are done (benches, tests,
        a front end that quits); True if nothing runs any more."""
        return self._after_turn_jobs.wait(timeout)


def _last_turns(msgs: list[Message]) -> list[Message]:
    """The messages of the last RECENT_TURNS turns, in order."""
    turns: list[str] = []
    for m in msgs:
        if m.turn_id not in turns:
            turns.append(m.turn_id)
    keep = set(turns[-RECENT_TURNS:])
    return [m for m in msgs if m.turn_id in keep]

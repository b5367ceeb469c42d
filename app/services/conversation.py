"""Conversation: the core loop — point, fetch, answer, commit — shared by the terminal and the app.

Each turn the question is committed at once, the memory is searched, a fixed-size window is
packed (app.core.context) and the reply streams from Ollama; the finished turn goes to the
commit queue and ``ask`` returns without waiting for it. No history and no KV ``context`` is
carried between calls. Without a model (recall mode, or Ollama away) the answer is quoted from
memory. ``ask`` runs on the caller's thread (a worker in the app); ``cancel`` may come from any
thread. Qt-free.
"""
from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Callable

from app import resources
from app.core import commands, tools
from app.core.commands import Command, Mode
from app.core.context import RECENT_TURNS, Budget, Ingredients, Window, pack, when
from app.core.recall import recall_answer
from app.core.records import Memory, Message, RecordError, check_text, new_id, now_ms
from app.core.tokens import Calibration, clip, estimate_messages
from app.llm.backend import ChatChunk, ModelInfo, OllamaBackend, ToolCall
from app.llm.errors import ModelMissing, NotRunning, OllamaUnavailable, OutOfMemory, StreamCut
from app.memory.index import Filters
from app.services.memory import MemoryService
from app.services.projects import Projects
from app.settings import Settings

log = logging.getLogger("kelvin.conversation")

RETRIEVE_K = 8
MEMORIES_K = 4
NOT_FOR_RETRIEVAL = ("recall", "failed")  # quotes of other messages and empty replies
BRIEF_FILE = "Master_Project_Brief.md"
SUMMARY_PROMPT = ("Summarise the message below for a rendering assistant's short-term memory in at most 80 "
                  "words. Keep every number, setting name, engine, error and file name exactly. No preamble.")

SettingsLookup = Callable[[str, str], tuple[str, ...]]  # (project, question) → "Octane GI clamp = 10 (…)"


def no_settings(project: str, question: str) -> tuple[str, ...]:
    """Until a settings ledger is attached, no current values are known."""
    return ()


@dataclass
class TurnResult:
    """What happened in one turn, for the terminal, the app and tests."""

    text: str  # the reply as shown (a model answer, a recall answer, or a command's output)
    status: str  # "complete", "cancelled", "failed", "cut", "recall" or "command"
    mode: Mode
    question: Message | None = None
    answer: Message | None = None
    error: str = ""  # why the model could not answer, in one plain sentence
    error_kind: str = ""  # "not_running", "model_missing", "out_of_memory", "cut", "server"
    window: Window | None = None  # what was sent to the model
    memories: tuple[Memory, ...] = ()  # what Kelvin looked at (also in recall mode)
    recalled: tuple[Message, ...] = ()
    settings: tuple[str, ...] = ()
    prompt_tokens: int | None = None  # Ollama's prompt_eval_count
    tool_log: list[str] = field(default_factory=list)

    @property
    def answered(self) -> bool:
        return self.status in ("complete", "recall", "command")


class Conversation:
    def __init__(self, settings: Settings, memory: MemoryService, backend: OllamaBackend | None = None, *,
                 projects: Projects | None = None, mode: Mode = Mode.GPU, settings_lookup: SettingsLookup = no_settings):
        self.settings = settings
        self.memory = memory
        self.backend = backend or OllamaBackend(settings.ollama_host, settings.ollama_timeout_s)
        self._own_backend = backend is None
        self.projects = projects or Projects(memory)
        self.model = settings.chat_model
        self.budget = Budget(num_ctx=settings.num_ctx)
        self.mode = mode
        self.settings_lookup = settings_lookup
        self.calibration: dict[str, Calibration] = {}
        self._model_info: dict[str, ModelInfo | None] = {}
        self._inference = threading.Lock()  # one model call at a time
        self._cancel = threading.Event()
        self._stream = None
        self._summary_thread: threading.Thread | None = None
        self._notes: dict[str, str] = {}
        self.project = ""
        self.conversation_id = ""
        self._day = ""
        self._recent: list[Message] | None = None
        self.switch_project(settings.project)

    # ---- projects, conversations, modes ------------------------------------------------------------
    def switch_project(self, name: str) -> None:
        info = self.projects.ensure(name)
        self.project = info.name
        self.conversation_id = self.projects.conversation(info.name)
        self._day = self.projects.today()
        self._recent = None

    def new_conversation(self) -> str:
        self.conversation_id = self.projects.new_conversation(self.project)
        self._day = self.projects.today()
        self._recent = []
        return self.conversation_id

    def rename_project(self, new: str) -> None:
        info = self.projects.rename(self.project, new)
        self.project = info.name

    def set_mode(self, mode: Mode | str, reason: str = "") -> None:
        mode = Mode.parse(mode) if isinstance(mode, str) else mode
        if mode != self.mode:
            log.info("mode %s → %s%s", self.mode.value, mode.value, f" ({reason})" if reason else "")
        self.mode = mode

    def cancel(self) -> None:
        """Stop the reply being streamed (any thread). The partial answer is kept, marked as stopped."""
        self._cancel.set()
        stream = self._stream
        if stream is not None:
            stream.cancel()

    def close(self) -> None:
        self.cancel()
        if self._summary_thread is not None:
            self._summary_thread.join(timeout=10)
        if self._own_backend:
            self.backend.close()

    # ---- the turn ----------------------------------------------------------------------------------
    def ask(self, text: str, on_token: Callable[[str], None] = lambda s: None, *, fallback: bool = True) -> TurnResult:
        """One turn. ``fallback``: answer from memory when the model cannot (else status "failed")."""
        cmd = commands.parse(text)
        if cmd is not None:
            return self.run_command(cmd)
        text = check_text(commands.unescape(text), "question")
        self._cancel.clear()
        self._preempt_summary()
        with self._inference:
            if self.projects.today() != self._day:  # Kelvin left open overnight: a new day starts clean
                self.switch_project(self.project)
            recent = self.recent()
            turn_id = new_id("t")
            question, _ = self.memory.commit(text, role="user", conversation_id=self.conversation_id,
                                             turn_id=turn_id, project=self.project)
            mode = self.mode
            # a model sees the last turns in its window; a recall answer must be able to quote them
            recalled, memories, settings = self._point(text, question.id, recent if mode is not Mode.RECALL else [])
            if mode is Mode.RECALL:
                result = self._recall(question, recalled, memories, settings,
                                      "Recall mode: answering from memory, no model.")
            else:
                result = self._answer(question, recent, recalled, memories, settings, mode, on_token)
                if result.status == "failed" and fallback and result.error_kind in ("not_running", "model_missing",
                                                                                    "out_of_memory"):
                    reason = f"{result.error} Answering from memory meanwhile."
                    failed = result
                    result = self._recall(question, recalled, memories, settings, reason)
                    result.error, result.error_kind = failed.error, failed.error_kind
            result.question = question
            self._commit_answer(result, turn_id)
            self._remember_turn(question, result.answer)
        if result.status == "complete" and mode is not Mode.RECALL:
            self._summarise_later()
        return result

    def _point(self, text: str, question_id: str, recent: list[Message]):
        """Search the memory: whole past messages, kept memories, current settings."""
        skip = {m.id for m in recent} | {question_id}
        hits = self.memory.search(text, k=RETRIEVE_K + len(skip), project=self.project,
                                  drop_status=NOT_FOR_RETRIEVAL)
        asked = " ".join(text.lower().split())
        recalled = tuple(h.message for h in hits if h.message.id not in skip
                         and " ".join(h.message.text.lower().split()) != asked)[:RETRIEVE_K]  # not the same question again
        memories = tuple(m for m, _ in self.memory.search_memories(text, k=MEMORIES_K, project=self.project))
        settings = tuple(self.settings_lookup(self.project, text))
        return recalled, memories, settings

    def _recall(self, question: Message, recalled, memories, settings, reason: str) -> TurnResult:
        answer = recall_answer(question.text, reason=reason, settings=settings, memories=memories, messages=recalled)
        return TurnResult(text=answer, status="recall", mode=Mode.RECALL, memories=memories,
                          recalled=recalled[:5], settings=settings)

    def _system_prompt(self, tools_on: bool) -> str:
        hint = ("- You can keep durable facts with save_to_model_memory and look things up with recall."
                if tools_on else "")
        return resources.read_text("prompts/system.md").format(
            project=self.project, today=date.today().isoformat(), tools_hint=hint,
            host_apps="Cinema 4D, Houdini, Maya, Blender or 3ds Max")

    def _brief(self) -> str:
        path: Path = self.memory.store(self.project).folder / BRIEF_FILE
        try:
            return path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""

    def _answer(self, question, recent, recalled, memories, settings, mode: Mode, on_token) -> TurnResult:
        cal = self.calibration.setdefault(self.model, Calibration())
        info = self._info()
        tools_on = bool(info and info.supports_tools)
        window = pack(Ingredients(system=self._system_prompt(tools_on), question=question.text, question_id=question.id,
                                  brief=self._brief(), settings=settings, memories=memories, recalled=recalled,
                                  recent=tuple(recent), notes=dict(self._notes)), self.budget, cal)
        result = TurnResult(text="", status="complete", mode=mode, window=window, memories=window.memories,
                            recalled=window.recalled, settings=settings)
        messages = list(window.messages)
        parts: list[str] = []
        try:
            for _round in range(tools.MAX_TOOL_ROUNDS + 1):
                final, calls = self._stream_once(messages, window.num_predict, mode, tools_on, parts, on_token)
                if final is not None and final.prompt_eval_count and _round == 0:
                    result.prompt_tokens = final.prompt_eval_count
                    cal.observe(estimate_messages(window.messages), final.prompt_eval_count)
                if self._cancel.is_set():
                    result.status = "cancelled"
                    break
                if not calls or _round == tools.MAX_TOOL_ROUNDS:
                    break
                messages.append({"role": "assistant", "content": "".join(parts),
                                 "tool_calls": [{"function": {"name": c.name, "arguments": c.arguments}} for c in calls]})
                for call in calls:
                    messages.append({"role": "tool", "tool_name": call.name,
                                     "content": self._run_tool(call.name, call.arguments, question, result)})
        except StreamCut as exc:
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), "cut"
        except ModelMissing as exc:
            result.status, result.error, result.error_kind = "failed", str(exc), "model_missing"
        except NotRunning as exc:
            result.status, result.error, result.error_kind = "failed", str(exc), "not_running"
        except OllamaUnavailable as exc:
            kind = "out_of_memory" if isinstance(exc, OutOfMemory) else "server"
            result.status, result.error, result.error_kind = ("cut" if parts else "failed"), str(exc), kind
        result.text = "".join(parts)
        if result.status == "cancelled" and not parts:
            result.text = ""
        return result

    def _stream_once(self, messages, num_predict, mode, tools_on, parts,
                     on_token) -> tuple[ChatChunk | None, list[ToolCall]]:
        """One streamed call; text goes to ``parts`` and ``on_token``. Returns the final chunk and
        the tool calls (Ollama streams them in a chunk of their own)."""
        stream = self.backend.chat(self.model, messages, tools=tools.SCHEMAS if tools_on else None,
                                   num_ctx=self.budget.num_ctx, cpu=mode is Mode.CPU, num_predict=num_predict)
        self._stream = stream
        final, calls = None, []
        try:
            if self._cancel.is_set():
                stream.cancel()
            for chunk in stream:
                if chunk.text:
                    parts.append(chunk.text)
                    on_token(chunk.text)
                calls += [c for c in chunk.tool_calls if c not in calls]
                if chunk.done:
                    final = chunk
        finally:
            self._stream = None
            stream.close()
        return final, calls

    def _info(self) -> ModelInfo | None:
        """The chat model's capabilities (asked once; unknown if Ollama cannot say)."""
        if self.model not in self._model_info:
            try:
                self._model_info[self.model] = self.backend.show(self.model)
            except OllamaUnavailable as exc:
                log.info("cannot ask Ollama about %s: %s", self.model, exc)
                return None
        return self._model_info[self.model]

    def _run_tool(self, name: str, arguments, question: Message, result: TurnResult) -> str:
        try:
            call = tools.check_call(name, arguments)
        except RecordError as exc:
            result.tool_log.append(f"refused a {name} call: {exc}")
            return f"error: {exc}"
        if isinstance(call, tools.Save):
            mem, _ = self.memory.remember(call.text, call.category, project=self.project, source_id=question.id)
            result.tool_log.append(f"kept ({call.category}): {call.text}")
            return f"saved as {mem.id}"
        hits = self.memory.search(call.query, k=4, project=self.project, drop_status=NOT_FOR_RETRIEVAL)
        kept = self.memory.search_memories(call.query, k=3, project=self.project)
        result.tool_log.append(f"looked up: {call.query}")
        lines = [f"- (kept {when(m.ts_ms)}) {m.text}" for m, _ in kept]
        lines += [f"- [{when(h.message.ts_ms)} · {h.message.tags.domain}] {clip(h.message.text, 200)[0]}"
                  for h in hits if h.message.id != question.id]
        return "\n".join(lines) if lines else "nothing found in memory"

    # ---- commit and the rolling window -------------------------------------------------------------
    def _commit_answer(self, result: TurnResult, turn_id: str) -> None:
        """Every reply is stored with its status — a stopped, cut or failed one too."""
        if result.status == "command":
            return
        text = result.text.strip()
        status = {"complete": "", "recall": "recall"}.get(result.status, result.status)
        if result.status == "cancelled":
            text = (text + "\n\n[stopped by the artist]") if text else "[stopped before the reply began]"
        elif result.status == "cut":
            text = f"{text}\n\n[reply cut off: {result.error}]"
        elif result.status == "failed":
            text = f"[no reply: {result.error}]"
        elif not text:
            text, status = "[the model gave an empty reply]", "failed"
        speaker = "Kelvin (from memory)" if result.status == "recall" else f"Kelvin ({self.model})"
        result.answer, _ = self.memory.commit(text, role="assistant", speaker=speaker,
                                              conversation_id=self.conversation_id, turn_id=turn_id,
                                              project=self.project, status=status, ts_ms=now_ms())

    def recent(self) -> list[Message]:
        """The last turns of the current conversation, oldest first (loaded from memory once)."""
        if self._recent is None:
            self.memory.flush()
            msgs = self.memory.list(self.project, limit=4 * RECENT_TURNS,
                                    filters=Filters(conversation_id=self.conversation_id))
            turns: list[str] = []
            for m in msgs:
                if m.turn_id not in turns:
                    turns.append(m.turn_id)
            keep = set(turns[-RECENT_TURNS:])
            self._recent = [m for m in msgs if m.turn_id in keep]
        return list(self._recent)

    def _remember_turn(self, question: Message, answer: Message | None) -> None:
        msgs = (self._recent or []) + [question] + ([answer] if answer else [])
        turns: list[str] = []
        for m in msgs:
            if m.turn_id not in turns:
                turns.append(m.turn_id)
        keep = set(turns[-RECENT_TURNS:])
        self._recent = [m for m in msgs if m.turn_id in keep]
        self._notes = {k: v for k, v in self._notes.items() if any(m.id == k for m in self._recent)}

    # ---- overflow summaries ------------------------------------------------------------------------
    def _summarise_later(self) -> None:
        """After a reply, summarise (with the model, in the background) the long messages of the
        window that the next turn would have to fold, so the note is a good one."""
        share = int((self.budget.num_ctx - self.budget.answer) * self.budget.recent_share * 0.5)
        cal = self.calibration.setdefault(self.model, Calibration())
        todo = [m for m in (self._recent or []) if m.id not in self._notes and cal.tokens(m.text) > share]
        if not todo or self.mode is Mode.RECALL:
            return
        self._summary_thread = threading.Thread(target=self._summarise, args=(todo, self.mode),
                                                name="kelvin-summary", daemon=True)
        self._summary_thread.start()

    def _summarise(self, todo: list[Message], mode: Mode) -> None:
        for m in todo:
            if self._cancel.is_set():
                return
            with self._inference:
                if self._cancel.is_set():
                    return
                body, _ = clip(m.text, self.budget.num_ctx // 2)
                parts: list[str] = []
                try:
                    self._stream_once([{"role": "system", "content": SUMMARY_PROMPT},
                                       {"role": "user", "content": body}], 200, mode, False, parts, lambda s: None)
                except OllamaUnavailable as exc:
                    log.info("no summary for %s: %s", m.id, exc)
                    return
                summary = "".join(parts).strip()
                if summary and not self._cancel.is_set():
                    self._notes[m.id] = summary

    def _preempt_summary(self) -> None:
        """A new question wins over a summary in progress: stop it (the extractive note is used)."""
        thread = self._summary_thread
        if thread is not None and thread.is_alive():
            self.cancel()
            thread.join(timeout=5)
            self._cancel.clear()
        self._summary_thread = None

    # ---- commands ----------------------------------------------------------------------------------
    def run_command(self, cmd: Command) -> TurnResult:
        def done(text: str) -> TurnResult:
            return TurnResult(text=text, status="command", mode=self.mode)

        if cmd.name == "remember":
            mem, fut = self.memory.remember(cmd.arg, cmd.category, project=self.project)
            fut.result()
            return done(f"Kept ({mem.category}): {mem.text}  [{mem.id}]")
        if cmd.name == "forget":
            return done(self._forget(cmd.arg))
        if cmd.name == "memories":
            mems = self.memory.memories(self.project)
            if not mems:
                return done("No kept memories in this project yet. Use /remember …")
            return done("\n".join(f"{m.id}  ({m.category}, {when(m.ts_ms)})  {m.text}" for m in mems))
        if cmd.name == "mode":
            self.set_mode(cmd.arg, "artist")
            return done(f"Mode: {self.mode.value}" + {
                Mode.GPU: " — the model runs on the GPU.",
                Mode.CPU: " — the model runs on the CPU; the render keeps the VRAM (slower answers).",
                Mode.RECALL: " — no model; answers are quoted from memory."}[self.mode])
        if cmd.name == "project":
            if cmd.arg:
                self.switch_project(cmd.arg)
                return done(f"Project: {self.project} (conversation {self.conversation_id})")
            return done(f"Project: {self.project} (conversation {self.conversation_id})")
        if cmd.name == "projects":
            return done("\n".join(("* " if p.name == self.project else "  ") + p.name for p in self.projects.list()))
        if cmd.name == "rename":
            old = self.project
            self.rename_project(cmd.arg)
            return done(f"Renamed {old!r} to {self.project!r}.")
        if cmd.name == "new":
            return done(f"New conversation {self.new_conversation()}; everything before stays in memory.")
        if cmd.name == "help":
            return done(commands.HELP)
        return done("")  # quit: the caller leaves

    def _forget(self, arg: str) -> str:
        mems = self.memory.memories(self.project)
        if arg.startswith("k_"):
            match = [m for m in mems if m.id == arg]
        else:
            words = arg.lower()
            match = [m for m in mems if words in m.text.lower()]
        if len(match) == 1:
            self.memory.forget(match[0].id, self.project)
            return f"Forgot: {match[0].text}"
        if not match:
            return f"No kept memory matches {arg!r}. /memories lists them."
        return "Several kept memories match; forget one by its id:\n" + "\n".join(f"{m.id}  {m.text}" for m in match)

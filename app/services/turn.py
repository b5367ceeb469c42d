"""What one turn is about (:class:`Turn`, fixed when it starts) and what came of it (:class:`TurnResult`).

Shared by the turn loop (app.services.conversation), the slash commands (app.services.chat_commands)
and the jobs that follow a turn (app.services.overflow_summaries, app.services.model_pass). Qt-free.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from app.core.commands import Mode
from app.core.context import Budget, Window
from app.core.records import Memory, Message, new_id


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
    prompt_tokens: int | None = None  # the server's own count of the prompt's tokens (Ollama's prompt_eval_count)
    tool_log: list[str] = field(default_factory=list)
    stored: tuple[Future, ...] = ()  # the question's and the reply's commits (done when on disk)
    greeting: str = ""  # the first turn of a new day: "Resuming from the brief of …"

    @property
    def answered(self) -> bool:
        return self.status in ("complete", "recall", "command")


@dataclass(frozen=True)
class Turn:
    """What a turn is about, fixed when it starts: a project switch or a mode change from another
    thread meanwhile does not move a half-done turn."""

    id: str
    project: str
    conversation_id: str
    model: str
    mode: Mode
    stop: threading.Event
    budget: Budget  # the window's size for this mode and this server
    answer_id: str = field(default_factory=new_id)  # the reply's id, from its first checkpoint to its end
    streamed: list = field(default_factory=lambda: [0, 0.0])  # [characters journaled so far, when (monotonic)]

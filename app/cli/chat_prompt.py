"""The chat's prompt line in a terminal, like a shell's: line editing (arrows, Home/End, Ctrl+W …),
history per project kept on disk, Ctrl+C clears the line, Ctrl+D on an empty line leaves. Built on
prompt_toolkit (works in Windows consoles too); a chat whose input or output is not a terminal (a
pipe, a script) reads plain lines."""
from __future__ import annotations

from pathlib import Path
from typing import Callable

from app.durable import refuse_links

HISTORY_FILE = "prompt-history"  # in the project's folder


def session(history: Path | None, input=None, output=None):
    """A prompt_toolkit session whose history lives in ``history`` (None: in memory only)."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory, InMemoryHistory

    if history is not None:
        refuse_links(history)  # the history is written inside the data folder only
        if history.parent.is_dir() and not history.exists():
            history.touch(mode=0o600)
    kept = FileHistory(str(history)) if history is not None and history.parent.is_dir() and _regular(history) \
        else InMemoryHistory()
    return PromptSession(history=kept, input=input, output=output, enable_history_search=False)


def line_reader(conversation, interactive: bool) -> Callable[[str], str]:
    """``read(prompt) -> line`` for the chat loop: with line editing and the current project's history
    when ``interactive`` (a terminal on both ends) and prompt_toolkit is installed; else ``input``."""
    if not interactive:
        return input
    try:
        import prompt_toolkit  # noqa: F401
    except ImportError:
        return input
    sessions: dict[str, object] = {}

    def read(message: str) -> str:
        project = conversation.project
        if project not in sessions:
            folder = conversation.memory.store(project).folder
            sessions[project] = session(folder / HISTORY_FILE if folder.is_dir() else None)
        return sessions[project].prompt(message)

    return read


def _regular(path: Path) -> bool:
    """A history file Kelvin may read and append to: a regular file, or none yet (never a FIFO or a link)."""
    from app.durable import check_regular

    try:
        check_regular(path)
        return True
    except OSError:
        return False

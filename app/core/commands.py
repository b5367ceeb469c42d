"""What the artist can type besides a question: ``/remember``, ``/forget``, ``/mode`` and friends.

Parsing only; the conversation service carries the commands out. Shared by the terminal chat and
the app's input box, so both understand the same words.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum


class Mode(str, Enum):
    """How Kelvin answers: the model on the GPU, the same model on the CPU (the render keeps the
    VRAM), or no model at all — answers quoted from memory."""

    GPU = "gpu"
    CPU = "cpu"
    RECALL = "recall"

    @classmethod
    def parse(cls, value: str) -> "Mode":
        try:
            return cls(value.strip().lower())
        except ValueError:
            raise ValueError(f"mode must be gpu, cpu or recall (got {value!r})") from None


HELP = """\
/remember TEXT [#category]  keep a fact or preference for this project (categories: fact, preference, decision, …)
/forget ID-or-words         drop a kept memory (by its id, or the one whose text matches the words)
/memories                   list the kept memories
/mode gpu|cpu|recall        answer on the GPU, on the CPU (leaves VRAM to the render), or from memory only
/project [NAME]             show the project, or switch to NAME
/project new NAME           start a new project called NAME and switch to it
/projects                   list projects
/rename NAME                rename the current project
/new                        start a new conversation (all memory stays reachable)
/help                       this list
/quit                       leave"""

NAMES = ("remember", "forget", "memories", "mode", "project", "projects", "rename", "new", "help", "quit")
_CATEGORY = re.compile(r"\s#([\w-]{1,40})\s*$")


@dataclass(frozen=True)
class Command:
    name: str
    arg: str = ""
    category: str = ""  # /remember only
    create: bool = False  # /project new NAME


class CommandError(ValueError):
    """A command typed wrong; the message says how to type it."""


def parse(text: str) -> Command | None:
    """A command, or None if ``text`` is a question. ``//text`` sends ``/text`` as a question."""
    stripped = text.strip()
    if not stripped.startswith("/") or stripped.startswith("//"):
        return None
    head, _, arg = stripped[1:].partition(" ")
    name = head.lower()
    if name in ("exit", "q"):
        name = "quit"
    if name not in NAMES:
        if "/" in head or not head.isalpha():  # a path such as /tmp/render.exr, not a command
            return None
        raise CommandError(f"unknown command /{head}; type /help for the list")
    arg = arg.strip()
    if name == "remember":
        if not arg:
            raise CommandError("type what to keep: /remember the client wants warm key light #preference")
        category = "fact"
        m = _CATEGORY.search(" " + arg)
        if m:
            category = m.group(1).lower()
            arg = (" " + arg)[: m.start()].strip()
        return Command(name, arg, category)
    if name == "forget" and not arg:
        raise CommandError("say what to forget: /forget k_1234… (ids are shown by /memories) or a few words")
    if name == "mode":
        if not arg:
            raise CommandError("type /mode gpu, /mode cpu or /mode recall")
        try:
            Mode.parse(arg)
        except ValueError as exc:
            raise CommandError(str(exc)) from None
    if name == "project" and arg.split(" ", 1)[0].lower() == "new":
        rest = arg[3:].strip()
        if not rest:
            raise CommandError("type the new project's name: /project new Forest chase")
        return Command(name, rest, create=True)
    if name == "rename" and not arg:
        raise CommandError("type the new name: /rename Forest chase")
    return Command(name, arg)


def unescape(text: str) -> str:
    """The question to send for ``text`` that is not a command (``//x`` → ``/x``)."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text

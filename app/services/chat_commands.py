"""The chat's slash commands (``/remember``, ``/forget``, ``/memories``, ``/mode``, ``/project``,
``/projects``, ``/rename``, ``/new``, ``/help``, ``/quit``), run before any turn starts.

:func:`dispatch` is the first thing ``Conversation.ask`` does: a command never becomes a turn — no
question is journaled, nothing is searched, no model is asked, no background job is stopped. It runs
on the caller's thread (the window's model worker, the terminal's main thread) and changes the
conversation only through its public methods, which take the conversation lock themselves
(app.services.conversation: the threads and their state). Qt-free.
"""
from __future__ import annotations

from app.core import commands
from app.core.commands import Command, Mode
from app.core.context import when
from app.core.projects import same_project
from app.core.records import RecordError
from app.services.turn import TurnResult


def dispatch(conversation, text: str) -> TurnResult | None:
    """The command's result if ``text`` is a slash command, else None (a question: a turn follows)."""
    cmd = commands.parse(text)
    return None if cmd is None else run(conversation, cmd)


def run(c, cmd: Command) -> TurnResult:
    """Run one parsed command on the conversation ``c`` (an app.services.conversation.Conversation)."""
    def done(text: str) -> TurnResult:
        return TurnResult(text=text, status="command", mode=c.mode)

    if cmd.name == "remember":
        mem, fut = c.memory.remember(cmd.arg, cmd.category, project=c.project)
        fut.result()
        return done(f"Kept ({mem.category}): {mem.text}")
    if cmd.name == "forget":
        return done(forget(c, cmd.arg))
    if cmd.name == "memories":
        mems = c.memory.memories(c.project)
        if not mems:
            return done("No kept memories in this project yet. Use /remember …")
        return done("\n".join(f"- ({m.category}, {when(m.ts_ms)}) {m.text}" for m in mems))
    if cmd.name == "mode":
        c.set_mode(cmd.arg, "artist")
        return done(mode_said(c))
    if cmd.name == "project":
        if cmd.create:  # "/project new NAME": made only when asked
            if c.projects.exists(cmd.arg):
                raise RecordError(f"a project named {c.projects.display_name(cmd.arg)!r} already exists "
                                  f"(/project {cmd.arg} switches to it)")
            c.switch_project(cmd.arg, create=True)
            return done(f"Project: {c.project} (new)")
        if cmd.arg:  # like --project: a misspelt name is never a new, empty project
            c.switch_project(cmd.arg, create=False)
        return done(f"Project: {c.project}")
    if cmd.name == "projects":
        return done("\n".join(("* " if same_project(p.name, c.project) else "  ") + p.name
                               for p in c.projects.list()))
    if cmd.name == "rename":
        old = c.project
        c.rename_project(cmd.arg)
        return done(f"Renamed {old!r} to {c.project!r}.")
    if cmd.name == "new":
        c.new_conversation()
        return done("A new conversation; everything before stays in memory.")
    if cmd.name == "help":
        return done(commands.HELP)
    return done("")  # quit: the caller leaves


def mode_said(c) -> str:
    """What ``/mode`` answers: the mode now, and what it means on this model server."""
    cpu = (f" — the model runs on the CPU with a {c.settings.cpu_num_ctx:,}-token window; the render keeps "
           "the VRAM (slower answers)." if c.backend.cpu_mode else
           f" — a {c.settings.cpu_num_ctx:,}-token window for quicker answers; {c.backend.label} "
           "decides itself where its model runs (Kelvin cannot move it off the GPU).")
    return f"Mode: {c.mode.value}" + {
        Mode.GPU: " — the model runs on the GPU.", Mode.CPU: cpu,
        Mode.RECALL: " — no model; answers are quoted from memory."}[c.mode]


def forget(c, arg: str) -> str:
    """``/forget WORDS``: the one kept memory those words mean is forgotten; none or several: say so."""
    match = c.memory.memories_meant(arg, c.project)
    if len(match) == 1:
        c.memory.forget(match[0].id, c.project)
        return f"Forgot: {match[0].text}"
    if not match:
        return f"No kept memory matches {arg!r}. /memories lists them."
    return "Several kept memories match; give more of its words:\n" + "\n".join(
        f"- ({m.category}, {when(m.ts_ms)}) {m.text}" for m in match)

"""``kelvin chat``: talk to Kelvin in the terminal — the conversation, the VRAM guard and a shared
project's sync opened for it; the loop itself is app.cli.terminal."""
from __future__ import annotations

import logging
import sys

from app.cli.arguments import Usage


def add_parser(sub) -> None:
    """``chat``, under the top-level parser's subcommands ``sub``."""
    ch = sub.add_parser("chat", help="talk to Kelvin in the terminal (streamed; /help inside for commands)")
    ch.add_argument("question", nargs="?", help="with --once: the question to answer")
    ch.add_argument("--once", action="store_true", help="answer one question and exit (non-zero if it cannot "
                    "answer in the requested mode)")
    ch.add_argument("--mode", choices=["gpu", "cpu", "recall"], help="gpu, cpu (leave the VRAM to renders) or "
                    "recall (no model: quote from memory); default: setting 'mode'")
    ch.add_argument("--json", action="store_true", help="with --once: print the turn as JSON")


def chat(args, settings, service) -> int:
    """``kelvin chat``: the loop, or with ``--once`` one answer (the VRAM guard and a shared project's
    sync run beside the loop)."""
    from app.cli import terminal
    from app.core.commands import Mode
    from app.services.conversation import Conversation

    if args.once and not (args.question or "").strip():
        raise Usage("chat --once needs a question")
    if args.question and not args.once:
        raise Usage("to ask one question and exit, add --once")
    conversation = Conversation(settings, service, mode=Mode.parse(args.mode or settings.mode))
    if not args.verbose:  # the chat says itself when Ollama is away (its answer's first line): not twice
        logging.getLogger("kelvin.memory").setLevel(logging.ERROR)
    guard = sync = None
    try:
        if args.once:
            return terminal.chat_once(conversation, args.question, args.json)
        if settings.team_server.strip():  # a shared project stays in step while the chat is open
            from app.services.team import Team
            from app.services.team_sync import TeamSync

            sync = TeamSync(Team(service))
            sync.follow(conversation.project)
        from app.cli.gpu import start_guard

        guard = start_guard(settings, conversation, service)
        from app.cli.chat_prompt import line_reader

        return terminal.chat_loop(conversation, line_reader(conversation, sys.stdin.isatty() and sys.stdout.isatty()))
    finally:
        if guard is not None:
            guard.stop()
        if sync is not None:
            sync.stop()
            sync.team.close()
        conversation.close()

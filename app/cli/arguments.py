"""What every command shares: exit codes, the two ways a command ends in plain words (a usage
mistake, exit 2; an expected problem, exit 1), the help lines, and the argument types that refuse
absurd values."""
from __future__ import annotations

import argparse

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
ENGINE_HELP = "the engine (octane, redshift, arnold, cycles, vray, karma, corona); default: the project's own"
# the (sub)command names argparse stores, outermost first (a usage error shows the usage of what was typed)
COMMAND_DESTS = ("command", "project_command", "settings_command", "gpu_command", "memory_command", "team_command")


class Usage(Exception):
    """A usage mistake: told with the usage of the command typed, exit 2."""


class Expected(Exception):
    """An expected problem (a message that is not there, words that match several memories): one
    plain sentence on stderr, exit 1."""


class _Help(argparse.HelpFormatter):
    """Every argument's help line ends with its default, where it has one worth saying."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, "", argparse.SUPPRESS) and "default" not in text \
                and (action.option_strings or action.nargs in ("?", "*")):
            text += " (default: %(default)s)"
        return text


def with_help(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The parser and all its subcommands with :class:`_Help`'s help lines."""
    parser.formatter_class = _Help
    for action in parser._actions:  # argparse keeps its subcommands here
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                with_help(sub)
    return parser


def parser_of(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The (sub)command's own parser, so that a usage error shows the usage of what was typed."""
    for dest in COMMAND_DESTS:
        name = getattr(args, dest, None)
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not name or not subs or name not in subs[0].choices:
            continue
        parser = subs[0].choices[name]
    return parser


def count(low: int, high: int):
    """An argparse type: a whole number from ``low`` to ``high`` (an absurd one is a usage error, exit 2)."""
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{text[:30]}{'…' if len(text) > 30 else ''} is not between {low:,} "
                                             f"and {high:,}")
        return value
    parse.__name__ = "number"
    return parse


def seconds(text: str) -> float:
    """An argparse type: a number of seconds from 0 to a week."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value <= 7 * 86400:  # (nan fails both)
        raise argparse.ArgumentTypeError(f"{text[:30]} is not between 0 and a week (604,800 s)")
    return value


def one_of(value: str | None, allowed, flag: str) -> str | None:
    """A filter value as stored (lower case), or a usage error listing the values there are."""
    if value is None:
        return None
    wanted = value.strip().casefold()
    names = {a.casefold(): a for a in allowed}
    wanted = "vray" if wanted == "v-ray" and "vray" in names else wanted
    if wanted not in names:
        raise Usage(f"{flag} {value!r} is not one of: {', '.join(allowed)}")
    return names[wanted]

"""``kelvin project …``: list, create and rename projects, start a new conversation; and the rule
that a misspelt ``--project`` is an error naming the nearest project, never a new empty one."""
from __future__ import annotations

import json
import shlex

from app.cli.arguments import EXIT_OK


def add_parser(sub) -> None:
    """``project`` and its subcommands, under the top-level parser's subcommands ``sub``."""
    pr = sub.add_parser("project", help="list, create and rename projects")
    psub = pr.add_subparsers(dest="project_command", required=True)
    pl = psub.add_parser("list", help="every project in the data folder")
    pl.add_argument("--json", action="store_true", help="print JSON instead of text")
    pc = psub.add_parser("create", help="start a new project")
    pc.add_argument("name", help="the new project's name (names differing only in case, accents or punctuation are one project)")
    pn = psub.add_parser("rename", help="give a project a new name (its memory moves with it)")
    pn.add_argument("old", help="the project's name now")
    pn.add_argument("new", help="its new name")
    psub.add_parser("new-conversation", help="start a new conversation in --project (memory stays reachable)")


def project(args, memory) -> int:
    from app.services.projects import Projects

    projects = Projects(memory)
    if args.project_command == "list":
        items = projects.list()
        if args.json:
            print(json.dumps([p.to_json() for p in items], ensure_ascii=False, indent=1))
        elif not items:
            print("no projects yet; `kelvin project create NAME`, or `/project NAME` in `kelvin chat`")
        for p in items if not args.json else ():
            print(f"{p.name}  ({p.folder.name})")
    elif args.project_command == "create":
        info = projects.create(args.name)
        print(f"created project {info.name!r} in {info.folder}")
    elif args.project_command == "rename":
        info = projects.rename(args.old, args.new)
        print(f"renamed {args.old!r} to {info.name!r} ({info.folder})")
    elif args.project_command == "new-conversation":
        name = memory.default_project
        print(f"project {name!r}: new conversation {projects.new_conversation(name)}")
    return EXIT_OK


def may_create(args) -> bool:
    """The commands that may bring a project into being: `project create`, and an import (its
    lines name their projects). Everything else works in a project that exists."""
    return (args.command == "project" and args.project_command == "create") or \
        (args.command == "memory" and args.memory_command == "import") or \
        (args.command == "team" and args.team_command in ("join", "projects"))


def require_known(service, name: str) -> None:
    """A misspelt --project is an error that names the nearest project, never a new empty one."""
    from app.services.projects import Projects

    Projects(service).require(name, f"`kelvin project list` shows them, `kelvin project create {shlex.quote(name)}`")

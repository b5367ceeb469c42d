"""``kelvin team …``: share a project with the studio, join one, see where it stands, sync now."""
from __future__ import annotations

import json
import sys


def add_parser(sub) -> None:
    """``team`` and its subcommands, under the top-level parser's subcommands ``sub``."""
    tm = sub.add_parser("team", help="share a project's memory with the studio (its PostgreSQL, setting "
                                     "team_server), join one, see where it stands, sync now")
    tsub = tm.add_subparsers(dest="team_command", required=True)
    tsh = tsub.add_parser("share", help="put a personal project on the studio's server (all of it; the team can join)")
    tsh.add_argument("name", nargs="?", help="the project (default: --project)")
    tsh.add_argument("--as", dest="as_name", help="its name on the server (default: its own)")
    tj = tsub.add_parser("join", help="bring a shared project to this machine (pulled whole, searchable offline)")
    tj.add_argument("name", help="the project's name on the server (`kelvin team projects` lists them)")
    tj.add_argument("--as", dest="as_name", help="its name here (default: the same)")
    tp = tsub.add_parser("projects", help="the projects shared on the studio's server")
    tp.add_argument("--json", action="store_true", help="print JSON instead of text")
    tst = tsub.add_parser("status", help="synced, waiting to send, offline since, or why the server refused")
    tst.add_argument("--json", action="store_true", help="print JSON instead of text")
    tsub.add_parser("sync", help="send what waits and fetch what the team added, now")


def team(args, service) -> int:
    from app.services.team import Team

    t = Team(service)
    try:
        cmd = args.team_command
        if cmd == "share":
            shared = t.share(args.name or args.project, args.as_name)
            print(f"shared {shared.name!r} on {t.where()}; the team can join it with `kelvin team join {shared.name!r}`")
            _status(t, service.store(args.name or args.project).name, False)
        elif cmd == "join":
            local = t.join(args.name, args.as_name)
            n = len(service.message_ids(local))
            print(f"joined {args.name!r} as the project {local!r}: {n:,} message{'s' if n != 1 else ''} here, "
                  "searchable offline too")
        elif cmd == "projects":
            found = t.server().projects()
            if args.json:
                print(json.dumps([{"name": p.name, "events": p.last_seq, "shared_by": p.created_by} for p in found]))
            elif not found:
                print(f"no shared projects on {t.where()} yet (`kelvin team share NAME` puts one there)")
            for p in found if not args.json else ():
                print(f"{p.name}  ({p.last_seq:,} events, shared by {p.created_by or 'someone'})")
        elif cmd == "sync":
            # the window may be in a round of its own: wait for it rather than say "busy"
            done = t.sync(args.project, _progress() if sys.stderr.isatty() else None, wait_s=service.settings.lock_wait_s)
            print(f"sent {done.pushed:,}, received {done.pulled:,}; " + t.status(args.project).words())
        else:
            _status(t, args.project, args.json)
        return 0
    finally:
        t.close()


def _status(t, project, as_json: bool) -> None:
    status = t.status(project)
    if as_json:
        print(json.dumps(status.to_json(), ensure_ascii=False))
        return
    if not status.shared:
        print(f"{status.project}: a personal project (nothing of it leaves this machine; `kelvin team share` shares it)")
        return
    print(f"{status.project}: {status.words()} — {t.where()}")


def _progress():
    def report(done: int, total: int) -> None:
        sys.stderr.write(f"\rreceived {done:,} / {total:,}" + ("\n" if done >= total else ""))
        sys.stderr.flush()

    return report

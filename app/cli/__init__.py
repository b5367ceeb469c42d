"""The command line: ``kelvin [--data-dir DIR] [--project NAME] {chat,doctor,project,memory} …``.

Same behaviour as the desktop app, over the same services. Expected problems (a missing file,
bad JSON, an unreachable Ollama, a locked or damaged store) are told in plain words on stderr
with a non-zero exit; a traceback means a bug.
"""
from __future__ import annotations

import argparse
import os
import json
import logging
import sys
import time
from pathlib import Path

from app import __version__
from app.cli.console import Output, ReaderGone, reader_gone

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2
ENGINE_HELP = "the engine (octane, redshift, arnold, cycles, vray, karma, corona); default: the project's own"


class _Help(argparse.HelpFormatter):
    """Every argument's help line ends with its default, where it has one worth saying."""

    def _get_help_string(self, action):
        text = action.help or ""
        if action.default not in (None, False, "", argparse.SUPPRESS) and "default" not in text \
                and (action.option_strings or action.nargs in ("?", "*")):
            text += " (default: %(default)s)"
        return text


def _with_help(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.formatter_class = _Help
    for action in parser._actions:  # argparse keeps its subcommands here
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _with_help(sub)
    return parser
log = logging.getLogger("kelvin")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kelvin", description="Kelvin: a memory-keeping companion for rendering artists.")
    p.add_argument("--version", action="version", version=f"kelvin {__version__}")
    p.add_argument("--data-dir", help="folder holding all projects (default: see README)")
    p.add_argument("--project", help="project to work in (default: setting 'project')")
    p.add_argument("-v", "--verbose", action="store_true", help="say more about what happens")
    p.add_argument("--self-test", action="store_true", help="check that every part of Kelvin loads and works "
                   "(headless; touches none of your data), print a report, exit 0 if all is well")
    sub = p.add_subparsers(dest="command")

    ch = sub.add_parser("chat", help="talk to Kelvin in the terminal (streamed; /help inside for commands)")
    ch.add_argument("question", nargs="?", help="with --once: the question to answer")
    ch.add_argument("--once", action="store_true", help="answer one question and exit (non-zero if it cannot "
                    "answer in the requested mode)")
    ch.add_argument("--mode", choices=["gpu", "cpu", "recall"], help="gpu, cpu (leave the VRAM to renders) or "
                    "recall (no model: quote from memory); default: setting 'mode'")
    ch.add_argument("--json", action="store_true", help="with --once: print the turn as JSON")

    sub.add_parser("app", help="open the desktop window (what bare `kelvin` does where there is a display)")
    sub.add_parser("info", help="where your data lives and the commands to start with")

    doc = sub.add_parser("doctor", help="check Ollama, the models, the GPU, the data folder and the memory")
    doc.add_argument("--json", action="store_true", help="print JSON instead of text")

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

    SCOPE_HELP = "the light, camera or output it belongs to, by name (e.g. 'key', 'cam_hero'); none: render-wide"
    st = sub.add_parser("settings", help="the settings ledger: current render settings and their history")
    ssub = st.add_subparsers(dest="settings_command", required=True)
    sl = ssub.add_parser("list", help="the current value of every setting in the project")
    sl.add_argument("--engine", help="only this engine (octane, redshift, … or 'any' for camera/lights/output)")
    sl.add_argument("--candidates", action="store_true", help="also settings the taxonomy does not know")
    sl.add_argument("--json", action="store_true", help="print JSON instead of text")
    sh_ = ssub.add_parser("history", help="every value a setting has had, with its status and source")
    sh_.add_argument("parameter", help="the setting's name or a synonym, e.g. 'gi clamp'")
    sh_.add_argument("--engine", help=ENGINE_HELP)
    sh_.add_argument("--json", action="store_true", help="print JSON instead of text")
    ss = ssub.add_parser("set", help="correct a setting by hand (journaled; wins over what was said before)")
    ss.add_argument("parameter", help="the setting's name or a synonym, e.g. 'gi clamp'")
    ss.add_argument("value", help="its value as you would say it: 10, on, brute force, 1920x1080, 35mm")
    ss.add_argument("--engine", help=ENGINE_HELP)
    ss.add_argument("--note", default="", help="why (kept with the change)")
    ss.add_argument("--scope", default="", help=SCOPE_HELP)
    su = ssub.add_parser("unset", help="the setting has no current value any more (its history stays)")
    su.add_argument("parameter", help="the setting's name or a synonym")
    su.add_argument("--engine", help=ENGINE_HELP)
    su.add_argument("--scope", default="", help=SCOPE_HELP)
    sa = ssub.add_parser("adopt", help="take the value the last imported scene file holds as the decision (journaled)")
    sa.add_argument("parameter", help="the setting's name or a synonym")
    sa.add_argument("--engine", help=ENGINE_HELP)
    sa.add_argument("--scope", default=None, help=SCOPE_HELP)

    sc = sub.add_parser("scene", help="render settings read from the scene itself (Blender .blend files, USD stages "
                                      "from Houdini and any USD pipeline, or the scene format any DCC script can send)")
    scsub = sc.add_subparsers(dest="scene_command", required=True)
    si = scsub.add_parser("import", help="read a scene's render settings into the ledger (applied, from the scene)")
    si.add_argument("file", help="a .blend file, a .usd/.usda/.usdc stage, a scene-format .json file, or - for "
                                 "scene-format JSON on stdin")
    si.add_argument("--scene", default="", help="the scene inside the .blend, or the render settings prim of a USD "
                                                "stage (default: the one it was saved with / the stage names)")
    si.add_argument("--json", action="store_true", help="print JSON instead of text")
    sd = scsub.add_parser("diff", help="where the scene differs from what was decided (in conversation or by hand)")
    sd.add_argument("file", help="a .blend file, a .usd/.usda/.usdc stage, a scene-format .json file, or - for JSON "
                                 "on stdin")
    sd.add_argument("--scene", default="", help="the scene inside the .blend, or the render settings prim of a USD stage")
    sd.add_argument("--json", action="store_true", help="print JSON instead of text")
    sa = scsub.add_parser("addon", help="write Kelvin's Blender add-on as a zip to install from Blender's preferences")
    sa.add_argument("--out", default="kelvin_sync.zip", help="where to write the zip (default: ./kelvin_sync.zip)")

    br = sub.add_parser("brief", help="end of day: write the master brief of the project and archive it")
    br.add_argument("--since", help="cover messages from this time (ISO, e.g. 2026-11-23 or 2026-11-23T09:00); "
                    "default: since the last brief")
    br.add_argument("--mode", choices=["gpu", "cpu"], help="run the model on the GPU or the CPU (default: setting 'mode')")
    br.add_argument("--json", action="store_true", help="print the brief's sections as JSON")

    gpu = sub.add_parser("gpu", help="the VRAM guard: GPU status, live watch, record and replay traces")
    gsub = gpu.add_subparsers(dest="gpu_command", required=True)
    gs = gsub.add_parser("status", help="one reading of the GPU, Kelvin's models, and what the guard would do")
    gs.add_argument("--json", action="store_true", help="print JSON instead of text")
    gw = gsub.add_parser("watch", help="live samples and the guard's decisions (only watching: unloads nothing)")
    gw.add_argument("--seconds", type=_seconds, default=0, help="stop after this long (default: until Ctrl+C)")
    gr = gsub.add_parser("record", help="save real samples as a trace (JSON lines)")
    gr.add_argument("file", type=Path, help="the trace file to write (JSON lines)")
    gr.add_argument("--seconds", type=_seconds, default=0, help="stop after this long (default: until Ctrl+C)")
    gp = gsub.add_parser("replay", help="run the real guard and its actions on a trace: Kelvin's own models on the "
                         "configured Ollama host are really unloaded where the trace calls for it")
    gp.add_argument("trace", type=Path, help="a trace file (JSON lines, as `gpu record` writes)")
    gp.add_argument("--json", action="store_true", help="one JSON line per event")
    gp.add_argument("--realtime", action="store_true", help="play the trace at its own pace")

    mem = sub.add_parser("memory", help="search, import and curate what Kelvin remembers")
    msub = mem.add_subparsers(dest="memory_command", required=True)

    imp = msub.add_parser("import", help="import messages from a JSON-lines file (all or nothing)")
    imp.add_argument("file", type=Path, help="one JSON object per line (see README: import format)")

    s = msub.add_parser("search", help="hybrid search over the stored messages")
    s.add_argument("query", nargs="?", help="what to look for, in your own words")
    s.add_argument("--batch", type=Path, help="file with one query per line; prints one JSON line per query with "
                   "the best k messages, as the chat's window would get them (matches or not)")
    s.add_argument("--k", type=_count(1, MAX_K), default=5, help=f"number of messages to return, 1 to {MAX_K:,} (default 5)")
    s.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_filters(s)
    s.add_argument("--all-projects", action="store_true", help="search every project, not just the current one")

    ls = msub.add_parser("list", help="the latest messages")
    ls.add_argument("--limit", type=_count(0, 10**9), default=20, help="how many of the latest (0: all)")
    ls.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_filters(ls)

    sh = msub.add_parser("show", help="one message, whole")
    sh.add_argument("id", help="the message id (as `memory list` or `search --json` show it)")
    sh.add_argument("--json", action="store_true", help="print JSON instead of text")

    ed = msub.add_parser("edit", help="replace a message's text (journaled)")
    ed.add_argument("id", help="the message id")
    ed.add_argument("--text", required=True, help="the message's whole new text")

    de = msub.add_parser("delete", help="delete a message (journaled; the journal keeps the deletion)")
    de.add_argument("id", help="the message id")

    st = msub.add_parser("stats", help="counts, sizes and index state")
    st.add_argument("--json", action="store_true", help="print JSON instead of text")

    msub.add_parser("reindex", help="rebuild the search index and Markdown files from the journal")

    rem = msub.add_parser("remember", help="keep a curated long-term memory (a fact or preference)")
    rem.add_argument("text", help="what to keep, e.g. 'The client wants warm light'")
    rem.add_argument("--category", default="fact", help="fact, preference, decision, …")
    fo = msub.add_parser("forget", help="remove a curated memory")
    fo.add_argument("id", metavar="ID-OR-WORDS", help="the memory's id (see `memories`), or words of its text")
    mm = msub.add_parser("memories", help="list curated memories")
    mm.add_argument("--json", action="store_true", help="print JSON instead of text")
    return _with_help(p)


MAX_K = 100_000  # messages one search returns at most (the chat's window takes eight)


def _count(low: int, high: int):
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


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value <= 7 * 86400:  # (nan fails both)
        raise argparse.ArgumentTypeError(f"{text[:30]} is not between 0 and a week (604,800 s)")
    return value


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--domain", help="lighting, shading, camera, optimization, geometry, texturing, compositing, general")
    p.add_argument("--type", help="setting, instruction, critique, logic, dialogue")
    p.add_argument("--engine", help="octane, redshift, arnold, cycles, vray, karma, corona")
    p.add_argument("--since", help="ISO 8601 time; only messages at or after it")
    p.add_argument("--until", help="ISO 8601 time; only messages at or before it")


def _one_of(value: str | None, allowed, flag: str) -> str | None:
    """A filter value as stored (lower case), or a usage error listing the values there are."""
    if value is None:
        return None
    wanted = value.strip().casefold()
    names = {a.casefold(): a for a in allowed}
    wanted = "vray" if wanted == "v-ray" and "vray" in names else wanted
    if wanted not in names:
        raise _Usage(f"{flag} {value!r} is not one of: {', '.join(allowed)}")
    return names[wanted]


def _filters(args):
    from app.core.records import parse_ts
    from app.core.tagging import DOMAINS, TYPES
    from app.core.filters import Filters
    from app.services.memory import load_taxonomy

    engines = tuple(load_taxonomy().get("engines", {})) if args.engine is not None else ()
    return Filters(
        domain=_one_of(args.domain, DOMAINS, "--domain"), type=_one_of(args.type, TYPES, "--type"),
        engine=_one_of(args.engine, engines, "--engine"),
        since_ms=parse_ts(args.since) if args.since else None,
        until_ms=parse_ts(args.until) if args.until else None,
    )


def _print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")


def _shown(text: str) -> str:
    """Text from memory as the terminal may print it: no escape sequences or other control characters
    (an imported message must not move the cursor, retitle the window or clear the screen)."""
    from app.core.records import clean_output

    return clean_output(text)


def _short(text: str, n: int = 160) -> str:
    one = " ".join(_shown(text).split())
    return one if len(one) <= n else one[: n - 1] + "…"


def _print_message(m, score: float | None = None, with_project: bool = False) -> None:
    who = f" · {_shown(m.speaker)}" if m.speaker and m.role == "user" else ""  # a team's artist: who said it
    head = f"{m.timestamp[:16].replace('T', ' ')}  {_shown(m.id)}  {m.role}{who}"
    head += f"  in {_shown(m.project)}" if with_project else ""
    tags = f"{m.tags.domain}/{m.tags.type}" + (f"/{m.tags.engine}" if m.tags.engine else "")
    print(f"{head}  [{tags}]" + (f"  score {score:.4f}" if score is not None else ""))
    print(f"    {_short(m.text)}")


def _progress(label: str):
    tty = sys.stderr.isatty()
    state = {"last": 0.0}

    def report(done: int, total: int) -> None:
        now = time.monotonic()
        if done < total and now - state["last"] < 0.5:
            return
        state["last"] = now
        start = "\r" if tty else ""
        end = "\n" if (done >= total or not tty) else ""
        sys.stderr.write(f"{start}{label} {done:,} / {total:,}{end}")
        sys.stderr.flush()

    return report


def _memory(args, service) -> int:
    from app.services.importer import read_jsonl

    cmd = args.memory_command
    project = args.project
    if cmd == "import":
        items = read_jsonl(args.file, service.default_project)
        report = service.import_items(items, _progress("imported") if len(items) > 2000 else (lambda d, t: None))
        from app.services.projects import Projects

        for name in dict.fromkeys(it.project for it in items):  # listed under the name the file gives
            Projects(service).ensure(name)
        if report.added >= 2000:
            sys.stderr.write("compacting the index…\n")
            for name in {it.project for it in items}:
                service.maintain(name)
        noun = "message" if report.added == 1 else "messages"
        print(f"imported {report.added:,} {noun}" + (f" ({report.skipped:,} already stored)" if report.skipped else ""))
        return EXIT_OK
    if cmd == "search":
        filters = _filters(args)
        if args.batch:
            if not args.json:
                raise _Usage("--batch prints JSON lines; add --json")
            from app.inputs import InputProblem, lines

            try:  # in bounded pieces: /dev/urandom cannot fill memory
                queries = [q.strip() for _n, q in lines(args.batch, "a file of queries, one a line", 64 * 2**20, 2**20)
                           if q.strip()]
            except InputProblem as exc:
                raise _Expected(str(exc)) from None
            for q in queries:
                t0 = time.perf_counter()
                hits = service.search(q, args.k, filters, project=project, all_projects=args.all_projects)
                took = (time.perf_counter() - t0) * 1000
                _print_json({"query": q, "hits": [h.to_json() for h in hits], "took_ms": round(took, 3)})
                sys.stdout.flush()
            return EXIT_OK
        if not args.query or not args.query.strip():
            raise _Usage("give a search query, or --batch FILE")
        # what a person searching calls a match (a word or its stem, or as near in meaning as the
        # nearest), never the rest of the project; --batch gives the best k, as the chat's window gets them
        hits = service.search(args.query, args.k, filters, project=project, all_projects=args.all_projects,
                              only_matches=True)
        if args.json:
            _print_json([h.to_json() for h in hits])
        elif not hits:
            print("no matching messages")
        for h in hits if not args.json else []:
            _print_message(h.message, h.score, with_project=args.all_projects)
        return EXIT_OK
    if cmd == "list":
        msgs = service.list(project, args.limit, _filters(args))
        if args.json:
            _print_json([m.to_json() for m in msgs])
        else:
            for m in msgs:
                _print_message(m)
            if not msgs:
                print("no messages yet")
        return EXIT_OK
    if cmd == "show":
        m = service.show(args.id, project)
        if m is None:
            raise _Expected(f"no message {args.id!r} in project {service.store(project).name!r}")
        from app.services.settings_ledger import SettingsLedger

        stated = SettingsLedger(service).book(project).mentions_of(m.id)  # the settings it states
        if args.json:
            _print_json({**m.to_json(), "settings": [e.to_json() for e in stated]})
        else:
            _print_message(m)
            if stated:
                from app.core.parameters import format_value

                print("  settings: " + "; ".join(f"{e.name or e.parameter} {format_value(e.value, e.unit)} ({e.status})"
                                                  for e in stated))
            print()
            print(_shown(m.text))
        return EXIT_OK
    if cmd == "edit":
        m = service.edit(args.id, args.text, project)
        print(f"edited {m.id}")
        return EXIT_OK
    if cmd == "delete":
        service.delete(args.id, project)
        print(f"deleted {args.id} (the journal keeps a record of the deletion)")
        return EXIT_OK
    if cmd == "stats":
        stats = service.stats(project)
        if args.json:
            _print_json(stats)
        else:
            for key, value in stats.items():
                if isinstance(value, dict):
                    value = ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
                print(f"{key.replace('_', ' '):>20}: {value if value is not None else '—'}")
        return EXIT_OK
    if cmd == "reindex":
        n = service.reindex(project, _progress("reindexed"))
        print(f"rebuilt the index and Markdown files from the journal: {n:,} messages")
        store = service.store(project)
        if store.rescued:
            sys.stderr.write(f"kelvin: {len(store.rescued):,} message(s) the journal had lost were still in the old "
                             f"index and were journaled again: {', '.join(store.rescued[:5])}"
                             f"{' …' if len(store.rescued) > 5 else ''}\n")
        for rec in store.journal.set_aside():
            sys.stderr.write(f"kelvin: set aside: {rec.describe()}\n")
        return EXIT_OK
    if cmd == "remember":
        mem, fut = service.remember(args.text, args.category, project=project)
        fut.result()
        service.settled(project, f"the memory {mem.id}")
        print(f"remembered {mem.id}")
        return EXIT_OK
    if cmd == "forget":
        meant = service.memories_meant(args.id, project)
        if not meant:
            raise _Expected(f"no kept memory is {args.id!r} or holds those words (`kelvin memory memories` lists them)")
        if len(meant) > 1:
            raise _Expected("several kept memories hold those words; give more of them, or the id:\n"
                            + "\n".join(f"  {_shown(m.id)}  {_short(m.text)}" for m in meant))
        service.forget(meant[0].id, project)
        print(f"forgot: {_short(meant[0].text)}")
        return EXIT_OK
    if cmd == "memories":
        mems = service.memories(project)
        if args.json:
            _print_json([m.to_json() for m in mems])
        else:
            for m in mems:
                print(f"{_shown(m.id)}  [{_shown(m.category)}]  {_short(m.text)}")
            if not mems:
                print("no curated memories yet")
        return EXIT_OK
    raise _Usage(f"unknown memory command {cmd!r}")


def _chat(args, settings, service) -> int:
    from app.cli import terminal
    from app.core.commands import Mode
    from app.services.conversation import Conversation

    if args.once and not (args.question or "").strip():
        raise _Usage("chat --once needs a question")
    if args.question and not args.once:
        raise _Usage("to ask one question and exit, add --once")
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


def _brief(args, settings, service) -> int:
    import threading

    from app.core.commands import Mode
    from app.core.records import parse_ts
    from app.services.brief import BriefBuilder, BriefCancelled
    from app.services.conversation import Conversation

    since = parse_ts(args.since) if args.since else None
    mode = Mode.parse(args.mode or settings.mode)
    if mode is Mode.RECALL:
        mode = Mode.GPU  # the brief needs the model; recall is for answers
    conversation = Conversation(settings, service, mode=mode)
    builder = BriefBuilder(conversation)
    cancel = threading.Event()
    outcome: dict = {}
    last = [""]

    def progress(done: int, total: int, what: str) -> None:
        if what != last[0]:
            last[0] = what
            sys.stderr.write(f"kelvin: [{done}/{total}] {what}\n")

    def run() -> None:
        try:
            outcome["result"] = builder.build(since_ms=since, progress=progress, cancel=cancel, wait_for_model=False)
        except BaseException as exc:  # noqa: BLE001 — handed to the main thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="kelvin-brief")
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        worker.join()
    finally:
        conversation.close()
    if isinstance(outcome.get("error"), BriefCancelled):
        sys.stderr.write(f"kelvin: {outcome['error']}\n")
        return 130
    from app.services.brief import NothingNew

    if isinstance(outcome.get("error"), NothingNew):
        print(outcome["error"])  # not a failure: there was nothing to add
        return EXIT_OK
    if "error" in outcome:
        raise outcome["error"]
    result = outcome["result"]
    if args.json:
        _print_json(result.to_json())
    else:
        print(f"Brief written: {result.path}")
        print(f"Archived in:   {result.archive}")
        print(f"From {result.messages} messages in {', '.join(result.domains) or 'no domain'}; "
              f"{len(result.settings)} current settings; {result.calls} model calls ({result.mode})")
        if result.flagged:
            print(f"Numbers to check (in no source): {', '.join(result.flagged)}")
    return EXIT_OK


class _Usage(Exception):
    pass


def _may_create(args) -> bool:
    """The commands that may bring a project into being: `project create`, and an import (its
    lines name their projects). Everything else works in a project that exists."""
    return (args.command == "project" and args.project_command == "create") or \
        (args.command == "memory" and args.memory_command == "import") or \
        (args.command == "team" and args.team_command in ("join", "projects"))


def _known_project(service, name: str) -> None:
    """A misspelt --project is an error that names the nearest project, never a new empty one."""
    from app.services.projects import Projects

    Projects(service).require(name, f"`kelvin project list` shows them, `kelvin project create {_quoted(name)}`")


def _quoted(name: str) -> str:
    import shlex

    return shlex.quote(name)


def _parser_of(parser: argparse.ArgumentParser, args) -> argparse.ArgumentParser:
    """The (sub)command's own parser, so that a usage error shows the usage of what was typed."""
    for dest in ("command", "project_command", "settings_command", "gpu_command", "memory_command", "team_command"):
        name = getattr(args, dest, None)
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not name or not subs or name not in subs[0].choices:
            continue
        parser = subs[0].choices[name]
    return parser




class _Expected(Exception):
    pass


def _gpu(args, settings) -> int:
    from app.cli import gpu as g

    if args.gpu_command == "status":
        return g.status(settings, args.json)
    if args.gpu_command == "watch":
        return g.watch(settings, args.seconds)
    if args.gpu_command == "record":
        return g.record(settings, args.file, args.seconds)
    return g.replay_trace(settings, args.trace, args.json, args.realtime)


def has_display() -> bool:
    """Whether a window can open here: always on Windows and macOS; on Linux an X or Wayland
    display, or a Qt platform chosen by hand (``QT_QPA_PLATFORM=offscreen`` for scripts)."""
    if sys.platform in ("win32", "darwin"):
        return True
    return any(os.environ.get(v) for v in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"))


def _welcome(settings, why: str = "") -> int:
    if why:
        print(f"kelvin: {why}; here is the terminal side instead.\n")
    print(f"Kelvin {__version__}")
    print(f"  data folder : {settings.data_path()}")
    print(f"  project     : {settings.project}")
    server = "Ollama" if settings.model_server == "ollama" else "model server"
    print(f"  {server:<12}: {settings.model_host} (chat model {settings.chat_model})")
    print(f"  embedder    : {settings.embedder}")
    print()
    print("Bare `kelvin` opens the desktop window. Everything also works from the terminal:")
    print("  kelvin chat                      talk to Kelvin (streamed; /help for commands)")
    print("  kelvin chat --once \"question\"    one answer, for scripts")
    print("  kelvin doctor                    check the model server, models, GPU and memory")
    print("  kelvin memory search \"GI clamp\"  search what Kelvin remembers")
    print("  kelvin gpu status                the GPU, Kelvin's models and the VRAM guard")
    return EXIT_OK


def _expected_problems() -> tuple[type[BaseException], ...]:
    """The problems told in plain words, not as a traceback. Imported only once something went
    wrong: their modules bring pyarrow and the Ollama client, which the window loads after its
    first paint."""
    from app.core.commands import CommandError
    from app.core.records import RecordError
    from app.core.scene import SceneError
    from app.llm.errors import OllamaUnavailable
    from app.core.embedding import EmbedderUnavailable
    from app.memory.index import IndexError_
    from app.memory.journal import JournalError
    from app.durable import UnsafePath
    from app.services.importer import ImportProblem
    from app.config import ConfigError
    from app.memory.team_server import TeamServerError
    from app.services.team import SyncBusy

    return (RecordError, ImportProblem, ConfigError, JournalError, IndexError_, EmbedderUnavailable,
            OllamaUnavailable, CommandError, UnsafePath, SceneError, TeamServerError, SyncBusy, _Expected)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 300 else text[:299] + "…"


def main(argv: list[str] | None = None) -> int:
    real = sys.stdout
    sys.stdout = Output(real) if real is not None and not isinstance(real, Output) else real
    try:
        return _main(argv)
    finally:
        sys.stdout = real


def _main(argv: list[str] | None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from app.memory.project_lock import set_holder

    said = sys.argv[1:] if argv is None else argv
    set_holder(" ".join(["kelvin", *[a for a in said if not a.startswith("-")][:3]]))  # who holds a project's lock
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="kelvin: %(message)s")
    from app import config as config_mod

    service = None
    data_dir = None
    try:
        settings = config_mod.load({"data_dir": args.data_dir, "project": args.project})
        data_dir = settings.data_path()
        if data_dir.exists() and not data_dir.is_dir():  # `--data-dir /dev/null`, a file
            from app.problems import not_a_folder

            raise _Expected(not_a_folder(data_dir))
        if args.self_test:
            from app import self_test

            return self_test.main(settings)
        if args.command == "info":
            return _welcome(settings)
        if args.command in (None, "app") and not has_display():
            _welcome(settings, "no display to open the window on (no DISPLAY or WAYLAND_DISPLAY)")
            return EXIT_OK if args.command is None else EXIT_ERROR
        from app.cli import terminal

        terminal.leave_on_quit_signals()
        if args.command == "doctor":
            return terminal.doctor(settings, args.json)
        if args.command == "scene" and args.scene_command == "addon":
            from app.cli import scene as scene_terminal

            return scene_terminal.addon(args.out)
        if args.command == "gpu":
            return _gpu(args, settings)
        if args.command in (None, "app"):
            from app.ui.app import main as open_app

            return open_app(settings)
        from app.services.memory import MemoryService

        service = MemoryService(settings)
        named = args.project if args.project is not None else settings.project  # the flag, or the setting
        if named != "default" and not _may_create(args):
            _known_project(service, named)
        if args.command == "chat":
            return _chat(args, settings, service)
        if args.command == "project":
            return terminal.project(args, service)
        if args.command == "settings":
            if getattr(args, "engine", None) is not None:  # a usage mistake (exit 2), with the engines there are
                from app.services.memory import load_taxonomy

                known = (*load_taxonomy().get("engines", {}), "any")
                if args.engine.strip().casefold() not in ("none", "camera", ""):
                    args.engine = _one_of(args.engine, known, "--engine")
            return terminal.settings(args, service)
        if args.command == "team":
            from app.cli.team import team

            return team(args, service)
        if args.command == "scene":
            from app.cli import scene as scene_terminal

            return scene_terminal.scene(args, settings, service)
        if args.command == "brief":
            return _brief(args, settings, service)
        return _memory(args, service)
    except ReaderGone:
        return reader_gone()
    except _Usage as exc:
        _parser_of(parser, args).error(str(exc))
    except _expected_problems() as exc:  # evaluated only when something was raised
        sys.stderr.write(f"kelvin: {exc}\n")
        return EXIT_ERROR
    except (OSError, RuntimeError) as exc:
        # a full disk, no permission, a read-only disk: its cause and its fix; else a damaged index
        from app.problems import explain

        log.debug("storage error", exc_info=True)
        said = explain(exc, data_dir)
        if said is None:
            said = (f"the search index could not be used ({_one_line(exc)}); `kelvin memory reindex` rebuilds it from "
                    "the journal" if isinstance(exc, RuntimeError) else f"the memory store could not be used: "
                    f"{_one_line(exc)}")
        sys.stderr.write(f"kelvin: {said}\n")
        return EXIT_ERROR
    except RecursionError:
        sys.stderr.write("kelvin: the input is nested too deeply to read (more than a thousand levels); nothing "
                         "was written\n")
        return EXIT_ERROR
    except KeyboardInterrupt as exc:
        from app.cli.terminal import Terminated

        why = f"stopped ({exc.name})" if isinstance(exc, Terminated) else "interrupted"
        try:
            sys.stderr.write(f"kelvin: {why}; everything already written is kept\n")
        except OSError:  # the terminal is gone (SIGHUP)
            pass
        return 128 + exc.signum if isinstance(exc, Terminated) else 130
    finally:
        if service is not None:
            service.close()
    return EXIT_OK

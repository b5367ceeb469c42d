"""``kelvin memory …``: search, import and curate what Kelvin remembers (import, search, list, show,
edit, delete, stats, reindex, remember, forget, memories)."""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from app.cli.arguments import EXIT_OK, Expected, Usage, count, one_of
from app.cli.console import print_json, progress, short, shown

MAX_K = 100_000  # messages one search returns at most (the chat's window takes eight)


def add_parser(sub) -> None:
    """``memory`` and its subcommands, under the top-level parser's subcommands ``sub``."""
    mem = sub.add_parser("memory", help="search, import and curate what Kelvin remembers")
    msub = mem.add_subparsers(dest="memory_command", required=True)

    imp = msub.add_parser("import", help="import messages from a JSON-lines file (all or nothing)")
    imp.add_argument("file", type=Path, help="one JSON object per line (see README: import format)")

    s = msub.add_parser("search", help="hybrid search over the stored messages")
    s.add_argument("query", nargs="?", help="what to look for, in your own words")
    s.add_argument("--batch", type=Path, help="file with one query per line; prints one JSON line per query with "
                   "the best k messages, as the chat's window would get them (matches or not)")
    s.add_argument("--k", type=count(1, MAX_K), default=5, help=f"number of messages to return, 1 to {MAX_K:,} (default 5)")
    s.add_argument("--json", action="store_true", help="print JSON instead of text")
    _add_filters(s)
    s.add_argument("--all-projects", action="store_true", help="search every project, not just the current one")

    ls = msub.add_parser("list", help="the latest messages")
    ls.add_argument("--limit", type=count(0, 10**9), default=20, help="how many of the latest (0: all)")
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


def _add_filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--domain", help="lighting, shading, camera, optimization, geometry, texturing, compositing, general")
    p.add_argument("--type", help="setting, instruction, critique, logic, dialogue")
    p.add_argument("--engine", help="octane, redshift, arnold, cycles, vray, karma, corona")
    p.add_argument("--since", help="ISO 8601 time; only messages at or after it")
    p.add_argument("--until", help="ISO 8601 time; only messages at or before it")


def _filters(args):
    from app.core.records import parse_ts
    from app.core.tagging import DOMAINS, TYPES
    from app.core.filters import Filters
    from app.services.memory import load_taxonomy

    engines = tuple(load_taxonomy().get("engines", {})) if args.engine is not None else ()
    return Filters(
        domain=one_of(args.domain, DOMAINS, "--domain"), type=one_of(args.type, TYPES, "--type"),
        engine=one_of(args.engine, engines, "--engine"),
        since_ms=parse_ts(args.since) if args.since else None,
        until_ms=parse_ts(args.until) if args.until else None,
    )


def _print_message(m, score: float | None = None, with_project: bool = False) -> None:
    who = f" · {shown(m.speaker)}" if m.speaker and m.role == "user" else ""  # a team's artist: who said it
    head = f"{m.timestamp[:16].replace('T', ' ')}  {shown(m.id)}  {m.role}{who}"
    head += f"  in {shown(m.project)}" if with_project else ""
    tags = f"{m.tags.domain}/{m.tags.type}" + (f"/{m.tags.engine}" if m.tags.engine else "")
    print(f"{head}  [{tags}]" + (f"  score {score:.4f}" if score is not None else ""))
    print(f"    {short(m.text)}")


def memory(args, service) -> int:
    from app.services.importer import read_jsonl

    cmd = args.memory_command
    project = args.project
    if cmd == "import":
        items = read_jsonl(args.file, service.default_project)
        report = service.import_items(items, progress("imported") if len(items) > 2000 else (lambda d, t: None))
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
                raise Usage("--batch prints JSON lines; add --json")
            from app.inputs import InputProblem, lines

            try:  # in bounded pieces: /dev/urandom cannot fill memory
                queries = [q.strip() for _n, q in lines(args.batch, "a file of queries, one a line", 64 * 2**20, 2**20)
                           if q.strip()]
            except InputProblem as exc:
                raise Expected(str(exc)) from None
            for q in queries:
                t0 = time.perf_counter()
                hits = service.search(q, args.k, filters, project=project, all_projects=args.all_projects)
                took = (time.perf_counter() - t0) * 1000
                print_json({"query": q, "hits": [h.to_json() for h in hits], "took_ms": round(took, 3)})
                sys.stdout.flush()
            return EXIT_OK
        if not args.query or not args.query.strip():
            raise Usage("give a search query, or --batch FILE")
        # what a person searching calls a match (a word or its stem, or as near in meaning as the
        # nearest), never the rest of the project; --batch gives the best k, as the chat's window gets them
        hits = service.search(args.query, args.k, filters, project=project, all_projects=args.all_projects,
                              only_matches=True)
        if args.json:
            print_json([h.to_json() for h in hits])
        elif not hits:
            print("no matching messages")
        for h in hits if not args.json else []:
            _print_message(h.message, h.score, with_project=args.all_projects)
        return EXIT_OK
    if cmd == "list":
        msgs = service.list(project, args.limit, _filters(args))
        if args.json:
            print_json([m.to_json() for m in msgs])
        else:
            for m in msgs:
                _print_message(m)
            if not msgs:
                print("no messages yet")
        return EXIT_OK
    if cmd == "show":
        m = service.show(args.id, project)
        if m is None:
            raise Expected(f"no message {args.id!r} in project {service.store(project).name!r}")
        from app.services.settings_ledger import SettingsLedger

        stated = SettingsLedger(service).book(project).mentions_of(m.id)  # the settings it states
        if args.json:
            print_json({**m.to_json(), "settings": [e.to_json() for e in stated]})
        else:
            _print_message(m)
            if stated:
                from app.core.render_settings.parameters import format_value

                print("  settings: " + "; ".join(f"{e.name or e.parameter} {format_value(e.value, e.unit)} ({e.status})"
                                                  for e in stated))
            print()
            print(shown(m.text))
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
            print_json(stats)
        else:
            for key, value in stats.items():
                if isinstance(value, dict):
                    value = ", ".join(f"{k} {v}" for k, v in value.items()) or "—"
                print(f"{key.replace('_', ' '):>20}: {value if value is not None else '—'}")
        return EXIT_OK
    if cmd == "reindex":
        n = service.reindex(project, progress("reindexed"))
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
            raise Expected(f"no kept memory is {args.id!r} or holds those words (`kelvin memory memories` lists them)")
        if len(meant) > 1:
            raise Expected("several kept memories hold those words; give more of them, or the id:\n"
                            + "\n".join(f"  {shown(m.id)}  {short(m.text)}" for m in meant))
        service.forget(meant[0].id, project)
        print(f"forgot: {short(meant[0].text)}")
        return EXIT_OK
    if cmd == "memories":
        mems = service.memories(project)
        if args.json:
            print_json([m.to_json() for m in mems])
        else:
            for m in mems:
                print(f"{shown(m.id)}  [{shown(m.category)}]  {short(m.text)}")
            if not mems:
                print("no curated memories yet")
        return EXIT_OK
    raise Usage(f"unknown memory command {cmd!r}")


"""``kelvin settings …``: the settings ledger — every render setting's current value and its
history (list, history), and the artist's own hand on it (set, unset, adopt)."""
from __future__ import annotations

import json
import sys

from app.cli.arguments import ENGINE_HELP, EXIT_OK, one_of

_SCOPE_HELP = "the light, camera or output it belongs to, by name (e.g. 'key', 'cam_hero'); none: render-wide"


def add_parser(sub) -> None:
    """``settings`` and its subcommands, under the top-level parser's subcommands ``sub``."""
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
    ss.add_argument("--scope", default="", help=_SCOPE_HELP)
    su = ssub.add_parser("unset", help="the setting has no current value any more (its history stays)")
    su.add_argument("parameter", help="the setting's name or a synonym")
    su.add_argument("--engine", help=ENGINE_HELP)
    su.add_argument("--scope", default="", help=_SCOPE_HELP)
    sa = ssub.add_parser("adopt", help="take the value the last imported scene file holds as the decision (journaled)")
    sa.add_argument("parameter", help="the setting's name or a synonym")
    sa.add_argument("--engine", help=ENGINE_HELP)
    sa.add_argument("--scope", default=None, help=_SCOPE_HELP)


def settings(args, memory) -> int:
    """``kelvin settings list|history|set|unset|adopt``."""
    if getattr(args, "engine", None) is not None:  # a usage mistake (exit 2), with the engines there are
        from app.services.memory import load_taxonomy

        known = (*load_taxonomy().get("engines", {}), "any")
        if args.engine.strip().casefold() not in ("none", "camera", ""):
            args.engine = one_of(args.engine, known, "--engine")
    from app.core.context import when
    from app.core.records import clean_output
    from app.core.render_settings.parameters import format_value
    from app.services.settings_ledger import SettingsLedger, describe, question, setting_label, value_text

    ledger = SettingsLedger(memory)
    project = args.project
    cmd = args.settings_command
    if cmd == "list":
        currents = ledger.current(project, args.engine, candidates=args.candidates)
        if args.json:
            print(json.dumps([c.to_json() for c in currents], ensure_ascii=False, indent=1))
        elif not currents:
            print("No settings in the ledger yet. They are picked up from the conversation "
                  "(\"set GI clamp to 10\") or set by hand: kelvin settings set \"gi clamp\" 10 --engine octane")
        else:
            for c in currents:
                print(describe(c, with_source=True) + ("  [candidate]" if c.entry.candidate else ""))
            asked = [c for c in currents if c.unsure]
            if asked:
                print(f"\nTo confirm ({len(asked)}): " + " · ".join(question(c) for c in asked)
                      + "  (kelvin settings set NAME VALUE decides)")
        return EXIT_OK
    if cmd == "history":
        found = ledger.history(args.parameter, args.engine, project)
        if args.json:
            print(json.dumps([{"engine": k[0] or None, "parameter": k[1], "scope": k[2] or None,
                               "current": (cur.to_json() if (cur := ledger.current_of(k, project)) else None),
                               "history": [e.to_json() for e in entries]} for k, entries in found],
                             ensure_ascii=False, indent=1))
            return EXIT_OK
        for key, entries in found:
            cur = ledger.current_of(key, project)
            title = setting_label(entries[0]) if entries else key[1]
            now = value_text(cur) if cur else "not set"
            print(f"{title}: now {now}")
            for e in entries:
                mark = "→" if cur is not None and cur.decision is not None and e.id == cur.decision.id else \
                    "?" if cur is not None and cur.pending is not None and e.id == cur.pending.id else " "
                value = "(the current value)" if e.value is None and e.status == "rejected" else format_value(e.value, e.unit)
                src = ("by hand" + (f": {clean_output(e.note)}" if e.note else "")) if e.by == "artist" else \
                    f"scene: {clean_output(e.note)}" if e.by == "scene" else (e.source_id or "")
                status = "in file" if e.by == "scene" else e.status + ("?" if not e.sure else "")
                who = f"{clean_output(e.author)}, " if e.author else ""  # a shared project: who said it
                print(f"  {mark} {who}{when(e.ts_ms)}  {status:<9} {value:<14} {src}")
        return EXIT_OK
    if cmd == "set":
        entry = ledger.set(args.parameter, args.value, args.engine, project, note=args.note, scope=args.scope)
        print(f"{setting_label(entry)} = {format_value(entry.value, entry.unit)} (set by hand"
              + (f": {clean_output(entry.note)}" if entry.note else "") + "; the history keeps what came before)")
        return EXIT_OK
    if cmd == "adopt":
        entry = ledger.adopt(args.parameter, args.engine, project, scope=args.scope)
        print(f"{setting_label(entry)} = {format_value(entry.value, entry.unit)} ({clean_output(entry.note)}; "
              "the history keeps what was decided before)")
        return EXIT_OK
    left = ledger.unset(args.parameter, args.engine, project, scope=args.scope)
    if left is not None and left.decision is not None:  # never: an unset is the newest fact (ledger.in_order)
        print(f"{args.parameter}: still {format_value(left.decision.value, left.decision.unit)} — not cleared",
              file=sys.stderr)
        return 1
    held = f" (the last scene file holds {format_value(left.held.value, left.held.unit)})" \
        if left is not None and left.held is not None else ""
    print(f"{args.parameter}: no decided value now{held} (its history stays)")
    return EXIT_OK

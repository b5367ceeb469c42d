"""``kelvin brief``: the end of the day — the project's master brief written by the model from what
was said (and the settings decided), and archived. Ctrl+C stops it cleanly (exit 130)."""
from __future__ import annotations

import sys

from app.cli.arguments import EXIT_OK
from app.cli.console import print_json


def add_parser(sub) -> None:
    """``brief``, under the top-level parser's subcommands ``sub``."""
    br = sub.add_parser("brief", help="end of day: write the master brief of the project and archive it")
    br.add_argument("--since", help="cover messages from this time (ISO, e.g. 2026-11-23 or 2026-11-23T09:00); "
                    "default: since the last brief")
    br.add_argument("--mode", choices=["gpu", "cpu"], help="run the model on the GPU or the CPU (default: setting 'mode')")
    br.add_argument("--json", action="store_true", help="print the brief's sections as JSON")


def brief(args, settings, service) -> int:
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
        print_json(result.to_json())
    else:
        print(f"Brief written: {result.path}")
        print(f"Archived in:   {result.archive}")
        print(f"From {result.messages} messages in {', '.join(result.domains) or 'no domain'}; "
              f"{len(result.settings)} current settings; {result.calls} model calls ({result.mode})")
        if result.flagged:
            print(f"Numbers to check (in no source): {', '.join(result.flagged)}")
    return EXIT_OK


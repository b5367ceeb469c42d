"""``kelvin doctor``: is everything Kelvin needs there and working — the model server, the models,
the GPU, the data folder and the memory — each with its fix when it is not."""
from __future__ import annotations

import json

from app.cli.arguments import EXIT_ERROR, EXIT_OK


def add_parser(sub) -> None:
    """``doctor``, under the top-level parser's subcommands ``sub``."""
    doc = sub.add_parser("doctor", help="check Ollama, the models, the GPU, the data folder and the memory")
    doc.add_argument("--json", action="store_true", help="print JSON instead of text")


def doctor(settings, as_json: bool = False) -> int:
    from app.llm.servers import connect
    from app.services import doctor as checks
    from app.services.memory import MemoryService

    backend = connect(settings, min(settings.ollama_timeout_s, 10.0))
    memory = MemoryService(settings)
    try:
        results = checks.run(settings, backend, memory)
    finally:
        memory.close()
        backend.close()
    if as_json:
        print(json.dumps([r.to_json() for r in results], indent=1))
    else:
        mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "info": "info"}
        for r in results:
            print(f"[{mark[r.status]}] {r.name}: {r.detail}")
            if r.fix and r.status != "ok":
                print(f"       → {r.fix}")
    return EXIT_ERROR if any(r.status == "fail" for r in results) else EXIT_OK

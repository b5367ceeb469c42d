"""One artist's Kelvin in its own process, working in a shared project: chat turns (the artist's
words and Kelvin's reply, as a turn records them), imports, edits and deletes (of anyone's
messages), curated memories, settings set by hand — while the background sync (TeamSync, as in
the window) sends and fetches. Used by tests/test_team_converge.py and bench/team_sync.py.

    python -m tests.support.team_artist DATA_DIR ARTIST PROJECT OPS SEED [--offline] [--mode MODE]

``--offline``: no server at all while working (a laptop on a train). ``--mode push-then-die``,
``die-before-push``, ``die-in-push``: the kill tests' moments (SIGKILL to itself). Prints one JSON
line at the end: what it did.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time

PARAMS = (("gi clamp", "octane", ("10", "25", "4")), ("max samples", "octane", ("2000", "4000", "8000")),
          ("denoiser", "octane", ("on", "off")))
WORDS = ("key light", "rim light", "GI clamp", "HDRI", "roughness", "glass shader", "motion blur", "fog", "bokeh",
         "shadow", "sky", "reflection", "the client", "hero shot", "render time")


def _text(rng: random.Random, who: str, n: int) -> str:
    return f"{who} note {n}: {rng.choice(WORDS)} {rng.choice(('too strong', 'looks right', 'needs work', 'is fine'))} " \
           f"{rng.randint(1, 999)}"


def work(svc, team, artist: str, project: str, ops: int, seed: int) -> dict:
    from app.core.records import Message, stable_id
    from app.services.importer import ImportItem
    from app.services.settings_ledger import SettingsLedger

    rng = random.Random(seed)
    ledger = SettingsLedger(svc)
    did = {"turns": 0, "imports": 0, "edits": 0, "deletes": 0, "settings": 0, "memories": 0}
    conv = f"c-{artist}"
    for n in range(ops):
        kind = rng.choices(("turn", "import", "edit", "delete", "setting", "memory"), (40, 8, 16, 10, 16, 10))[0]
        try:
            if kind == "turn":
                svc.commit(_text(rng, artist, n), conversation_id=conv, project=project)[1].result()
                svc.commit(f"noted, {artist}: {rng.choice(WORDS)}", role="assistant", speaker="Kelvin (stand-in)",
                           conversation_id=conv, project=project)[1].result()
            elif kind == "import":
                base = int(time.time() * 1000) - rng.randint(0, 3_600_000)
                items = [ImportItem(project, Message(id=stable_id(artist, str(seed), str(n), str(i)), project=project,
                                                     conversation_id=f"imp-{artist}-{n}", role="user", speaker=artist,
                                                     text=_text(rng, artist + " (imported)", i), ts_ms=base + i))
                         for i in range(rng.randint(2, 6))]
                svc.import_items(items)
            elif kind in ("edit", "delete"):
                mine = [m for m in svc.list(project, limit=30) if m.role == "user"]
                if not mine:
                    continue
                target = rng.choice(mine)
                if kind == "edit":
                    svc.edit(target.id, target.text + f" (edited by {artist})", project)
                else:
                    svc.delete(target.id, project)
            elif kind == "setting":
                name, engine, values = rng.choice(PARAMS)
                ledger.set(name, rng.choice(values), engine=engine, project=project)
            else:
                svc.remember(f"{artist} keeps: {rng.choice(WORDS)} {n}", project=project)[1].result()
        except Exception as exc:  # a message edited away or deleted by a teammate meanwhile
            from app.core.records import RecordError

            if not isinstance(exc, RecordError):
                raise
            continue
        key = {"turn": "turns", "memory": "memories"}.get(kind, kind + "s")
        did[key] += 1
        time.sleep(rng.random() * 0.03)
    return did


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("data_dir")
    p.add_argument("artist")
    p.add_argument("project")
    p.add_argument("ops", type=int)
    p.add_argument("seed", type=int)
    p.add_argument("--server", default="")
    p.add_argument("--offline", action="store_true")
    p.add_argument("--mode", default="work")
    args = p.parse_args(argv)
    from app.config import load
    from app.services.memory import MemoryService
    from app.services.team import Team
    from app.services.team_sync import TeamSync

    server = "" if args.offline else args.server
    svc = MemoryService(load({"data_dir": args.data_dir, "team_server": server, "artist": args.artist,
                              "embedder": "none"}))
    team = Team(svc)
    try:
        if args.mode == "work":
            sync = TeamSync(team) if server else None
            if sync is not None:
                sync.follow(args.project)
            did = work(svc, team, args.artist, args.project, args.ops, args.seed)
            svc.flush()
            if sync is not None:
                sync.stop(30)
                did["rebased_rounds"] = sync.rebased
                did["rounds"] = sync.rounds
                for _ in range(3):
                    try:
                        team.sync(args.project)
                        break
                    except Exception:  # noqa: BLE001 — the parent syncs again anyway
                        time.sleep(0.5)
            print(json.dumps(did), flush=True)
            return 0
        # the kill tests: work a little, then die at a chosen moment of a push
        work(svc, team, args.artist, args.project, args.ops, args.seed)
        svc.flush()
        store = svc.store(args.project)
        batch, scanned = svc.writer.call(lambda: team._outbox(store)).result()[0]
        print(json.dumps({"batch": [e.uid for e in batch]}), flush=True)
        if args.mode == "die-before-push":
            os.kill(os.getpid(), signal.SIGKILL)
        if args.mode == "push-then-die":
            team.server().push(store.team.server_project, batch)
            os.kill(os.getpid(), signal.SIGKILL)
        if args.mode == "die-in-push":
            threading.Thread(target=lambda: team.server().push(store.team.server_project, batch), daemon=True).start()
            time.sleep(random.Random(args.seed).random() * 0.05)
            os.kill(os.getpid(), signal.SIGKILL)
        if args.mode == "sync-forever":  # killed from outside at a random moment
            while True:
                work(svc, team, args.artist, args.project, 3, args.seed + int(time.time() * 1000) % 1000)
                try:
                    team.sync(args.project)
                except Exception:  # noqa: BLE001
                    pass
        return 0
    finally:
        team.close()
        svc.close()


if __name__ == "__main__":
    sys.exit(main())

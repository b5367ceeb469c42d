"""Does a store get slower with every edit and delete? (issue 19)

Builds one store of ``--messages`` messages in which every ``--hot-every``-th message names the
same setting ("Octane GI clamp N on shot K": 20k mentions of one setting at 100k), copies it, and
makes ``--changes`` edits and deletes (half each) of those messages in the copy. Then, alternating
between the two stores in the same run:

* as an artist runs them, each a fresh ``kelvin`` process (start-up and the settings ledger's load
  included): ``memory list``, ``memory search``, ``memory stats``, ``settings list`` and a chat turn
  (``chat --once`` against the Ollama-protocol test server, started here);
* in one warm process: ``list``, ``search``, ``stats`` and the ledger's current values.

Prints each command's p50 on both stores and the ratio (target: within 1.2x), and the time of the
edits and deletes themselves, first 100 against last 100 (flat if the cost does not grow with use).
``--app-root`` runs the commands from another checkout (e.g. a worktree of an older commit).

    python bench/edits.py > bench/results/edits.json
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common as c

COMMANDS = {
    "memory list": ["memory", "list", "--limit", "20"],
    "memory search": ["memory", "search", "GI clamp fireflies", "--k", "8"],
    "memory stats": ["memory", "stats"],
    "settings list": ["settings", "list"],
    "chat turn": ["chat", "--once", "what GI clamp are we on for the hero shot?"],
}


def corpus(n: int, hot_every: int, seed: int = 11) -> list[dict]:
    per = 100
    msgs = c.scale_corpus(conversations=(n + per - 1) // per, per_conversation=per, seed=seed)[:n]
    rng = random.Random(seed)
    for i, m in enumerate(msgs):
        if i % hot_every == 0:
            m["text"] = f"Octane GI clamp {rng.choice([2, 5, 8, 10, 15, 25])} on shot {i // 50}, the fireflies are gone"
            m["role"] = "user"
    return msgs


def build(data: Path, msgs: list[dict]) -> None:
    svc = c.make_service(data)
    try:
        t0 = time.perf_counter()
        svc.import_items(c.to_items(msgs))
        svc.maintain()
        c.log(f"  built {len(msgs):,} messages in {time.perf_counter() - t0:.0f} s")
    finally:
        svc.close()


def change(data: Path, hot_ids: list[str], n: int, seed: int = 5) -> dict:
    rng = random.Random(seed)
    chosen = rng.sample(hot_ids, n)
    svc = c.make_service(data)
    times = []
    try:
        svc.open("bench")
        for i, mid in enumerate(chosen):
            t0 = time.perf_counter()
            if i % 2:
                svc.delete(mid, "bench")
            else:
                svc.edit(mid, f"Octane GI clamp {rng.choice([3, 6, 12])} on this shot, corrected", "bench")
            times.append(time.perf_counter() - t0)
            if (i + 1) % 100 == 0:
                c.log(f"  {i + 1} changes, last 100: p50 {statistics.median(times[-100:]) * 1000:.0f} ms")
        svc.maintain("bench")
    finally:
        svc.close()
    first, last = times[:100], times[-100:]
    return {"changes": n, "edits": (n + 1) // 2, "deletes": n // 2,
            "first_100_ms": c.summary_ms(first), "last_100_ms": c.summary_ms(last),
            "last_over_first_p50": round(statistics.median(last) / statistics.median(first), 3)}


def cli_times(stores: dict[str, Path], reps: int, host: str, app_root: Path) -> dict:
    samples: dict[str, dict[str, list[float]]] = {cmd: {k: [] for k in stores} for cmd in COMMANDS}
    order = list(stores)
    for rep in range(reps):
        for cmd, args in COMMANDS.items():
            for name in (order if rep % 2 == 0 else order[::-1]):
                env = {**os.environ, "KELVIN_DATA_DIR": str(stores[name]), "KELVIN_PROJECT": "bench",
                       "KELVIN_EMBEDDER": "none", "KELVIN_OLLAMA_HOST": host, "KELVIN_VRAM_GUARD": "false"}
                t0 = time.perf_counter()
                proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=app_root, env=env,
                                      capture_output=True, text=True)
                samples[cmd][name].append(time.perf_counter() - t0)
                if proc.returncode != 0:
                    raise SystemExit(f"kelvin {' '.join(args)} failed on {name}: {proc.stderr}")
        c.log(f"  CLI round {rep + 1}/{reps}")
    return _ratios(samples)


def warm_times(stores: dict[str, Path], reps: int) -> dict:
    from app.services.settings_ledger import SettingsLedger

    services = {name: c.make_service(path) for name, path in stores.items()}
    try:
        calls = {
            "list": lambda s: s.list("bench", 20),
            "search": lambda s: s.search("GI clamp fireflies", 8, project="bench"),
            "stats": lambda s: s.stats("bench"),
            "settings": lambda s: SettingsLedger(s).current("bench"),
        }
        for s in services.values():
            for fn in calls.values():
                fn(s)  # warm up (and catch up) outside the timings
        samples: dict[str, dict[str, list[float]]] = {k: {n: [] for n in services} for k in calls}
        for rep in range(reps):
            for key, fn in calls.items():
                for name in (list(services) if rep % 2 == 0 else list(services)[::-1]):
                    t0 = time.perf_counter()
                    fn(services[name])
                    samples[key][name].append(time.perf_counter() - t0)
    finally:
        for s in services.values():
            s.close()
    return _ratios(samples)


def _ratios(samples: dict[str, dict[str, list[float]]]) -> dict:
    out = {}
    for cmd, by in samples.items():
        p50 = {name: statistics.median(v) * 1000 for name, v in by.items()}
        out[cmd] = {**{f"{name}_p50_ms": round(ms, 1) for name, ms in p50.items()},
                    "changed_over_plain": round(p50["changed"] / p50["plain"], 3)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--messages", type=int, default=100_000)
    ap.add_argument("--hot-every", type=int, default=5, help="every Nth message names the same setting")
    ap.add_argument("--changes", type=int, default=1000, help="edits and deletes made in the changed store")
    ap.add_argument("--reps", type=int, default=5, help="CLI runs per command and store")
    ap.add_argument("--warm-reps", type=int, default=40)
    ap.add_argument("--app-root", type=Path, default=c.ROOT, help="the checkout whose `kelvin` the commands run")
    args = ap.parse_args()
    sys.path.insert(0, str(args.app_root))
    from tests.support.ollama_server import OllamaTestServer

    work = Path(tempfile.mkdtemp(prefix="kelvin-bench-edits-"))
    doc: dict = {"machine": c.machine_info(), "params": {k: (str(v) if isinstance(v, Path) else v)
                                                          for k, v in vars(args).items()}}
    try:
        msgs = corpus(args.messages, args.hot_every)
        hot = [m["id"] for i, m in enumerate(msgs) if i % args.hot_every == 0]
        doc["params"]["mentions_of_the_setting"] = len(hot)
        plain, changed = work / "plain", work / "changed"
        c.log(f"[edits] building a store of {len(msgs):,} messages ({len(hot):,} name Octane GI clamp) …")
        build(plain, msgs)
        shutil.copytree(plain, changed)
        c.log(f"[edits] {args.changes} edits and deletes in the copy …")
        doc["changes"] = change(changed, hot, args.changes)
        stores = {"plain": plain, "changed": changed}
        with OllamaTestServer() as srv:
            c.log("[edits] the commands, fresh processes, alternating …")
            doc["cli"] = cli_times(stores, args.reps, srv.host, args.app_root)
        c.log("[edits] the same calls in one warm process …")
        doc["warm"] = warm_times(stores, args.warm_reps)
        doc["worst_changed_over_plain"] = max(v["changed_over_plain"] for part in ("cli", "warm")
                                              for v in doc[part].values())
    finally:
        shutil.rmtree(work, ignore_errors=True)
    c.emit(doc)


if __name__ == "__main__":
    main()

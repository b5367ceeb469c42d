"""Start-up of the terminal commands (issue 31): what each costs from launch to exit, against main's
code in the same run.

Every terminal command used to import the whole stack — LanceDB, pyarrow, the Ollama client, the
settings rules — though most never search or write the index. This script runs each command as a
fresh process, alternating this checkout's code and a baseline checkout (by default ``main``,
exported with ``git archive`` into a temporary folder), on the same kind of data folder (a project of
``--messages`` messages, each code given its own copy made by itself), and reports the median wall
time and CPU time (user + system, of the process and its children) per command, the baseline's
over this code's, and which heavy libraries each command imported. Targets (idle machine): ``--version``,
``project list`` and ``settings list`` ≤ 0.3 s; ``memory search`` ≤ 1 s; ``scene import -`` ≤ 1 s
plus Blender (here: scene JSON on stdin, no Blender).

    .venv/bin/python bench/startup_cli.py [--runs 9] [--baseline-ref main | --baseline DIR] > bench/results/startup_cli.json
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import common as c

SCENE = json.dumps({"format": "kelvin-scene", "version": 1, "app": "bench", "file": "/shots/forest.blend",
                    "scene": "Scene", "engine": "cycles",
                    "settings": [{"engine": "cycles", "parameter": "max_samples", "value": 1024},
                                 {"engine": "cycles", "parameter": "clamp_indirect", "value": 10},
                                 {"engine": "", "parameter": "resolution", "value": "2048x858"}],
                    "extra": [{"name": "view transform", "value": "AgX"}]})
COMMANDS = {
    "--version": (["--version"], None),
    "project list": (["project", "list"], None),
    "settings list": (["settings", "list"], None),
    "memory search": (["memory", "search", "GI clamp 10"], None),
    "scene import -": (["scene", "import", "-"], SCENE),
}
HEAVY = ("lancedb", "pyarrow", "ollama", "httpx", "numpy", "app.core.render_settings.extraction", "PySide6")


def run(code: Path, args: list[str], stdin: str | None, env: dict) -> tuple[float, float, int]:
    """(wall s, CPU s of the process and its children, exit status) of one fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=code, input=stdin, capture_output=True, text=True,
                          env=env, timeout=600)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        c.log(f"[startup] {code.name} {' '.join(args)}: exit {proc.returncode}: {proc.stderr[-300:]}")
    return wall, cpu, proc.returncode


def imported(code: Path, args: list[str], stdin: str | None, env: dict) -> list[str]:
    """The heavy libraries a command imports (``python -X importtime``)."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "app", *args], cwd=code, input=stdin,
                          capture_output=True, text=True, env=env, timeout=600)
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    return [h for h in HEAVY if h in names]


def env_for(code: Path, data: Path, config: Path) -> dict:
    env = {**os.environ, "KELVIN_DATA_DIR": str(data), "KELVIN_CONFIG_DIR": str(config), "KELVIN_EMBEDDER": "none",
           "KELVIN_OLLAMA_HOST": "http://127.0.0.1:9", "KELVIN_VRAM_GUARD": "false", "PYTHONPATH": str(code)}
    env.pop("KELVIN_PROJECT", None)
    return env


def seed(code: Path, work: Path, n: int) -> dict:
    """A data folder made by ``code`` itself: one project of ``n`` messages and a few settings."""
    data, config = work / f"data-{code.name}", work / f"config-{code.name}"
    config.mkdir(parents=True)
    rows = work / "rows.jsonl"
    if not rows.exists():
        rows.write_text("".join(json.dumps({"id": f"m{i}", "text": f"shot {i // 50}: Octane GI clamp {i % 40}, "
                                                                   f"max samples {512 * (1 + i % 4)}",
                                            "conversation_id": f"c{i // 50}", "timestamp":
                                            f"2026-11-{1 + i // 2000:02d}T10:{(i // 60) % 60:02d}:{i % 60:02d}Z"}) + "\n"
                                for i in range(n)), encoding="utf-8")
    env = env_for(code, data, config)
    for args, stdin in ((["memory", "import", str(rows)], None), (["scene", "import", "-"], SCENE),
                        (["memory", "stats"], None)):  # the last: every projection caught up before timing
        proc = subprocess.run([sys.executable, "-m", "app", *args], cwd=code, input=stdin, capture_output=True,
                              text=True, env=env, timeout=1800)
        if proc.returncode != 0:
            raise SystemExit(f"seeding with {code} failed: {proc.stderr[-1000:]}")
    return env


def baseline_checkout(ref: str, work: Path) -> Path:
    out = work / "baseline"
    out.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=c.ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--messages", type=int, default=2000)
    ap.add_argument("--baseline-ref", default="main", help="git ref whose code is the baseline (default main)")
    ap.add_argument("--baseline", type=Path, help="a checkout to use as the baseline instead")
    args = ap.parse_args()
    doc = {"machine": c.machine_info(), "runs": args.runs, "messages": args.messages}
    with tempfile.TemporaryDirectory(prefix="kelvin-startup-") as tmp:
        work = Path(tmp)
        base = args.baseline or baseline_checkout(args.baseline_ref, work)
        codes = {"this": c.ROOT, "baseline": base}
        doc["baseline"] = str(args.baseline) if args.baseline else f"git archive {args.baseline_ref}"
        envs = {name: seed(code, work, args.messages) for name, code in codes.items()}
        results: dict = {}
        for label, (cmd, stdin) in COMMANDS.items():
            samples = {name: [] for name in codes}
            for _ in range(args.runs):  # alternated: both codes see the same load
                for name, code in codes.items():
                    wall, cpu, rc = run(code, cmd, stdin, envs[name])
                    samples[name].append((wall, cpu, rc))
            row = {}
            for name, got in samples.items():
                row[name] = {"wall_s_p50": round(statistics.median(w for w, _, _ in got), 3),
                             "cpu_s_p50": round(statistics.median(u for _, u, _ in got), 3),
                             "exit": sorted({rc for _, _, rc in got}),
                             "imports": imported(codes[name], cmd, stdin, envs[name])}
            row["baseline_over_this_wall"] = round(row["baseline"]["wall_s_p50"] / row["this"]["wall_s_p50"], 2)
            row["baseline_over_this_cpu"] = round(row["baseline"]["cpu_s_p50"] / max(row["this"]["cpu_s_p50"], 1e-3), 2)
            results[label] = row
            c.log(f"[startup] {label:16} this {row['this']['wall_s_p50']:.3f} s ({row['this']['cpu_s_p50']:.3f} cpu)"
                  f"  baseline {row['baseline']['wall_s_p50']:.3f} s ({row['baseline']['cpu_s_p50']:.3f} cpu)")
        doc["commands"] = results
    c.emit(doc)


if __name__ == "__main__":
    main()

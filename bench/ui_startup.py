"""The desktop app's start-up (issue 6): time from launching ``python -m app app`` to the window's
first paint, and which heavy libraries were imported before it.

Each run spawns the app as a fresh process (``QT_QPA_PLATFORM=offscreen``, a throw-away data and
config folder, Ollama on a closed port, embedder ``none``, VRAM guard off) with
``KELVIN_FIRST_PAINT_EXIT=1``: the window prints one JSON line right after its first paint
(``app/ui/first_paint.py``), another once its services are up, and quits. The time is measured
from just before ``Popen`` to the paint time the app reports (both ``time.time()``).

Baseline, same run, same number of runs, alternated with the app's: a minimal PySide6 script — a
``QApplication`` and an empty ``QMainWindow`` shown, on the same platform, with the same
first-paint detection — so the ratio says what Kelvin adds to what any Qt window costs here.

    python bench/ui_startup.py > bench/results/ui_startup.json
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common as c  # noqa: E402

TARGET_S = 1.5

# the baseline: what any Qt window costs on this machine, detected the same way as Kelvin's
BASELINE = """
import json, sys, time
from PySide6.QtWidgets import QApplication, QMainWindow
from app.ui.first_paint import FirstPaint, heavy_modules
app = QApplication(sys.argv[:1])
w = QMainWindow()
w.resize(560, 820)
w.show()
def painted():
    print(json.dumps({"event": "first_paint", "t": time.time(), "heavy_modules": heavy_modules()}), flush=True)
    app.quit()
FirstPaint(w, painted)
sys.exit(app.exec())
"""


def environment(folder: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("KELVIN_") and k != "OLLAMA_HOST"}
    env.update(QT_QPA_PLATFORM="offscreen", KELVIN_DATA_DIR=str(folder / "data"), KELVIN_CONFIG_DIR=str(folder / "config"),
               KELVIN_OLLAMA_HOST="http://127.0.0.1:9", KELVIN_EMBEDDER="none", KELVIN_VRAM_GUARD="0",
               KELVIN_FIRST_PAINT_EXIT="1", PYTHONDONTWRITEBYTECODE="1")
    return env


def launch(argv: list[str], env: dict, timeout_s: float = 120.0) -> dict:
    """Spawn one process; seconds from just before Popen to its first paint (and to ready, exit)."""
    t0 = time.time()
    proc = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
        raise RuntimeError(f"{argv} did not quit within {timeout_s} s: {err[-2000:]}") from None
    t_exit = time.time()
    events = {}
    for line in out.splitlines():
        if line.startswith("{"):
            e = json.loads(line)
            events[e["event"]] = e
    if proc.returncode != 0 or "first_paint" not in events:
        raise RuntimeError(f"{argv} failed (exit {proc.returncode}): {out[-1000:]} {err[-2000:]}")
    run = {"first_paint_s": round(events["first_paint"]["t"] - t0, 4),
           "heavy_modules": events["first_paint"]["heavy_modules"], "exit_s": round(t_exit - t0, 4)}
    if "ready" in events:
        run["ready_s"] = round(events["ready"]["t"] - t0, 4)
        run["attached"] = events["ready"]["attached"]
    return run


def summary_s(values: list[float]) -> dict:
    s = c.summary_ms(values)
    return {"n": s["n"], "p50_s": round(s["p50"] / 1000, 3), "mean_s": round(s["mean"] / 1000, 3),
            "max_s": round(s["max"] / 1000, 3), "min_s": round(min(values), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="timed launches of each (app and baseline)")
    ap.add_argument("--warmup", type=int, default=1, help="untimed launches of each first (file cache)")
    ap.add_argument("--command", default="app", choices=["app", "bare"],
                    help="'app': python -m app app; 'bare': python -m app (what the kelvin command does)")
    args = ap.parse_args()

    doc = {"benchmark": "ui_startup", "machine": c.machine_info(), "target_first_paint_s": TARGET_S,
           "runs": args.runs, "warmup": args.warmup}
    app_argv = [sys.executable, "-m", "app"] + (["app"] if args.command == "app" else [])
    base_argv = [sys.executable, "-c", BASELINE]
    doc["app_command"] = "python -m app" + (" app" if args.command == "app" else "")
    folder = Path(tempfile.mkdtemp(prefix="kelvin-bench-startup-"))
    try:
        env = environment(folder)
        doc["env"] = {k: env[k] for k in sorted(env) if k.startswith(("KELVIN_", "QT_"))}
        doc["env"]["KELVIN_DATA_DIR"] = doc["env"]["KELVIN_CONFIG_DIR"] = "<temp>"
        for i in range(args.warmup):
            c.log(f"warm-up {i + 1}/{args.warmup} …")
            launch(app_argv, env)
            launch(base_argv, env)
        app_runs, base_runs = [], []
        for i in range(args.runs):  # alternated, so drift on a shared machine hits both alike
            app_runs.append(launch(app_argv, env))
            base_runs.append(launch(base_argv, env))
            c.log(f"run {i + 1}/{args.runs}: app {app_runs[-1]['first_paint_s']:.3f} s "
                  f"(ready {app_runs[-1].get('ready_s', float('nan')):.3f} s), "
                  f"baseline {base_runs[-1]['first_paint_s']:.3f} s; heavy before paint: {app_runs[-1]['heavy_modules']}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)

    app_paint = summary_s([r["first_paint_s"] for r in app_runs])
    base_paint = summary_s([r["first_paint_s"] for r in base_runs])
    heavy = sorted({m for r in app_runs for m in r["heavy_modules"]})
    doc["app"] = {"first_paint": app_paint, "ready": summary_s([r["ready_s"] for r in app_runs if "ready_s" in r]),
                  "exit": summary_s([r["exit_s"] for r in app_runs]),
                  "services_attached_every_run": all(r.get("attached") for r in app_runs),
                  "heavy_modules_before_first_paint": heavy, "runs": app_runs}
    doc["baseline"] = {"what": "python -c: QApplication + an empty QMainWindow (560x820) shown, same platform, "
                               "same first-paint detection (app.ui.first_paint.FirstPaint)",
                       "first_paint": base_paint, "runs": base_runs}
    doc["ratio_app_to_baseline"] = {"p50": round(app_paint["p50_s"] / base_paint["p50_s"], 2),
                                    "max": round(app_paint["max_s"] / base_paint["max_s"], 2)}
    doc["target_met"] = {"p50_under_target": app_paint["p50_s"] < TARGET_S, "max_under_target": app_paint["max_s"] < TARGET_S,
                         "no_heavy_module_before_paint": not heavy}
    c.log(f"first paint: app p50 {app_paint['p50_s']:.3f} s / max {app_paint['max_s']:.3f} s; baseline p50 "
          f"{base_paint['p50_s']:.3f} s / max {base_paint['max_s']:.3f} s; ratio {doc['ratio_app_to_baseline']}; "
          f"heavy before paint: {heavy or 'none'}")
    c.emit(doc)


if __name__ == "__main__":
    main()

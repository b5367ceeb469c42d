"""Several Kelvin processes on one project (issue 32), three measurements in one run:

1. **Blender's save with Keep in sync on vs off** — a real bpy session with the add-on installed from
   `kelvin scene addon`'s zip: `save_as_mainfile` timed ``--saves`` times with sync off, then with it
   on (each send goes on in the background; the next save waits for it, so they do not pile up);
   the send's own time is reported beside it.
2. **The lock under concurrent writers** — ``--writers`` processes each commit ``--commits`` messages
   one at a time into the same project (MemoryService, as the CLI and the window write), against one
   process committing as many alone: per-commit time, the time spent waiting for another process's
   write (``ProjectStore.lock_waited_s``), and that every message landed exactly once.
3. **The window catching up** — a real MainWindow (offscreen) on the project while `kelvin settings
   set` runs ``--settings`` times in another process: time from the write (its journal time) to the
   window's Settings table showing the value.
4. With ``--baseline-root DIR`` (a checkout from before the lock per write): one process committing
   ``--commits`` messages one at a time, this checkout against that one, alternated, ``--rounds`` times
   — what taking the lock and catching up costs a write when no one else writes.

    KELVIN_BLENDER_PYTHON=.venv-blender/bin/python .venv/bin/python bench/shared_project.py [--saves 10]
        [--writers 4] [--commits 50] [--settings 10] [--baseline-root /path/to/older/checkout --rounds 3]

Prints one JSON document (progress on stderr)."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import ROOT, emit, log, machine_info

SAVES = """
import bpy, json, sys, time
bpy.ops.wm.open_mainfile(filepath={blend!r})
bpy.ops.preferences.addon_install(filepath={zipped!r}, overwrite=True)
bpy.ops.preferences.addon_enable(module="kelvin_sync")
addon = sys.modules["kelvin_sync"]
prefs = bpy.context.preferences.addons["kelvin_sync"].preferences
prefs.project = "Bench"
out = {{"off": [], "on": [], "send": [], "states": []}}
for sync in (False, True):
    prefs.keep_in_sync = sync
    for n in range({saves}):
        bpy.context.scene.cycles.samples = 100 + n
        t = time.perf_counter()
        bpy.ops.wm.save_as_mainfile(filepath={saved!r})
        out["on" if sync else "off"].append(time.perf_counter() - t)
        if sync:
            addon.SENDER.done.wait(300)
            out["send"].append(time.perf_counter() - t)
            out["states"].append(addon.SENDER.status.state)
print("RESULT " + json.dumps(out))
"""

WRITER = """
import json, sys, time
from app.config import load
from app.services.memory import MemoryService
svc = MemoryService(load({{"data_dir": {data!r}, "embedder": "none", "project": "Bench"}}))
store = svc.store("Bench")
times, waits = [], []
for i in range({commits}):
    t = time.perf_counter()
    svc.commit(f"writer {who} note {{i}}: Octane GI clamp {{i % 20}}", project="Bench", message_id=f"w{who}-{{i:04d}}")[1].result()
    times.append(time.perf_counter() - t)
    waits.append(store.lock_waited_s)
svc.close()
print("RESULT " + json.dumps({{"times": times, "waits": waits}}))
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * (len(xs) - 1) + 0.5))] if xs else 0.0


def summary(xs: list[float], unit: float = 1000.0) -> dict:
    return {"n": len(xs), "p50": round(pct(xs, 0.5) * unit, 2), "p95": round(pct(xs, 0.95) * unit, 2),
            "max": round(max(xs, default=0) * unit, 2)}


def result(proc: subprocess.CompletedProcess) -> dict:
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT ")), None)
    if line is None:
        raise SystemExit(f"no result: {proc.stdout[-2000:]} {proc.stderr[-2000:]}")
    return json.loads(line[7:])


def saves(tmp: Path, env: dict, n: int) -> dict:
    blender = os.environ.get("KELVIN_BLENDER_PYTHON") or str(ROOT / ".venv-blender" / "bin" / "python")
    if not Path(blender).exists():
        return {"skipped": "no Blender Python (KELVIN_BLENDER_PYTHON)"}
    blend, zipped = tmp / "forest.blend", tmp / "kelvin_sync.zip"
    subprocess.run([blender, str(ROOT / "tests" / "support" / "blend_scene.py"), str(blend)], check=True,
                   capture_output=True, cwd=ROOT)
    subprocess.run([sys.executable, "-m", "app", "project", "create", "Bench"], check=True, env=env, cwd=ROOT,
                   capture_output=True)
    subprocess.run([sys.executable, "-m", "app", "scene", "addon", "--out", str(zipped)], check=True, env=env,
                   cwd=ROOT, capture_output=True)
    script = tmp / "saves.py"
    script.write_text(SAVES.format(blend=str(blend), zipped=str(zipped), saved=str(tmp / "saved.blend"), saves=n),
                      encoding="utf-8")
    log(f"blender: {n} saves with sync off, {n} with sync on")
    got = result(subprocess.run([blender, str(script)], capture_output=True, text=True, cwd=tmp, timeout=1800,
                                env={**env, "BLENDER_USER_RESOURCES": str(tmp / "blender-user")}))
    return {"save_sync_off_ms": summary(got["off"]), "save_sync_on_ms": summary(got["on"]),
            "ratio_on_off_p50": round(pct(got["on"], 0.5) / max(pct(got["off"], 0.5), 1e-9), 2),
            "send_in_background_ms": summary(got["send"]), "sends": got["states"]}


def writers(tmp: Path, env: dict, k: int, commits: int) -> dict:
    out = {}
    for label, procs in (("alone", 1), ("concurrent", k)):
        data = tmp / f"writers-{label}"
        per = commits * k // procs  # the same number of commits in all
        scripts = [WRITER.format(data=str(data), commits=per, who=f"{label}{i}") for i in range(procs)]
        log(f"lock: {procs} process(es) x {per} commits")
        t = time.perf_counter()
        running = [subprocess.Popen([sys.executable, "-c", s], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True) for s in scripts]
        got = []
        for p in running:
            stdout, stderr = p.communicate(timeout=1800)
            got.append(result(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)))
        wall = time.perf_counter() - t
        from app.memory.journal import Journal

        events = [e for e in Journal(data / "bench" / "journal").read() if e.op == "message.add"]
        ids = [e.data["id"] for e in events]
        times = [x for g in got for x in g["times"]]
        waits = [x for g in got for x in g["waits"]]
        later = [x for g in got for x in g["waits"][1:]]  # each process's first write also opens the project
        out[label] = {"processes": procs, "commits": len(times), "wall_s": round(wall, 2),
                      "commits_per_s": round(len(times) / wall, 1), "commit_ms": summary(times),
                      "lock_wait_ms": summary(waits), "lock_wait_after_first_write_ms": summary(later),
                      "first_write_ms": summary([g["times"][0] for g in got]),
                      "journaled": len(ids), "distinct": len(set(ids))}
    out["ratio_commit_p50"] = round(out["concurrent"]["commit_ms"]["p50"] / max(out["alone"]["commit_ms"]["p50"], 1e-9), 2)
    return out


ALONE = """
import json, sys, time
sys.path.insert(0, {root!r})
from app.config import load
from app.services.memory import MemoryService
svc = MemoryService(load({{"data_dir": {data!r}, "embedder": "none"}}))
svc.commit("warm-up")[1].result()
times = []
for i in range({commits}):
    t = time.perf_counter()
    svc.commit(f"note {{i}}: Redshift unified samples {{i % 64}}")[1].result()
    times.append(time.perf_counter() - t)
svc.close()
print("RESULT " + json.dumps(times))
"""


def against(tmp: Path, env: dict, baseline: Path, commits: int, rounds: int) -> dict:
    times: dict[str, list[float]] = {"this": [], "baseline": []}
    for r in range(rounds):
        for label, root in (("this", ROOT), ("baseline", baseline)):
            log(f"one writer, {label} ({root}), round {r + 1}")
            script = ALONE.format(root=str(root), data=str(tmp / f"alone-{label}-{r}"), commits=commits)
            times[label] += result(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                                                  cwd=root, env={**env, "PYTHONPATH": str(root)}, timeout=1800))
    return {"this_commit_ms": summary(times["this"]), "baseline_commit_ms": summary(times["baseline"]),
            "ratio_p50": round(pct(times["this"], 0.5) / max(pct(times["baseline"], 0.5), 1e-9), 2),
            "baseline_root": str(baseline)}


def window(tmp: Path, env: dict, n: int) -> dict:
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    os.environ.update({k: v for k, v in env.items() if k.startswith("KELVIN_")})
    from PySide6.QtCore import QSettings
    from PySide6.QtWidgets import QApplication

    from app.config import load
    from app.ui.app import build_services
    from app.ui.main_window import MainWindow

    from tests.support.ollama_server import OllamaTestServer

    app = QApplication.instance() or QApplication([])
    subprocess.run([sys.executable, "-m", "app", "project", "create", "Window"], check=True, env=env, cwd=ROOT,
                   capture_output=True)
    server = OllamaTestServer().__enter__()  # a model server answers: the window opens on its views, not Setup
    settings = load({"project": "Window", "ollama_host": server.host})
    w = MainWindow(settings, QSettings(str(tmp / "window.ini"), QSettings.Format.IniFormat))
    w.show()
    w.attach(build_services(settings, gpu=False))
    w.tabs.setCurrentIndex(w.views.indexOf(w.memory))
    w.memory.pages.setCurrentIndex(1)

    def wait(cond, timeout: float = 30.0) -> float:
        t = time.perf_counter()
        while not cond():
            app.processEvents()
            time.sleep(0.005)
            if time.perf_counter() - t > timeout:
                raise SystemExit("the window did not catch up")
        return time.perf_counter() - t

    wait(lambda: not w.chat.composer.isReadOnly())
    from app.memory.journal import Journal

    journal = Journal(w.services.memory.store("Window").journal.folder)
    lat, after_exit, cli = [], [], []
    for i in range(n):
        value = 10 + i
        t = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "app", "--project", "Window", "settings", "set", "gi clamp",
                                 str(value), "--engine", "octane"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        shown = lambda: any(c.entry.parameter == "gi_clamp" and c.entry.value == value  # noqa: E731
                            for c in w.memory.settings.current.rows)
        wait(lambda: shown() or proc.poll() is not None, 120)
        exited = proc.poll() is not None
        wait(shown)
        seen_ms = time.time() * 1000
        wait(lambda: proc.poll() is not None, 120)
        cli.append(time.perf_counter() - t)
        written = [e for e in journal.read() if e.op == "setting.set" and e.data.get("value") == value][-1]
        lat.append((seen_ms - written.at) / 1000)  # from the write (its journal time) to the window showing it
        if exited:
            after_exit.append(0.0)
    w.close()
    server.__exit__(None, None, None)
    return {"settings_set_cli_ms": summary(cli), "shown_after_write_ms": summary(lat),
            "shown_only_after_the_process_ended": len(after_exit)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--saves", type=int, default=10)
    ap.add_argument("--writers", type=int, default=4)
    ap.add_argument("--commits", type=int, default=50)
    ap.add_argument("--settings", type=int, default=10)
    ap.add_argument("--baseline-root", type=Path, help="an older checkout to compare one writer's commits with")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="kelvin-bench-shared-") as tmp_:
        tmp = Path(tmp_)
        env = {**os.environ, "KELVIN_DATA_DIR": str(tmp / "data"), "KELVIN_CONFIG_DIR": str(tmp / "cfg"),
               "KELVIN_EMBEDDER": "none", "KELVIN_OLLAMA_HOST": "http://127.0.0.1:9"}
        doc = {"bench": "shared_project", "machine": machine_info(),
               "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()}}
        doc["blender_save"] = saves(tmp, env, args.saves)
        doc["lock"] = writers(tmp, env, args.writers, args.commits)
        if args.baseline_root:
            doc["one_writer"] = against(tmp, env, args.baseline_root.resolve(), args.commits, args.rounds)
        doc["window"] = window(tmp, env, args.settings)
    emit(doc)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The installable bundle (issue 8): its size on disk and packed, what takes the room, and how fast it
starts compared with Kelvin run from source and with a bare PySide6 window, in the same run.

Needs a built bundle: ``python installer/build.py --tarball`` (or pass ``--build`` to build it here,
which also records the build time). Start-up is measured like ``bench/ui_startup.py`` (which this
reuses): each launch is a fresh process on the offscreen platform with a throw-away data and config
folder, Ollama on a closed port, embedder ``none``, VRAM guard off, ``KELVIN_FIRST_PAINT_EXIT=1``;
seconds from just before ``Popen`` to the first paint the app reports, and to its services being up.
The three launchers are alternated so drift on a shared machine hits them alike. The self-test is
timed too (bundle and source), since install.sh runs it after every install.

    python bench/bundle.py > bench/results/bundle.json
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import common as c  # noqa: E402
import ui_startup  # noqa: E402

PARTS = {  # where the bundle's bytes go, by the first path under _internal/ that names them
    "lancedb": ("lancedb",), "pyarrow": ("pyarrow",), "Qt (PySide6, shiboken6)": ("PySide6", "shiboken6"),
    "numpy": ("numpy", "numpy.libs"), "Python (interpreter, stdlib)": ("libpython", "python3", "base_library.zip", "lib-dynload"),
}


def breakdown(bundle: Path) -> dict:
    sizes: dict[str, int] = {name: 0 for name in PARTS}
    sizes["other"] = 0
    internal = bundle / "_internal"
    for p in bundle.rglob("*"):
        if not p.is_file() or p.is_symlink():
            continue
        first = p.relative_to(internal).parts[0] if internal in p.parents else p.name
        part = next((name for name, prefixes in PARTS.items() if first.startswith(prefixes)), "other")
        sizes[part] += p.stat().st_size
    return dict(sorted(((k, round(v / 2**20, 1)) for k, v in sizes.items()), key=lambda kv: -kv[1]))


def timed(argv: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    result = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    if result.returncode != 0:
        raise RuntimeError(f"{argv} failed: {result.stdout[-1500:]} {result.stderr[-1500:]}")
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bundle", type=Path, default=ROOT / "dist" / "Kelvin", help="the built folder app")
    ap.add_argument("--build", action="store_true", help="build it first (installer/build.py --tarball)")
    ap.add_argument("--runs", type=int, default=10, help="timed launches of each")
    ap.add_argument("--self-test-runs", type=int, default=3)
    args = ap.parse_args()
    doc: dict = {"benchmark": "bundle", "machine": c.machine_info(), "runs": args.runs}
    if args.build:
        c.log("building the bundle …")
        out = subprocess.run([sys.executable, str(ROOT / "installer" / "build.py"), "--tarball"], cwd=ROOT,
                             capture_output=True, text=True, check=True)
        doc["build"] = json.loads(out.stdout.strip().splitlines()[-1])
    exe = args.bundle / ("kelvin-cli.exe" if sys.platform == "win32" else "kelvin")
    if not exe.is_file():
        sys.exit(f"bench: no bundle at {args.bundle}; run python installer/build.py --tarball (or pass --build)")
    real = [p for p in args.bundle.rglob("*") if p.is_file() and not p.is_symlink()]  # links point inside it
    size = sum(p.stat().st_size for p in real)
    doc["bundle"] = {"path": str(args.bundle), "mib": round(size / 2**20, 1), "files": len(real),
                     "by_part_mib": breakdown(args.bundle)}
    tarballs = sorted((args.bundle.parent).glob("kelvin-*-linux-*.tar.gz"))
    if tarballs:
        doc["tarball"] = {"path": str(tarballs[-1]), "mib": round(tarballs[-1].stat().st_size / 2**20, 1)}

    launchers = {"bundle": [str(exe), "app"], "source": [sys.executable, "-m", "app", "app"],
                 "baseline": [sys.executable, "-c", ui_startup.BASELINE]}
    folder = Path(tempfile.mkdtemp(prefix="kelvin-bench-bundle-"))
    try:
        env = ui_startup.environment(folder)
        for argv in launchers.values():  # warm the file cache
            ui_startup.launch(argv, env)
        runs: dict[str, list[dict]] = {name: [] for name in launchers}
        for i in range(args.runs):
            for name, argv in launchers.items():
                runs[name].append(ui_startup.launch(argv, env))
            c.log(f"run {i + 1}/{args.runs}: " + ", ".join(f"{n} {r[-1]['first_paint_s']:.3f} s" for n, r in runs.items()))
        test_env = {k: v for k, v in env.items() if k != "KELVIN_FIRST_PAINT_EXIT"}
        self_tests = {"bundle": [], "source": []}
        for _ in range(args.self_test_runs):
            self_tests["bundle"].append(timed([str(exe), "--self-test"], test_env))
            self_tests["source"].append(timed([sys.executable, "-m", "app", "--self-test"], test_env))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    doc["first_paint"] = {n: ui_startup.summary_s([r["first_paint_s"] for r in rs]) for n, rs in runs.items()}
    doc["ready"] = {n: ui_startup.summary_s([r["ready_s"] for r in rs if "ready_s" in r])
                    for n, rs in runs.items() if n != "baseline"}
    doc["heavy_modules_before_first_paint"] = {n: sorted({m for r in rs for m in r["heavy_modules"]})
                                               for n, rs in runs.items() if n != "baseline"}
    p50 = {n: s["p50_s"] for n, s in doc["first_paint"].items()}
    doc["ratios_p50"] = {"bundle_to_source_first_paint": round(p50["bundle"] / p50["source"], 2),
                         "bundle_to_baseline_first_paint": round(p50["bundle"] / p50["baseline"], 2),
                         "bundle_to_source_ready": round(doc["ready"]["bundle"]["p50_s"] / doc["ready"]["source"]["p50_s"], 2)}
    doc["self_test_s"] = {n: ui_startup.summary_s(v) for n, v in self_tests.items()}
    c.log(f"bundle {doc['bundle']['mib']} MiB; first paint p50 {p50}; ratios {doc['ratios_p50']}")
    c.emit(doc)


if __name__ == "__main__":
    main()

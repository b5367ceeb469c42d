"""How long `kelvin scene import FILE.blend` takes, against `kelvin settings list` in the same run
(the CLI's own start-up), on a scene built with real Blender (tests/support/blend_scene.py).

    KELVIN_BLENDER_PYTHON=.venv-blender/bin/python .venv/bin/python bench/scene_import.py [--runs 5] [--lights 0]

Prints JSON: seconds per command (p50 / max), the ratio, and the Blender process's peak memory."""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], env: dict) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True, env=env, cwd=ROOT)
    return time.perf_counter() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--lights", type=int, default=0, help="extra point lights in the scene")
    args = ap.parse_args()
    blender = os.environ.get("KELVIN_BLENDER_PYTHON") or str(ROOT / ".venv-blender" / "bin" / "python")
    with tempfile.TemporaryDirectory() as tmp:
        blend = Path(tmp) / "bench.blend"
        subprocess.run([blender, str(ROOT / "tests" / "support" / "blend_scene.py"), str(blend), "--lights",
                        str(args.lights)], check=True, capture_output=True)
        env = {**os.environ, "KELVIN_DATA_DIR": str(Path(tmp) / "data"), "KELVIN_CONFIG_DIR": str(Path(tmp) / "cfg"),
               "KELVIN_EMBEDDER": "none", "KELVIN_BLENDER_PYTHON": blender}
        kelvin = [sys.executable, "-m", "app"]
        subprocess.run(kelvin + ["project", "create", "Bench"], check=True, capture_output=True, env=env, cwd=ROOT)
        base, scene = [], []
        for _ in range(args.runs):  # alternating, so that load drifts hit both alike
            base.append(timed(kelvin + ["--project", "Bench", "settings", "list"], env))
            scene.append(timed(kelvin + ["--project", "Bench", "scene", "import", str(blend)], env))
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    out = {"benchmark": "scene_import", "machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                                                    "system": platform.platform()},
           "runs": args.runs, "lights": args.lights + 2,
           "settings_list_s": {"p50": round(statistics.median(base), 3), "max": round(max(base), 3)},
           "scene_import_s": {"p50": round(statistics.median(scene), 3), "max": round(max(scene), 3)},
           "ratio_p50": round(statistics.median(scene) / statistics.median(base), 2),
           "largest_child_peak_mb": round(peak_kb / 1024)}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

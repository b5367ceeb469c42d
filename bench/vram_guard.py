"""The VRAM guard (issue 5): how fast it gets out of a render's way, whether it flaps, what
sampling costs.

* **reaction, trace time** — each shipped trace (``tests/traces``) replayed through the real guard
  and its actions against the Ollama-protocol test server: trace time from the first sample of the
  render (``cross_t`` in ``expected.json``) to the unload;
* **reaction, wall clock** — the guard on its own thread at the default interval (500 ms), fed the
  Octane trace by a trace source at that pace, with the test server in another process: time from
  the sampler taking the render's first sample to the unload request arriving at the server, and
  the worst case (plus one interval: the render may start just after a sample);
* **flapping** — unload and resume actions over the Redshift frame sequence with breathing;
* **sampler cost** — CPU time of this process while the guard samples for a while at the default
  interval (trace source, policy, Ollama ``ps`` every 2 s), against the same process idle for as
  long (the baseline). NVML's own calls are not in it (no NVIDIA GPU on this machine); with a GPU,
  ``--nvml`` times them too.

    python bench/vram_guard.py > bench/results/vram_guard.json
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import common as c  # noqa: E402

from app.core.vram import Sample  # noqa: E402
from app.gpu.nvml import NvmlSampler  # noqa: E402
from app.gpu.trace import TraceSource, read_trace  # noqa: E402
from app.llm.backend import OllamaBackend  # noqa: E402
from app.services.gpu_guard import GpuGuard, replay  # noqa: E402
from app.config import load  # noqa: E402

TRACES = ROOT / "tests" / "traces"
EXPECTED = json.loads((TRACES / "expected.json").read_text(encoding="utf-8"))
KELVIN = ("llama3.1:8b", "nomic-embed-text")


def start_server() -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "tests.support.ollama_server", "--port", "0", "--delay", "0"],
                            cwd=ROOT, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()  # "fake Ollama … on http://127.0.0.1:PORT with …"
    host = line.split(" on ", 1)[1].split(" ", 1)[0]
    return proc, host


def load_models(host: str) -> None:
    with OllamaBackend(host) as b:
        for m in KELVIN:
            b.preload(m)


def settings_for(host: str, **more):
    return load({"ollama_host": host, "embedder": f"ollama:{KELVIN[1]}", "data_dir": "/nonexistent", **more})


def trace_reactions(host: str) -> dict:
    out = {}
    for name, want in sorted(EXPECTED.items()):
        load_models(host)
        guard = GpuGuard(settings_for(host), source=None, synchronous=True)
        events = replay(guard, read_trace(TRACES / name))
        guard.stop()
        unloads = [e for e in events if e.action == "unload"]
        resumes = [e for e in events if e.action == "resume"]
        out[name] = {"transitions_as_expected": [[e.from_state, e.to_state, e.action] for e in events]
                     == want["transitions"],
                     "unload_actions": len(unloads), "resume_actions": len(resumes),
                     "reaction_trace_s": round(unloads[0].t - want["cross_t"], 3) if unloads else None}
    return out


def wall_reactions(host: str, runs: int) -> dict:
    """The threaded guard at 500 ms: the render's first sample taken → the unload at the server."""
    samples = [s for s in read_trace(TRACES / "octane_render_start.jsonl") if s.t <= 13.0]
    cross = EXPECTED["octane_render_start.jsonl"]["cross_t"]
    got = []
    for _ in range(runs):
        load_models(host)
        taken = {}
        guard = GpuGuard(settings_for(host), TraceSource(samples))
        guard.on_sample.append(lambda s: taken.setdefault(s.t, time.monotonic()))
        unload_at = {}

        def on_event(e, unload_at=unload_at):
            if e.action == "unload":
                unload_at.setdefault("decided", time.monotonic())

        guard.on_event.append(on_event)
        with OllamaBackend(host) as b:
            guard.start()
            deadline = time.monotonic() + 30
            while b.ps() and time.monotonic() < deadline:  # until the server has dropped the models
                time.sleep(0.002)
            arrived = time.monotonic()
        guard.stop()
        # the server's own arrival time is in the other process: the client saw the models gone
        # at `arrived` (a ps poll every 2 ms), an upper bound on the unload's arrival
        got.append({"decide_ms": (unload_at["decided"] - taken[cross]) * 1000,
                    "models_gone_ms": (arrived - taken[cross]) * 1000})
    decide = sorted(g["decide_ms"] for g in got)
    gone = sorted(g["models_gone_ms"] for g in got)
    interval_ms = settings_for(host).gpu_interval_ms
    return {"runs": runs, "interval_ms": interval_ms,
            "sample_to_decision_ms": {"p50": round(statistics.median(decide), 2), "max": round(decide[-1], 2)},
            "sample_to_models_unloaded_ms": {"p50": round(statistics.median(gone), 2), "max": round(gone[-1], 2)},
            "worst_case_render_start_to_unload_ms": round(interval_ms + gone[-1], 1)}


def cpu_cost(host: str, seconds: float, use_nvml: bool) -> dict:
    def cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    t0, c0 = time.monotonic(), cpu()
    time.sleep(seconds)
    idle = (cpu() - c0) / (time.monotonic() - t0)
    calm = [Sample(i * 0.5, s.gpus, s.processes) for i, s in enumerate(read_trace(TRACES / "viewport_spike_and_game.jsonl"))]
    source = NvmlSampler() if use_nvml else TraceSource(calm)
    load_models(host)
    guard = GpuGuard(settings_for(host), source)
    t0, c0 = time.monotonic(), cpu()
    guard.start()
    time.sleep(seconds)
    used = (cpu() - c0) / (time.monotonic() - t0)
    n = len(guard.samples)
    guard.stop()
    return {"seconds": seconds, "samples": n, "source": "nvml" if use_nvml else "trace",
            "idle_process_core_pct": round(idle * 100, 3), "guard_core_pct": round(used * 100, 3),
            "guard_minus_idle_core_pct": round((used - idle) * 100, 3),
            "cpu_ms_per_sample": round((used - idle) * seconds * 1000 / max(1, n), 3)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10, help="wall-clock reaction runs")
    ap.add_argument("--seconds", type=float, default=60, help="how long to measure the sampler's CPU")
    ap.add_argument("--nvml", action="store_true", help="measure the sampler on the real NVML (needs a GPU)")
    args = ap.parse_args()
    server, host = start_server()
    try:
        c.log("replaying the shipped traces …")
        traces = trace_reactions(host)
        c.log("reaction on the wall clock …")
        wall = wall_reactions(host, args.runs)
        c.log(f"sampler CPU over {args.seconds:g} s …")
        cost = cpu_cost(host, args.seconds, args.nvml)
    finally:
        server.terminate()
        server.wait()
    c.emit({"benchmark": "vram_guard", "machine": c.machine_info(), "traces": traces, "reaction_wall": wall,
            "sampler_cpu": cost, "targets": {"reaction_s": 1.0, "sampler_core_pct": 1.0, "flapping": "none"}})


if __name__ == "__main__":
    main()

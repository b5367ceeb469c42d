"""``kelvin gpu status | watch | record | replay``: the VRAM guard from the terminal."""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from app.core.vram import RECOVERING, YIELDING, Sample, VramPolicy, mb_text
from app.gpu.nvml import NvmlSampler
from app.gpu.trace import TraceError, read_trace, write_sample
from app.llm.errors import ModelServerUnavailable
from app.llm.servers import connect
from app.services.gpu_guard import GpuGuard, GuardEvent, config_from, replay

EXIT_OK, EXIT_ERROR = 0, 1


def _line(s: Sample) -> str:
    if not s.gpus:
        return f"{s.t:8.1f}s  no GPU: {s.error or 'nothing answers'}"
    gpus = "  ".join(f"GPU{g.index} {mb_text(g.used_mb)}/{mb_text(g.total_mb)} used, {mb_text(g.free_mb)} free"
                     + (f", {g.util}% busy" if g.util is not None else "") for g in s.gpus)
    procs = ", ".join(f"{p.name} {mb_text(p.used_mb) if p.used_mb is not None else '?'}" for p in s.processes)
    return f"{s.t:8.1f}s  {gpus}" + (f"  [{procs}]" if procs else "")


def _event(e: GuardEvent) -> str:
    return f"{e.t:8.1f}s  {e.from_state} → {e.to_state}: {e.reason}" + (f"  ({e.action})" if e.action != "none" else "")


def status(settings, as_json: bool) -> int:
    sampler = NvmlSampler()
    s = sampler.sample()
    sampler.close()
    policy = VramPolicy(config_from(settings))
    models, ollama, cannot, label = [], "", "", "the model server"
    backend = connect(settings, timeout_s=3.0)
    try:
        label = backend.label if backend.kind == "ollama" else label
        models = [{"name": m.name, "size_mb": m.size // 2**20, "vram_mb": m.size_vram // 2**20} for m in backend.ps()]
        policy.set_kelvin_vram(sum(m["vram_mb"] for m in models))
        label, cannot = backend.label, backend.unload_problem()
    except ModelServerUnavailable as exc:
        ollama = str(exc)
    finally:
        backend.close()
    policy.observe(s)
    would = policy.pressure.reason
    doc = {"available": bool(s.gpus), "problem": s.error, "guard": "on" if settings.vram_guard and s.gpus else "off",
           "state": policy.state if s.gpus else "off", "pressure": would, "reserve_mb": policy.reserve_mb,
           "sample": s.to_json(), "ollama_models": models, "ollama_problem": ollama, "model_server": label,
           "unload_problem": cannot}
    if as_json:
        print(json.dumps(doc, indent=1))
        return EXIT_OK
    if not s.gpus:
        print(f"No NVIDIA GPU to watch: {s.error}. The VRAM guard stays off; everything else works.")
    else:
        for g in s.gpus:
            print(f"GPU {g.index}{' ' + g.name if g.name else ''}: {mb_text(g.used_mb)} of {mb_text(g.total_mb)} used, "
                  f"{mb_text(g.free_mb)} free" + (f", {g.util}% busy" if g.util is not None else ""))
        for p in s.processes:
            print(f"  {p.name} (pid {p.pid}): {mb_text(p.used_mb) if p.used_mb is not None else 'not reported'}")
        print(f"Guard: {'on' if settings.vram_guard else 'off (vram_guard = false)'}; keeps "
              f"{mb_text(policy.reserve_mb)} free for others; "
              + (f"would leave the GPU now: {would}" if would else "no pressure now"))
    if ollama:
        print(f"Kelvin's models: unknown ({ollama})")
    else:
        print(f"Models loaded in {label}: " + (", ".join(f"{m['name']} ({mb_text(m['vram_mb'])} on the GPU)"
                                                           if m["vram_mb"] else m["name"] for m in models) or "none"))
        if cannot:
            print(f"The guard cannot free them: {cannot}.")
    return EXIT_OK


def watch(settings, seconds: float) -> int:
    """Live samples and the guard's decisions; only watching: nothing is unloaded."""
    sampler = NvmlSampler()
    policy = VramPolicy(config_from(settings))
    first = sampler.sample()
    if not first.gpus:
        print(f"No NVIDIA GPU to watch: {first.error}.")
        return EXIT_OK
    print("Watching the GPU (Ctrl+C to stop). Only watching: nothing is unloaded here; a running Kelvin acts.")
    end = time.monotonic() + seconds if seconds else None
    interval = settings.gpu_interval_ms / 1000
    try:
        s = first
        while True:
            print(_line(s), flush=True)
            for tr in policy.observe(s):
                print(f"{tr.t:8.1f}s  {tr.from_state} → {tr.to_state}: {tr.reason}", flush=True)
                if tr.to_state in (YIELDING, RECOVERING):
                    policy.done(s.t, True, "watch only: no action taken")
            if end is not None and time.monotonic() >= end:
                return EXIT_OK
            time.sleep(interval)
            s = sampler.sample()
    except KeyboardInterrupt:
        return EXIT_OK
    finally:
        sampler.close()


def record(settings, path: Path, seconds: float) -> int:
    sampler = NvmlSampler()
    first = sampler.sample()
    if not first.gpus:
        sys.stderr.write(f"kelvin: nothing to record: {first.error}\n")
        return EXIT_ERROR
    interval = settings.gpu_interval_ms / 1000
    n = 0
    end = time.monotonic() + seconds if seconds else None
    sys.stderr.write(f"recording to {path} every {interval:g} s" + (f" for {seconds:g} s" if seconds else
                                                                     " (Ctrl+C to stop)") + "\n")
    try:
        with path.open("w", encoding="utf-8") as f:
            s = first
            while True:
                write_sample(f, s)
                n += 1
                if end is not None and time.monotonic() >= end:
                    break
                time.sleep(interval)
                s = sampler.sample()
    except KeyboardInterrupt:
        pass
    finally:
        sampler.close()
    sys.stderr.write(f"{n} samples in {path}\n")
    return EXIT_OK


def replay_trace(settings, path: Path, as_json: bool, realtime: bool) -> int:
    """The real policy and the real actions (unload through the configured model server), on the
    trace's clock."""
    try:
        samples = read_trace(path)
    except TraceError as exc:
        sys.stderr.write(f"kelvin: {exc}\n")
        return EXIT_ERROR
    guard = GpuGuard(settings, source=None, synchronous=True)
    sys.stderr.write(f"kelvin: replaying {path.name} with the real guard: where the trace calls for it, Kelvin's "
                     f"own models ({', '.join(guard.models())}) are really unloaded from {settings.model_host}\n")

    def show(e: GuardEvent) -> None:
        print(json.dumps(e.to_json()) if as_json else _event(e), flush=True)

    try:
        events = replay(guard, samples, realtime=realtime, on_event=show)
    finally:
        guard.stop()
    if not as_json:
        print(f"{len(samples)} samples, {samples[-1].t - samples[0].t:.1f} s of trace, {len(events)} events")
    return EXIT_OK



def start_guard(settings, conversation, memory) -> GpuGuard | None:
    """The guard beside ``kelvin chat``: on when there is an NVIDIA GPU (and the setting allows),
    telling the artist in the terminal when Kelvin leaves the GPU and comes back."""
    if not settings.vram_guard:
        return None
    sampler = NvmlSampler()
    first = sampler.sample()
    if not first.gpus:
        sampler.close()
        sys.stderr.write(f"(VRAM guard off: {first.error})\n")
        return None

    def tell(title: str, text: str) -> None:
        sys.stderr.write(f"\n[{title}] {text}\n")
        sys.stderr.flush()

    return GpuGuard(settings, sampler, conversation=conversation, embedder=memory.embedder, notify=tell,
                    log_path=settings.data_path() / "gpu_events.jsonl").start()

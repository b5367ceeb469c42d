"""Writes the shipped GPU traces (JSON lines, one sample every 0.5 s) and what the guard must do
with each (expected.json). Run from the repository root: ``python tests/traces/make_traces.py``.

The traces are built from what renderers are known to do (FIELD-NOTES.md: Redshift takes ~90% of
the free VRAM at each frame start; Octane grows fast at render start; on Windows the driver
reports no per-process memory), not recorded on a real card; ``kelvin gpu record`` records real
ones. Kelvin's own models are the Ollama process (4,954 MB: llama3.1:8b + nomic-embed-text as
the test server sizes them); once the guard unloads them, about a second later, it lets go.
"""
from __future__ import annotations

import json
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
STEP = 0.5
TOTAL = 24_564  # an RTX 4090
DESKTOP = 1_150
KELVIN = 4_954


def write(name: str, samples: list[dict]) -> None:
    with (HERE / name).open("w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(s, separators=(",", ":")) + "\n")


def sample(t, used, util, procs, total=TOTAL, error=None):
    d = {"t": round(t, 2), "gpus": [] if error else [{"index": 0, "total_mb": total, "used_mb": int(used),
                                                        "util": int(util)}],
         "processes": [] if error else [{"pid": pid, "name": name, "gpu": 0, "used_mb": mb} for pid, name, mb in procs]}
    if error:
        d["error"] = error
    return d


def octane_render_start(rng):
    """Cinema 4D with the Octane plugin: a viewport session, then a final render that loads 15 GB
    in three seconds and keeps the GPU at 99% for a minute; Kelvin's model is loaded at the start."""
    out, kelvin_gone_at = [], None
    for i in range(int(120 / STEP)):
        t = i * STEP
        c4d, util = 1_600 + rng.randint(-40, 40), rng.randint(3, 25)
        if 10 <= t < 70:  # the render: grows 5 GB per half second to 16.6 GB
            c4d, util = min(16_600, 1_600 + 5_000 * (int((t - 10) / STEP) + 1)), rng.randint(96, 100)
            kelvin_gone_at = kelvin_gone_at or t + 1.0
        kelvin = 0 if kelvin_gone_at and t >= kelvin_gone_at else KELVIN
        procs = [(4242, "Cinema 4D", c4d)] + ([(777, "ollama", kelvin)] if kelvin else [])
        out.append(sample(t, DESKTOP + c4d + kelvin, util, procs))
    return out


def redshift_frames(rng):
    """redshiftCmdLine renders eight frames: at each frame start it takes ~90% of the free VRAM,
    renders 12 s at 99%, lets go between frames for 3 s."""
    out, started = [], None
    t = 0.0
    phases = [("idle", 8.0)] + [p for _ in range(8) for p in (("frame", 12.0), ("gap", 3.0))] + [("idle", 40.0)]
    for phase, length in phases:
        for _ in range(int(length / STEP)):
            if phase == "frame" and started is None:
                started = t
            kelvin = 0 if started is not None and t >= started + 1.0 else KELVIN
            free = TOTAL - DESKTOP - kelvin - 300
            rs = int(0.9 * free) if phase == "frame" else (300 if phase == "gap" else 0)
            util = rng.randint(97, 100) if phase == "frame" else rng.randint(0, 6)
            procs = ([(5150, "redshiftCmdLine", rs)] if phase != "idle" or started else []) + \
                ([(777, "ollama", kelvin)] if kelvin else [])
            out.append(sample(t, DESKTOP + rs + kelvin, util, procs))
            t += STEP
    return out


def windows_wddm(rng):
    """Windows: Houdini with Redshift, ollama.exe, and no per-process memory from the driver. The
    render takes the device from 8 to 21 GB within two seconds."""
    out, gone = [], None
    for i in range(int(100 / STEP)):
        t = i * STEP
        others, util = 1_900 + rng.randint(-50, 50), rng.randint(2, 20)
        if 15 <= t < 55:
            others, util = min(15_500, 1_900 + 3_400 * (int((t - 15) / STEP) + 1)), rng.randint(95, 100)
            gone = gone or t + 1.0
        kelvin = 0 if gone and t >= gone else KELVIN
        procs = [(9001, "houdinifx.exe", None), (8080, "explorer.exe", None)] + \
            ([(6060, "ollama.exe", None)] if kelvin else [])
        out.append(sample(t, DESKTOP + others + kelvin, util, procs))
    return out


def viewport_and_game(rng):
    """Not renders: Blender's viewport spiking to 95% for two seconds at a time, and a game that
    takes 6 GB and keeps the GPU at 99% for a minute."""
    out = []
    for i in range(int(120 / STEP)):
        t = i * STEP
        blender, util = 900, rng.randint(5, 30)
        if any(a <= t < a + 2.0 for a in (10, 25, 40, 100)):
            blender, util = 1_200, rng.randint(90, 97)
        game = 6_000 if 50 <= t < 95 else 0
        if game:
            util = max(util, rng.randint(97, 100))
        procs = [(3000, "blender", blender), (777, "ollama", KELVIN)] + ([(4100, "Cyberpunk2077.exe", game)] if game else [])
        out.append(sample(t, DESKTOP + blender + KELVIN + game, util, procs))
    return out


def gpu_disappears(rng):
    """Octane standalone starts a render (Kelvin yields), the GPU falls off the bus for six seconds
    (driver reset), comes back with the render gone."""
    out, gone = [], None
    for i in range(int(90 / STEP)):
        t = i * STEP
        if 30 <= t < 36:
            out.append(sample(t, 0, 0, [], error="GPU is lost"))
            continue
        octane = 9_000 if 10 <= t < 30 else 0
        gone = gone or (t + 1.0 if octane else None)
        kelvin = 0 if gone and t >= gone else KELVIN
        util = rng.randint(96, 100) if octane else rng.randint(0, 8)
        procs = ([(6100, "octane", octane)] if octane else []) + ([(777, "ollama", kelvin)] if kelvin else [])
        out.append(sample(t, DESKTOP + octane + kelvin, util, procs))
    return out


EXPECTED = {
    "octane_render_start.jsonl": {
        "what": "Octane render in Cinema 4D: yield at the first sample of the render, back 20 s after it ends",
        "transitions": [["normal", "yielding", "unload"], ["yielding", "yielded", "none"],
                        ["yielded", "recovering", "resume"], ["recovering", "normal", "none"]],
        "cross_t": 10.0, "unloads": 1},
    "redshift_frames_breathing.jsonl": {
        "what": "eight Redshift frames with 3 s gaps: one unload, no return until 20 s after the last frame",
        "transitions": [["normal", "yielding", "unload"], ["yielding", "yielded", "none"],
                        ["yielded", "recovering", "resume"], ["recovering", "normal", "none"]],
        "cross_t": 8.0, "unloads": 1},
    "windows_wddm_no_process_memory.jsonl": {
        "what": "Windows (no per-process memory): the device totals and Houdini's presence are enough",
        "transitions": [["normal", "yielding", "unload"], ["yielding", "yielded", "none"],
                        ["yielded", "recovering", "resume"], ["recovering", "normal", "none"]],
        "cross_t": 15.0, "unloads": 1},
    "viewport_spike_and_game.jsonl": {
        "what": "viewport spikes and a game: nothing happens",
        "transitions": [], "cross_t": None, "unloads": 0},
    "gpu_disappears.jsonl": {
        "what": "yield for an Octane render, the GPU disappears (guard off), comes back: Kelvin returns after the hold",
        "transitions": [["normal", "yielding", "unload"], ["yielding", "yielded", "none"], ["yielded", "off", "none"],
                        ["off", "yielded", "none"], ["yielded", "recovering", "resume"],
                        ["recovering", "normal", "none"]],
        "cross_t": 10.0, "unloads": 1},
}


def main() -> None:
    rng = random.Random(20261123)
    write("octane_render_start.jsonl", octane_render_start(rng))
    write("redshift_frames_breathing.jsonl", redshift_frames(rng))
    write("windows_wddm_no_process_memory.jsonl", windows_wddm(rng))
    write("viewport_spike_and_game.jsonl", viewport_and_game(rng))
    write("gpu_disappears.jsonl", gpu_disappears(rng))
    (HERE / "expected.json").write_text(json.dumps(EXPECTED, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

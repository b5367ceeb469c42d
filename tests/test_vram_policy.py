"""The VRAM guard's policy (app.core.vram): pure, so every rule is checked sample by sample."""
from __future__ import annotations

import pytest

from app.core.vram import (NORMAL, OFF, RECOVERING, RESUME, UNLOAD, YIELDED, YIELDING, GpuSample, GuardConfig,
                           ProcessSample, Sample, VramPolicy, process_key)

TOTAL = 24_000


def sample(t, used, util=5, procs=(), total=TOTAL):
    return Sample(t=t, gpus=(GpuSample(0, total, used, util),),
                  processes=tuple(ProcessSample(pid, name, 0, mb) for pid, name, mb in procs))


def run(policy, samples):
    out = []
    for s in samples:
        out += policy.observe(s)
        if policy.state in (YIELDING, RECOVERING):
            out += policy.done(s.t)
    return [(tr.from_state, tr.to_state, tr.action) for tr in out]


def test_process_names_are_compared_without_path_case_or_exe():
    assert process_key("C:\\Program Files\\Maxon\\Cinema 4D.exe") == "cinema 4d"
    assert process_key("/opt/hfs20.5/bin/hython") == "hython"


def test_a_render_start_makes_kelvin_yield_then_it_returns_after_the_hold_time():
    p = VramPolicy(GuardConfig(hold_s=10))
    p.set_kelvin_vram(4_700)
    ollama = (500, "ollama", 4_700)
    quiet = [sample(t * 0.5, 7_000, procs=[ollama]) for t in range(4)]
    render = [sample(2 + t * 0.5, 7_000 + 3_000 * (t + 1), 98, procs=[ollama, (900, "Octane.exe", 3_000 * (t + 1))])
              for t in range(4)]
    after = [sample(4 + t * 0.5, 7_000, procs=[ollama]) for t in range(30)]
    trans = run(p, quiet + render)
    assert trans == [(NORMAL, YIELDING, UNLOAD), (YIELDING, YIELDED, "none")]
    first = p.observe(sample(3.99, 19_000))  # no new transition while the render holds the memory
    assert first == []
    trans = run(p, after)
    assert trans == [(YIELDED, RECOVERING, RESUME), (RECOVERING, NORMAL, "none")]
    assert p.state == NORMAL


def test_the_yield_reason_names_the_renderer_and_the_trigger():
    p = VramPolicy()
    p.set_kelvin_vram(4_000)
    p.observe(sample(0, 6_000, procs=[(1, "ollama", 4_000)]))
    [tr] = p.observe(sample(0.5, 9_000, procs=[(1, "ollama", 4_000), (2, "Octane.exe", 3_000)]))
    assert tr.action == UNLOAD and "Octane" in tr.reason and "grew by 2.9 GB" in tr.reason


def test_low_free_vram_counts_what_kelvin_could_give_back():
    p = VramPolicy(GuardConfig(margin_mb=1_000))
    p.set_kelvin_vram(5_000)
    # 8 GB card: desktop 1 GB + Kelvin 5 GB; free for others 7 GB >= reserve 6 GB: stay
    assert p.observe(sample(0, 6_000, total=8_000)) == []
    # a game takes 2 GB more: 5 GB for others, under the 6 GB reserve: yield, no renderer needed
    [tr] = p.observe(sample(1, 8_000 - 0, total=8_000))
    assert tr.to_state == YIELDING and "only 4.9 GB free on GPU 0, under the 5.9 GB" in tr.reason


def test_breathing_between_frames_does_not_bring_kelvin_back():
    p = VramPolicy(GuardConfig(hold_s=8))
    p.set_kelvin_vram(4_000)
    rs = (77, "redshiftCmdLine", None)
    samples, t = [], 0.0
    for _frame in range(10):  # 6 s of render at 22 GB, 3 s between frames at 6 GB
        for _ in range(12):
            samples.append(sample(t, 22_000, 99, procs=[rs]))
            t += 0.5
        for _ in range(6):
            samples.append(sample(t, 6_000, 3, procs=[rs]))
            t += 0.5
    trans = run(p, samples)
    assert trans == [(NORMAL, YIELDING, UNLOAD), (YIELDING, YIELDED, "none")]
    trans = run(p, [sample(t + i * 0.5, 2_000, 0) for i in range(20)])
    assert trans == [(YIELDED, RECOVERING, RESUME), (RECOVERING, NORMAL, "none")]


def test_a_short_viewport_spike_in_a_host_app_is_not_a_render():
    p = VramPolicy(GuardConfig(busy_s=3))
    p.set_kelvin_vram(4_000)
    c4d = (10, "Cinema 4D.exe", 1_200)
    samples = [sample(t * 0.5, 9_000, 95 if 4 <= t < 8 else 10, procs=[c4d, (1, "ollama", 4_000)]) for t in range(30)]
    assert run(p, samples) == []
    # the same utilisation held longer is heavy work
    samples = [sample(15 + t * 0.5, 9_000, 95, procs=[c4d, (1, "ollama", 4_000)]) for t in range(8)]
    assert run(p, samples)[0] == (NORMAL, YIELDING, UNLOAD)


def test_windows_traces_without_per_process_memory_use_device_totals():
    p = VramPolicy()
    p.set_kelvin_vram(4_000)
    host = (10, "houdini.exe", None)
    base = [sample(t * 0.5, 8_000, 5, procs=[host, (1, "ollama.exe", None)]) for t in range(4)]
    grow = [sample(2 + t * 0.5, 8_000 + 1_500 * (t + 1), 60, procs=[host, (1, "ollama.exe", None)]) for t in range(3)]
    trans = run(p, base + grow)
    assert trans[0] == (NORMAL, YIELDING, UNLOAD)


def test_a_game_that_is_not_a_renderer_never_triggers_the_rise_rule():
    p = VramPolicy()
    p.set_kelvin_vram(4_000)
    game = [sample(t * 0.5, 6_000 + 800 * t, 99, procs=[(5, "eldenring.exe", 800 * t)]) for t in range(10)]
    assert run(p, game) == []  # 13 GB free for others stays above the reserve; utilisation alone is no render


def test_free_now_holds_until_resume_and_resume_during_a_render_sticks():
    p = VramPolicy(GuardConfig(hold_s=1))
    p.set_kelvin_vram(4_000)
    [tr] = p.free_now(0)
    assert (tr.to_state, tr.action, tr.reason) == (YIELDING, UNLOAD, "the artist asked to free the VRAM")
    p.done(0.1)
    assert run(p, [sample(t, 2_000) for t in range(10)]) == []  # held: no recovery on its own
    [tr] = p.resume(10)
    assert (tr.to_state, tr.action) == (RECOVERING, RESUME)
    p.done(10.1)
    # a render holds the memory; the artist resumes anyway: Kelvin stays until that pressure clears once
    p.set_kelvin_vram(4_000)
    run(p, [sample(11, 23_000, 99, procs=[(9, "octane", 19_000)])])
    assert p.state == YIELDED
    p.resume(12)
    p.done(12.1)
    assert run(p, [sample(13 + t, 23_000, 99, procs=[(9, "octane", 19_000)]) for t in range(5)]) == []
    assert run(p, [sample(20, 3_000)]) == []  # the render ended: pressure gone, the override ends
    assert run(p, [sample(21, 23_000, 99, procs=[(9, "octane", 19_000)])])[0] == (NORMAL, YIELDING, UNLOAD)


def test_the_gpu_disappearing_turns_the_guard_off_and_its_return_resumes_where_it_was():
    p = VramPolicy(GuardConfig(hold_s=2))
    p.set_kelvin_vram(4_000)
    run(p, [sample(0, 6_000), sample(0.5, 23_500)])
    assert p.state == YIELDED
    [tr] = p.observe(Sample(t=1, error="GPU is lost"))
    assert (tr.from_state, tr.to_state) == (YIELDED, OFF) and "GPU is lost" in tr.reason
    assert p.observe(Sample(t=1.5)) == []  # said once
    [back] = p.observe(sample(2, 3_000))
    assert (back.to_state, back.action) == (YIELDED, "none")
    assert run(p, [sample(2 + t * 0.5, 3_000) for t in range(1, 8)])[0] == (YIELDED, RECOVERING, RESUME)


def test_an_unload_that_never_reports_back_is_given_up_on():
    p = VramPolicy(GuardConfig(action_timeout_s=5))
    p.free_now(0)
    assert p.observe(sample(1, 3_000)) == []
    [tr] = p.observe(sample(5, 3_000))
    assert (tr.from_state, tr.to_state) == (YIELDING, YIELDED) and "did not finish within 5 s" in tr.reason


def test_trace_lines_round_trip_and_bad_ones_say_what_is_wrong():
    s = sample(1.5, 3_000, 40, procs=[(1, "octane", None)])
    assert Sample.from_json(s.to_json()) == s
    with pytest.raises(ValueError, match="missing field 't'"):
        Sample.from_json({"gpus": []})
    with pytest.raises(ValueError, match="wrong type"):
        Sample.from_json({"t": 0, "gpus": [{"index": "a", "total_mb": 1, "used_mb": 0}]})
    with pytest.raises(ValueError, match="total_mb must be positive"):
        Sample.from_json({"t": 0, "gpus": [{"index": 0, "total_mb": 0, "used_mb": 0}]})

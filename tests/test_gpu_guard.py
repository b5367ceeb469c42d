"""The VRAM guard at work: shipped traces replayed through the real guard and its actions against
the Ollama-protocol test server (through the real ``ollama`` client), a reply streaming when a render
starts, the guard's own thread and buttons, and a machine without an NVIDIA GPU."""
from __future__ import annotations

import json
import os
import sys
import threading
from pathlib import Path

import psutil
import pytest

from app import cli
from app.core.commands import Mode
from app.core.vram import GpuSample, ProcessSample, Sample
from app.gpu.nvml import NvmlSampler
from app.gpu.trace import TraceSource, read_trace
from app.llm.backend import OllamaBackend
from app.llm.embedders import OllamaEmbedder
from app.services.conversation import Conversation
from app.services.gpu_guard import GpuGuard, replay
from app.config import load
from tests.support.ollama_server import OllamaTestServer
from tests.support.waits import wait_until

TRACES = Path(__file__).parent / "traces"
EXPECTED = json.loads((TRACES / "expected.json").read_text(encoding="utf-8"))
KELVIN_MODELS = {"llama3.1:8b", "nomic-embed-text:latest"}


def loaded_by_kelvin(server) -> None:
    """Kelvin has answered and embedded: both its models sit on the GPU."""
    with OllamaBackend(server.host) as b:
        b.preload("llama3.1:8b")
        b.preload("nomic-embed-text")
    assert set(server.loaded()) == KELVIN_MODELS


@pytest.mark.parametrize("trace", sorted(EXPECTED))
def test_each_shipped_trace_replays_to_the_expected_transitions_and_unloads(trace, server, capsys, monkeypatch):
    monkeypatch.setenv("KELVIN_OLLAMA_HOST", server.host)
    monkeypatch.setenv("KELVIN_EMBEDDER", "ollama:nomic-embed-text")
    loaded_by_kelvin(server)
    want = EXPECTED[trace]
    assert cli.main(["gpu", "replay", str(TRACES / trace), "--json"]) == 0
    said = capsys.readouterr()
    # before anything happens, the replay says that it acts for real, and on which host
    assert said.err.startswith(f"kelvin: replaying {trace} with the real guard") and server.host in said.err
    assert "really unloaded" in said.err
    events = [json.loads(line) for line in said.out.splitlines()]
    assert [[e["from"], e["to"], e["action"]] for e in events] == want["transitions"]
    assert all(set(e) == {"t", "from", "to", "reason", "action"} and e["reason"] for e in events)
    unloads = [e for e in events if e["action"] == "unload"]
    assert len(unloads) == want["unloads"]
    # every unload action asked Ollama to drop both of Kelvin's models, and nothing else
    assert sorted(m for m, _ in server.unloads()) == sorted(KELVIN_MODELS) * want["unloads"]
    if unloads:
        assert unloads[0]["t"] - want["cross_t"] <= 1.0  # reaction in trace time, at the 0.5 s interval
        yielded = next(e for e in events if e["to"] == "yielded")
        assert yielded["reason"].startswith("freed 4.8 GB")  # 4.92 GB + 0.27 GB as Ollama reports them
        assert server.loaded() == []  # coming back reloads lazily, with the next question
    else:
        assert set(server.loaded()) == KELVIN_MODELS


def test_a_render_starting_while_a_reply_streams_stops_it_cleanly_and_the_chat_goes_on_on_the_cpu(make_service):
    with OllamaTestServer(delay_s=0.15) as srv:
        svc = make_service(ollama_host=srv.host, vram_hold_s=5)
        conv = Conversation(svc.settings, svc)
        notes: list[tuple[str, str]] = []
        guard = GpuGuard(svc.settings, source=None, conversation=conv, synchronous=True,
                         notify=lambda title, text: notes.append((title, text)))
        try:
            srv.queue_reply("Lower the GI clamp to eight and keep the diffuse depth at four for the interior.")
            first_token = threading.Event()
            box = {}

            def ask():
                box["result"] = conv.ask("The kitchen has fireflies, what now?", lambda s: first_token.set())

            asker = threading.Thread(target=ask)
            asker.start()
            assert first_token.wait(10)
            octane = [Sample(t, (GpuSample(0, 24_564, used, 99),), (ProcessSample(7, "octane", 0, used - 6_000),))
                      for t, used in ((0.0, 6_000), (0.5, 11_000))]
            events = replay(guard, octane)
            asker.join(10)
            result = box["result"]
            assert [(e.from_state, e.to_state) for e in events] == [("normal", "yielding"), ("yielding", "yielded")]
            assert result.status == "cancelled" and result.text  # the partial reply is kept …
            svc.flush()
            stored = svc.show(result.answer.id)
            assert stored.status == "cancelled"
            assert stored.text.endswith("[stopped: Kelvin gave the GPU to a render in Octane]")
            assert svc.show(result.question.id).text == "The kitchen has fireflies, what now?"  # … the question too
            assert conv.mode is Mode.CPU and "llama3.1:8b" in [m for m, _ in srv.unloads()]
            assert notes[0][0] == "Kelvin yielded the GPU"
            assert notes[0][1].startswith("Render detected in Octane: Kelvin moved off the GPU (answering on the CPU)")
            # the next question is answered on the CPU
            srv.delay_s = 0.0
            assert conv.ask("And the reflections?").status == "complete"
            assert srv.requests_to("/api/chat")[-1]["options"]["num_gpu"] == 0
            # the render ends; after the hold time Kelvin is back on the GPU
            quiet = [Sample(1 + t * 0.5, (GpuSample(0, 24_564, 1_500, 2),)) for t in range(14)]
            events = replay(guard, quiet)
            assert [(e.to_state, e.action) for e in events] == [("recovering", "resume"), ("normal", "none")]
            assert conv.mode is Mode.GPU and notes[-1][0] == "Kelvin is back on the GPU"
            assert conv.ask("Thanks").status == "complete"
            assert "num_gpu" not in srv.requests_to("/api/chat")[-1]["options"]
        finally:
            guard.stop()
            conv.close()


def test_the_artist_picking_a_mode_while_yielded_is_not_overridden(server, make_service):
    svc = make_service(ollama_host=server.host, vram_hold_s=1)
    conv = Conversation(svc.settings, svc)
    guard = GpuGuard(svc.settings, source=None, conversation=conv, synchronous=True)
    try:
        guard.free_now()
        guard.step(Sample(0, (GpuSample(0, 24_564, 2_000, 0),)))
        assert conv.mode is Mode.CPU
        conv.set_mode(Mode.RECALL)  # the artist's own choice
        guard.resume()
        guard.step(Sample(1, (GpuSample(0, 24_564, 2_000, 0),)))
        assert guard.policy.state == "normal" and conv.mode is Mode.RECALL
    finally:
        guard.stop()
        conv.close()


def test_the_guard_samples_on_its_own_thread_and_the_buttons_work_from_another(server):
    loaded_by_kelvin(server)
    settings = load({"ollama_host": server.host, "embedder": "ollama:nomic-embed-text", "gpu_interval_ms": 250})
    calm = [Sample(t * 0.25, (GpuSample(0, 24_564, 6_200, 3),), (ProcessSample(1, "ollama", 0, 4_954),))
            for t in range(4)]
    notes, seen = [], []
    guard = GpuGuard(settings, TraceSource(calm), notify=lambda title, text: notes.append(title))
    guard.on_event.append(seen.append)
    guard.start()
    try:
        assert wait_until(lambda: len(guard.samples) >= 2)
        assert guard.policy.state == "normal" and guard.policy.kelvin_mb == (4_920_000_000 + 274_302_450) // 2**20  # from Ollama's ps
        guard.free_now()
        assert wait_until(lambda: guard.policy.state == "yielded")
        assert sorted(m for m, _ in server.unloads()) == sorted(KELVIN_MODELS) and server.loaded() == []
        assert [e.reason for e in seen][:2] == ["the artist asked to free the VRAM", "freed 4.8 GB"]
        guard.resume()
        assert wait_until(lambda: guard.policy.state == "normal")
        assert notes == ["Kelvin yielded the GPU", "Kelvin is back on the GPU"]
    finally:
        guard.stop()


def test_embeddings_go_to_the_cpu_while_kelvin_is_off_the_gpu(server):
    settings = load({"ollama_host": server.host})
    embedder = OllamaEmbedder("nomic-embed-text", server.host)
    guard = GpuGuard(settings, source=None, embedder=embedder, synchronous=True)
    try:
        guard.free_now()
        guard.step(Sample(0, (GpuSample(0, 8_000, 1_000, 0),)))
        embedder.embed(["GI clamp 10"])
        assert server.requests_to("/api/embed")[-1]["options"] == {"num_gpu": 0}
        guard.resume()
        guard.step(Sample(1, (GpuSample(0, 8_000, 1_000, 0),)))
        embedder.embed(["GI clamp 10"])
        assert not server.requests_to("/api/embed")[-1].get("options")
    finally:
        guard.stop()
        embedder.close()


def test_without_an_nvidia_gpu_the_guard_says_so_once_and_stays_off(tmp_path):
    sampler = NvmlSampler()
    first = sampler.sample()
    if first.gpus:
        sampler.close()
        pytest.skip("this machine has an NVIDIA GPU")
    assert first.error == "no NVIDIA driver is installed on this machine" and sampler.problem == first.error
    notes = []
    guard = GpuGuard(load({}), sampler, notify=lambda title, text: notes.append((title, text)),
                     log_path=tmp_path / "gpu_events.jsonl")
    try:
        for _ in range(3):
            guard.step(sampler.sample())
        assert [(e.from_state, e.to_state) for e in guard.events] == [("normal", "off")]
        assert notes == [("VRAM guard off", guard.events[0].reason)] and "no NVIDIA driver" in notes[0][1]
        logged = [json.loads(line) for line in (tmp_path / "gpu_events.jsonl").read_text().splitlines()]
        assert [(e["from"], e["to"]) for e in logged] == [("normal", "off")]
    finally:
        guard.stop()


def test_gpu_status_and_record_on_a_machine_without_a_gpu(capsys, tmp_path):
    if NvmlSampler().sample().gpus:
        pytest.skip("this machine has an NVIDIA GPU")
    assert cli.main(["gpu", "status", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["available"], doc["guard"], doc["state"]) == (False, "off", "off")
    assert doc["ollama_problem"].startswith("Ollama is not reachable")
    assert cli.main(["gpu", "status"]) == 0
    assert "No NVIDIA GPU to watch" in capsys.readouterr().out
    assert cli.main(["gpu", "record", str(tmp_path / "t.jsonl"), "--seconds", "1"]) == 1
    assert "nothing to record: no NVIDIA driver is installed on this machine" in capsys.readouterr().err


def test_a_bad_trace_is_refused_with_its_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"t": 0, "gpus": []}\n{"t": "soon"}\n', encoding="utf-8")
    assert cli.main(["gpu", "replay", str(bad)]) == 1
    assert "bad.jsonl, line 2: not a GPU sample" in capsys.readouterr().err
    backwards = tmp_path / "back.jsonl"
    backwards.write_text('{"t": 5}\n{"t": 1}\n', encoding="utf-8")
    assert cli.main(["gpu", "replay", str(backwards)]) == 1
    assert "line 2: time goes backwards" in capsys.readouterr().err
    assert read_trace(TRACES / "octane_render_start.jsonl")[0].processes[0].name == "Cinema 4D"


def test_coming_back_can_load_the_model_at_once_and_cpu_mode_embeds_on_the_cpu(server, make_service):
    svc = make_service(ollama_host=server.host, embedder="ollama:nomic-embed-text", preload_after_render=True,
                       vram_hold_s=1)
    conv = Conversation(svc.settings, svc)
    guard = GpuGuard(svc.settings, source=None, conversation=conv, embedder=svc.embedder, synchronous=True)
    try:
        guard.free_now()
        guard.step(Sample(0, (GpuSample(0, 24_564, 2_000, 0),)))
        assert conv.mode is Mode.CPU and svc.embedder.cpu
        guard.resume()
        [*_, back] = guard.step(Sample(1, (GpuSample(0, 24_564, 2_000, 0),)))
        assert (back.to_state, back.reason) == ("normal", "llama3.1:8b loaded on the GPU again")
        assert "llama3.1:8b" in server.loaded() and conv.mode is Mode.GPU and not svc.embedder.cpu
        conv.set_mode(Mode.CPU)  # the artist's /mode cpu leaves the GPU for embeddings too
        svc.embedder.embed(["GI clamp"])
        assert server.requests_to("/api/embed")[-1]["options"] == {"num_gpu": 0}
    finally:
        guard.stop()
        conv.close()


def test_with_ollama_gone_the_guard_still_moves_kelvin_off_the_gpu_and_says_why(make_service):
    svc = make_service()  # Ollama host: a closed port
    conv = Conversation(svc.settings, svc)
    notes = []
    guard = GpuGuard(svc.settings, source=None, conversation=conv, synchronous=True,
                     notify=lambda title, text: notes.append(text))
    try:
        events = replay(guard, [Sample(0, (GpuSample(0, 8_000, 7_500, 99),), (ProcessSample(3, "kick", 0, 6_000),))])
        assert [(e.to_state, e.action) for e in events] == [("yielding", "unload"), ("yielded", "none")]
        assert events[1].reason.startswith("Ollama is not reachable") and conv.mode is Mode.CPU
        assert notes[0].startswith("Render detected in Arnold (kick): Kelvin moved off the GPU (answering on the CPU); "
                                   "Ollama is not reachable")
    finally:
        guard.stop()
        conv.close()


class _Driver:
    """NVML cannot run on this machine (no NVIDIA driver). This stands in for the driver only —
    the module ``pynvml`` as nvidia-ml-py lays it out: the same function names, ``NVMLError``,
    process entries with ``usedGpuMemory`` None where Windows (WDDM) does not report it — so the
    sampler's own logic (both process lists, one entry per pid, names, a GPU falling off the bus,
    opening NVML again) runs for real."""

    class NVMLError(Exception):
        pass

    class _Proc:
        def __init__(self, pid, used):
            self.pid, self.usedGpuMemory = pid, used

    class _Mem:
        def __init__(self, total, used):
            self.total, self.used, self.free = total, used, total - used

    class _Util:
        gpu, memory = 87, 40

    def __init__(self):
        self.lost = False
        self.inits = 0

    def nvmlInit(self):
        if self.lost:
            raise self.NVMLError("GPU is lost")
        self.inits += 1

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"gpu{i}"

    def nvmlDeviceGetMemoryInfo(self, handle):
        if self.lost:
            raise self.NVMLError("GPU is lost")
        return self._Mem(24 * 2**30, 9 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, handle):
        return self._Util()

    def nvmlDeviceGetComputeRunningProcesses(self, handle):
        return [self._Proc(os.getpid(), None), self._Proc(999_999_999, 2 * 2**30)]

    def nvmlDeviceGetGraphicsRunningProcesses(self, handle):
        return [self._Proc(os.getpid(), 3 * 2**30)]  # the same process, here with its memory


def test_the_nvml_sampler_reads_both_process_lists_once_per_pid_and_survives_a_lost_gpu(monkeypatch):
    driver = _Driver()
    monkeypatch.setitem(sys.modules, "pynvml", driver)
    clock = [100.0]
    sampler = NvmlSampler(clock=lambda: clock[0])
    s = sampler.sample()
    assert s.gpus == (GpuSample(0, 24_576, 9_216, 87),) and not s.error
    me = psutil.Process().name()
    assert sorted((p.pid, p.name, p.used_mb) for p in s.processes) == sorted(
        [(os.getpid(), me, 3_072), (999_999_999, "pid 999999999", 2_048)])
    driver.lost = True
    clock[0] += 0.5
    lost = sampler.sample()
    assert lost.gpus == () and lost.error == "the GPU stopped answering (GPU is lost)"
    clock[0] += 0.5
    assert sampler.sample().error == "the GPU stopped answering (GPU is lost)"  # not reopened yet: no retry storm
    driver.lost = False
    clock[0] += NvmlSampler.REOPEN_S
    back = sampler.sample()
    assert back.gpus and driver.inits == 2 and back.t == pytest.approx(6.0)
    sampler.close()

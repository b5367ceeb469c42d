"""The VRAM guard at work (Qt-free): a sampler reads the GPU, the policy (:mod:`app.core.vram`)
decides, and the actions run — unload every model Kelvin loaded (Ollama: ``keep_alive: 0``;
llama.cpp's router and LM Studio: their unload calls; confirmed with ``ps``), move the conversation
to the CPU or to recall, stop a reply streaming on the GPU (its partial text is kept), tell the
artist; and, when the render is over, go back. A server that cannot unload on request (llama.cpp
started with one model, older LM Studio, Jan, vLLM) is not pretended to: the guard says so when it
yields, in the GPU view and in the tray. A server that cannot keep one request off the GPU (any
OpenAI-compatible one) gets recall instead of CPU mode while a render runs — its next answer would
load the model onto the GPU again.

One thread samples (every ``gpu_interval_ms``) and owns the policy; the actions run on a single
worker of their own, so a slow Ollama never stalls the sampling, and report back through the
guard's command queue. ``synchronous=True`` runs the actions inline on the caller's thread — what
``kelvin gpu replay`` uses to play a trace on its own clock.
"""
from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from app.core.commands import Mode
from app.durable import open_append, write_all
from app.core.vram import (OFF, RESUME, UNLOAD, GuardConfig, Sample, Transition, VramPolicy, mb_text,
                           renderer_label, renderer_names)
from app.llm.backend import full_name
from app.llm.errors import ModelServerUnavailable, remote
from app.llm.model_server import ModelServer
from app.llm.servers import connect
from app.config import Config
from app.services.background import NamedPool

log = logging.getLogger("kelvin.gpu")

PS_EVERY_S = 2.0  # how often Kelvin asks the model server what its models hold on the GPU


class SampleSource(Protocol):
    problem: str

    def sample(self) -> Sample: ...


@dataclass(frozen=True)
class GuardEvent:
    """A transition of the guard, as the event log, the terminal and the app show it."""

    t: float  # the sampler's (or the trace's) clock, seconds
    at: float  # wall time (seconds since the epoch)
    from_state: str
    to_state: str
    reason: str
    action: str

    def to_json(self) -> dict:
        return {"t": round(self.t, 3), "from": self.from_state, "to": self.to_state, "reason": self.reason,
                "action": self.action}


def config_from(settings: Config) -> GuardConfig:
    return GuardConfig(margin_mb=settings.vram_margin_mb, reserve_mb=settings.vram_reserve_mb,
                       hold_s=settings.vram_hold_s, renderers=renderer_names(settings.renderer_processes))


class GpuGuard:
    def __init__(self, settings: Config, source: SampleSource | None, *, backend: ModelServer | None = None,
                 conversation=None, embedder=None, notify: Callable[[str, str], None] | None = None,
                 log_path: Path | None = None, synchronous: bool = False, config: GuardConfig | None = None):
        self.settings = settings
        self.source = source
        self.policy = VramPolicy(config or config_from(settings))
        # a short timeout of its own: a hung server must not hold the guard for half a minute
        self.backend: ModelServer = backend or connect(settings, timeout_s=3.0)
        self._own_backend = backend is None
        self.conversation = conversation
        self.embedder = embedder
        self.notify = notify or (lambda title, text: None)
        self.log_path = log_path
        self.synchronous = synchronous
        self.events: deque[GuardEvent] = deque(maxlen=1000)
        self.samples: deque[Sample] = deque(maxlen=1200)  # ten minutes at 0.5 s, for the app's plot
        self.on_event: list[Callable[[GuardEvent], None]] = []
        self.on_sample: list[Callable[[Sample], None]] = []
        self._mode_before: Mode | None = None  # the conversation's mode before the guard moved it
        self._moved_to: Mode | None = None  # the mode the guard moved it to
        self._commands: queue.SimpleQueue = queue.SimpleQueue()
        self._actions = None if synchronous else ThreadPoolExecutor(1, thread_name_prefix="kelvin-gpu-action")
        self._stop = threading.Event()
        self._sampler = NamedPool("kelvin-gpu-sampler")  # one thread: the sampling loop, from start() to stop()
        self._sampling = False
        self._next_ps = 0.0
        self._told_off = False
        # Ollama on another machine (the studio's GPU box): its models are not on this GPU, so a
        # local render never makes Kelvin unload them; the guard says so instead
        self.remote = remote(settings.model_host)

    # ---- what Kelvin has on the GPU ----------------------------------------------------------------
    def _key(self, name: str) -> str:
        return full_name(name) if self.backend.kind == "ollama" else name

    def models(self) -> list[str]:
        """The models Kelvin itself uses (the only ones it unloads): chat, embedding, extraction."""
        names = [getattr(self.conversation, "model", "") or self.settings.chat_model, self.settings.extract_model]
        spec = getattr(self.embedder, "spec", "") or self.settings.embedder
        kind, _, name = spec.partition(":")
        if kind == self.backend.kind:  # an embedder on the same server as the chat
            names.append(name or "nomic-embed-text")
        return list(dict.fromkeys(self._key(n) for n in names if n))

    def unload_problem(self) -> str:
        """"" when the server frees Kelvin's models on request; else why not, in a sentence (asks the
        server: not on the UI thread)."""
        try:
            return self.backend.unload_problem()
        except ModelServerUnavailable:
            return ""  # not running: nothing of Kelvin's is loaded; said elsewhere

    def _held(self) -> list[tuple[str, int]]:
        """Kelvin's models the server has loaded now, with the VRAM (bytes) each holds (0: it does not say)."""
        mine = set(self.models())
        return [(m.name, m.size_vram) for m in self.backend.ps() if self._key(m.name) in mine]

    def _refresh_held(self, now: float) -> None:
        if self.remote:
            self.policy.set_kelvin_vram(0)  # nothing of Kelvin's on this GPU
            return
        if now < self._next_ps:
            return
        self._next_ps = now + PS_EVERY_S
        try:
            self.policy.set_kelvin_vram(sum(v for _, v in self._held()) // 2**20)
        except ModelServerUnavailable:
            self.policy.set_kelvin_vram(0)  # no server, nothing of Kelvin's on the GPU

    def use_server(self, backend: ModelServer) -> None:
        """Unload through another model server from now on (the artist switched servers)."""
        old, own = self.backend, self._own_backend
        self.backend, self._own_backend = backend, True
        if own:
            old.close()

    # ---- the loop ------------------------------------------------------------------------------------
    def start(self) -> "GpuGuard":
        """Sample the source on a thread of its own (a replay steps the guard itself instead)."""
        if self.source is None:
            raise ValueError("a guard without a sample source cannot run on its own")
        if not self._sampling:
            self._sampling = True
            self._sampler.submit(self._run)
        return self

    def _run(self) -> None:
        interval = self.settings.gpu_interval_ms / 1000
        next_at = time.monotonic()
        while not self._stop.is_set():
            try:
                self.step(self.source.sample())
            except Exception:  # a bug in one sample must not end the guard
                log.exception("the VRAM guard failed on a sample")
            next_at += interval
            self._stop.wait(max(0.0, next_at - time.monotonic()))
            next_at = max(next_at, time.monotonic() - interval)  # after a stall, do not race to catch up

    def stop(self) -> None:
        """Stop sampling, let a running action finish, hang up."""
        self._stop.set()
        if self._sampling:
            self._sampler.wait(timeout=10)
            self._sampling = False
        if self._actions is not None:
            self._actions.shutdown(wait=True)
        close = getattr(self.source, "close", None)
        if close:
            close()
        if self._own_backend:
            self.backend.close()

    def step(self, sample: Sample) -> list[GuardEvent]:
        """One sample through the policy, and whatever it sets off. On the sampler's thread (or the
        replay's)."""
        self.samples.append(sample)
        for listener in list(self.on_sample):
            listener(sample)
        out = self._drain(sample.t)
        if sample.gpus:
            self._refresh_held(sample.t)
        out += self._handle(self.policy.observe(sample))
        return out

    # ---- the artist's buttons (any thread) ----------------------------------------------------------
    def free_now(self) -> None:
        self._commands.put(("free_now", None, ""))

    def resume(self) -> None:
        self._commands.put(("resume", None, ""))

    def _drain(self, t: float) -> list[GuardEvent]:
        out: list[GuardEvent] = []
        while True:
            try:
                what, ok, detail = self._commands.get_nowait()
            except queue.Empty:
                return out
            if what == "free_now":
                out += self._handle(self.policy.free_now(t))
            elif what == "resume":
                out += self._handle(self.policy.resume(t))
            else:  # "done": an action finished
                out += self._handle(self.policy.done(t, ok, detail))

    # ---- transitions and actions --------------------------------------------------------------------
    def _handle(self, transitions: list[Transition]) -> list[GuardEvent]:
        out = []
        for tr in transitions:
            event = GuardEvent(tr.t, time.time(), tr.from_state, tr.to_state, tr.reason, tr.action)
            out.append(self._record(event))
            if tr.to_state == OFF and not self._told_off:
                self._told_off = True
                self.notify("VRAM guard off", tr.reason)
            if tr.action in (UNLOAD, RESUME):
                act = self._yield if tr.action == UNLOAD else self._come_back
                if self.synchronous:
                    ok, done_detail = self._safely(act, tr)
                    out += self._handle(self.policy.done(tr.t, ok, done_detail))
                else:
                    self._actions.submit(self._act_async, act, tr)
        return out

    def _act_async(self, act, tr: Transition) -> None:
        ok, detail = self._safely(act, tr)
        self._commands.put(("done", ok, detail))

    @staticmethod
    def _safely(act, tr: Transition) -> tuple[bool, str]:
        try:
            return act(tr)
        except ModelServerUnavailable as exc:
            return False, str(exc)
        except Exception as exc:  # the guard carries on; the log has the details
            log.exception("a VRAM guard action failed")
            return False, f"the action failed unexpectedly ({exc.__class__.__name__}: {exc})"

    def _record(self, event: GuardEvent) -> GuardEvent:
        self.events.append(event)
        log.info("VRAM guard %s → %s: %s", event.from_state, event.to_state, event.reason)
        if self.log_path is not None:
            try:
                self.log_path.parent.mkdir(parents=True, exist_ok=True)
                with open_append(self.log_path) as f:
                    write_all(f, (json.dumps({**event.to_json(), "at": round(event.at, 3)}) + "\n").encode("utf-8"),
                              sync=False)
            except OSError as exc:
                log.warning("cannot write the GPU event log %s: %s", self.log_path, exc)
        for listener in list(self.on_event):
            listener(event)
        return event

    def _yield(self, tr: Transition) -> tuple[bool, str]:
        """Leave the GPU: first stop anything new from loading a model there, then unload."""
        who = renderer_label(self.policy.pressure.renderer) if self.policy.pressure.renderer else ""
        if self.remote:  # the model is on the studio's server: this GPU is the render's already
            host = self.settings.model_host
            self.notify("Render detected" + (f" in {who}" if who else ""),
                        f"Kelvin's model runs on the studio's model server ({host}), not on this GPU: nothing to "
                        "unload, and Kelvin keeps answering.")
            return True, f"the model is on the studio's model server ({host}): nothing of Kelvin's on this GPU"
        c = self.conversation
        label = self.backend.label
        yield_mode = Mode.parse(self.settings.yield_mode)
        if yield_mode is Mode.CPU and not self.backend.cpu_mode:
            yield_mode = Mode.RECALL  # its next answer would load the model onto the GPU again
        if c is not None:
            if c.mode is Mode.GPU:
                self._mode_before, self._moved_to = Mode.GPU, yield_mode
                c.set_mode(yield_mode, reason=f"VRAM guard: {tr.reason}")
            if c.replying_on_gpu:
                c.cancel(reason=f"Kelvin gave the GPU to {'a render in ' + who if who else 'the render'}")
        if self.embedder is not None and hasattr(self.embedder, "cpu"):
            self.embedder.cpu = True
        where = "answering on the CPU" if yield_mode is Mode.CPU else "answering from memory"
        if yield_mode is not Mode.parse(self.settings.yield_mode):
            where += f": {label} cannot keep its model off the GPU for Kelvin"
        head = f"Render detected in {who}" if who else "The GPU is short of memory"
        try:
            cannot = self.backend.unload_problem()
            held = self._held()
            if cannot:  # say so instead of pretending: the model keeps its VRAM
                names = ", ".join(name for name, _ in held) or "its model"
                self.notify("Kelvin yielded the GPU", f"{head}: Kelvin stopped using the model ({where}), but it cannot "
                            f"free the VRAM: {cannot}.")
                return False, f"{label} keeps {names} loaded: it cannot unload on request"
            freed = sum(v for _, v in held)
            stuck = [name for name, _ in held if not self.backend.unload(name)]
        except ModelServerUnavailable as exc:  # nothing can be unloaded; the artist still hears what happened
            self.notify("Kelvin yielded the GPU", f"{head}: Kelvin moved off the GPU ({where}); {exc}.")
            raise
        freed_mb = freed // 2**20
        unloaded = [name for name, _ in held if name not in stuck]
        text = f"{head}: Kelvin moved off the GPU ({where})" + (
            f", freed {mb_text(freed_mb)}" if freed else f", unloaded {', '.join(unloaded)}" if unloaded else "")
        if stuck:
            text += f"; {label} still holds {', '.join(stuck)}"
        self.notify("Kelvin yielded the GPU", text + ".")
        done = (f"freed {mb_text(freed_mb)}" if freed else f"unloaded {', '.join(unloaded)}" if unloaded
                else "nothing of Kelvin's was loaded")
        return not stuck, done + (f"; still loaded: {', '.join(stuck)}" if stuck else "")

    def _come_back(self, tr: Transition) -> tuple[bool, str]:
        if self.remote:
            return True, "the model stayed on the studio's model server"
        c = self.conversation
        back = ""
        if c is not None and self._mode_before is not None:
            if c.mode is (self._moved_to or Mode.parse(self.settings.yield_mode)):  # the artist did not pick one meanwhile
                c.set_mode(self._mode_before, reason=f"VRAM guard: {tr.reason}")
                back = " (GPU mode again)"
            self._mode_before = self._moved_to = None
        if self.embedder is not None and hasattr(self.embedder, "cpu"):  # off the GPU as long as the chat is
            self.embedder.cpu = c is not None and c.mode is not Mode.GPU
        detail = "the model loads again with the next question"
        if self.settings.preload_after_render:
            model = self.models()[0]
            self.backend.preload(model)
            detail = f"{model} loaded on the GPU again"
        self.notify("Kelvin is back on the GPU", f"The render is over: Kelvin is back on the GPU{back}.")
        return True, detail


def replay(guard: GpuGuard, samples: list[Sample], realtime: bool = False,
           on_event: Callable[[GuardEvent], None] = lambda e: None) -> list[GuardEvent]:
    """Play a trace through the guard: on the trace's own clock (as fast as the machine goes), or at
    its own pace with ``realtime``."""
    out: list[GuardEvent] = []
    start = time.monotonic()
    t0 = samples[0].t if samples else 0.0
    for s in samples:
        if realtime:
            wait = start + (s.t - t0) - time.monotonic()
            if wait > 0:
                time.sleep(wait)
        for event in guard.step(s):
            out.append(event)
            on_event(event)
    return out

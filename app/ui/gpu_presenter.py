"""The window's side of the VRAM guard: the guard's samples, decisions and notifications come from
its sampler thread through a bridge of Qt signals into the UI thread, where they feed the GPU view,
and its state goes out as :attr:`GpuPresenter.state_changed` (the header, the tray and the mode box
follow it). "Free VRAM now" and "Resume" reach the guard from the view and the tray. A model server
that cannot unload on request is said in the view and goes out as :attr:`GpuPresenter.cannot_unload`
(the tray says it too) instead of the guard pretending to free the VRAM."""
from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from app.ui.gpu_view import GpuView
from app.ui.words import plain_words
from app.ui.workspace import Workspace

GPU_HEALTH = {"normal": "ok", "yielding": "warn", "yielded": "warn", "recovering": "warn"}
GPU_WORDS = {"normal": "GPU: ok", "yielding": "GPU: leaving …", "yielded": "GPU: yielded to render",
             "recovering": "GPU: coming back …", "off": "GPU: guard off"}


class _Bridge(QObject):
    """Calls from the guard's thread (its samples, events, notifications) into the UI thread."""

    notified = Signal(str, str)
    event = Signal(object)
    sample = Signal(object)


class GpuPresenter(QObject):
    # the header's words, its tooltip, its health ("ok", "warn", ""), the guard's state ("off": none)
    state_changed = Signal(str, str, str, str)
    watched = Signal(bool, str)  # a GPU is watched (or not, and why)
    notified = Signal(str, str)  # title, text: Kelvin yielded to a render, came back …
    cannot_unload = Signal(str)  # why the guard cannot unload Kelvin's model on this server ("" when it can)

    def __init__(self, view: GpuView, workspace: Workspace, parent=None):
        super().__init__(parent)
        self.view = view
        self.workspace = workspace
        self.guard = None
        self.bridge = _Bridge()
        self.bridge.notified.connect(self.notified)
        self.bridge.event.connect(self._event)
        self.bridge.sample.connect(self._sample)
        view.free_now.connect(self.free_vram)
        view.resume.connect(self.resume)

    def attach_guard(self, guard, problem: str = "") -> None:
        """The VRAM guard (None: no NVIDIA GPU, or switched off; ``problem`` says why)."""
        self.guard = guard
        if guard is None:
            why = problem or "the VRAM guard is switched off in Kelvin's settings"
            self.state_changed.emit("GPU: not watched", f"Nothing to watch: {why}", "", "off")
            self.view.set_available(False, why)
            self.watched.emit(False, why)
            return
        guard.notify = self.bridge.notified.emit
        guard.on_event.append(self.bridge.event.emit)
        guard.on_sample.append(self.bridge.sample.emit)
        self.view.set_available(True, "")
        self.watched.emit(True, "")
        self._state(guard.policy.state, "")
        pools = self.workspace.pools
        pools.run(pools.general, lambda report: guard.unload_problem(), returned=self.show_unload_problem)

    def show_unload_problem(self, cannot: str) -> None:
        """The model server cannot unload on request (or, "", it can)."""
        if self.guard is None:
            return
        self.view.set_unload_problem(plain_words(cannot))
        self.cannot_unload.emit(plain_words(cannot))

    def free_vram(self) -> None:
        if self.guard is not None:
            self.guard.free_now()
            self.workspace.say("Freeing the VRAM …", 3000)

    def resume(self) -> None:
        if self.guard is not None:
            self.guard.resume()

    def _state(self, state: str, reason: str) -> None:
        self.view.show_state(state, reason)
        self.state_changed.emit(GPU_WORDS.get(state, state), reason, GPU_HEALTH.get(state, ""), state)

    def _event(self, e) -> None:
        self.view.add_event(e.t, e.from_state, e.to_state, e.reason)
        self._state(e.to_state, e.reason)

    def _sample(self, s) -> None:
        if self.guard is not None:
            self.view.plot.add(s, self.guard.policy.kelvin_mb, self.guard.policy.reserve_mb)

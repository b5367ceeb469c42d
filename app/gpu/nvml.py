"""NVIDIA's management library (``nvidia-ml-py``, imported as ``pynvml``), opened safely.

No GPU, no driver, or a driver too old: :func:`probe` says so in one sentence and never raises.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuInfo:
    index: int
    name: str
    total_mb: int
    used_mb: int


@dataclass(frozen=True)
class Probe:
    ok: bool
    driver: str
    gpus: tuple[GpuInfo, ...]
    problem: str = ""


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def plain_problem(exc: BaseException, otherwise: str = "") -> str:
    """NVML's error in the artist's words ("NVML Shared Library Not Found" says nothing to a person)."""
    words = {"NVMLError_LibraryNotFound": "no NVIDIA driver is installed on this machine",
             "NVMLError_DriverNotLoaded": "the NVIDIA driver is installed but not loaded (a restart may help)",
             "NVMLError_NoPermission": "this user may not read the NVIDIA GPU",
             "NVMLError_LibRmVersionMismatch": "the NVIDIA driver was updated; restart the computer",
             "NVMLError_GpuIsLost": "the NVIDIA GPU stopped answering"}
    return words.get(type(exc).__name__, otherwise or f"the NVIDIA driver does not answer ({exc})")


def probe() -> Probe:
    """What NVML sees right now: the driver and each GPU's memory."""
    try:
        import pynvml
    except ImportError:
        return Probe(False, "", (), "nvidia-ml-py is not installed; the VRAM guard is off")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return Probe(False, "", (), f"{plain_problem(exc)}; the VRAM guard stays off, everything else works")
    try:
        driver = _text(pynvml.nvmlSystemGetDriverVersion())
        gpus = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            gpus.append(GpuInfo(i, _text(pynvml.nvmlDeviceGetName(handle)), mem.total // 2**20, mem.used // 2**20))
        return Probe(bool(gpus), driver, tuple(gpus), "" if gpus else "the NVIDIA driver reports no GPU")
    except pynvml.NVMLError as exc:
        return Probe(False, "", (), f"NVML failed: {exc}; the VRAM guard stays off")
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass


class NvmlSampler:
    """Reads every NVIDIA GPU's memory and utilisation and the processes on it, as a
    :class:`~app.core.vram.Sample`. Opens NVML once; if the driver goes away mid-session the sample
    says so (no GPUs, ``error``) and NVML is opened again on a later call. Process names come from
    psutil, cached per pid. Never raises."""

    REOPEN_S = 5.0

    def __init__(self, clock=None):
        import time

        self._clock = clock or time.monotonic
        self._t0 = self._clock()
        self._nvml = None
        self._handles: list = []
        self._names: dict[int, str] = {}
        self._next_open = 0.0
        self.problem = ""  # why there is no reading ("" while it works)

    def _open(self) -> bool:
        if self._nvml is not None:
            return True
        now = self._clock()
        if now < self._next_open:
            return False
        self._next_open = now + self.REOPEN_S
        try:
            import pynvml
        except ImportError:
            self.problem = "nvidia-ml-py is not installed"
            return False
        try:
            pynvml.nvmlInit()
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except pynvml.NVMLError as exc:
            self.problem = plain_problem(exc)
            return False
        if not self._handles:
            self.problem = "the NVIDIA driver reports no GPU"
            pynvml.nvmlShutdown()
            return False
        self._nvml, self.problem = pynvml, ""
        return True

    def sample(self):
        from app.core.vram import GpuSample, ProcessSample, Sample

        t = self._clock() - self._t0
        if not self._open():
            return Sample(t=t, error=self.problem)
        nv = self._nvml
        gpus, procs = [], {}
        try:
            for index, handle in enumerate(self._handles):
                mem = nv.nvmlDeviceGetMemoryInfo(handle)
                try:
                    util = int(nv.nvmlDeviceGetUtilizationRates(handle).gpu)
                except nv.NVMLError:
                    util = None
                gpus.append(GpuSample(index, mem.total // 2**20, mem.used // 2**20, util))
                for lister in (nv.nvmlDeviceGetComputeRunningProcesses, nv.nvmlDeviceGetGraphicsRunningProcesses):
                    try:
                        running = lister(handle)
                    except nv.NVMLError:
                        continue
                    for p in running:  # a process in both lists is counted once
                        used = None if p.usedGpuMemory is None else int(p.usedGpuMemory) // 2**20
                        old = procs.get((index, p.pid))
                        if old is None or (old.used_mb is None and used is not None):
                            procs[(index, p.pid)] = ProcessSample(int(p.pid), self._name(int(p.pid)), index, used)
        except nv.NVMLError as exc:  # the GPU fell off the bus, the driver was reset …
            self.close()
            self.problem = plain_problem(exc, f"the GPU stopped answering ({exc})")
            return Sample(t=t, error=self.problem)
        live = {pid for _, pid in procs}
        for pid in [p for p in self._names if p not in live]:
            del self._names[pid]
        return Sample(t=t, gpus=tuple(gpus), processes=tuple(procs.values()))

    def _name(self, pid: int) -> str:
        name = self._names.get(pid)
        if name is None:
            import psutil

            try:
                name = psutil.Process(pid).name()
            except (psutil.Error, OSError):
                name = f"pid {pid}"
            self._names[pid] = name
        return name

    def close(self) -> None:
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass
        self._nvml, self._handles = None, []

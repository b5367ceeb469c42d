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


def probe() -> Probe:
    """What NVML sees right now: the driver and each GPU's memory."""
    try:
        import pynvml
    except ImportError:
        return Probe(False, "", (), "nvidia-ml-py is not installed; the VRAM guard is off")
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        return Probe(False, "", (), f"no NVIDIA driver found ({exc}); the VRAM guard stays off, everything else works")
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

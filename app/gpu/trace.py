"""GPU traces: recorded samples as JSON lines (one :class:`~app.core.vram.Sample` per line), to
replay a render session against the real policy and actions, or to keep what the sampler saw."""
from __future__ import annotations

import json
from pathlib import Path
import threading
from typing import IO

from app.core.vram import Sample
from app.inputs import InputProblem, lines

MAX_TRACE_BYTES = 512 * 2**20  # a day of samples at 250 ms is ~100 MB
MAX_LINE_BYTES = 2**20  # one reading: a few GPUs and their processes


class TraceError(ValueError):
    """A trace file that cannot be read; the message names the line."""


def read_trace(path: Path) -> list[Sample]:
    """Every sample of a trace, in order. Blank lines are skipped; anything else that is not a
    sample, or a clock that runs backwards, stops with the line number."""
    if not Path(path).exists():
        raise TraceError(f"no trace at {path}")
    out: list[Sample] = []
    try:  # in bounded pieces: /dev/urandom or a runaway file cannot fill memory
        for n, line in lines(path, "a GPU trace", MAX_TRACE_BYTES, MAX_LINE_BYTES):
            if not line.strip():
                continue
            try:
                s = Sample.from_json(json.loads(line))
            except (ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
                raise TraceError(f"{path}, line {n}: not a GPU sample ({str(exc)[:120]})") from None
            if out and s.t < out[-1].t:
                raise TraceError(f"{path}, line {n}: time goes backwards ({s.t} after {out[-1].t})")
            out.append(s)
    except InputProblem as exc:
        raise TraceError(str(exc)) from None
    if not out:
        raise TraceError(f"{path} holds no samples")
    return out


class TraceSource:
    """A sample source that plays recorded samples one per call, then keeps giving the last one —
    a live guard's source in tests and demos, where no GPU is."""

    problem = ""

    def __init__(self, samples: list[Sample]):
        if not samples:
            raise TraceError("a trace source needs at least one sample")
        self._samples = list(samples)
        self._i = 0
        self._lock = threading.Lock()

    @property
    def done(self) -> bool:
        return self._i >= len(self._samples)

    def sample(self) -> Sample:
        with self._lock:
            s = self._samples[min(self._i, len(self._samples) - 1)]
            self._i += 1
            return s


def write_sample(stream: IO[str], s: Sample) -> None:
    stream.write(json.dumps(s.to_json(), separators=(",", ":")) + "\n")
    stream.flush()

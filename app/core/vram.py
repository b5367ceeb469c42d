"""The VRAM guard's policy: when Kelvin gets out of a render's way and when it comes back. Pure.

States: ``normal → yielding → yielded → recovering → normal``, plus ``off`` (no NVIDIA GPU, or the
GPU went away). ``yielding`` and ``recovering`` are the two states in which the guard's actions
run (unload the models and leave the GPU; return to it); the service reports back with
:meth:`VramPolicy.done` and the policy moves on. Every transition carries a reason in plain words.

Pressure, judged per GPU from device totals (so it works on Windows, where the driver reports no
per-process memory) plus what it knows of the processes:

* **low free VRAM** — the VRAM free for everyone else (free now plus what Kelvin's own models hold
  there) is under the reserve: Kelvin's models plus a margin, or a fixed number;
* **a renderer's VRAM rising fast** — a renderer process (by name) grew by at least ``rise_mb``
  within ``rise_window_s`` (a new renderer process counts from zero). Where per-process memory is
  not reported, the memory used by everything but Kelvin on a GPU a renderer is on counts;
* **heavy GPU work by a renderer** — a renderer is on the GPU (and, where the driver reports
  per-process memory, holds the most of it) and utilisation has stayed at or above ``busy_util`` %
  for ``busy_s`` (a viewport spike is shorter; a game beside an open Blender is the game's);
* **the artist** — "Free VRAM now" (held until "Resume").

Kelvin comes back only after the pressure has stayed gone for ``hold_s`` (hysteresis), so a
render's breathing between frames does not make it unload and reload in a loop. "Resume" during
a render keeps Kelvin on the GPU until that pressure has cleared once.
"""
from __future__ import annotations

from dataclasses import dataclass, field

NORMAL, YIELDING, YIELDED, RECOVERING, OFF = "normal", "yielding", "yielded", "recovering", "off"
STATES = (NORMAL, YIELDING, YIELDED, RECOVERING, OFF)
UNLOAD, RESUME, NONE = "unload", "resume", "none"

# Renderers and the host applications renders run inside (lower case, without ".exe").
DEFAULT_RENDERERS = (
    "octane", "octanerender", "octane_node", "octanenode",  # Octane standalone and render node
    "redshiftcmdline", "redshiftbenchmark",  # Redshift's command line renderer
    "kick", "husk", "vray", "vray_gui", "corona", "blender", "cinema 4d", "cinema4d", "commandline",
    "houdini", "houdinifx", "houdinicore", "hython", "hbatch", "maya", "maya.bin", "mayabatch", "render",
    "3dsmax", "3dsmaxcmd", "katana", "katanabin", "unreal", "unrealeditor",
)
# Processes that only ever render: one appearing with its memory already taken is a render starting.
# Host applications (Cinema 4D, Houdini, …) count from their first reading: opening one is not a render.
RENDER_ONLY = frozenset({"octane", "octanerender", "octane_node", "octanenode", "redshiftcmdline", "redshiftbenchmark",
                         "kick", "husk", "vray", "corona", "commandline", "hbatch", "mayabatch", "render", "3dsmaxcmd",
                         "katanabin"})
OLLAMA_PROCESSES = ("ollama", "ollama_llama_server", "ollama app", "llama-server")


def renderer_names(extra: str = "") -> tuple[str, ...]:
    """The processes that count as renderers: the defaults plus ``extra`` (the setting
    ``renderer_processes``, comma-separated)."""
    return DEFAULT_RENDERERS + tuple(n.strip() for n in extra.split(",") if n.strip())


def process_key(name: str) -> str:
    """"Cinema 4D.exe" → "cinema 4d"; "/opt/hfs/bin/hython" → "hython"."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1].strip().lower()
    return base[:-4] if base.endswith(".exe") else base


@dataclass(frozen=True)
class GpuSample:
    index: int
    total_mb: int
    used_mb: int
    util: int | None = None  # percent; None where the driver does not say
    name: str = ""

    @property
    def free_mb(self) -> int:
        return max(0, self.total_mb - self.used_mb)


@dataclass(frozen=True)
class ProcessSample:
    pid: int
    name: str
    gpu: int
    used_mb: int | None = None  # None: not reported (Windows WDDM, WSL2)


@dataclass(frozen=True)
class Sample:
    """One reading: the trace format's line, ``{"t", "gpus": [...], "processes": [...]}``.
    No GPUs (or ``error``) means the driver could not be read at that moment."""

    t: float
    gpus: tuple[GpuSample, ...] = ()
    processes: tuple[ProcessSample, ...] = ()
    error: str = ""

    def to_json(self) -> dict:
        d: dict = {"t": round(self.t, 3),
                   "gpus": [{"index": g.index, "total_mb": g.total_mb, "used_mb": g.used_mb, "util": g.util,
                             **({"name": g.name} if g.name else {})} for g in self.gpus],
                   "processes": [{"pid": p.pid, "name": p.name, "gpu": p.gpu, "used_mb": p.used_mb}
                                 for p in self.processes]}
        if self.error:
            d["error"] = self.error
        return d

    @classmethod
    def from_json(cls, d: dict) -> "Sample":
        """Raises ValueError (with what is wrong) for anything that is not a sample."""
        if not isinstance(d, dict):
            raise ValueError("a sample is a JSON object")
        try:
            t = float(d["t"])
            gpus = tuple(GpuSample(index=int(g["index"]), total_mb=int(g["total_mb"]), used_mb=int(g["used_mb"]),
                                   util=None if g.get("util") is None else int(g["util"]), name=str(g.get("name") or ""))
                         for g in d.get("gpus") or ())
            procs = tuple(ProcessSample(pid=int(p["pid"]), name=str(p.get("name") or ""), gpu=int(p.get("gpu") or 0),
                                        used_mb=None if p.get("used_mb") is None else int(p["used_mb"]))
                          for p in d.get("processes") or ())
        except KeyError as exc:
            raise ValueError(f"missing field {exc.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"a field has the wrong type ({exc})") from None
        if t != t or t in (float("inf"), float("-inf")):
            raise ValueError("t must be a finite number of seconds")
        if any(g.total_mb <= 0 or g.used_mb < 0 for g in gpus):
            raise ValueError("total_mb must be positive and used_mb not negative")
        return cls(t=t, gpus=gpus, processes=procs, error=str(d.get("error") or ""))


@dataclass(frozen=True)
class GuardConfig:
    margin_mb: int = 1024  # kept free on top of Kelvin's own models
    reserve_mb: int = 0  # a fixed reserve instead (0: Kelvin's models + margin)
    model_mb_guess: int = 5000  # Kelvin's models before Ollama has said how big they are
    rise_mb: int = 1024  # a renderer growing this much …
    rise_window_s: float = 1.0  # … within this long is a render starting
    busy_util: int = 80  # utilisation (%) that counts as heavy work when a renderer is on the GPU …
    busy_s: float = 3.0  # … held this long
    hold_s: float = 20.0  # the pressure must stay gone this long before Kelvin returns to the GPU
    action_timeout_s: float = 30.0  # an unload or resume not reported done by then is given up on
    renderers: tuple[str, ...] = DEFAULT_RENDERERS
    ollama_processes: tuple[str, ...] = OLLAMA_PROCESSES


@dataclass(frozen=True)
class Transition:
    t: float
    from_state: str
    to_state: str
    reason: str
    action: str = NONE  # what the guard must now do: unload | resume | none

    def to_json(self) -> dict:
        return {"t": round(self.t, 3), "from": self.from_state, "to": self.to_state, "reason": self.reason,
                "action": self.action}


@dataclass(frozen=True)
class Pressure:
    """Why the GPU is under pressure now ("" for not), and the renderer it is about."""

    reason: str = ""
    renderer: str = ""

    def __bool__(self) -> bool:
        return bool(self.reason)


@dataclass
class _Seen:
    """What the policy remembers between samples."""

    proc_mb: dict[tuple[int, int], list[tuple[float, int]]] = field(default_factory=dict)  # (gpu, pid) → [(t, mb)]
    others_mb: dict[int, list[tuple[float, int]]] = field(default_factory=dict)  # gpu → [(t, mb)] (no per-process)
    busy_since: dict[int, float] = field(default_factory=dict)  # gpu → t utilisation went high with a renderer


def mb_text(n: float) -> str:
    return f"{n / 1024:.1f} GB" if n >= 1024 else f"{int(n)} MB"


def renderer_label(name: str) -> str:
    key = process_key(name)
    pretty = {"octane": "Octane", "octanerender": "Octane", "octane_node": "the Octane render node",
              "octanenode": "the Octane render node", "redshiftcmdline": "Redshift", "kick": "Arnold (kick)",
              "husk": "Karma (husk)", "vray": "V-Ray", "corona": "Corona", "blender": "Blender",
              "cinema 4d": "Cinema 4D", "cinema4d": "Cinema 4D", "commandline": "Cinema 4D (command line)",
              "hython": "Houdini (hython)", "houdini": "Houdini", "houdinifx": "Houdini", "maya": "Maya",
              "maya.bin": "Maya", "mayabatch": "Maya (batch)", "3dsmax": "3ds Max", "katana": "Katana"}
    return pretty.get(key, name)


class VramPolicy:
    """Feed it samples (:meth:`observe`), the artist's buttons (:meth:`free_now`, :meth:`resume`) and
    the end of each action (:meth:`done`); each returns the transitions it caused, in order."""

    def __init__(self, config: GuardConfig = GuardConfig()):
        self.config = config
        self.state = NORMAL
        self.since = 0.0  # when the current state began (trace time)
        self.last: Sample | None = None
        self.kelvin_mb = 0  # what Kelvin's models hold on the GPUs now (from Ollama's ps)
        self.model_mb = 0  # how much they took when last loaded (for the reserve while yielded)
        self.held = False  # the artist pressed "Free VRAM now": stay yielded until "Resume"
        self.overridden = False  # the artist resumed during a render: ignore that pressure until it clears
        self.clear_since: float | None = None  # pressure gone since (while yielded)
        self.pressure = Pressure()
        self.why = ""  # the reason of the last yield (for the recovery message)
        self._resume_asked = False
        self._seen = _Seen()
        self._renderers = frozenset(process_key(n) for n in config.renderers)
        self._ollama = frozenset(process_key(n) for n in config.ollama_processes)

    # ---- inputs -------------------------------------------------------------------------------------
    def set_kelvin_vram(self, mb: int) -> None:
        """What Ollama's ``ps`` says Kelvin's models hold on the GPU now."""
        self.kelvin_mb = max(0, int(mb))
        if self.kelvin_mb:
            self.model_mb = self.kelvin_mb

    @property
    def reserve_mb(self) -> int:
        if self.config.reserve_mb > 0:
            return self.config.reserve_mb
        return (self.model_mb or self.config.model_mb_guess) + self.config.margin_mb

    def observe(self, s: Sample) -> list[Transition]:
        if not s.gpus:
            self.last = s
            if self.state == OFF:
                return []
            why = s.error or "no NVIDIA GPU answers"
            return [self._go(s.t, OFF, f"the GPU cannot be read ({why}); the VRAM guard is off", NONE)]
        if self.last is not None and s.t < self.last.t:
            return []  # a sample from the past (clock step): ignore it
        self.pressure = p = self._assess(s)
        self.last = s
        out: list[Transition] = []
        if self.state == OFF:
            back = YIELDED if (self.held or self.why) else NORMAL
            out.append(self._go(s.t, back, "the GPU is back; the VRAM guard is on again", NONE))
            self.clear_since = None
        if not p:
            self.overridden = False
        if self.state == NORMAL and p and not self.overridden:
            self.why = p.reason
            out.append(self._go(s.t, YIELDING, p.reason, UNLOAD))
        elif self.state == RECOVERING and p and not self.overridden:
            self.why = p.reason
            out.append(self._go(s.t, YIELDING, p.reason + " (again, while Kelvin was coming back)", UNLOAD))
        elif self.state == YIELDED:
            if p or self.held:
                self.clear_since = None
            elif self.clear_since is None:
                self.clear_since = s.t
            elif s.t - self.clear_since >= self.config.hold_s:
                out.append(self._go(s.t, RECOVERING, f"the GPU has been free for {self.config.hold_s:g} s"
                                    + (f" (Kelvin had left because {self.why})" if self.why else ""), RESUME))
        out += self._timeouts(s.t)
        return out

    def free_now(self, t: float) -> list[Transition]:
        """The artist's "Free VRAM now"."""
        self.held, self.overridden = True, False
        if self.state in (NORMAL, RECOVERING):
            self.why = "the artist asked to free the VRAM"
            return [self._go(t, YIELDING, self.why, UNLOAD)]
        return []

    def resume(self, t: float) -> list[Transition]:
        """The artist's "Resume": back to the GPU now, whatever the pressure."""
        self.held = False
        if self.pressure:
            self.overridden = True
        if self.state == YIELDED:
            return [self._go(t, RECOVERING, "the artist resumed" + (" during a render; Kelvin stays on the GPU "
                                                                      "until it ends" if self.pressure else ""), RESUME)]
        if self.state == YIELDING:
            self._resume_asked = True
        return []

    def done(self, t: float, ok: bool = True, detail: str = "") -> list[Transition]:
        """The action of the current state (unload or resume) finished; ``detail`` says how."""
        if self.state == YIELDING:
            self.kelvin_mb = 0 if ok else self.kelvin_mb
            out = [self._go(t, YIELDED, detail or ("Kelvin is off the GPU" if ok else "the unload was not confirmed"),
                            NONE)]
            self.clear_since = None
            if self._resume_asked:
                self._resume_asked = False
                out += self.resume(t)
            return out
        if self.state == RECOVERING:
            self.why = ""
            return [self._go(t, NORMAL, detail or "Kelvin is back on the GPU", NONE)]
        return []

    # ---- the pressure -------------------------------------------------------------------------------
    def _assess(self, s: Sample) -> Pressure:
        c, seen = self.config, self._seen
        by_gpu: dict[int, list[ProcessSample]] = {}
        for proc in s.processes:
            by_gpu.setdefault(proc.gpu, []).append(proc)
        ollama_gpus = [g.index for g in s.gpus if any(process_key(p.name) in self._ollama for p in by_gpu.get(g.index, ()))]
        found = Pressure()
        live: set[tuple[int, int]] = set()
        for g in s.gpus:
            procs = by_gpu.get(g.index, [])
            renderers = [p for p in procs if process_key(p.name) in self._renderers]
            mine = self._kelvin_share(g, procs, ollama_gpus, len(s.gpus))
            free_for_others = g.free_mb + mine
            if not found and free_for_others < self.reserve_mb:
                who = renderers[0].name if renderers else ""
                found = Pressure(f"{renderer_label(who) + ' is using the VRAM: ' if who else ''}only "
                                 f"{mb_text(free_for_others)} free on GPU {g.index}, under the "
                                 f"{mb_text(self.reserve_mb)} Kelvin keeps in reserve", who)
            # a renderer's memory rising fast (per process where the driver says, else the device's)
            known = [p for p in renderers if p.used_mb is not None]
            for p in known:
                key = (g.index, p.pid)
                live.add(key)
                if key not in seen.proc_mb:  # a render-only process that appears mid-session starts from zero
                    fresh = self.last is not None and process_key(p.name) in RENDER_ONLY
                    seen.proc_mb[key] = [(s.t - c.rise_window_s, 0)] if fresh else []
                hist = seen.proc_mb[key]
                hist.append((s.t, p.used_mb))
                rise = self._rise(hist, s.t)
                if not found and rise >= c.rise_mb:
                    found = Pressure(f"a render started in {renderer_label(p.name)}: its VRAM grew by {mb_text(rise)} in "
                                     f"{c.rise_window_s:g} s", p.name)
            others = g.used_mb - mine
            hist = seen.others_mb.setdefault(g.index, [])
            hist.append((s.t, others))
            if renderers and not known:
                rise = self._rise(hist, s.t)
                if not found and rise >= c.rise_mb:
                    found = Pressure(f"a render started in {renderer_label(renderers[0].name)}: VRAM in use grew by "
                                     f"{mb_text(rise)} in {c.rise_window_s:g} s", renderers[0].name)
            else:
                self._rise(hist, s.t)  # keep the window trimmed
            if self._working(renderers, procs) and g.util is not None and g.util >= c.busy_util:
                start = seen.busy_since.setdefault(g.index, s.t)
                if not found and s.t - start >= c.busy_s:
                    found = Pressure(f"{renderer_label(renderers[0].name)} is rendering: GPU {g.index} busy at {g.util}% "
                                     f"for {s.t - start:.0f} s", renderers[0].name)
            else:
                seen.busy_since.pop(g.index, None)
        for key in [k for k in seen.proc_mb if k not in live]:
            del seen.proc_mb[key]  # the process left
        return found

    def _working(self, renderers: list[ProcessSample], procs: list[ProcessSample]) -> bool:
        """Is the GPU's utilisation likely a renderer's? Yes where the driver does not say who holds
        what; else only if a renderer holds the most memory of everything but Kelvin (a game beside
        an open Blender is the game's)."""
        if not renderers:
            return False
        known = [p for p in procs if p.used_mb is not None and process_key(p.name) not in self._ollama]
        if not known or all(p.used_mb is None for p in renderers):
            return True
        top = max(known, key=lambda p: p.used_mb or 0)
        return process_key(top.name) in self._renderers

    def _rise(self, hist: list[tuple[float, int]], now: float) -> int:
        """Growth within the window: the newest value over the lowest one in it."""
        while len(hist) > 1 and hist[1][0] <= now - self.config.rise_window_s - 1e-9:
            hist.pop(0)
        return max(0, hist[-1][1] - min(mb for _, mb in hist))

    def _kelvin_share(self, g: GpuSample, procs: list[ProcessSample], ollama_gpus: list[int], n_gpus: int) -> int:
        """What Kelvin's models hold on this GPU: Ollama's processes there where the driver says,
        else Kelvin's total spread over the GPUs Ollama is on (all of it on a single GPU)."""
        if not self.kelvin_mb:
            return 0
        mine = [p.used_mb for p in procs if process_key(p.name) in self._ollama and p.used_mb is not None]
        if mine:
            return min(sum(mine), self.kelvin_mb)
        if ollama_gpus:
            return self.kelvin_mb // len(ollama_gpus) if g.index in ollama_gpus else 0
        return self.kelvin_mb if n_gpus == 1 else 0

    # ---- helpers ------------------------------------------------------------------------------------
    def _timeouts(self, t: float) -> list[Transition]:
        if self.state in (YIELDING, RECOVERING) and t - self.since >= self.config.action_timeout_s:
            what = "unloading" if self.state == YIELDING else "coming back"
            return self.done(t, ok=False, detail=f"{what} did not finish within {self.config.action_timeout_s:g} s; "
                                                 "carrying on")
        return []

    def _go(self, t: float, to: str, reason: str, action: str) -> Transition:
        tr = Transition(t, self.state, to, reason, action)
        self.state, self.since = to, t
        return tr

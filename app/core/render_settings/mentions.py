"""What the settings rules read from a message (a ``Mention``: a setting, its value, what was said of
it) and what a conversation carries from one message to the next (a ``Context``). Apart from the
rules themselves (``app.core.render_settings.extraction``), so that reading the ledger — ``kelvin settings list``,
the window's Settings tab — never loads the rules' patterns."""
from __future__ import annotations

from dataclasses import dataclass, field

from app.core.render_settings.parameters import ParamSpec, Value

APPLIED, PROPOSED, REJECTED = "applied", "proposed", "rejected"


@dataclass(frozen=True)
class Mention:
    """One setting stated in a message."""

    engine: str  # ANY ("") for engine-agnostic parameters
    parameter: str  # the canonical key ("gi_clamp"); for a candidate, the words used
    value: Value
    unit: str
    status: str
    candidate: bool = False  # a parameter the taxonomy does not know
    name: str = ""  # display name ("GI clamp")
    domain: str = "general"
    restore: bool = False  # said as a return to an earlier value ("back to 25")
    confirmed: bool = field(default=False, compare=False)  # a proposal taken by "ok"/"done", its value unsaid
    before: bool = False  # the value in use before a change this message tells ("from 2000 to 4000": 2000)
    scope: str = ""  # the named light, camera, output or object it belongs to ("" render-wide)
    sure: bool = True  # False: the reading is unsure, the ledger asks before taking it as decided
    confidence: float = field(default=1.0, compare=False)  # the status model's probability of its reading
    sentence: int = field(default=-1, compare=False)  # the sentence of the message it was read in
    guessed: str = field(default="", compare=False)  # a loose value the rules did not read, offered to the
    # status model with the parameter it most likely belongs to: "named" (in its sentence), "sentence"
    # (read there with another value), "context" (talked about just before)

    def to_json(self) -> dict:
        value = list(self.value) if isinstance(self.value, tuple) else self.value
        return {"engine": self.engine or None, "parameter": self.parameter, "value": value, "unit": self.unit,
                "status": self.status, **({"candidate": True} if self.candidate else {}),
                **({"scope": self.scope} if self.scope else {}), **({} if self.sure else {"sure": False})}


@dataclass(frozen=True)
class Context:
    """What the conversation is about, carried from one message to the next."""

    engine: str = ""
    last: tuple[ParamSpec, ...] = ()  # parameters of the last message that stated any
    proposals: tuple[Mention, ...] = ()  # proposals not answered yet (the last message that made any)
    applied: tuple[Mention, ...] = ()  # what the last applying message applied (for "that didn't help")
    asked: tuple[ParamSpec, ...] = ()  # named without a value in the last message ("what's your refraction limit?")
    objects: tuple[str, ...] = ()  # the lights, cameras and outputs named so far ("turntable", "key"), newest last

"""Whether the ledger may state a value as current (issue 30): the last check before a value is said.

The ledger's fold (``ledger.fold``) says which value was decided last; it cannot know how likely that
reading is to be the value really in use. A wrong current value is the one failure an artist must
never see — recall answers, chips, the Settings tab and the brief all repeat it — so a small learned
model looks at the whole story of the setting, across its lights, cameras and outputs, and answers
how likely the decided value is to be right. Under the model's threshold the ledger does not assert
it: the setting is *to confirm* ("Still 128 for brute-force rays?") until the artist says.

What it reads (all of it in the ledger's own entries; nothing about other settings, so a new entry
changes only its own parameter's answers):

* how the decision was read: the status model's confidence, a confirmation of a proposal ("ok,
  done"), a return ("back to 4"), the old value of a change, said by the rules or by the model;
* what happened to the setting after it: proposals of other values nobody answered in words the
  rules read, readings in doubt, turned-down values, changes to the same parameter on other objects;
* its shape: which parameter and what kind of object it belongs to, whether a scope was named, how
  many other lights or outputs of the same parameter there are, a render-wide value beside scoped ones.

The weights come from ``bench/train_trust.py`` (leave-one-set-out over the labelled sets: every
training row is read by a status model that never saw its set), stored in ``resources/
trust_model.json``. Reading costs a few dictionary look-ups. Pure: no I/O.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from app.core.render_settings.mentions import APPLIED, PROPOSED, REJECTED
from app.core.render_settings.parameters import same_value

# the kinds the shipped gate was trained with (not scopes.py's object keys: exposure and white balance
# count as camera here, frame rate as output — changing them changes the gate's features)
LIGHT = {"light_temperature", "light_power", "light_intensity"}
CAMERA = {"focal_length", "f_stop", "shutter_speed", "iso", "depth_of_field", "exposure", "white_balance"}
OUTPUT = {"resolution", "resolution_percentage", "frame_rate"}


@dataclass(frozen=True)
class TrustModel:
    """Feature → weight (a logistic regression), its bias, and the probability under which the ledger
    asks instead of asserting."""

    weights: dict[str, float] = field(default_factory=dict)
    bias: float = 0.0
    threshold: float = 0.0

    @classmethod
    def from_json(cls, data: dict) -> "TrustModel":
        return cls(weights={str(k): float(v) for k, v in (data.get("weights") or {}).items()},
                   bias=float(data.get("bias", 0.0)), threshold=float(data.get("threshold", 0.0)))

    def probability(self, features: list[str]) -> float:
        z = self.bias + sum(self.weights.get(f, 0.0) for f in features)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    def trusts(self, features: list[str]) -> bool:
        return self.probability(features) >= self.threshold


def _bucket(x: float, edges: tuple[float, ...]) -> str:
    for edge in edges:
        if x < edge:
            return f"<{edge}"
    return f">={edges[-1]}"


def _kind(parameter: str) -> str:
    if parameter in LIGHT:
        return "light"
    if parameter in CAMERA:
        return "camera"
    if parameter in OUTPUT:
        return "output"
    return "render"


def features(decision, history: list, siblings: dict[str, list], changed: int) -> list[str]:
    """``decision``: the entry in force; ``history``: its setting's entries in order (this scope);
    ``siblings``: the same parameter's entries on other scopes, by scope, each in order; ``changed``:
    how many times the decided value was replaced."""
    d = decision
    kind = _kind(d.parameter)
    out = ["bias", f"param:{d.engine}.{d.parameter}", f"kind:{kind}", f"by:{d.by}",
           f"conf:{_bucket(getattr(d, 'confidence', 1.0), (0.6, 0.7, 0.8, 0.9, 0.95, 0.99))}",
           f"scoped:{bool(d.scope)}:{kind}", f"changed:{min(changed, 3)}"]
    for flag in ("confirmed", "restore", "before"):
        if getattr(d, flag, False):
            out.append(f"how:{flag}")
    value = d.value
    out.append("value:" + ("none" if value is None else "bool" if isinstance(value, bool) else "range"
                           if isinstance(value, tuple) else "text" if isinstance(value, str) else "number"))
    at = next((n for n, e in enumerate(history) if e.id == d.id), len(history) - 1)
    before, after = history[:at], history[at + 1:]
    out.append(f"entries:{min(len(history), 6)}")
    if not before:
        out.append("first")
    if any(e.status == PROPOSED and same_value(e.value, value) for e in before):
        out.append("proposed_before")
    if any(e.status == REJECTED and e.value is not None and same_value(e.value, value) for e in before):
        out.append("rejected_before")
    later_props = [e for e in after if e.status == PROPOSED and e.value is not None and not same_value(e.value, value)]
    if later_props:
        out.append(f"later_proposals:{min(len(later_props), 2)}")
    if any(not e.sure for e in after):
        out.append("later_unsure")
    if any(e.status == REJECTED and e.value is not None and not same_value(e.value, value) for e in after):
        out.append("later_rejected_other")
    if any(e.status == APPLIED and same_value(e.value, value) for e in after):
        out.append("said_again")
    others = {s: h for s, h in siblings.items() if s != d.scope}
    out.append(f"other_scopes:{min(len(others), 3)}:{bool(d.scope)}")
    decided = [e for h in others.values() for e in h if e.status == APPLIED and e.sure and not e.candidate]
    if decided:
        if any(same_value(e.value, value) for e in decided):
            out.append("sibling_same_value")
        if any(e.order > d.order for e in decided):
            out.append(f"sibling_later:{bool(d.scope)}")
        if not d.scope:
            out.append(f"unscoped_among_scoped:{kind}")
    return out

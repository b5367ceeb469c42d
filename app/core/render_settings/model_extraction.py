"""The optional model pass over a message: a prompt, a JSON schema, and a strict check.

A small model may see settings the rules missed. Its output is never trusted: every item must
name a parameter the taxonomy knows (for the engine said), carry a value that parses for that
parameter, and a known status; the model's own replies can only propose. Anything else is
dropped, and a reply that is not the JSON asked for yields nothing. Pure.
"""
from __future__ import annotations

import json

from app.core.render_settings.mentions import APPLIED, PROPOSED, REJECTED, Mention
from app.core.render_settings.parameters import ANY, Catalogue, check_value, parse_value

MAX_ITEMS = 12
SCHEMA = {
    "type": "object",
    "properties": {"settings": {"type": "array", "items": {
        "type": "object",
        "properties": {"engine": {"type": "string"}, "parameter": {"type": "string"},
                       "value": {"type": ["string", "number", "boolean"]}, "status": {"type": "string",
                                                                                    "enum": [APPLIED, PROPOSED, REJECTED]}},
        "required": ["engine", "parameter", "value", "status"]}}},
    "required": ["settings"],
}


def prompt(text: str, role: str, cat: Catalogue, engine: str) -> list[dict]:
    """Chat messages asking for the settings in ``text``; the parameter list is limited to the
    engine being talked about (all engines if none) plus the engine-agnostic ones."""
    specs = [s for s in cat.specs.values() if s.engine in ({engine, ANY} if engine else {s.engine})]
    listing = "\n".join(f"- {s.engine or 'any'} / {s.key}: {s.name} ({s.kind}"
                        + (f", one of {', '.join(s.values)}" if s.values else "") + (f", {s.unit}" if s.unit else "") + ")"
                        for s in specs[:200])
    system = ("You extract render settings from one chat message of a 3D artist's conversation. Only settings "
              "stated in the message, with a value. status: 'applied' if the artist set or confirmed it, "
              "'proposed' if it is a suggestion, 'rejected' if it is turned down. engine: the render engine, "
              "or 'any' for camera, light and output settings. Use only these parameters:\n" + listing +
              '\nAnswer with JSON: {"settings": [{"engine": ..., "parameter": ..., "value": ..., "status": ...}]}; '
              'an empty list if there are none.')
    speaker = "the AI assistant" if role == "assistant" else "the artist"
    return [{"role": "system", "content": system}, {"role": "user", "content": f"Message from {speaker}:\n{text[:4000]}"}]


def check(output: str, role: str, cat: Catalogue) -> list[Mention]:
    """The valid items of a model's answer, as mentions; everything doubtful is dropped."""
    try:
        data = json.loads(output)
    except (ValueError, TypeError):
        return []
    items = data.get("settings") if isinstance(data, dict) else None
    if not isinstance(items, list):
        return []
    out: list[Mention] = []
    for item in items[:MAX_ITEMS]:
        if not isinstance(item, dict):
            continue
        engine = str(item.get("engine") or "").strip().lower()
        engine = ANY if engine in ("", "any", "none", "null") else engine
        spec = cat.specs.get((engine, str(item.get("parameter") or "").strip().lower()))
        status = item.get("status")
        if spec is None or status not in (APPLIED, PROPOSED, REJECTED):
            continue
        if role == "assistant" and status != PROPOSED:
            continue  # the model's own replies only ever suggest
        raw = item.get("value")
        if isinstance(raw, bool):
            raw = "on" if raw else "off"
        if raw is None or isinstance(raw, (list, dict)):
            continue
        try:
            value, unit = check_value(spec, *parse_value(spec, str(raw)[:200]))
        except ValueError:
            continue
        out.append(Mention(engine=spec.engine, parameter=spec.key, value=value, unit=unit, status=status,
                           name=spec.name, domain=spec.domain))
    return out

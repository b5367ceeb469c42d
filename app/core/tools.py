"""The long-term memory tools offered to a model that can call tools.

``save_to_model_memory(text, category)`` keeps a durable fact or preference; ``recall(query)``
looks things up in the project's memory. Schemas in Ollama's (OpenAI-style) function format, and
strict checking of what a model sends back: a malformed call gets an error result, never an
exception and never a write.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

from app.core.records import RecordError, check_name, check_text
from app.core.tokens import estimate

MAX_TOOL_ROUNDS = 3
MAX_SAVED_CHARS = 2000  # a memory is a fact, not a document
CATEGORIES = ("fact", "preference", "decision", "client", "pipeline", "hardware")

SCHEMAS = [
    {
        "type": "function",
        "function": {
            "name": "save_to_model_memory",
            "description": ("Keep a durable fact or preference about this project or the artist for future "
                            "conversations (e.g. 'client wants warm key light', 'renders on two RTX 4090'). "
                            "Use only for things worth remembering for days, not for chit-chat."),
            "parameters": {
                "type": "object",
                "properties": {
                    "text": {"type": "string", "description": "the fact, one or two sentences"},
                    "category": {"type": "string", "enum": list(CATEGORIES)},
                },
                "required": ["text", "category"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "recall",
            "description": ("Search this project's memory (past messages and kept facts) for something not "
                            "already in your context, e.g. a setting discussed days ago."),
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to look for"}},
                "required": ["query"],
            },
        },
    },
]
# what the schemas take in the prompt: chat templates render them as JSON plus a few lines of framing
SCHEMA_TOKENS = estimate(json.dumps(SCHEMAS)) + 48
RESULT_TOKENS = 400  # the most one tool result may add to the window


@dataclass(frozen=True)
class Save:
    text: str
    category: str


@dataclass(frozen=True)
class Recall:
    query: str


def check_call(name: str, arguments: object) -> Save | Recall:
    """The call a model made, validated. Raises :class:`RecordError` with a reason to send back."""
    if not isinstance(arguments, dict):
        raise RecordError("arguments must be a JSON object")
    if name == "save_to_model_memory":
        text = check_text(arguments.get("text"), "text")
        if len(text) > MAX_SAVED_CHARS:
            raise RecordError(f"text is {len(text)} characters; keep a memory under {MAX_SAVED_CHARS}")
        category = str(arguments.get("category") or "fact").strip().lower()
        return Save(text.strip(), category if category in CATEGORIES else check_name(category, "category"))
    if name == "recall":
        return Recall(check_text(arguments.get("query"), "query").strip())
    raise RecordError(f"there is no tool named {name!r}; the tools are save_to_model_memory and recall")

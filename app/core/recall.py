"""Answers from memory alone, for when there is no model: recall mode, or Ollama away.

The answer quotes what is stored — current settings, kept facts, and the best matching past
messages — each with its date and where it came from, so the artist can act on it or find the
whole message. Nothing is invented: every line is a quote or a source.
"""
from __future__ import annotations

import re

from app.core.context import when
from app.core.highlight import spans
from app.core.records import Memory, Message
from app.core.tokens import clip

QUOTE_TOKENS = 90  # per quoted message
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")


def _best_passage(text: str, question: str, max_tokens: int = QUOTE_TOKENS) -> str:
    """The sentences of ``text`` that share the most words with the question, in their order."""
    words = {w.lower() for w in _WORD.findall(question) if len(w) > 2}
    sentences = [s.strip() for s in _SENTENCE.split(text) if s.strip()]
    if len(sentences) <= 2 or not words:
        return clip(text.strip(), max_tokens, "")[0]
    scored = sorted(range(len(sentences)),
                    key=lambda i: -len(words & {w.lower() for w in _WORD.findall(sentences[i])}))
    keep = sorted(scored[:3])
    passage = " … ".join(sentences[i] for i in keep)
    if keep[0] > 0:
        passage = "… " + passage
    return clip(passage, max_tokens, "")[0]


def said_line(m: Message) -> str:
    """Who said it and when, as a person reads it, and where it is kept (the domain's notes)."""
    who = m.speaker or {"user": "You", "assistant": "Kelvin"}.get(m.role, m.role)
    return f"{who}, {when(m.ts_ms)} (in the {m.tags.domain} notes)"


def _quote(text: str) -> str:
    return "\n".join("> " + line if line.strip() else ">" for line in text.splitlines())


def recall_answer(question: str, *, reason: str, settings: tuple[str, ...] = (), memories: tuple[Memory, ...] = (),
                  messages: tuple[Message, ...] = (), limit: int = 5) -> str:
    """Markdown answer built from memory. ``reason`` is the first line: why there is no model."""
    out = [f"_{reason}_", ""]
    # past messages that say a word of the question themselves (not found through a neighbour's words)
    messages = tuple(m for m in messages if spans(m.text, question))
    if not (settings or memories or messages):
        shown = clip(" ".join(question.split()), 30, "")[0]
        out.append(f"Nothing in this project's memory matches “{shown}”.")
        return "\n".join(out)
    out.append("From this project's memory:")
    if settings:
        out += ["", "**Current settings**"] + [f"- {line}" for line in settings]
    if memories:
        out += ["", "**Kept facts and preferences**"]
        out += [f"- {m.text} _(kept {when(m.ts_ms)}, {m.category})_" for m in memories[:limit]]
    if messages:
        out += ["", "**What was said**"]
        for m in messages[:limit]:
            out += ["", f"{said_line(m)}:", _quote(_best_passage(m.text, question))]
    return "\n".join(out)

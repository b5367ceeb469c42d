"""Token counts without a tokenizer: an estimate before the call, calibrated by the model after it.

Kelvin must know a prompt's size before sending it, but shipping every model's tokenizer is not
an option. The estimate counts word pieces and punctuation the way BPE vocabularies of Llama-,
Qwen- and Mistral-class models split English, code and numbers (within ~15% on such text);
:class:`Calibration` then learns the ratio between the estimate and Ollama's own
``prompt_eval_count`` for the model in use, so the budget tightens to the truth after one turn.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# a word, a run of digits (split into groups of three, as Llama 3 does), or one symbol
_PIECES = re.compile(r"[^\W\d_]+|\d{1,3}|[^\w\s]|_+")
MESSAGE_OVERHEAD = 4  # role header and separators per chat message
WORD_CHARS_PER_TOKEN = 5  # long words split into pieces of about this size


_LONG_WORDS = re.compile(r"[^\W\d_]{%d,}" % (WORD_CHARS_PER_TOKEN + 1))


def estimate(text: str) -> int:
    """Estimated tokens in ``text`` (uncalibrated)."""
    if text.isascii():  # (the same count, without a Python step per piece: a long paste is counted often)
        return (len(_PIECES.findall(text)) + sum((len(w) - 1) // WORD_CHARS_PER_TOKEN for w in _LONG_WORDS.findall(text))
                + text.count("\n\n"))
    n = 0
    for piece in _PIECES.findall(text):
        if piece[0].isalpha() and len(piece) > WORD_CHARS_PER_TOKEN:
            n += 1 + (len(piece) - 1) // WORD_CHARS_PER_TOKEN
        elif piece[0].isalpha() and not piece.isascii():
            n += len(piece)  # scripts without spaces (CJK) are about a token per character
        else:
            n += 1
    return n + text.count("\n\n")


def estimate_messages(messages: list[dict]) -> int:
    return sum(estimate(m.get("content") or "") + MESSAGE_OVERHEAD for m in messages)


@dataclass
class Calibration:
    """The model's tokens per estimated token, learned from ``prompt_eval_count``.

    A moving average, clamped, so one odd reply (a cached prompt prefix reports fewer tokens)
    cannot make Kelvin overfill the window. Ollama counts only the uncached part of a prompt
    when it reuses a cache, so observations below half the estimate are ignored.
    """

    ratio: float = 1.0
    observations: int = 0
    weight: float = 0.3
    low: float = 0.6
    high: float = 2.5

    def tokens(self, text: str) -> int:
        return self.scale(estimate(text))

    def scale(self, estimated: int) -> int:
        return int(estimated * self.ratio + 0.999)

    def observe(self, estimated: int, actual: int | None) -> None:
        if not actual or estimated <= 0 or actual < estimated * 0.5 * self.low:
            return
        seen = min(self.high, max(self.low, actual / estimated))
        self.ratio = seen if self.observations == 0 else (1 - self.weight) * self.ratio + self.weight * seen
        self.observations += 1


def clip(text: str, max_tokens: int, note: str = "") -> tuple[str, bool]:
    """``text`` cut to about ``max_tokens`` at a word boundary, with a visible marker.

    Returns ``(text, cut)``. The marker says how much was left out and, with ``note``, where the
    whole text is (``note`` e.g. "full message m_… is in memory").
    """
    if estimate(text) <= max_tokens:
        return text, False
    marker_tokens = 24
    keep = max(0, max_tokens - marker_tokens)
    # binary search the longest prefix (at a whitespace boundary) that fits — within the first few
    # characters per token kept when that prefix holds too many already (a long paste is not searched whole)
    lo, hi = 0, len(text)
    if (keep + 1) * 8 < hi and estimate(text[:(keep + 1) * 8]) > keep:
        hi = (keep + 1) * 8
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if estimate(text[:mid]) <= keep:
            lo = mid
        else:
            hi = mid - 1
    head = text[:lo]
    cut_at = max(head.rfind(" "), head.rfind("\n"))
    if cut_at > len(head) // 2:
        head = head[:cut_at]
    head = head.rstrip()
    left = len(text) - len(head)
    marker = f" […{left:,} more characters not shown" + (f"; {note}" if note else "") + "]"
    return head + marker, True

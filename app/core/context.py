"""The model's window for one turn: what goes in, in what order, and how much of each.

Kelvin never sends the history. Each turn the window holds the system prompt, the pinned
project brief, the current values of relevant settings, the best memories (curated facts and
whole past messages, with their date and domain), the last turns verbatim, and the question —
packed against a token budget with a reserve for the answer. Pure: no model, no disk.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import compress

from app.core.dates import written
from app.core.records import Memory, Message
from app.core.tokens import MESSAGE_OVERHEAD, Calibration, clip, estimate, estimate_messages

RECENT_TURNS = 3
TOOLS_MAX_FRACTION = 8  # tool schemas may take at most an eighth of the window
NOTE_TOKENS = 120  # a folded message becomes a note of about this size
_KEY_LINE = re.compile(r"\d|error|warn|fail|crash|out of|exceed|fatal|cuda|vram|memory", re.I)


@dataclass(frozen=True)
class Budget:
    """How the window is shared. Shares are of what is left after the system prompt, the
    question and the answer's reserve; what a section leaves unused goes to the memories."""

    num_ctx: int = 8192
    answer: int = 1024  # reserved for the reply
    question_share: float = 0.25  # of the whole window: the most one question may take
    settings_share: float = 0.10
    brief_share: float = 0.15
    recent_share: float = 0.35
    memories_share: float = 0.30  # curated memories, within the memories' part

    @property
    def reserve(self) -> int:
        """Tokens kept free for the answer (a quarter of a small window at most)."""
        return min(self.answer, self.num_ctx // 4)

    def __post_init__(self):
        if self.num_ctx < 1024:
            raise ValueError(f"num_ctx {self.num_ctx} is too small for Kelvin's window (at least 1024)")


@dataclass(frozen=True)
class Ingredients:
    """Everything that may go into the window, best first where order matters."""

    system: str
    question: str
    question_id: str = ""
    brief: str = ""
    settings: tuple[str, ...] = ()
    memories: tuple[Memory, ...] = ()
    recalled: tuple[Message, ...] = ()
    recent: tuple[Message, ...] = ()  # oldest first
    notes: dict[str, str] = field(default_factory=dict)  # message id → a model-written summary
    tools: int = 0  # estimated tokens of the tool schemas offered with the call (the template adds them)
    repeats: int = 0  # past messages the search already left out as repeats of what the window holds


@dataclass(frozen=True)
class Window:
    messages: list[dict]  # for Ollama's chat endpoint
    tokens: dict[str, int]  # per section (calibrated estimate)
    total: int  # the whole prompt as sent (calibrated estimate, tool schemas included)
    memories: tuple[Memory, ...]  # what went in, for "what Kelvin looked at"
    recalled: tuple[Message, ...]
    folded: tuple[str, ...]  # recent messages that went in as notes
    clipped: tuple[str, ...]  # ids of texts that went in cut, with a marker
    num_predict: int
    tools: bool = False  # whether the tool schemas fit (and were counted): offer them only then
    repeats: int = 0  # retrieved texts left out because the window already held them (or their twin)

    @property
    def retrieved_share(self) -> float:
        """The share of the window that is retrieved content, every piece of it distinct."""
        return self.tokens.get("memories", 0) / self.total if self.total else 0.0


_WORDS = re.compile(r"\w+")


def same_words(text: str) -> str:
    """A text reduced to its words, lower-cased: two messages that say the same thing in the same
    words ("What GI clamp did we settle on?" asked twice) reduce to the same string."""
    return " ".join(_WORDS.findall(text.casefold()))


# words that say when, not what: the same question asked "on Monday" and "today" is one question
_WHEN = {"today", "yesterday", "tomorrow", "tonight", "morning", "afternoon", "evening", "week", "weekend", "last",
         "next", "ago", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue",
         "tues", "wed", "thu", "thurs", "fri", "sat", "sun", "january", "february", "march", "april", "may", "june",
         "july", "august", "september", "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul",
         "aug", "sep", "sept", "oct", "nov", "dec", "am", "pm", "utc"}
_SMALL = {"a", "an", "the", "and", "or", "but", "to", "of", "in", "on", "at", "for", "with", "we", "i", "you", "it",
          "is", "are", "was", "were", "be", "did", "do", "does", "that", "this", "so", "what", "which", "our", "my",
          "your", "me", "us", "again", "just", "there", "here", "have", "has", "had", "will", "would", "can", "could"}
_NOT_WHAT = _WHEN | _SMALL
NEAR = 0.7  # two texts whose content words overlap this much (Jaccard) say the same thing
NEAR_MIN_WORDS = 5  # below this, only the same words (up to numbers and dates) make a repeat


def gist(text: str, words: list[str] | None = None) -> str:
    """A text reduced to what it says, not when: its words, lower-cased, every number, date word and
    small word left out ("What GI clamp did we use on Monday, 24 Nov?" and "what GI clamp do we use
    on 2026-11-25" have one gist). ``words``: the text's words, lower-cased, when read already."""
    if words is None:
        words = _WORDS.findall(text.casefold())
    keep = {w: not w[0].isdigit() and w not in _NOT_WHAT for w in set(words)}  # (a Python step per distinct word)
    return " ".join(compress(words, map(keep.__getitem__, words)))


class Seen:
    """What the window holds, to leave out what would only repeat it: the same words, the same words up
    to numbers and dates (a question asked again another day), or nearly the same content words (a
    similar answer)."""

    def __init__(self, texts=()):
        self._same: set[str] = set()
        self._gists: set[str] = set()
        self._words: list[frozenset[str]] = []
        self._read: dict[str, tuple[str, str, frozenset[str]]] = {}  # each text reduced once (pastes are long)
        for t in texts:
            self.add(t)

    def _reduced(self, text: str) -> tuple[str, str, frozenset[str]]:
        got = self._read.get(text)
        if got is None:
            words = _WORDS.findall(text.casefold())
            g = gist(text, words)
            got = self._read[text] = (" ".join(words), g, frozenset(g.split()))
        return got

    def add(self, text: str) -> None:
        same, g, words = self._reduced(text)
        self._same.add(same)
        self._gists.add(g)
        if len(words) >= NEAR_MIN_WORDS:
            self._words.append(words)

    def same(self, text: str) -> bool:
        """Said in the same words (a kept memory is left out only then: it is the durable copy)."""
        return self._reduced(text)[0] in self._same

    def repeats(self, text: str) -> bool:
        same, g, words = self._reduced(text)
        if same in self._same or (g and g in self._gists):
            return True
        return len(words) >= NEAR_MIN_WORDS and any(len(words & w) / len(words | w) >= NEAR for w in self._words)


def distinct(ing: Ingredients) -> tuple[tuple[Memory, ...], tuple[Message, ...], int]:
    """The memories and past messages worth their room: nothing the window holds already (the last
    turns, the question, the pinned brief) and nothing twice (a question asked again, on another day
    too; a similar answer; a message kept as a memory too) — the first of each, the best ranked, is
    kept. Returns them and how many were left out."""
    seen = Seen([ing.question, *(m.text for m in ing.recent), *([ing.brief] if ing.brief.strip() else [])])
    skip_ids = {m.id for m in ing.recent} | {ing.question_id}
    memories, recalled, repeats = [], [], 0
    for m in ing.memories:
        if seen.same(m.text) or (m.category == "brief" and ing.brief.strip()):  # the brief is pinned already
            repeats += 1
            continue
        seen.add(m.text)
        memories.append(m)
    for m in ing.recalled:
        if m.id in skip_ids or seen.repeats(m.text):
            repeats += 1
            continue
        seen.add(m.text)
        recalled.append(m)
    return tuple(memories), tuple(recalled), repeats


def when(ts_ms: int) -> str:
    """Local date and minute, as an artist reads it ("24 Nov 2026 10:42")."""
    return written(ts_ms)


def source_line(m: Message) -> str:
    who = m.speaker or m.role
    bits = [when(m.ts_ms), m.tags.domain, who]
    if m.tags.engine:
        bits.insert(2, m.tags.engine)
    if m.status:
        bits.append(m.status)
    return " · ".join(bits)


def note_for(m: Message, max_tokens: int = NOTE_TOKENS) -> str:
    """A short extractive note standing in for a long message: its opening and its key lines
    (numbers, errors). Used when no model summary is at hand."""
    lines = [ln.strip() for ln in m.text.splitlines() if ln.strip()]
    head = f"[shortened: {len(m.text):,} characters; the whole message is in memory as {m.id}]"
    parts = [lines[0]] if lines else []
    parts += [ln for ln in lines[1:] if _KEY_LINE.search(ln)][:12]
    body, _ = clip(" / ".join(parts), max(16, max_tokens - estimate(head)))
    return f"{head} {body}"


def _fill(items: list[tuple[object, str]], cap: int, cal: Calibration, note: str,
          clipped: list[str] | None = None) -> tuple[list, list[str], int]:
    """Best-first: take whole items while they fit; the first that does not fit goes in clipped
    (if enough room is left to be useful; its id goes to ``clipped``), then packing stops."""
    taken, texts, used = [], [], 0
    for item, text in items:
        cost = cal.scale(estimate(text) + 2)
        if used + cost <= cap:
            taken.append(item)
            texts.append(text)
            used += cost
            continue
        room = cap - used
        if room >= 96 or not taken:
            cut, _ = clip(text, int(room / cal.ratio) - 4, note.format(id=getattr(item, "id", "")))
            if room >= 64:
                taken.append(item)
                texts.append(cut)
                used += cal.scale(estimate(cut) + 2)
                if clipped is not None:
                    clipped.append(getattr(item, "id", str(item)))
        break
    return taken, texts, used


def pack(ing: Ingredients, budget: Budget = Budget(), cal: Calibration | None = None) -> Window:
    cal = cal or Calibration()
    tokens: dict[str, int] = {}
    clipped: list[str] = []

    tokens["system"] = cal.scale(estimate(ing.system) + MESSAGE_OVERHEAD)
    # tool schemas ride in the prompt; in a window too small for them the model gets no tools
    tools_on = bool(ing.tools) and cal.scale(ing.tools) <= budget.num_ctx // TOOLS_MAX_FRACTION
    tokens["tools"] = cal.scale(ing.tools) if tools_on else 0
    q_cap = int(budget.num_ctx * budget.question_share)
    question, cut = clip(ing.question, max(64, int(q_cap / cal.ratio)),
                         f"the whole message is in memory as {ing.question_id}" if ing.question_id else "")
    if cut:
        clipped.append(ing.question_id or "question")
    tokens["question"] = cal.scale(estimate(question) + MESSAGE_OVERHEAD)
    headings = cal.scale(48)  # section headings and separators
    rest = max(0, budget.num_ctx - budget.reserve - tokens["system"] - tokens["tools"] - tokens["question"] - headings)

    # settings: exact current values, small and precious
    settings_items = [(line, f"- {line}") for line in ing.settings]
    _, settings_lines, tokens["settings"] = _fill(settings_items, int(rest * budget.settings_share), cal, "")

    brief = ""
    if ing.brief.strip():
        brief, cut = clip(ing.brief.strip(), int(rest * budget.brief_share / cal.ratio),
                          "the whole brief is in Master_Project_Brief.md")
        tokens["brief"] = cal.scale(estimate(brief) + 4)
        if cut:
            clipped.append("brief")
    else:
        tokens["brief"] = 0

    recent_msgs, folded, tokens["recent"] = _recent(ing, int(rest * budget.recent_share), cal, clipped)

    # memories get the rest: curated ones first (short, durable), then whole past messages
    room = max(0, rest - tokens["settings"] - tokens["brief"] - tokens["recent"])
    kept_memories, kept_messages, repeats = distinct(ing)
    mem_items = [(m, f"- ({m.category}, {when(m.ts_ms)}) {m.text}") for m in kept_memories]
    memories, mem_lines, used_mem = _fill(mem_items, int(room * budget.memories_share), cal,
                                          "the whole memory is {id}", clipped)
    msg_items = [(m, f"- [{source_line(m)}] {m.text}") for m in kept_messages]
    recalled, msg_lines, used_msg = _fill(msg_items, room - used_mem, cal,
                                          "the whole message is in memory as {id}", clipped)
    tokens["memories"] = used_mem + used_msg

    def assemble() -> list[dict]:
        sections = [ing.system.strip()]
        if brief:
            sections.append("## Project brief (pinned)\n" + brief)
        if settings_lines:
            sections.append("## Current settings (from the settings ledger)\n" + "\n".join(settings_lines))
        if mem_lines:
            sections.append("## Kept facts and preferences\n" + "\n".join(mem_lines))
        if msg_lines:
            sections.append("## From earlier in this project (retrieved from memory)\n" + "\n".join(msg_lines))
        return [{"role": "system", "content": "\n\n".join(sections)}, *recent_msgs, {"role": "user", "content": question}]

    # The shares above keep a normal window well inside the limit. A tiny window, a huge system
    # prompt or an extreme calibration can still overflow (markers and notes have a floor): then
    # the least precious parts go, one at a time, until it fits; the question goes in last of all.
    limit = budget.num_ctx - budget.reserve
    while True:
        messages = assemble()
        total = cal.scale(estimate_messages(messages)) + tokens["tools"]
        excess = total - limit
        if excess <= 0:
            break
        while excess > 0:  # drop by estimate, then measure the whole again
            if msg_lines:
                excess -= cal.scale(estimate(msg_lines.pop()) + 1)
                recalled.pop()
            elif mem_lines:
                excess -= cal.scale(estimate(mem_lines.pop()) + 1)
                memories.pop()
            elif recent_msgs:
                excess -= cal.scale(estimate(recent_msgs.pop(0)["content"]) + MESSAGE_OVERHEAD)
            elif settings_lines:
                excess -= cal.scale(estimate(settings_lines.pop()) + 1)
            elif brief:
                excess -= cal.scale(estimate(brief) + 8)
                brief = ""
            elif tools_on:
                excess -= tokens["tools"]
                tools_on, tokens["tools"] = False, 0
            else:
                break
        if excess > 0:  # only the system prompt and the question are left
            shorter, _ = clip(question, max(0, int((cal.scale(estimate(question)) - excess) / cal.ratio)),
                              "the whole message is in memory")
            if len(shorter) >= len(question):
                break  # the system prompt alone is too big: nothing more to drop
            question = shorter
    return Window(messages=messages, tokens=tokens, total=total, memories=tuple(memories),
                  recalled=tuple(recalled), folded=tuple(folded),
                  clipped=tuple(clipped), num_predict=max(budget.reserve, budget.num_ctx - total - budget.num_ctx // 32),
                  tools=tools_on, repeats=ing.repeats + repeats)


def _recent(ing: Ingredients, cap: int, cal: Calibration, clipped: list[str]) -> tuple[list[dict], list[str], int]:
    """The last turns verbatim; when they are too large for their share, the oldest become notes
    (a model summary when there is one, else an extractive note), then the newest are clipped."""
    msgs = list(ing.recent)
    texts = [m.text for m in msgs]
    cost = [cal.scale(estimate(t) + MESSAGE_OVERHEAD) for t in texts]
    folded: list[str] = []
    for i, m in enumerate(msgs):  # the oldest first, and only where the note is actually shorter
        if sum(cost) <= cap:
            break
        note = ing.notes.get(m.id)
        text = (f"[summary of a long message; the whole text is in memory as {m.id}] {note}" if note
                else note_for(m))
        note_cost = cal.scale(estimate(text) + MESSAGE_OVERHEAD)
        if note_cost < cost[i]:
            texts[i], cost[i] = text, note_cost
            folded.append(m.id)
    if sum(cost) > cap and msgs:  # even the notes do not fit: share what is left evenly
        each = max(24, cap // len(msgs) - cal.scale(MESSAGE_OVERHEAD))
        for i, m in enumerate(msgs):
            if cost[i] > each + cal.scale(MESSAGE_OVERHEAD):
                texts[i], _ = clip(texts[i], int(each / cal.ratio), f"the whole message is in memory as {m.id}")
                cost[i] = cal.scale(estimate(texts[i]) + MESSAGE_OVERHEAD)
                clipped.append(m.id)
    out = [{"role": m.role if m.role in ("user", "assistant") else "user", "content": t} for m, t in zip(msgs, texts)]
    return out, folded, sum(cost)

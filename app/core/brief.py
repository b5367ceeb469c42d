"""The end-of-day brief, planned: which messages go to the model in which call, what the page
looks like, and which of the model's numbers nobody said.

Map: each domain with activity since the last brief is cut into chunks that fit the model's
window (whole messages, oldest first; one longer than a chunk is clipped with a marker) and each
chunk is summarised into outcomes, final settings, discarded attempts and open questions.
Reduce: the domain summaries become one master brief. The "Current settings" section is written
here from the settings ledger, never by the model, so no number in it can be invented; every
number the model writes that appears in none of its sources is flagged on the page.

Pure: no model, no disk. :mod:`app.services.brief` runs the plan.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from app.core.context import source_line
from app.core.records import Message
from app.core.tokens import clip, estimate

SECTIONS = ("Where the project stands", "What worked", "Tried and dropped", "Open questions")
SETTINGS_TITLE = "Current settings"
FLAGGED_TITLE = "Numbers to check"
MAP_ANSWER_TOKENS = 400
REDUCE_ANSWER_TOKENS = 900
PROMPT_OVERHEAD_TOKENS = 350  # the instructions and the message headers around a chunk
DOMAIN_ORDER = ("lighting", "shading", "camera", "optimization", "geometry", "texturing", "compositing", "general")
# a number as people write it: 1024, 1,024, 0.5, .5, 25%, 1920x1080 (each side on its own)
_NUMBER = re.compile(r"(?<![\w.])(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?|\.\d+)(?![\d])")
_DATE_OR_TIME = re.compile(r"\b\d{4}-\d\d-\d\d\b|\b\d{1,2}:\d\d\b")


@dataclass(frozen=True)
class Chunk:
    domain: str
    part: int  # 1-based, within the domain
    parts: int
    messages: tuple[Message, ...]
    text: str  # what the model reads

    @property
    def label(self) -> str:
        return self.domain if self.parts == 1 else f"{self.domain} ({self.part}/{self.parts})"


@dataclass
class Plan:
    chunks: list[Chunk] = field(default_factory=list)

    @property
    def domains(self) -> list[str]:
        seen: list[str] = []
        for c in self.chunks:
            if c.domain not in seen:
                seen.append(c.domain)
        return seen

    def of(self, domain: str) -> list[Chunk]:
        return [c for c in self.chunks if c.domain == domain]


def message_block(m: Message, max_tokens: int) -> str:
    body, _ = clip(m.text.strip(), max_tokens, f"the whole message {m.id} is in memory")
    return f"[{source_line(m)}]\n{body}"


def plan(messages: list[Message], num_ctx: int) -> Plan:
    """Chunks per domain (in a fixed domain order), each fitting ``num_ctx`` with the map prompt
    and its answer. Replies quoted from memory and failed turns are left out: they add nothing."""
    room = max(256, num_ctx - MAP_ANSWER_TOKENS - PROMPT_OVERHEAD_TOKENS)
    by_domain: dict[str, list[Message]] = {}
    for m in sorted(messages, key=lambda m: (m.ts_ms, m.id)):
        if m.status in ("recall", "failed") or not m.text.strip():
            continue
        by_domain.setdefault(m.tags.domain, []).append(m)
    out = Plan()
    order = [d for d in DOMAIN_ORDER if d in by_domain] + sorted(d for d in by_domain if d not in DOMAIN_ORDER)
    for domain in order:
        groups: list[list[tuple[Message, str]]] = [[]]
        used = 0
        for m in by_domain[domain]:
            block = message_block(m, room // 2)
            cost = estimate(block) + 2
            if groups[-1] and used + cost > room:
                groups.append([])
                used = 0
            groups[-1].append((m, block))
            used += cost
        for i, group in enumerate(groups, 1):
            out.chunks.append(Chunk(domain, i, len(groups), tuple(m for m, _ in group),
                                    "\n\n".join(b for _, b in group)))
    return out


def map_messages(chunk: Chunk, project: str, settings_lines: list[str]) -> list[dict]:
    system = ("You write the end-of-day notes of a 3D rendering project. From the conversation below, in the "
              f"{chunk.domain} domain, write short Markdown bullet lists under exactly these headings: "
              + ", ".join(f"'### {s}'" for s in SECTIONS)
              + ". Say what was decided and why, what was tried and dropped, and what is still open. Use only "
              "facts and numbers that appear in the conversation; do not invent values. Be brief.")
    user = (f"Project: {project}\nDomain: {chunk.domain}" + (f" (part {chunk.part} of {chunk.parts})" if chunk.parts > 1 else "")
            + ("\n\nSettings in force (from the ledger):\n" + "\n".join(f"- {s}" for s in settings_lines) if settings_lines else "")
            + "\n\nConversation:\n\n" + chunk.text)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def reduce_messages(project: str, day: str, summaries: dict[str, str], settings_lines: list[str], num_ctx: int) -> list[dict]:
    system = ("You write the master brief of a 3D rendering project: one page an artist reads the next morning. "
              "Merge the domain notes below into Markdown sections with exactly these headings: "
              + ", ".join(f"'## {s}'" for s in SECTIONS)
              + ". Bullet points, most important first, each naming its domain. Use only facts and numbers "
              "from the notes and the settings; do not invent values. Do not write a settings table: Kelvin "
              "adds the current settings itself.")
    room = max(256, num_ctx - REDUCE_ANSWER_TOKENS - PROMPT_OVERHEAD_TOKENS - sum(estimate(s) for s in settings_lines))
    share = room // max(1, len(summaries))
    notes = "\n\n".join(f"### {d}\n{clip(s.strip(), share, 'the domain notes were longer')[0]}" for d, s in summaries.items())
    user = (f"Project: {project}\nDay: {day}\n\n"
            + ("Settings in force (from the ledger):\n" + "\n".join(f"- {s}" for s in settings_lines) + "\n\n" if settings_lines else "")
            + "Domain notes:\n\n" + notes)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def merge_messages(domain: str, parts: list[str]) -> list[dict]:
    """A domain cut into several chunks: its partial notes become one."""
    system = ("Merge these partial end-of-day notes of one domain into one set of short Markdown bullet lists "
              "under exactly these headings: " + ", ".join(f"'### {s}'" for s in SECTIONS)
              + ". Later parts are later in the day: a later decision replaces an earlier one. Do not invent values.")
    user = "\n\n".join(f"Part {i}:\n{p.strip()}" for i, p in enumerate(parts, 1))
    return [{"role": "system", "content": system}, {"role": "user", "content": f"Domain: {domain}\n\n{user}"}]


# ---- what the model wrote ------------------------------------------------------------------------------
def sections(text: str) -> dict[str, str]:
    """The model's text split under the known headings (any heading level, any case); text before
    the first heading or under an unknown one goes to the first section."""
    wanted = {s.casefold(): s for s in SECTIONS}
    out: dict[str, list[str]] = {s: [] for s in SECTIONS}
    current = SECTIONS[0]
    for line in text.splitlines():
        m = re.match(r"^\s{0,3}#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"[*_`:]", "", m.group(1)).strip().casefold()
            if title in wanted:
                current = wanted[title]
                continue
            if title == SETTINGS_TITLE.casefold():
                current = SECTIONS[0]
                continue
        out[current].append(line)
    return {k: "\n".join(v).strip() for k, v in out.items()}


def numbers(text: str) -> set[str]:
    """The numbers in ``text``, normalised ("1,024" → "1024", "10.0" → "10", ".5" → "0.5")."""
    found = set()
    for raw in _NUMBER.findall(_DATE_OR_TIME.sub(" ", text)):
        n = raw.replace(",", "")
        if n.startswith("."):
            n = "0" + n
        if "." in n:
            n = n.rstrip("0").rstrip(".")
        n = n.lstrip("0") or "0" if "." not in n else n
        found.add(n)
    return found


def unsupported(written: str, sources: list[str]) -> list[str]:
    """Numbers the model wrote that appear in none of its sources, in order of appearance.
    Single digits 0–9 are ordinary words ("3 things to check") and are not flagged."""
    have: set[str] = set()
    for s in sources:
        have |= numbers(s)
    out: list[str] = []
    for n in sorted(numbers(written), key=lambda n: written.find(n)):
        if n not in have and not (len(n) == 1 and n.isdigit()) and n not in out:
            out.append(n)
    return out


def mark(text: str, flagged: list[str]) -> str:
    """Each flagged number in ``text`` gets a visible mark after it."""
    for n in flagged:
        text = re.sub(rf"(?<![\w.]){re.escape(n)}(?![\d])(?! ⚠)", f"{n} ⚠", text)
    return text


# ---- the page ------------------------------------------------------------------------------------------
def settings_table(rows: list[tuple[str, str, str, str]]) -> str:
    """(setting, value, set at, before) rows as a Markdown table, or a line saying there are none."""
    if not rows:
        return "_No settings recorded yet._"
    head = "| Setting | Value | Set | Before |\n|---|---|---|---|\n"
    cell = lambda s: s.replace("|", "\\|").replace("\n", " ")  # noqa: E731
    return head + "".join(f"| {cell(a)} | {cell(b)} | {cell(c)} | {cell(d)} |\n" for a, b, c, d in rows)


def compose(project: str, day: str, written_at: str, narrative: dict[str, str], settings_md: str,
            flagged: list[str], domains: list[str], messages: int, scene_lines: tuple[str, ...] = ()) -> str:
    parts = [f"# Master brief — {project}\n",
             f"_{day} · written {written_at} by Kelvin from {messages} messages in "
             f"{len(domains)} domain{'s' if len(domains) != 1 else ''} ({', '.join(domains) or 'none'})._\n"]
    for title in SECTIONS[:1]:
        parts.append(f"## {title}\n\n{narrative.get(title) or '_Nothing recorded._'}\n")
    scene = ""
    if scene_lines:  # the last imported scene against what was decided (app.services.settings_ledger.scene_answer)
        head, *rest = scene_lines
        scene = f"\n**{head.rstrip(':')}**" + ("".join(f"\n- {line}" for line in rest) if rest else "") + "\n"
    parts.append(f"## {SETTINGS_TITLE}\n\n_From the settings ledger, not from the model._\n\n{settings_md}\n{scene}")
    for title in SECTIONS[1:]:
        parts.append(f"## {title}\n\n{narrative.get(title) or '_Nothing recorded._'}\n")
    if flagged:
        parts.append(f"## {FLAGGED_TITLE}\n\nThe model wrote these numbers, but none of the day's messages or settings "
                     f"contains them (marked ⚠ above): {', '.join(flagged)}.\n")
    return "\n".join(parts)


def compose_without_model(project: str, day: str, at: str, settings_md: str, scene_lines: tuple[str, ...],
                          decided: list[str], day_lines: list[str], messages: int, why: str = "") -> str:
    """The brief with no model: what the ledger and the day's messages say on their own."""
    reason = f"{why.rstrip('.')}. " if why else "the model was not there. "
    parts = [f"# Master brief — {project}\n",
             f"_{day} · written {at} by Kelvin from memory alone: {reason}The summaries of the day come when "
             f"the model is back (End of day again then)._\n"]
    scene = ""
    if scene_lines:
        head, *rest = scene_lines
        scene = f"\n**{head.rstrip(':')}**" + ("".join(f"\n- {line}" for line in rest) if rest else "") + "\n"
    parts.append(f"## {SETTINGS_TITLE}\n\n_From the settings ledger._\n\n{settings_md}\n{scene}")
    parts.append("## Decided today\n\n" + ("\n".join(decided) if decided else "_Nothing decided today._") + "\n")
    parts.append("## Today's messages by domain\n\n" + ("\n".join(day_lines) if day_lines else
                                                            "_No messages today._\n") +
                 (f"\n_{messages} message{'s' if messages != 1 else ''} in all._\n" if messages else ""))
    return "\n".join(parts)


def archive_entry(brief: str, written_at: str) -> str:
    """The brief as it is appended to Project_Archive.md: under a dated heading, its own headings
    pushed one level down so the archive reads as one document."""
    body = re.sub(r"^(#{1,5}) ", lambda m: "#" + m.group(1) + " ", brief, flags=re.M)
    return f"\n---\n\n## Brief of {written_at}\n\n{body.strip()}\n"

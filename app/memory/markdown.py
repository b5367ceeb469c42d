"""The human-readable history: one Markdown file per domain (lighting.md, shading.md, …).

Each message is a block framed by ``<!-- kelvin:begin ID -->`` / ``<!-- kelvin:end ID -->`` so it
can be found, edited or removed, and so a replay after a crash can tell what is already there.
Message text is written as it was said, except that tag-like ``<`` is escaped: the files are safe
to open in any Markdown viewer and no message can forge a block marker.

When the day rolls over, the blocks from before it move to ``archive/YYYY-MM-DD/<domain>.md`` (same
format); edits, deletes and restores find a block wherever it lives, live or archived.
"""
from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from app.durable import open_append, write_all, write_atomically
from app.core.records import Message
from app.core.tagging import DOMAINS

_BLOCK = re.compile(r"<!-- kelvin:begin (?P<id>\S+) -->\n(?P<body>.*?)<!-- kelvin:end (?P=id) -->\n?", re.S)
_BEGIN = re.compile(r"<!-- kelvin:begin (\S+) -->")
_TAGLIKE = re.compile(r"<(?=[A-Za-z/!?])")
_DAY = re.compile(r"\d{4}-\d\d-\d\d")
ARCHIVE = "archive"
MINUTE_MS = 60_000


_STATUS_NOTE = {"cancelled": "reply stopped by the artist", "failed": "no reply (the model failed)",
                "cut": "reply cut off", "recall": "answered from memory"}


def before(ts_ms: int, cutoff_ms: int) -> bool:
    """Whether a message said at ``ts_ms`` belongs before a day's cutoff, at the minute a block's
    heading keeps (a day starts on a whole minute, so this is ``ts_ms < cutoff_ms`` in practice).
    The one rule for the rollover, its replay and ``rebuild``, so all three agree."""
    return ts_ms - ts_ms % MINUTE_MS < cutoff_ms


def escape(text: str) -> str:
    return _TAGLIKE.sub("&lt;", text)


_MARKER_UNSAFE = re.compile(r"[\s%<>&`]|-(?=-)")


def marker(message_id: str) -> str:
    """A message id as it stands in its block's markers and heading: whatever could end an HTML
    comment, split the marker or open a tag (space, ``--``, ``<``, ``>``, ``&``, a backtick, ``%``)
    is percent-encoded; the ids Kelvin makes are left as they are."""
    return _MARKER_UNSAFE.sub(lambda m: "".join(f"%{b:02X}" for b in m.group(0).encode("utf-8")), message_id)


def unmarker(text: str) -> str:
    from urllib.parse import unquote

    return unquote(text) if "%" in text else text


def render_block(m: Message) -> str:
    when = m.timestamp.replace("T", " ")[:16] + " UTC"
    who = m.speaker or m.role
    bits = [when, f"{who} ({m.role})" if who != m.role else m.role, m.tags.type]
    if m.tags.engine:
        bits.append(m.tags.engine)
    if m.status:
        bits.append(_STATUS_NOTE.get(m.status, m.status))
    body = escape(m.text).rstrip("\n")
    mid = marker(m.id)
    return (
        f"<!-- kelvin:begin {mid} -->\n"
        f"### {' · '.join(escape(b) for b in bits)}\n"
        f"<sub>id `{mid}` · conversation `{marker(m.conversation_id)}`</sub>\n\n"
        f"{body}\n\n"
        f"<!-- kelvin:end {mid} -->\n"
    )


class MarkdownBook:
    """The domain files of one project: the live ones and the archived days."""

    def __init__(self, folder: Path, title: str):
        self.folder = folder
        self.title = title

    def path(self, domain: str, day: str | None = None) -> Path:
        """A domain's live file, or its file in the archive of ``day``."""
        return self.folder / f"{domain}.md" if day is None else self.folder / ARCHIVE / day / f"{domain}.md"

    def files(self) -> list[Path]:
        """The live domain files."""
        return [p for d in DOMAINS if (p := self.path(d)).is_file()]

    def archive_days(self) -> list[str]:
        """The archived days, newest first."""
        root = self.folder / ARCHIVE
        if not root.is_dir():
            return []
        return sorted((p.name for p in root.iterdir() if p.is_dir() and _DAY.fullmatch(p.name)), reverse=True)

    def archive_files(self) -> list[Path]:
        return [p for day in self.archive_days() for d in DOMAINS if (p := self.path(d, day)).is_file()]

    def all_files(self) -> list[Path]:
        """Live files first, then the archive from the newest day back (the likeliest place of an edit)."""
        return self.files() + self.archive_files()

    def _day_of(self, path: Path) -> str | None:
        return None if path.parent == self.folder else path.parent.name

    def _header(self, domain: str, day: str | None = None) -> str:
        if day is None:
            return f"# {domain.capitalize()} — {escape(self.title)}\n\nKelvin's record of this project's {domain} conversation.\n\n"
        return (f"# {domain.capitalize()} — {escape(self.title)} — {day}\n\nKelvin's record of this project's {domain} "
                f"conversation, archived when the day rolled over after {day}.\n\n")

    def append(self, messages: Iterable[Message]) -> None:
        """Add new blocks to their live files in time order (to the minute their headings keep;
        within a minute, in the order they come): at the end, the usual case, or — for messages
        older than a file's last block (an earlier day imported, a teammate's message pulled late)
        — in their place, as :meth:`rebuild` places them."""
        by_domain: dict[str, list[tuple[str, str]]] = {}
        for m in messages:
            by_domain.setdefault(m.tags.domain, []).append((_minute(m.ts_ms), render_block(m)))
        for domain, blocks in by_domain.items():
            path = self.path(domain)
            if not path.exists():
                blocks = sorted(blocks, key=lambda b: b[0])  # stable
                _atomic_write(path, self._header(domain) + "".join(b for _, b in blocks))
                continue
            last = _last_minute(path)
            if all(when >= last for when, _ in blocks) and blocks == sorted(blocks, key=lambda b: b[0]):
                with open_append(path) as fh:
                    write_all(fh, "".join(b for _, b in blocks).encode("utf-8"), sync=False)
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
            # the blocks are in time order: those up to the earliest new one's minute stay before the new
            # ones and those after the latest new one's minute after them, as they are; only the blocks
            # between are read and merged (a big project's file held the writer — and the GIL the
            # window needs — ~0.7 s when every block was parsed for messages some days late)
            starts = [m.start() for m in _BEGIN.finditer(text)]
            cut, end = _later_than(text, starts, min(b[0] for b in blocks)), None
            if cut is not None:
                end = _later_than(text, starts, max(b[0] for b in blocks))
            if cut is None or end is None:  # a block without its time: every block read and merged, as ever
                cut, end = len(_head(text)), len(text)
            there = [(_block_ts(b.group("body")) or "", _whole(b)) for b in _BLOCK.finditer(text, cut, end)]
            merged = sorted(there + blocks, key=lambda b: b[0])  # stable: what is there first within a minute
            _atomic_write(path, text[:cut] + "".join(b for _, b in merged) + text[end:])

    def ids_present(self) -> set[str]:
        """Ids of every complete block, live or archived; files with a half-written block (a crash)
        are mended."""
        ids: set[str] = set()
        for path in self.all_files():
            text = path.read_text(encoding="utf-8", errors="replace")
            found = [m.group("id") for m in _BLOCK.finditer(text)]
            if len(_BEGIN.findall(text)) != len(found):
                self._rewrite(path, text, drop=set())
            ids.update(unmarker(i) for i in found)
        return ids

    def messages(self) -> dict[str, Message]:
        """Every message the files hold, read back from its block (the last copy wins) — the third copy
        a rebuild takes back what neither the journal nor the index still has from. What a block cannot
        say is approximate: its time is to the minute, its turn is unknown, its text as escaped."""
        out: dict[str, Message] = {}
        for path in self.all_files():
            for b in _BLOCK.finditer(path.read_text(encoding="utf-8", errors="replace")):
                m = _parse_block(unmarker(b.group("id")), b.group("body"), self.title)
                if m is not None:
                    out[m.id] = m
        return out

    def live_times(self) -> list[int]:
        """When each live block was said (to the minute, from its heading)."""
        out = []
        for path in self.files():
            for b in _BLOCK.finditer(path.read_text(encoding="utf-8", errors="replace")):
                if (ts := _block_ms(b.group("body"))) is not None:
                    out.append(ts)
        return out

    def _find(self, message_id: str) -> tuple[Path, str, re.Match] | None:
        mid = marker(message_id)
        begin = f"<!-- kelvin:begin {mid} -->"
        for path in self.all_files():
            text = path.read_text(encoding="utf-8", errors="replace")
            if begin in text:
                for b in _BLOCK.finditer(text):
                    if b.group("id") == mid:
                        return path, text, b
        return None

    def remove(self, message_id: str) -> bool:
        """Take a message's block out of whichever file holds it, live or archived."""
        found = self._find(message_id)
        if found is None:
            return False
        self._rewrite(found[0], found[1], drop={marker(message_id)})
        return True

    def remove_many(self, message_ids: set[str]) -> int:
        """Take several messages' blocks out, reading each file once. Returns how many went."""
        drop = {marker(i) for i in message_ids}
        gone = 0
        for path in self.all_files():
            text = path.read_text(encoding="utf-8", errors="replace")
            found = {b.group("id") for b in _BLOCK.finditer(text)} & drop
            if found:
                self._rewrite(path, text, drop=found)
                gone += len(found)
        return gone

    def upsert(self, message: Message, day: str | None = None) -> None:
        """Put a message's block where it belongs: in place if it is already there (an edit, live
        or archived); into its new domain's file at the same place if its domain changed; else (a
        restore) in time order into the live file, or the archive of ``day``."""
        new_block = render_block(message)
        found = self._find(message.id)
        if found is not None:
            path, text, b = found
            if path.stem == message.tags.domain:
                _atomic_write(path, text[: b.start()] + new_block + text[b.end():])
                return
            day = self._day_of(path)
            self._rewrite(path, text, drop={marker(message.id)})
        path = self.path(message.tags.domain, day)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, self._header(message.tags.domain, day) + new_block)
            return
        text = path.read_text(encoding="utf-8", errors="replace")
        blocks = list(_BLOCK.finditer(text))
        insert_at = len(text) if not blocks else blocks[-1].end()
        when = message.timestamp[:16].replace("T", " ")
        for b in blocks:
            ts = _block_ts(b.group("body"))
            if ts is not None and ts > when:
                insert_at = b.start()
                break
        _atomic_write(path, text[:insert_at] + new_block + text[insert_at:])

    def roll_over(self, cutoff_ms: int, day: str) -> int:
        """Move every live block from before ``cutoff_ms`` to ``archive/<day>/`` (merged in time
        order with what is there). Each archive file is written before its live file is cut, so a
        crash in between leaves a block twice, never nowhere; running this again (the replay) mends
        it. Returns how many blocks moved."""
        moved = 0
        for path in self.files():
            text = path.read_text(encoding="utf-8", errors="replace")
            blocks = list(_BLOCK.finditer(text))
            old = [b for b in blocks if (ts := _block_ms(b.group("body"))) is not None and before(ts, cutoff_ms)]
            if not old:
                continue
            self._merge(self.path(path.stem, day), old)
            keep = [b for b in blocks if b not in old]
            if keep:
                _atomic_write(path, _head(text) + "".join(_whole(b) for b in keep))
            else:
                path.unlink()
            moved += len(old)
        return moved

    def _merge(self, path: Path, incoming: list[re.Match]) -> None:
        ids = {b.group("id") for b in incoming}
        if path.exists():
            text = path.read_text(encoding="utf-8", errors="replace")
            head = _head(text)
            there = [b for b in _BLOCK.finditer(text) if b.group("id") not in ids]  # a replay: the copy moving wins
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            head, there = self._header(path.stem, self._day_of(path)), []
        merged = sorted(there + incoming, key=lambda b: _block_ts(b.group("body")) or "")  # stable
        _atomic_write(path, head + "".join(_whole(b) for b in merged))

    def rebuild(self, messages: Iterable[Message], archived: Mapping[str, str] | None = None) -> None:
        """Write every domain file from scratch (after ``reindex``): each message in its live file,
        or in its archived day's when ``archived`` maps its id to one."""
        archived = archived or {}
        groups: dict[tuple[str | None, str], list[Message]] = {}
        for m in messages:
            groups.setdefault((archived.get(m.id), m.tags.domain), []).append(m)
        for path in self.all_files():
            if (self._day_of(path), path.stem) not in groups:
                path.unlink()
        for (day, domain), items in groups.items():
            items.sort(key=lambda m: m.ts_ms // MINUTE_MS)  # stable: within a minute, the order they came in
            path = self.path(domain, day)
            path.parent.mkdir(parents=True, exist_ok=True)
            _atomic_write(path, self._header(domain, day) + "".join(render_block(m) for m in items))
        for day in self.archive_days():
            _rmdir_if_empty(self.folder / ARCHIVE / day)

    def _rewrite(self, path: Path, text: str, drop: set[str]) -> None:
        """Write a file again without some blocks (``drop``: their marker ids); a file left with
        none goes (as ``rebuild`` would not write it)."""
        kept = [_whole(b) for b in _BLOCK.finditer(text) if b.group("id") not in drop]
        if drop and not kept:
            path.unlink()
            if self._day_of(path) is not None:
                _rmdir_if_empty(path.parent)
            return
        _atomic_write(path, _head(text) + "".join(kept))


def _head(text: str) -> str:
    head_end = text.find("<!-- kelvin:begin ")
    return text if head_end < 0 else text[:head_end]


def _whole(b: re.Match) -> str:
    return b.group(0) if b.group(0).endswith("\n") else b.group(0) + "\n"


def _rmdir_if_empty(folder: Path) -> None:
    try:
        folder.rmdir()
    except OSError:
        pass  # something else is in it (or it is gone already)


def _minute(ts_ms: int) -> str:
    """A moment as a block's heading keeps it (UTC, to the minute), comparable with :func:`_block_ts`."""
    return datetime.fromtimestamp(ts_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")


def _last_minute(path: Path) -> str:
    """The minute of the last block in a file, read from its tail ("" if none)."""
    with open(path, "rb") as fh:
        size = fh.seek(0, 2)
        fh.seek(max(0, size - 65536))
        tail = fh.read().decode("utf-8", "replace")
    found = re.findall(r"<!-- kelvin:begin \S+ -->\n### (\d{4}-\d\d-\d\d \d\d:\d\d)", tail)
    if found or size <= 65536:
        return found[-1] if found else ""
    text = path.read_text(encoding="utf-8", errors="replace")  # one block longer than the tail read
    found = re.findall(r"<!-- kelvin:begin \S+ -->\n### (\d{4}-\d\d-\d\d \d\d:\d\d)", text)
    return found[-1] if found else ""


_HEAD_AT = re.compile(r"<!-- kelvin:begin \S+ -->\n### (\d{4}-\d\d-\d\d \d\d:\d\d)")


def _later_than(text: str, starts: list[int], minute: str) -> int | None:
    """Where the first block later than ``minute`` begins (the end of the file if none is), found by
    halving among the blocks' ``starts`` — a file's blocks are in time order. None if a block looked
    at has no time in its heading (then nothing can be said of its order)."""
    def minute_at(i: int) -> str:
        found = _HEAD_AT.match(text, starts[i])
        if found is None:
            raise LookupError
        return found.group(1)

    try:
        i = bisect.bisect_right(range(len(starts)), minute, key=minute_at)
    except LookupError:
        return None
    return starts[i] if i < len(starts) else len(text)


def _block_ts(body: str) -> str | None:
    m = re.match(r"### (\d{4}-\d\d-\d\d \d\d:\d\d)", body)
    return m.group(1) if m else None


def _block_ms(body: str) -> int | None:
    ts = _block_ts(body)
    if ts is None:
        return None
    return int(datetime.strptime(ts, "%Y-%m-%d %H:%M").replace(tzinfo=UTC).timestamp() * 1000)


_HEADING = re.compile(r"### (?P<head>[^\n]*)\n<sub>id `(?P<id>[^`]*)` · conversation `(?P<conv>[^`]*)`</sub>\n\n"
                      r"(?P<text>.*)\n\n$", re.S)
_WHO = re.compile(r"^(?P<who>.*) \((?P<role>user|assistant|system)\)$")
_UNESCAPE = re.compile(r"&lt;(?=[A-Za-z/!?])")


def _parse_block(mid: str, body: str, project: str) -> Message | None:
    """A block back into the message it shows (None if it does not read as one)."""
    m = _HEADING.match(body)
    ts = _block_ms(body)
    if m is None or ts is None:
        return None
    bits = m.group("head").split(" · ")
    who = bits[1] if len(bits) > 1 else "user"
    role_m = _WHO.match(who)
    role, speaker = (role_m.group("role"), role_m.group("who")) if role_m else (who, "")
    if role not in ("user", "assistant", "system"):
        return None
    status = next((s for s, note in _STATUS_NOTE.items() if note in bits[2:]), "")
    text = _UNESCAPE.sub("<", m.group("text"))
    if not text.strip():
        return None
    return Message(id=mid, project=project, conversation_id=unmarker(m.group("conv")), role=role,
                   speaker=_UNESCAPE.sub("<", speaker), text=text, ts_ms=ts, status=status)


def _atomic_write(path: Path, text: str) -> None:
    write_atomically(path, text)

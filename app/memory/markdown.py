"""The human-readable history: one Markdown file per domain (lighting.md, shading.md, …).

Each message is a block framed by ``<!-- kelvin:begin ID -->`` / ``<!-- kelvin:end ID -->`` so it
can be found, edited or removed, and so a replay after a crash can tell what is already there.
Message text is written as it was said, except that tag-like ``<`` is escaped: the files are safe
to open in any Markdown viewer and no message can forge a block marker.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import Iterable

from app.core.records import Message
from app.core.tagging import DOMAINS

_BLOCK = re.compile(r"<!-- kelvin:begin (?P<id>\S+) -->\n(?P<body>.*?)<!-- kelvin:end (?P=id) -->\n?", re.S)
_BEGIN = re.compile(r"<!-- kelvin:begin (\S+) -->")
_TAGLIKE = re.compile(r"<(?=[A-Za-z/!?])")


_STATUS_NOTE = {"cancelled": "reply stopped by the artist", "failed": "no reply (the model failed)",
                "cut": "reply cut off", "recall": "answered from memory"}


def escape(text: str) -> str:
    return _TAGLIKE.sub("&lt;", text)


def render_block(m: Message) -> str:
    when = m.timestamp.replace("T", " ")[:16] + " UTC"
    who = m.speaker or m.role
    bits = [when, f"{who} ({m.role})" if who != m.role else m.role, m.tags.type]
    if m.tags.engine:
        bits.append(m.tags.engine)
    if m.status:
        bits.append(_STATUS_NOTE.get(m.status, m.status))
    body = escape(m.text).rstrip("\n")
    return (
        f"<!-- kelvin:begin {m.id} -->\n"
        f"### {' · '.join(bits)}\n"
        f"<sub>id `{m.id}` · conversation `{escape(m.conversation_id)}`</sub>\n\n"
        f"{body}\n\n"
        f"<!-- kelvin:end {m.id} -->\n"
    )


class MarkdownBook:
    """The domain files of one project."""

    def __init__(self, folder: Path, title: str):
        self.folder = folder
        self.title = title

    def path(self, domain: str) -> Path:
        return self.folder / f"{domain}.md"

    def files(self) -> list[Path]:
        return [p for d in DOMAINS if (p := self.path(d)).is_file()]

    def _header(self, domain: str) -> str:
        return f"# {domain.capitalize()} — {escape(self.title)}\n\nKelvin's record of this project's {domain} conversation.\n\n"

    def append(self, messages: Iterable[Message]) -> None:
        by_domain: dict[str, list[str]] = {}
        for m in messages:
            by_domain.setdefault(m.tags.domain, []).append(render_block(m))
        for domain, blocks in by_domain.items():
            path = self.path(domain)
            new = not path.exists()
            with open(path, "a", encoding="utf-8", newline="\n") as fh:
                if new:
                    fh.write(self._header(domain))
                fh.write("".join(blocks))

    def ids_present(self) -> set[str]:
        """Ids of every complete block; files with a half-written block (a crash) are mended."""
        ids: set[str] = set()
        for path in self.files():
            text = path.read_text(encoding="utf-8", errors="replace")
            found = [m.group("id") for m in _BLOCK.finditer(text)]
            if len(_BEGIN.findall(text)) != len(found):
                self._rewrite(path, text, drop=set())
            ids.update(found)
        return ids

    def remove(self, message_id: str) -> bool:
        """Take a message's block out of whichever file holds it."""
        marker = f"<!-- kelvin:begin {message_id} -->"
        for path in self.files():
            text = path.read_text(encoding="utf-8", errors="replace")
            if marker in text:
                self._rewrite(path, text, drop={message_id})
                return True
        return False

    def upsert(self, message: Message) -> None:
        """Put a message's block in its domain file: in place if it is already there (an edit),
        else in time order (its domain changed), taking it out of any other file."""
        marker = f"<!-- kelvin:begin {message.id} -->"
        path = self.path(message.tags.domain)
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else ""
        new_block = render_block(message)
        for b in _BLOCK.finditer(text):
            if b.group("id") == message.id:
                _atomic_write(path, text[: b.start()] + new_block + text[b.end():])
                return
        if marker in "".join(p.read_text(encoding="utf-8", errors="replace") for p in self.files()):
            self.remove(message.id)
        if not path.exists():
            self.append([message])
            return
        blocks = list(_BLOCK.finditer(text))
        insert_at = len(text) if not blocks else blocks[-1].end()
        when = message.timestamp[:16].replace("T", " ")
        for b in blocks:
            ts = _block_ts(b.group("body"))
            if ts is not None and ts > when:
                insert_at = b.start()
                break
        _atomic_write(path, text[:insert_at] + new_block + text[insert_at:])

    def rebuild(self, messages: Iterable[Message]) -> None:
        """Write every domain file from scratch (after ``reindex``)."""
        by_domain: dict[str, list[Message]] = {}
        for m in messages:
            by_domain.setdefault(m.tags.domain, []).append(m)
        for path in self.files():
            if path.stem not in by_domain:
                path.unlink()
        for domain, items in by_domain.items():
            items.sort(key=lambda m: m.ts_ms)  # stable: equal times keep journal order
            _atomic_write(self.path(domain), self._header(domain) + "".join(render_block(m) for m in items))

    def _rewrite(self, path: Path, text: str, drop: set[str]) -> None:
        head_end = text.find("<!-- kelvin:begin ")
        head = text if head_end < 0 else text[:head_end]
        kept = [b.group(0) if b.group(0).endswith("\n") else b.group(0) + "\n"
                for b in _BLOCK.finditer(text) if b.group("id") not in drop]
        _atomic_write(path, head + "".join(kept))


def _block_ts(body: str) -> str | None:
    m = re.match(r"### (\d{4}-\d\d-\d\d \d\d:\d\d)", body)
    return m.group(1) if m else None


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

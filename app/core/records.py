"""What Kelvin remembers: messages and curated memories, and the rules for valid ones.

Pure data and validation; no I/O. Every record that reaches the journal went through here.
"""
from __future__ import annotations

import hashlib
import re
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone

ROLES = ("user", "assistant", "system")
# how a message ended: "" a whole message; a reply the artist stopped, that failed before a word
# came, that was cut off mid-stream, or that was composed from memory without a model
STATUSES = ("", "cancelled", "failed", "cut", "recall")
MAX_MESSAGE_CHARS = 1_000_000  # a huge paste is kept whole; beyond this it is refused with a reason
MAX_ID_CHARS = 128
MAX_NAME_CHARS = 200

_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_ID_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f]")


class RecordError(ValueError):
    """A record that cannot be stored, with a reason a person can act on."""


@dataclass(frozen=True)
class Tags:
    domain: str = "general"
    type: str = "dialogue"
    engine: str | None = None
    host_app: str | None = None  # cinema4d, houdini, maya, blender, 3dsmax, …
    priority: int = 0  # 2: a standing instruction or decision ("always", "client wants"); 1: a setting or
    #                    critique; 0: everything else. Ranks what a brief and a tight window keep first.

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Message:
    id: str
    project: str
    conversation_id: str
    role: str
    speaker: str
    text: str
    ts_ms: int
    turn_id: str = ""
    tags: Tags = field(default_factory=Tags)
    status: str = ""

    @property
    def timestamp(self) -> str:
        return format_ts(self.ts_ms)

    def to_event(self) -> dict:
        """The journal form: everything but the tags, which are derived when projected."""
        return {
            "id": self.id,
            "project": self.project,
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "role": self.role,
            "speaker": self.speaker,
            "text": self.text,
            "ts_ms": self.ts_ms,
            **({"status": self.status} if self.status else {}),
        }

    def to_json(self) -> dict:
        """The public form used by ``--json`` output and the app."""
        return {
            "id": self.id,
            "project": self.project,
            "conversation_id": self.conversation_id,
            "turn_id": self.turn_id,
            "role": self.role,
            "speaker": self.speaker,
            "text": self.text,
            "timestamp": self.timestamp,
            "tags": self.tags.as_dict(),
            "status": self.status,
        }


@dataclass(frozen=True)
class Memory:
    """A curated long-term memory: a fact or preference the artist or the model chose to keep."""

    id: str
    project: str
    text: str
    category: str
    ts_ms: int
    source_id: str = ""

    def to_event(self) -> dict:
        return asdict(self)

    def to_json(self) -> dict:
        d = asdict(self)
        d["timestamp"] = format_ts(d.pop("ts_ms"))
        return d


def now_ms() -> int:
    return int(datetime.now(timezone.utc).timestamp() * 1000)


def format_ts(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z"
    )


def parse_ts(value: str) -> int:
    """ISO 8601 → milliseconds since the epoch (UTC). A time without zone is taken as UTC."""
    if not isinstance(value, str) or not value.strip():
        raise RecordError("timestamp must be an ISO 8601 string such as 2026-11-22T14:03:00Z")
    try:
        dt = datetime.fromisoformat(value.strip())
    except ValueError:
        raise RecordError(f"timestamp {value!r} is not ISO 8601 (example: 2026-11-22T14:03:00Z)") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp() * 1000)


def new_id(prefix: str = "m") -> str:
    return f"{prefix}_{uuid.uuid4().hex[:20]}"


def stable_id(*parts: object, prefix: str = "m") -> str:
    """An id derived from content, so importing the same line twice yields the same id."""
    h = hashlib.blake2b("\x1f".join(str(p) for p in parts).encode("utf-8", "surrogatepass"), digest_size=10)
    return f"{prefix}_{h.hexdigest()}"


_SHOWN_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_SURROGATES = re.compile(r"[\ud800-\udfff]")


def clean_output(text: str) -> str:
    """Text from a model (or quoted from memory) as it may be shown and stored: no control
    characters (terminal escapes, NUL, C1 codes) and no lone surrogates; newlines and tabs stay."""
    text = _SHOWN_CONTROLS.sub("", text)
    return text.encode("utf-8", "replace").decode("utf-8") if _SURROGATES.search(text) else text


def check_text(text: object, what: str = "text") -> str:
    """Validate message text: non-empty, valid Unicode, not binary junk, not absurdly large."""
    if not isinstance(text, str):
        raise RecordError(f"{what} must be a string")
    if not text.strip():
        raise RecordError(f"{what} is empty")
    if len(text) > MAX_MESSAGE_CHARS:
        raise RecordError(
            f"{what} is {len(text):,} characters; Kelvin keeps messages up to {MAX_MESSAGE_CHARS:,} "
            "characters (split the paste or save it as a file)"
        )
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise RecordError(f"{what} is not valid Unicode (it contains lone surrogates)") from None
    if "\x00" in text:
        raise RecordError(f"{what} looks like binary data (it contains NUL bytes)")
    controls = len(_CONTROL.findall(text))
    if controls > 8 and controls > len(text) // 20:
        raise RecordError(f"{what} looks like binary data ({controls} control characters)")
    return text


def check_id(value: object, what: str = "id") -> str:
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{what} must be a non-empty string")
    value = value.strip()
    if len(value) > MAX_ID_CHARS or _ID_FORBIDDEN.search(value):
        raise RecordError(f"{what} must be at most {MAX_ID_CHARS} printable characters")
    return value


def check_role(value: object) -> str:
    if value not in ROLES:
        raise RecordError(f"role must be one of {', '.join(ROLES)} (got {value!r})")
    return value  # type: ignore[return-value]


def check_name(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise RecordError(f"{what} must be a non-empty string")
    value = value.strip()
    if len(value) > MAX_NAME_CHARS or _ID_FORBIDDEN.search(value):
        raise RecordError(f"{what} must be at most {MAX_NAME_CHARS} printable characters")
    return value


def check_status(value: object) -> str:
    if value not in STATUSES:
        raise RecordError(f"status must be one of {', '.join(repr(s) for s in STATUSES)} (got {value!r})")
    return value  # type: ignore[return-value]


def check_speaker(value: object) -> str:
    """Who said it ("Mara", "Kelvin"); may be empty."""
    if not isinstance(value, str) or len(value) > MAX_NAME_CHARS or _ID_FORBIDDEN.search(value):
        raise RecordError(f"speaker must be a string of at most {MAX_NAME_CHARS} printable characters")
    return value.strip()

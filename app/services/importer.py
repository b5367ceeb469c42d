"""Reading a chat history to import: JSON lines, checked completely before anything is stored.

One JSON object per line: ``text`` (required), and optional ``id``, ``project``,
``conversation_id``, ``role``, ``speaker``, ``timestamp``. Any bad line stops the import with its
line number and reason. A line without an ``id`` gets one derived from its content, so importing
the same file twice stores every message once.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from app.core import projects
from app.core.records import (
    Message,
    RecordError,
    check_id,
    check_name,
    check_role,
    check_speaker,
    check_text,
    now_ms,
    parse_ts,
    stable_id,
)



class ImportProblem(ValueError):
    """The file cannot be imported; nothing was stored."""


@dataclass(frozen=True)
class ImportItem:
    project: str
    message: Message


def read_jsonl(path: Path, default_project: str) -> list[ImportItem]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise ImportProblem(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ImportProblem(f"{path} is a folder, not a .jsonl file") from None
    except OSError as exc:
        raise ImportProblem(f"{path}: cannot read it ({exc.strerror})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ImportProblem(f"{path} line {line}: not UTF-8 text (is it a binary file?)") from None
    base_ms = now_ms()
    items: list[ImportItem] = []
    seen: dict[tuple, int] = {}
    ids: dict[tuple[str, str], tuple[int, str]] = {}  # (project, id) → (line, text)
    # lines end at "\n" only: U+2028, U+2029 and U+0085 are characters inside a message, not breaks
    for lineno, line in enumerate(text.split("\n"), 1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        try:
            item = _parse_line(line, default_project, base_ms + len(items), seen)
        except RecordError as exc:
            raise ImportProblem(f"{path} line {lineno}: {exc}") from None
        key = (projects.folder_name(item.project), item.message.id)
        first = ids.setdefault(key, (lineno, item.message.text))
        if first[1] != item.message.text:
            raise ImportProblem(f"{path} lines {first[0]} and {lineno} give the id {item.message.id!r} two different "
                                "texts; give one of them another id")
        items.append(item)
    if not items:
        raise ImportProblem(f"{path} holds no messages (expected one JSON object per line)")
    return items


def _parse_line(line: str, default_project: str, default_ms: int, seen: dict[tuple, int]) -> ImportItem:
    try:
        obj = json.loads(line)
    except json.JSONDecodeError as exc:
        raise RecordError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise RecordError("its JSON is nested too deeply (expected one flat object per line)") from None
    if not isinstance(obj, dict):
        raise RecordError("expected a JSON object such as {\"text\": \"…\"}")
    if "text" not in obj:
        raise RecordError("the required field 'text' is missing")
    text = check_text(obj["text"], "text")
    project = check_name(obj.get("project", default_project), "project")
    projects.folder_name(project)
    conversation = check_name(obj.get("conversation_id", "default"), "conversation_id")
    role = check_role(obj.get("role", "user"))
    speaker = check_speaker(obj.get("speaker", ""))
    turn_id = obj.get("turn_id", "")
    if not isinstance(turn_id, str):
        raise RecordError("turn_id must be a string")
    ts_raw = obj.get("timestamp")
    ts_ms = parse_ts(ts_raw) if ts_raw is not None else default_ms
    if "id" in obj:
        mid = check_id(obj["id"])
    else:
        key = (project, conversation, role, speaker, ts_raw or "", text)
        seen[key] = seen.get(key, 0) + 1
        mid = stable_id(*key, seen[key])
    msg = Message(id=mid, project=project, conversation_id=conversation, role=role, speaker=speaker,
                  text=text, ts_ms=ts_ms, turn_id=turn_id)
    return ImportItem(project, msg)

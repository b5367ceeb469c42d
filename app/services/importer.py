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
from app.inputs import InputProblem, lines
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



MAX_IMPORT_BYTES = 2 * 2**30  # a chat history of a few million messages; more is split, or not a history
MAX_LINE_BYTES = 16 * 2**20  # one message of a million characters, escaped as JSON, fits


class ImportProblem(ValueError):
    """The file cannot be imported; nothing was stored."""


@dataclass(frozen=True)
class ImportItem:
    project: str
    message: Message
    # a line without an id: what its id is derived from, but the project (an older Kelvin derived it from
    # the project's spelling too: ``aliases`` gives the ids it would have made, so the line is stored once)
    derived_from: tuple = ()

    def aliases(self, *spellings: str) -> set[str]:
        return {stable_id(s, *self.derived_from) for s in (self.project, *spellings)} if self.derived_from else set()


def read_jsonl(path: Path, default_project: str) -> list[ImportItem]:
    base_ms = now_ms()
    items: list[ImportItem] = []
    seen: dict[tuple, int] = {}
    ids: dict[tuple[str, str], tuple[int, str]] = {}  # (project, id) → (line, text)
    try:
        # read in bounded pieces: no file (or device: /dev/zero, /dev/urandom) can hang the import or fill memory
        for lineno, line in lines(path, "a .jsonl file", MAX_IMPORT_BYTES, MAX_LINE_BYTES):
            if not line.strip():
                continue
            try:
                item = _parse_line(line, default_project, base_ms + len(items), seen)
            except RecordError as exc:
                raise ImportProblem(f"{path} line {lineno}: {exc}") from None
            key = (projects.folder_name(item.project), item.message.id)
            first = ids.setdefault(key, (lineno, item.message.text))
            if first[1] != item.message.text:
                raise ImportProblem(f"{path} lines {first[0]} and {lineno} give the id {item.message.id!r} two "
                                    "different texts; give one of them another id")
            items.append(item)
    except InputProblem as exc:
        raise ImportProblem(str(exc)) from None
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
    project = projects.check_project(obj.get("project", default_project))  # refused before anything is stored
    conversation = check_name(obj.get("conversation_id", "default"), "conversation_id")
    role = check_role(obj.get("role", "user"))
    speaker = check_speaker(obj.get("speaker", ""))
    turn_id = obj.get("turn_id", "")
    if not isinstance(turn_id, str):
        raise RecordError("turn_id must be a string")
    ts_raw = obj.get("timestamp")
    ts_ms = parse_ts(ts_raw) if ts_raw is not None else default_ms
    derived: tuple = ()
    if "id" in obj:
        mid = check_id(obj["id"])
    else:
        # derived from the project's folder, not its spelling: "Dup test" and "dup TEST" are one project,
        # and the same line imported under either is the same message (the id an older Kelvin derived
        # from the spelling is an alias, so a file imported before is not imported twice)
        key = (projects.folder_name(project), conversation, role, speaker, ts_raw or "", text)
        seen[key] = seen.get(key, 0) + 1
        mid = stable_id(*key, seen[key])
        derived = (*key[1:], seen[key])
    msg = Message(id=mid, project=project, conversation_id=conversation, role=role, speaker=speaker,
                  text=text, ts_ms=ts_ms, turn_id=turn_id)
    return ImportItem(project, msg, derived)

"""Projects and their conversations: create, list, switch, rename; which conversation is current.

Each project is its own folder under the data folder (journal, index, Markdown), so projects
never see each other's memory. ``project.json`` in the folder keeps the project's display name
and its current conversation; a new day starts a new conversation, and all earlier ones stay in
memory, searchable. Qt-free.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from app.core import projects as names
from app.durable import NotRegularFile, UnsafePath, read_regular
from app.core.records import RecordError, check_name, new_id, now_ms
from app.memory.journal import StoreLocked
from app.services.memory import MemoryService

log = logging.getLogger("kelvin.projects")
META = "project.json"


@dataclass(frozen=True)
class ProjectInfo:
    name: str
    folder: Path
    conversation_id: str
    conversation_day: str
    created_ms: int

    def to_json(self) -> dict:
        return {"name": self.name, "folder": str(self.folder), "conversation_id": self.conversation_id,
                "conversation_day": self.conversation_day}


class Projects:
    def __init__(self, memory: MemoryService, today=date.today):
        self.memory = memory
        self.data_dir = memory.data_dir
        self._today = today  # a callable, so tests can move the clock to tomorrow
        self._lock = threading.Lock()

    # ---- metadata ----------------------------------------------------------------------------------
    def _meta_path(self, name: str) -> Path:
        return self.memory.store(name).folder / META

    def _read(self, folder: Path) -> dict:
        try:
            data = json.loads(read_regular(folder / META, 1 << 20))
            return data if isinstance(data, dict) else {}
        except FileNotFoundError:
            return {}
        except (UnsafePath, NotRegularFile):
            raise  # a link or a FIFO in its place: said as such, never written over
        except (ValueError, OSError, RecursionError) as exc:
            log.warning("%s is unreadable (%s); starting its metadata afresh", folder / META, exc)
            return {}

    def _write(self, folder: Path, data: dict) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".project.", dir=folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, ensure_ascii=False, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, folder / META)

    def _info(self, folder: Path, data: dict) -> ProjectInfo:
        """Read defensively: project.json is a file a person may have edited by hand."""
        conv = data.get("conversation") if isinstance(data.get("conversation"), dict) else {}
        name = data.get("name")
        created = data.get("created_ms")
        return ProjectInfo(name=name.strip() if isinstance(name, str) and name.strip() else folder.name,
                           folder=folder, conversation_id=_conversation_id(conv.get("id")), conversation_day=_text(conv.get("day")),
                           created_ms=created if isinstance(created, int) and not isinstance(created, bool) else 0)

    # ---- projects ----------------------------------------------------------------------------------
    def list(self) -> list[ProjectInfo]:
        out = []
        for folder_name in self.memory.projects():
            folder = self.data_dir / folder_name
            out.append(self._info(folder, self._read(folder)))
        return sorted(out, key=lambda p: p.name.lower())

    def display_name(self, name: str) -> str:
        """The name a project was created with ("Nike / Shot 010"), given any spelling that maps to
        its folder."""
        folder = self.memory.store(check_name(name, "project")).folder
        data = self._read(folder)
        return self._info(folder, data).name if data else name

    def exists(self, name: str) -> bool:
        """Whether a project of that name (in any spelling that maps to its folder) exists."""
        return self.memory.store(names.check_project(name)).exists()

    def nearest(self, name: str) -> str | None:
        """The existing project whose name is nearest to a misspelt one (None: none is near)."""
        import difflib

        known = [p.name for p in self.list()]
        near = difflib.get_close_matches(name, known, n=1, cutoff=0.5) or \
            difflib.get_close_matches(name.casefold(), [k.casefold() for k in known], n=1, cutoff=0.5)
        return next((k for k in known if k.casefold() == near[0].casefold()), None) if near else None

    def require(self, name: str, how_to_create: str) -> None:
        """Refuse a project that does not exist, naming the nearest one and how to make it (a misspelt
        name is never a new, empty project)."""
        if self.exists(name):
            return
        near = self.nearest(name)
        hint = f"; did you mean {near!r}?" if near else ""
        raise RecordError(f"there is no project {name!r}{hint} ({how_to_create} makes it)")

    def ensure(self, name: str) -> ProjectInfo:
        """The project, created (journal and index) if it does not exist yet."""
        name = names.check_project(name)
        store = self.memory.store(name)
        with self._lock:
            data = self._read(store.folder)
            if not store.exists():
                self.memory.open(name)
            if not data:
                data = {"name": store.name, "created_ms": now_ms()}
                self._write(store.folder, data)
            return self._info(store.folder, data)

    def create(self, name: str) -> ProjectInfo:
        if self.memory.store(check_name(name, "project")).exists():
            raise RecordError(f"a project named “{self.display_name(name)}” already exists")
        return self.ensure(name)

    def rename(self, old: str, new: str) -> ProjectInfo:
        """Give a project a new name (and folder). Its memory moves with it and is re-indexed under
        the new name; the journal keeps every event as it was."""
        old, new = check_name(old, "project"), names.check_project(new)
        src = self.memory.store(old)
        if not src.exists():
            raise RecordError(f"there is no project named {old!r}")
        dst_folder = self.data_dir / names.folder_name(new)
        if dst_folder.exists() and dst_folder.resolve() != src.folder.resolve():
            raise RecordError(f"a project named “{new}” already exists")
        self.memory.open(old)
        with self._lock:
            data = self._read(src.folder)
            held = src.in_use.take_over()  # never move a folder another Kelvin has open
            if held is None:
                raise StoreLocked(f"the project {old!r} is open in another Kelvin process (the window, a chat or "
                                  "a command); close it there first, then rename it")
            try:
                self.memory.release(old)
                if dst_folder.resolve() != src.folder.resolve():
                    try:
                        src.folder.rename(dst_folder)
                    except OSError as exc:
                        raise RecordError(f"cannot rename the project folder: {exc.strerror or exc} "
                                          "(is it open in another program?)") from None
            finally:
                held.release()
            data["name"] = new
            data.setdefault("created_ms", now_ms())
            former = data.get("former_names")
            data["former_names"] = [*(former if isinstance(former, list) else []), old]
            self._write(dst_folder, data)
        self.memory.reindex(new)  # names in the index and the Markdown headers follow
        return self._info(dst_folder, data)

    # ---- conversations -----------------------------------------------------------------------------
    def today(self) -> str:
        return self._today().isoformat()

    def conversation(self, name: str) -> str:
        """The project's current conversation; a new one when the last was started on another day."""
        info = self.ensure(name)
        today = self._today().isoformat()
        if info.conversation_id and info.conversation_day == today:
            return info.conversation_id
        return self.new_conversation(name)

    def new_conversation(self, name: str) -> str:
        store = self.memory.store(check_name(name, "project"))
        with self._lock:
            data = self._read(store.folder) or {"name": name, "created_ms": now_ms()}
            cid = new_id("c")
            data["conversation"] = {"id": cid, "day": self._today().isoformat(), "started_ms": now_ms()}
            self._write(store.folder, data)
        return cid


def _text(value) -> str:
    return value if isinstance(value, str) and len(value) < 200 else ""


def _conversation_id(value) -> str:
    """A usable conversation id, or "" (then a new conversation starts)."""
    try:
        return check_name(value, "conversation_id") if isinstance(value, str) and len(value) < 200 else ""
    except RecordError:
        return ""

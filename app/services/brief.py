"""End of day: the master brief, the archive, and tomorrow's cold start.

``BriefBuilder.build`` plans the day's messages per domain (:mod:`app.core.brief`), asks the model
for each chunk's notes (map), merges a domain cut into parts, then writes one master brief
(reduce). The "Current settings" section comes from the settings ledger; numbers the model wrote
that no source holds are flagged. The new brief replaces ``Master_Project_Brief.md`` atomically
and is appended, dated, to ``Project_Archive.md``, which is never rewritten; a cancelled or
failed run leaves both as they were. The brief is kept as a priority memory ("brief"), so the
first question tomorrow finds it, and the conversation pins it into every prompt.

It shares the conversation's model: one call at a time (the conversation's inference lock), in
its mode — on the CPU when the VRAM guard moved Kelvin there; when a render has the GPU and
Kelvin answers from memory alone, it waits (saying so) until the model is back. A mode change in
the middle of a call stops that call and runs it again in the new mode.
"""
from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from app.core import brief as plan_
from app.core.commands import Mode
from app.core.dates import as_read, long_day
from app.core.dates import written as written_on
from app.core.render_settings.parameters import format_value
from app.core.records import Message, RecordError, now_ms
from app.durable import append_durably, read_regular, write_atomically
from app.llm.errors import ModelServerUnavailable
from app.core.filters import Filters
from app.services.settings_ledger import setting_label, value_text

log = logging.getLogger("kelvin.brief")

BRIEF_FILE = "Master_Project_Brief.md"
ARCHIVE_FILE = "Project_Archive.md"
STATE_FILE = "brief.json"
FETCH_BATCH = 500
WAIT_POLL_S = 0.5
Progress = Callable[[int, int, str], None]  # (steps done, steps in all, what is happening)


class BriefCancelled(Exception):
    """The artist stopped the brief; nothing was written."""


class BriefFailed(RecordError):
    """The brief could not be written (no model, the model server gone …); nothing was written. Plain words."""


class NothingNew(BriefFailed):
    """No message since the last brief (or since the time asked for), and a brief with content
    exists: it is left as it is, and so is the archive."""

    def __init__(self, message: str, since_ms: int = 0):
        super().__init__(message)
        self.since_ms = since_ms


class NoModel(BriefFailed):
    """The summaries need the model, and it is not there (Kelvin answers from memory alone, or Ollama
    went away): :meth:`BriefBuilder.without_model` gives what the brief can say without it."""


@dataclass
class BriefResult:
    project: str
    path: Path
    archive: Path
    text: str
    sections: dict[str, str]
    settings: list[dict]
    flagged: list[str]
    domains: list[str]
    messages: int
    since_ms: int
    written_ms: int
    calls: int = 0
    mode: str = ""
    notes: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"project": self.project, "path": str(self.path), "archive": str(self.archive),
                "written_at": _iso(self.written_ms), "since": _iso(self.since_ms) if self.since_ms else None,
                "messages": self.messages, "domains": self.domains, "model_calls": self.calls, "mode": self.mode,
                "sections": {**self.sections, plan_.SETTINGS_TITLE: self.settings}, "flagged_numbers": self.flagged}


def _iso(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).astimezone().isoformat(timespec="minutes")


def _local_day(ts_ms: int) -> str:
    return datetime.fromtimestamp(ts_ms / 1000, timezone.utc).astimezone().date().isoformat()


class BriefBuilder:
    def __init__(self, conversation):
        self.conversation = conversation
        self.memory = conversation.memory
        self.ledger = conversation.ledger
        self._stream = None
        self._num_ctx = conversation.settings.num_ctx
        self._call_mode: Mode | None = None
        self._lock = threading.Lock()

    # ---- files -------------------------------------------------------------------------------------
    def folder(self, project: str | None = None) -> Path:
        return self.memory.store(project or self.conversation.project).folder

    def current(self, project: str | None = None) -> str:
        """The live brief's text ("" when none was written yet)."""
        path = self.folder(project) / BRIEF_FILE
        return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""

    def archive(self, project: str | None = None) -> list[tuple[str, str]]:
        """Every archived brief, oldest first: (heading, text)."""
        path = self.folder(project) / ARCHIVE_FILE
        if not path.is_file():
            return []
        entries = []
        for part in path.read_text(encoding="utf-8", errors="replace").split("\n---\n")[1:]:
            head, _, body = part.strip().partition("\n")
            entries.append((head.lstrip("# ").strip(), body.strip()))
        return entries

    def state(self, project: str | None = None) -> dict:
        try:
            data = json.loads(read_regular(self.folder(project) / STATE_FILE, 1 << 20))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError, RecursionError):
            return {}

    def default_since(self, project: str | None = None) -> int:
        """Since the last brief; a second brief on the same day covers what the first one did too."""
        st = self.state(project)
        last, start = int(st.get("last_ms") or 0), int(st.get("since_ms") or 0)
        if last and _local_day(last) == _local_day(now_ms()):
            return start
        return last

    # ---- the run -----------------------------------------------------------------------------------
    def build(self, project: str | None = None, since_ms: int | None = None, progress: Progress = lambda d, t, s: None,
              cancel: threading.Event | None = None, wait_for_model: bool | None = None) -> BriefResult:
        """Write the brief (blocking; run it on the inference worker). ``wait_for_model``: in
        recall mode, wait for the model to come back (default: when the VRAM guard, not the artist,
        put Kelvin there) instead of failing."""
        cancel = cancel or threading.Event()
        c = self.conversation
        project = project or c.project
        store = self.memory.store(project)
        if not store.exists():
            raise BriefFailed(f"project {project!r} has no memory yet: nothing to brief")
        self.memory.flush()
        since = self.default_since(project) if since_ms is None else since_ms
        st = self.state(project)
        if since_ms is None and st.get("last_ms") and self._has_content(store.folder / BRIEF_FILE) \
                and not self._said_since(store, st):
            # a second brief the same day covers the day again, but only when something was said since
            raise NothingNew(f"nothing new since the last brief ({_iso(int(st['last_ms'])).replace('T', ' ')[:16]}): "
                             f"the brief is unchanged ({store.folder / BRIEF_FILE})")
        messages = self._messages(project, since)
        if not messages and self._has_content(store.folder / BRIEF_FILE):
            raise NothingNew(f"nothing new since {written_on(since) if since else 'the start'}: "
                             f"the brief is unchanged ({store.folder / BRIEF_FILE})", since)
        settings = self.ledger.current(project)
        settings_lines = [self._line(cur) for cur in settings]
        self._num_ctx = self._window()
        the_plan = plan_.plan(messages, self._num_ctx)
        domains = the_plan.domains
        merges = sum(1 for d in domains if len(the_plan.of(d)) > 1)
        total = len(the_plan.chunks) + merges + (1 if domains else 0)
        step = 0
        calls = 0
        notes: dict[str, str] = {}
        listener = self._mode_changed
        c.on_mode.append(listener)
        try:
            for domain in domains:
                parts = []
                for chunk in the_plan.of(domain):
                    progress(step, total, f"Summarising {chunk.label}")
                    parts.append(self._call(plan_.map_messages(chunk, project, settings_lines),
                                            plan_.MAP_ANSWER_TOKENS, cancel, progress, step, total, wait_for_model))
                    calls += 1
                    step += 1
                if len(parts) > 1:
                    progress(step, total, f"Merging the {domain} notes")
                    parts = [self._call(plan_.merge_messages(domain, parts), plan_.MAP_ANSWER_TOKENS, cancel, progress,
                                        step, total, wait_for_model)]
                    calls += 1
                    step += 1
                notes[domain] = parts[0]
            day = _local_day(now_ms())
            if domains:
                progress(step, total, "Writing the master brief")
                written = self._call(plan_.reduce_messages(project, day, notes, settings_lines,
                                                           self._num_ctx),
                                     plan_.REDUCE_ANSWER_TOKENS, cancel, progress, step, total, wait_for_model)
                calls += 1
                step += 1
            else:
                written = f"## {plan_.SECTIONS[0]}\n\nNo conversation since the last brief" + \
                          (f" ({written_on(since)})." if since else ".")
        finally:
            c.on_mode.remove(listener)
        if cancel.is_set():
            raise BriefCancelled("the brief was stopped; the previous brief is unchanged")
        narrative = plan_.sections(written)
        sources = [m.text for m in messages] + settings_lines
        # only what the model wrote is checked: Kelvin's own words (a date in "No conversation since …") never are
        flagged = plan_.unsupported("\n".join(narrative.values()), sources) if calls else []
        narrative = {k: plan_.mark(v, flagged) for k, v in narrative.items()}
        rows = self._rows(settings)
        written_ms = now_ms()
        written_at = as_read(written_ms)  # the day is in the header already
        scene = self.ledger.scene_answer(project, say_none=False)
        text = plan_.compose(project, long_day(written_ms), written_at, narrative, plan_.settings_table(rows), flagged, domains, len(messages),
                             scene)
        result = BriefResult(project=project, path=store.folder / BRIEF_FILE, archive=store.folder / ARCHIVE_FILE,
                             text=text, sections=narrative, settings=[cur.to_json() for cur in settings], flagged=flagged,
                             domains=domains, messages=len(messages), since_ms=since, written_ms=written_ms, calls=calls,
                             mode=c.mode.value, notes=notes)
        progress(step, total, "Saving")
        self._save(result, since)
        progress(total, total, "Done")
        return result

    def without_model(self, project: str | None = None, why: str = "") -> BriefResult:
        """What the brief can say with no model: the ledger's current settings (and where the last
        scene differs), what was decided today, and the day's messages by domain — saying that the
        summaries come when the model is back. It becomes the live brief (so tomorrow starts from
        it), is not archived, and leaves "since the last brief" where it was: the next End of day
        with the model covers the same day and writes the summaries."""
        c = self.conversation
        project = project or c.project
        store = self.memory.store(project)
        if not store.exists():
            raise BriefFailed(f"project {project!r} has no memory yet: nothing to brief")
        self.memory.flush()
        now = now_ms()
        today = int(datetime.now().astimezone().replace(hour=0, minute=0, second=0, microsecond=0).timestamp() * 1000)
        settings = self.ledger.current(project)
        rows = self._rows(settings)
        decided = [f"- {setting_label(cur.entry)}: {value_text(cur)}"
                   + (f" (was {format_value(cur.previous.value, cur.previous.unit)})" if cur.previous else "")
                   + f", {as_read(cur.decision.ts_ms)}" for cur in settings
                   if cur.decision is not None and cur.decision.ts_ms >= today]
        messages = self._messages(project, today)
        by_domain: dict[str, list[Message]] = {}
        for m in messages:
            by_domain.setdefault(m.tags.domain, []).append(m)
        day_lines = []
        for domain, said in sorted(by_domain.items(), key=lambda kv: -len(kv[1])):
            day_lines.append(f"### {domain.capitalize()} — {len(said)} message{'s' if len(said) != 1 else ''}\n")
            own = [m for m in said if m.role == "user"][-3:] or said[-3:]
            day_lines += [f"- {as_read(m.ts_ms)} {'You' if m.role == 'user' else 'Kelvin'}: "
                          f"{' '.join(m.text.split())[:160]}" for m in own]
            day_lines.append("")
        scene = self.ledger.scene_answer(project, say_none=False)
        text = plan_.compose_without_model(project, long_day(now), as_read(now), plan_.settings_table(rows), scene,
                                           decided, day_lines, len(messages), why)
        result = BriefResult(project=project, path=store.folder / BRIEF_FILE, archive=store.folder / ARCHIVE_FILE,
                             text=text, sections={}, settings=[cur.to_json() for cur in settings], flagged=[],
                             domains=sorted(by_domain), messages=len(messages), since_ms=today, written_ms=now,
                             calls=0, mode="memory")
        write_atomically(result.path, text, sync_dir=True)
        st = self.state(project)
        write_atomically(store.folder / STATE_FILE, json.dumps({**st, "without_model_ms": now}, indent=1))
        return result

    def summaries_due(self, project: str | None = None) -> bool:
        """The live brief was written without the model, and no brief with it came since."""
        st = self.state(project)
        return int(st.get("without_model_ms") or 0) > int(st.get("last_ms") or 0)

    @staticmethod
    def _rows(settings) -> list[tuple[str, str, str, str]]:
        """The brief's settings table: the decided value (or the values to confirm), the file's beside it
        when they differ, when it was decided, the value before."""
        return [(setting_label(cur.entry).replace("_", " "), value_text(cur),
                 "" if cur.decision is None else written_on(cur.decision.ts_ms)
                 + (" (by hand)" if cur.decision.by == "artist" else ""),
                 "" if cur.previous is None else format_value(cur.previous.value, cur.previous.unit)) for cur in settings]

    @staticmethod
    def _has_content(path: Path) -> bool:
        try:
            return bool(read_regular(path, 64 * 2**20).decode("utf-8").strip())
        except (OSError, UnicodeDecodeError):
            return False

    def _said_since(self, store, st: dict) -> bool:
        """Whether a message was said, imported, edited or deleted since the last brief: journal events
        after the one the brief recorded (a brief from an older Kelvin: messages dated after it)."""
        last_seq = st.get("last_seq")
        if isinstance(last_seq, int) and not isinstance(last_seq, bool):
            return any(e.op.startswith("message.") for e in store.journal.read(after_seq=last_seq))
        return bool(self.memory.message_ids(store.name, Filters(since_ms=int(st["last_ms"]))))

    def _messages(self, project: str, since: int) -> list[Message]:
        ids = self.memory.message_ids(project, Filters(since_ms=since or None))
        out: list[Message] = []
        for i in range(0, len(ids), FETCH_BATCH):
            found = self.memory.messages(ids[i:i + FETCH_BATCH], project)
            out += [found[x] for x in ids[i:i + FETCH_BATCH] if x in found]
        return out

    @staticmethod
    def _line(cur) -> str:
        """The decision, the values to confirm, the file's value beside it when it differs."""
        before = f" (before: {format_value(cur.previous.value, cur.previous.unit)})" if cur.previous else ""
        d = cur.decision
        who = f" ({d.author})" if d is not None and d.author else ""  # a shared project: who decided it
        apart = "".join(f"; CONFLICT: {x.author or 'another Kelvin'} set {format_value(x.value, x.unit)} without having "
                        "seen it" for x in cur.conflict)
        return f"{setting_label(cur.entry)} = {value_text(cur)}{who}{before}{apart}"

    def _save(self, result: BriefResult, since: int) -> None:
        """Archive first, then the live brief replaced in one step: a crash in between leaves the old
        brief live (and the archive one entry ahead), never half a file."""
        folder = result.path.parent
        append_durably(result.archive, plan_.archive_entry(result.text, written_on(result.written_ms)))
        write_atomically(result.path, result.text, sync_dir=True)
        st = self.state(result.project)
        old_memory = st.get("memory_id")
        mem, fut = self.memory.remember(self._memory_text(result), "brief", project=result.project)
        fut.result()
        if old_memory:
            try:
                self.memory.forget(old_memory, result.project)  # the archive keeps the old brief whole
            except RecordError:
                pass
        self.memory.flush()
        write_atomically(folder / STATE_FILE, json.dumps({"last_ms": result.written_ms, "since_ms": since,
                                                          "memory_id": mem.id,
                                                          "last_seq": self.memory.store(result.project).journal.last_seq()},
                                                         indent=1))

    @staticmethod
    def _memory_text(result: BriefResult) -> str:
        settings = "; ".join(f"{s['name']} = {format_value(tuple(s['value']) if isinstance(s['value'], list) else s['value'], s['unit'])}"
                             for s in result.settings)
        return (f"Master brief of {_iso(result.written_ms)[:10]} for {result.project}. "
                + result.sections.get(plan_.SECTIONS[0], "")[:1500]
                + (f"\nCurrent settings: {settings}" if settings else ""))

    @property
    def backend(self):
        """The conversation's model server (the artist may switch servers between two briefs)."""
        return self.conversation.backend

    def _window(self) -> int:
        """The brief's requests are packed for the GPU window, but never more than the server takes."""
        budget_for = getattr(self.conversation, "budget_for", None)
        return budget_for(Mode.GPU, self.conversation.model).num_ctx if budget_for else self.conversation.settings.num_ctx

    # ---- one model call ------------------------------------------------------------------------------
    def _mode_changed(self, mode: Mode) -> None:
        with self._lock:
            stream, started = self._stream, self._call_mode
        if stream is not None and started is not None and mode is not started:
            stream.cancel()  # run again in the new mode (the guard took the GPU, or gave it back)

    def _wait_allowed(self, wait_for_model: bool | None) -> bool:
        if wait_for_model is not None:
            return wait_for_model
        reason = getattr(self.conversation, "mode_reason", "")
        return bool(reason) and reason != "the artist"

    def _call(self, messages: list[dict], answer_tokens: int, cancel: threading.Event, progress: Progress,
              step: int, total: int, wait_for_model: bool | None) -> str:
        c = self.conversation
        while True:
            if cancel.is_set():
                raise BriefCancelled("the brief was stopped; the previous brief is unchanged")
            mode = c.mode
            if mode is Mode.RECALL:
                if not self._wait_allowed(wait_for_model):
                    raise NoModel("the brief needs a model, and Kelvin is in recall mode; switch to GPU or CPU "
                                  "mode (kelvin brief --mode cpu) and run it again")
                progress(step, total, "Waiting: a render has the GPU; the brief goes on when Kelvin's model is back")
                cancel.wait(WAIT_POLL_S)
                continue
            with c.inference_lock:
                if c.mode is not mode:
                    continue
                try:
                    stream = self.backend.chat(c.model, messages, num_ctx=self._num_ctx, cpu=mode is Mode.CPU,
                                               num_predict=answer_tokens)
                except ModelServerUnavailable as exc:
                    raise NoModel(f"the brief could not be written: {exc}") from None
                with self._lock:
                    self._stream, self._call_mode = stream, mode
                try:
                    if cancel.is_set() or c.mode is not mode:
                        stream.cancel()
                    for _ in stream:
                        if cancel.is_set():
                            stream.cancel()
                    text = stream.text
                    cut = stream.cancelled
                except ModelServerUnavailable as exc:
                    if cancel.is_set() or c.mode is not mode:
                        cut, text = True, ""
                    else:
                        raise NoModel(f"the brief could not be written: {exc}") from None
                finally:
                    with self._lock:
                        self._stream, self._call_mode = None, None
                    stream.close()
            if cut or cancel.is_set():
                if cancel.is_set():
                    raise BriefCancelled("the brief was stopped; the previous brief is unchanged")
                log.info("brief call stopped by a mode change (%s → %s); running it again", mode.value, c.mode.value)
                time.sleep(0.05)
                continue
            if not text.strip():
                raise BriefFailed("the model gave an empty answer; the previous brief is unchanged")
            return text

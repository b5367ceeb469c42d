"""One project's settings ledger on disk: a projection of the journal, like the index and the Markdown.

Messages are read in journal order through the rule extractor (with the conversation context it
carries); the artist's own corrections are journal events of their own (``setting.set``,
``setting.unset``, ``setting.retract``). What the ledger learned is appended to
``settings.jsonl`` (one line per entry or retraction, ids stable across replays, so replaying
after a crash duplicates nothing); ``settings.state.json`` says how far it has read;
``settings.md`` shows the current values and their history to a person. Everything here can be
rebuilt from the journal.

In a project shared with a team the ledger folds the shared order: what the studio's server has
ordered is applied and persisted; this Kelvin's own events not yet ordered there are applied on
top, in memory only (*tentative*), and taken off again (:meth:`SettingsBook.undo_tentative`) when
the server's order arrives, then applied after it — so every Kelvin ends with the same ledger.
Entries of a shared project are named after their event's global id and carry its author.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import threading
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterable

if TYPE_CHECKING:  # (imported where a message is read: a command that only lists projects never pays for it)
    from app.core.render_settings.extraction import Extractor
    from app.core.render_settings.mentions import Context, Mention
    from app.core.render_settings.trust import TrustModel
from app.core.render_settings.ledger import UNSET, Current, Entry, Ledger
from app.core.render_settings.parameters import ANY, Catalogue, ParamSpec, as_candidate, check_value, format_value
from app.core.render_settings.scopes import scope_key
from app.core.records import Message
from app.durable import NotRegularFile, UnsafePath, open_append, open_regular, read_regular, write_all

log = logging.getLogger("kelvin.settings")

OP_SETTING_SET = "setting.set"
OP_SETTING_UNSET = "setting.unset"
OP_SETTING_RETRACT = "setting.retract"
OP_SETTING_ADD = "setting.add"  # a setting the model pass found in a message
OP_SETTING_SCENE = "setting.scene"  # a value read from a scene file (kelvin scene import, the Blender add-on)
SETTING_OPS = (OP_SETTING_SET, OP_SETTING_UNSET, OP_SETTING_RETRACT, OP_SETTING_ADD, OP_SETTING_SCENE)
_MESSAGE_OPS = ("message.add", "message.edit", "message.delete")
MAX_STATE_BYTES = 16 * 1024 * 1024  # the ledger's position and conversation contexts: kilobytes
MAX_CONTEXTS = 32  # conversations whose context is kept (in memory and in the state file alike)
SETTINGS_STATE = "settings.state.json"  # how far the ledger has read (another process's catch-up watches it)


class SettingsBook:
    def __init__(self, folder: Path, extractor: Extractor | Callable[[], Extractor], project: str,
                 catalogue: Catalogue | None = None, trust: TrustModel | None = None):
        self.folder = folder
        self._trust = trust  # whether a decided value may be stated (None: every one is)
        self.project_name = project
        # the rules, or a function that builds them the first time a message is read (loading the
        # ledger needs only the catalogue: ``kelvin settings list`` never builds the rules' patterns)
        self._rules = extractor
        self._catalogue = catalogue
        self._log_path = folder / "settings.jsonl"
        self._state_path = folder / SETTINGS_STATE
        self._md_path = folder / "settings.md"
        self._lock = threading.RLock()
        self.ledger = Ledger(self._trust)
        self.seq = 0
        self._lines = 0  # lines in settings.jsonl (so a lost file is noticed)
        self._read_to: tuple[int, int] = (0, 0)  # settings.jsonl's inode and the bytes of it read so far
        self._contexts: dict[str, Context] = {}  # per conversation
        self._engine = ""  # the project's engine of late (a new conversation starts from it)
        self._gone: set[str] = set()  # messages deleted (and not restored) so far in the order read
        # an event this projection cannot apply (a value from an older Kelvin, a hand-edited line): it
        # is set aside and said (the store records it beside the journal), and the rest goes on
        self.on_unapplied: Callable[[object, BaseException], None] = \
            lambda ev, exc: log.warning("journal event %s could not be applied to the settings ledger (%s: %s); "
                                        "set aside", getattr(ev, "seq", "?"), type(exc).__name__, exc)
        self._ev = None  # the journal event being applied (its id and author name the entries of a shared project)
        # tentative changes (a shared project's own events the server has not ordered yet), newest last:
        # ("add", entry) or ("retract", [entries]); and the contexts as they were before the first
        self._undo: list[tuple[str, object]] | None = None
        self._before: tuple[dict, str] = ({}, "")
        self._load()

    @property
    def extractor(self) -> Extractor:
        if not hasattr(self._rules, "extract"):
            self._rules = self._rules()  # type: ignore[operator]
        return self._rules  # type: ignore[return-value]

    @property
    def catalogue(self) -> Catalogue:
        return self._catalogue if self._catalogue is not None else self.extractor.cat

    # ---- loading ------------------------------------------------------------------------------------
    def _load(self) -> None:
        try:
            state = json.loads(read_regular(self._state_path, MAX_STATE_BYTES))
            self.seq = int(state.get("seq", 0))
            self._lines = int(state.get("lines", 0))
            self._engine = str(state.get("engine", ""))
            for cid, ctx in (state.get("contexts") or {}).items():
                self._contexts[str(cid)] = self._context_from_json(ctx)
        except FileNotFoundError:
            pass
        except (UnsafePath, NotRegularFile):
            raise  # a link or a FIFO in its place: said as such, and nothing is rebuilt over it
        except (ValueError, TypeError, AttributeError, OSError, RecursionError):
            log.warning("%s is unreadable; the settings ledger is rebuilt from the journal", self._state_path)
            self._reset()
            return
        n = 0
        try:
            n = self._read_log(0)
        except FileNotFoundError:
            pass
        if n < self._lines:  # gone, or an older copy: it holds less than the state says; read it all again
            log.warning("%s holds %d of the %d entries Kelvin wrote (an older copy?); the settings ledger is rebuilt "
                        "from the journal", self._log_path, n, self._lines)
            self._reset()

    def _read_log(self, start: int) -> int:
        """Apply settings.jsonl's whole lines from byte ``start`` on (a line still being written by
        another process is read next time). Only a regular file is read. Returns the lines read."""
        with open_regular(self._log_path) as fh:
            ino = os.fstat(fh.fileno()).st_ino
            fh.seek(start)
            data = fh.read()
        pos = start
        n = 0
        for line in data.splitlines(keepends=True):
            if not line.endswith(b"\n"):
                break
            pos += len(line)
            n += 1
            try:
                self._replay_line(json.loads(line))
            except (ValueError, KeyError, TypeError, RecursionError):
                log.warning("%s has a damaged line (%d bytes in); skipped", self._log_path, pos - len(line))
        self._read_to = (ino, pos)
        return n

    def follow(self) -> None:
        """Catch up with what another Kelvin process projected: the entries it appended to
        settings.jsonl since this one read it, then its state (how far the ledger has read, each
        conversation's context). A file started again (a rebuild elsewhere) is read from the start."""
        with self._lock:
            try:
                state = json.loads(read_regular(self._state_path, MAX_STATE_BYTES))
            except (OSError, ValueError, RecursionError):
                return  # nothing projected yet, or being replaced: the next catch-up reads it
            try:
                ino = self._log_path.stat().st_ino
            except FileNotFoundError:
                ino = 0  # no setting found yet (or a rebuild elsewhere just began)
            known_ino, start = self._read_to
            if ino != known_ino:  # another file than the one read (rebuilt elsewhere): read it whole
                self.ledger, start, self._read_to, self._gone = Ledger(self._trust), 0, (0, 0), set()
            try:
                if ino:
                    self._read_log(start)
                self.seq = int(state.get("seq", 0))
                self._lines = int(state.get("lines", 0))
                self._engine = str(state.get("engine", ""))
                self._contexts = {str(cid): self._context_from_json(ctx)
                                  for cid, ctx in (state.get("contexts") or {}).items()}
            except (OSError, ValueError, TypeError, AttributeError, KeyError):
                log.warning("%s could not be read again; it is read at the next catch-up", self._log_path)

    def _reset(self) -> None:
        self.ledger, self.seq, self._contexts, self._engine, self._lines = Ledger(self._trust), 0, {}, "", 0
        self._gone = set()
        self._read_to, self._undo, self._before = (0, 0), None, ({}, "")
        for p in (self._log_path, self._state_path):
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def _replay_line(self, d: dict) -> None:
        op = d.get("op")
        if op == "retract":
            self.ledger.retract(source_id=d.get("source_id", ""), entry_id=d.get("entry_id", ""))
        elif op == "gone":
            self._gone.add(str(d["source_id"]))
        elif op == "back":
            self._gone.discard(str(d["source_id"]))
        else:
            self._add(Entry.from_json(d["entry"]))

    def _add(self, entry: Entry) -> Entry | None:
        """Add an entry whose value the ledger can hold: checked against its parameter's kind and range;
        one that fails (a number too large to compare, written by an older Kelvin) becomes a candidate
        kept as text, with why in its note — never a value that breaks every later comparison. In a shared
        project the entry is named after the event's global id, placed in the shared order, with its author."""
        ev = self._ev
        if ev is not None and ev.kv:
            n = entry.id.rpartition(".")[2]
            entry = replace(entry, id=f"{ev.uid}.{n}", order=ev.ss or ev.seq, author=ev.by, origin=ev.kv, seen=ev.seen)
        # the rules and the model pass parse values against the parameter already; what came from outside
        # (a scene, a hand-written value) is checked against its kind and range here too
        spec = self.catalogue.specs.get(entry.key[:2]) if not entry.candidate and entry.by in ("artist", "scene") \
            and entry.value is not None else None
        try:
            if spec is not None:
                value, unit = check_value(spec, entry.value, entry.unit)
                if value != entry.value or unit != entry.unit:
                    entry = replace(entry, value=value, unit=unit)
            elif (held := as_candidate(entry.value))[1]:
                entry = replace(entry, value=held[0], candidate=True, note=_noted(entry.note, held[1]))
        except ValueError as exc:
            value, why = as_candidate(entry.value)
            entry = replace(entry, parameter=f"{entry.parameter}_as_sent"[:80], name=f"{entry.name or entry.parameter} as sent",
                            value=value, candidate=True, note=_noted(entry.note, why or str(exc)))
        if not self.ledger.add(entry):
            return None
        if self._undo is not None:
            self._undo.append(("add", entry))
        return entry

    # ---- projecting ---------------------------------------------------------------------------------
    def project(self, events: Iterable, lookup: Callable[[str], Message | None], to_message: Callable[[dict], Message],
                persist: bool = True, shared: str = "") -> int:
        """Apply journal entries past ``seq``. Returns how many ledger lines were written.
        ``shared``: a shared project's events, in the shared order and whatever their number —
        "settled" (ordered by the server: applied and persisted) or "tentative" (applied in memory,
        undone by :meth:`undo_tentative`)."""
        lines: list[dict] = []
        last = self.seq
        with self._lock:
            if shared == "tentative" and self._undo is None:
                self._undo, self._before = [], (dict(self._contexts), self._engine)
            for ev in events:
                if ev.seq <= self.seq and not shared:
                    continue
                last = max(last, ev.seq)
                self._ev = ev
                try:
                    lines += self._apply(ev, lookup, to_message)
                except OSError:
                    self._ev = None
                    raise  # the disk, not the event: the projection catches up later
                except Exception as exc:  # noqa: BLE001 — one bad event must not stop the ledger for good
                    self.on_unapplied(ev, exc)
            self._ev = None
            if last == self.seq and not shared:
                return 0
            self.seq = last
            if persist and shared != "tentative":
                self._persist(lines)
        return len(lines)

    def _apply(self, ev, lookup: Callable[[str], Message | None], to_message: Callable[[dict], Message]) -> list[dict]:
        if ev.op == "message.restore":
            return self._back(ev.data["id"]) + self._from_message(to_message(ev.data), ev.seq)
        if ev.op == "message.add":
            return self._from_message(to_message(ev.data), ev.seq)
        if ev.op == "message.delete":
            return self._retract(ev.data["id"]) + self._gone_now(ev.data["id"])
        if ev.op == "message.edit":
            lines = self._retract(ev.data["id"])
            if ev.data["id"] in self._gone:  # deleted before this edit in the journal's (or the team's) order
                return lines
            msg = _edited_message(ev.data, to_message) or lookup(ev.data["id"])
            if msg is not None:
                lines += self._from_message(msg, ev.seq, edited_text=ev.data["text"])
            return lines
        if ev.op in SETTING_OPS:
            return self._artist(ev.op, ev.data, ev.seq)
        return []

    def undo_tentative(self) -> int:
        """Take off everything applied tentatively (newest first), and the conversation contexts
        they changed: the ledger is again what the server's order alone makes it. Returns how many
        changes were undone."""
        with self._lock:
            started = self._undo is not None
            undo, self._undo = self._undo or [], None
            for kind, what in reversed(undo):
                if kind == "add":
                    self.ledger.forget(what.id)  # type: ignore[union-attr]
                elif kind == "gone":
                    self._gone.discard(what)  # type: ignore[arg-type]
                elif kind == "back":
                    self._gone.add(what)  # type: ignore[arg-type]
                else:
                    for entry in what:  # type: ignore[union-attr]
                        self.ledger.unretract(entry)
            if started:  # (a tentative message may have changed a context without adding an entry)
                self._contexts, self._engine = self._before
            self._before = ({}, "")
            return len(undo)

    @contextmanager
    def changing(self):
        """Hold the ledger still for this process's readers while a change of several steps is made
        (a shared project's tentative part taken off, the server's order applied, put back on)."""
        with self._lock:
            yield

    def _take(self, source_id: str = "", entry_id: str = "") -> list:
        gone = self.ledger.retract(source_id=source_id, entry_id=entry_id)
        if gone and self._undo is not None:
            self._undo.append(("retract", gone))
        return gone

    def _from_message(self, m: Message, seq: int, edited_text: str | None = None) -> list[dict]:
        from app.core.render_settings.mentions import Context

        ctx = self._contexts.get(m.conversation_id) or Context(engine=self._engine)
        if m.status in ("recall", "failed"):  # quotes of other messages, and no-replies, state nothing new
            return []
        mentions, ctx = self.extractor.extract(edited_text if edited_text is not None else m.text, m.role, ctx)
        self._contexts.pop(m.conversation_id, None)  # the newest last, as the state file keeps them
        self._contexts[m.conversation_id] = ctx
        while len(self._contexts) > MAX_CONTEXTS:  # old conversations: their context no longer matters
            self._contexts.pop(next(iter(self._contexts)))
        self._engine = ctx.engine or self._engine
        out = []
        for n, mention in enumerate(mentions):
            entry = self._entry(mention, f"{seq}.{n}", m.ts_ms, m.id, seq, "rules")
            if (added := self._add(entry)) is not None:
                out.append({"op": "add", "entry": added.to_json()})
        return out

    @staticmethod
    def _entry(m: Mention, eid: str, ts_ms: int, source_id: str, seq: int, by: str) -> Entry:
        return Entry(id=eid, engine=m.engine, parameter=m.parameter, value=m.value, unit=m.unit, status=m.status,
                     ts_ms=ts_ms, source_id=source_id, domain=m.domain, name=m.name, by=by,
                     candidate=m.candidate, order=seq, scope=m.scope, sure=m.sure, confidence=m.confidence,
                     confirmed=m.confirmed, restore=m.restore, before=m.before)

    def _retract(self, source_id: str) -> list[dict]:
        return [{"op": "retract", "source_id": source_id}] if self._take(source_id=source_id) else []

    def _gone_now(self, message_id: str) -> list[dict]:
        """A message deleted: an edit of it later in the order (a teammate's, made before the deletion
        reached them) changes nothing, whatever the index holds when the edit is read."""
        if message_id in self._gone:
            return []
        self._gone.add(message_id)
        if self._undo is not None:
            self._undo.append(("gone", message_id))
        return [{"op": "gone", "source_id": message_id}]

    def _back(self, message_id: str) -> list[dict]:
        if message_id not in self._gone:
            return []
        self._gone.discard(message_id)
        if self._undo is not None:
            self._undo.append(("back", message_id))
        return [{"op": "back", "source_id": message_id}]

    def _artist(self, op: str, d: dict, seq: int) -> list[dict]:
        if op == OP_SETTING_ADD:
            value = d.get("value")
            from app.core.render_settings.mentions import Mention

            m = Mention(engine=str(d.get("engine") or ANY), parameter=str(d["parameter"]),
                        value=tuple(value) if isinstance(value, list) else value, unit=str(d.get("unit") or ""),
                        status=str(d["status"]), name=str(d.get("name") or ""), domain=str(d.get("domain") or "general"),
                        scope=scope_key(d.get("scope")))
            entry = self._entry(m, f"{seq}.0", int(d["ts_ms"]), str(d.get("source_id") or ""), seq, "model")
            return [{"op": "add", "entry": kept.to_json()}] if (kept := self._add(entry)) else []
        if op == OP_SETTING_SCENE:  # applied, from the scene: the file and scene in the note
            value = d.get("value")
            entry = Entry(id=f"{seq}.0", engine=str(d.get("engine") or ANY), parameter=str(d["parameter"]),
                          value=tuple(value) if isinstance(value, list) else value, unit=str(d.get("unit") or ""),
                          status="applied", ts_ms=int(d["ts_ms"]), domain=str(d.get("domain") or "general"),
                          name=str(d.get("name") or ""), by="scene", candidate=bool(d.get("candidate")), order=seq,
                          note=str(d.get("note") or ""), scope=scope_key(d.get("scope")))
            return [{"op": "add", "entry": kept.to_json()}] if (kept := self._add(entry)) else []
        if op == OP_SETTING_RETRACT:
            gone = self._take(entry_id=str(d.get("entry_id", "")))
            return [{"op": "retract", "entry_id": d.get("entry_id", "")}] if gone else []
        value = d.get("value")
        entry = Entry(id=f"{seq}.0", engine=str(d.get("engine") or ANY), parameter=str(d["parameter"]),
                      value=tuple(value) if isinstance(value, list) else value, unit=str(d.get("unit") or ""),
                      status="applied" if op == OP_SETTING_SET else UNSET, ts_ms=int(d["ts_ms"]),
                      domain=str(d.get("domain") or "general"), name=str(d.get("name") or ""), by="artist",
                      order=seq, note=str(d.get("note") or ""), scope=scope_key(d.get("scope")))
        return [{"op": "add", "entry": kept.to_json()}] if (kept := self._add(entry)) else []

    def _persist(self, lines: list[dict]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        if lines:
            blob = "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")
            with open_append(self._log_path) as fh:
                end = os.lseek(fh.fileno(), 0, os.SEEK_END)
                write_all(fh, blob, sync=False)
                ino = os.fstat(fh.fileno()).st_ino
            if self._read_to == (ino, end) or end == 0:  # read to its end: this write is read too
                self._read_to = (ino, end + len(blob))
            self._lines += len(lines)
        state = {"seq": self.seq, "lines": self._lines, "engine": self._engine,
                 "contexts": {cid: self._context_json(c) for cid, c in self._contexts.items()}}
        fd, tmp = tempfile.mkstemp(prefix=".settings.", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state, fh)
        os.replace(tmp, self._state_path)
        if any(line["op"] in ("add", "retract") for line in lines):  # (a deletion's "gone" line changes no value)
            self._write_markdown()

    # ---- contexts (persisted, so "ok, using 4" after a restart still means something) ------------
    @staticmethod
    def _context_json(c: Context) -> dict:
        """A conversation's context as the state file keeps it: everything of it, so that a Kelvin that
        read it back after a restart reads the next message exactly as one that kept it in memory."""
        return {"engine": c.engine, "last": [[s.engine, s.key] for s in c.last],
                "proposals": [_mention_json(m) for m in c.proposals],
                "applied": [_mention_json(m) for m in c.applied],
                "asked": [[s.engine, s.key] for s in c.asked],
                "objects": list(c.objects)}

    def _context_from_json(self, d: dict) -> Context:
        from app.core.render_settings.mentions import Context, Mention

        specs = self.catalogue.specs

        def mention(j: dict) -> Mention:
            value = j.get("value")
            return Mention(engine=j.get("engine") or ANY, parameter=j["parameter"],
                           value=tuple(value) if isinstance(value, list) else value, unit=j.get("unit", ""),
                           status=j["status"], candidate=j.get("candidate") is True, name=j.get("name", ""),
                           domain=j.get("domain", "general"), restore=j.get("restore") is True,
                           confirmed=j.get("confirmed") is True, before=j.get("before") is True,
                           scope=scope_key(j.get("scope")), sure=j.get("sure", True) is not False,
                           confidence=float(j.get("confidence", 1.0)), sentence=int(j.get("sentence", -1)),
                           guessed=str(j.get("guessed", "")))

        def parameters(key: str) -> tuple[ParamSpec, ...]:
            return tuple(specs[(e, k)] for e, k in d.get(key, []) if (e, k) in specs)

        return Context(engine=str(d.get("engine", "")), last=parameters("last"),
                       proposals=tuple(mention(j) for j in d.get("proposals", [])),
                       applied=tuple(mention(j) for j in d.get("applied", [])), asked=parameters("asked"),
                       objects=tuple(str(o)[:60] for o in (d.get("objects") or [])[-16:] if isinstance(o, str) and o))

    # ---- reading ------------------------------------------------------------------------------------
    @property
    def engine(self) -> str:
        """The engine the project has been talking about lately ("" if none yet)."""
        return self._engine

    def engine_of(self, conversation_id: str) -> str:
        """The engine a conversation is about, as its settings were read ("" if none named yet); else
        the project's lately."""
        with self._lock:
            ctx = self._contexts.get(conversation_id)
            return (ctx.engine if ctx is not None else "") or self._engine

    def currents(self, engine: str | None = None, candidates: bool = False) -> list[Current]:
        with self._lock:
            return self.ledger.currents(engine, candidates)

    def history(self, engine: str, parameter: str, scope: str = "") -> list[Entry]:
        with self._lock:
            return self.ledger.history(engine, parameter, scope)

    def current(self, engine: str, parameter: str, scope: str = "") -> Current | None:
        with self._lock:
            return self.ledger.current(engine, parameter, scope)

    def keys(self) -> list[tuple[str, str, str]]:
        with self._lock:
            return self.ledger.keys()

    def mentions_of(self, source_id: str) -> list[Entry]:
        with self._lock:
            return self.ledger.of_source(source_id)

    # ---- the readable file --------------------------------------------------------------------------
    def _write_markdown(self) -> None:
        from app.core.context import when

        lines = [f"# Settings — {self.project_name}", "",
                 "Current values, as the settings ledger has them (written by Kelvin; edit with "
                 "`kelvin settings set|unset`, not here).", ""]
        currents = self.ledger.currents()
        if not currents:
            lines.append("_No settings yet._")
        for engine in sorted({c.entry.engine for c in currents}):
            lines += [f"## {engine.capitalize() if engine else 'Camera, lights, output'}", "",
                      "| setting | decided | since | before | in the file |", "|---|---|---|---|---|"]
            for c in (c for c in currents if c.entry.engine == engine):
                e, p, d = c.entry, c.previous, c.decision
                before = f"{format_value(p.value, p.unit)} ({when(p.ts_ms)})" if p else ""
                name = (e.name or e.parameter) + (f" ({e.scope})" if e.scope else "")
                decided = format_value(d.value, d.unit) if d is not None else "—"
                if c.unsure:
                    decided = " or ".join(format_value(a.value, a.unit) for a in c.alternatives) + " — to confirm" \
                        if c.alternatives else f"{decided} — to confirm"
                since = f"{when(d.ts_ms)}{' (by hand)' if d.by == 'artist' else ''}" if d is not None else ""
                held = f"{format_value(c.held.value, c.held.unit)} ({c.held.note})" if c.held is not None else ""
                lines.append(f"| {name} | {decided} | {since} | {before} | {held} |")
            lines.append("")
        body = "\n".join(lines) + "\n"
        fd, tmp = tempfile.mkstemp(prefix=".settings-md.", dir=self.folder)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(body)
        os.replace(tmp, self._md_path)

    def rebuild(self, events: Iterable, lookup, to_message, shared: str = "") -> None:
        with self._lock:
            self._reset()
            self.project(events, lookup, to_message, shared=shared)
            if not self._md_path.exists():
                self._write_markdown()


def _edited_message(data: dict, to_message: Callable[[dict], Message]) -> Message | None:
    """The message an edit event carries whole (edits are written so since Nov 2026): read as it was where
    the edit stands in the order, not as the index holds it when the ledger gets there (it may be
    deleted by then, or taken out while a team's order is settled). None for an older, bare edit."""
    if not all(k in data for k in ("conversation_id", "role", "ts_ms", "speaker")):
        return None
    try:
        return to_message(data)
    except (KeyError, TypeError, ValueError):
        return None


def _mention_json(m: Mention) -> dict:
    """A mention carried in a conversation's context, every field of it (its confidence and whether it
    was a restore decide how a later "ok" or "back to that" is read)."""
    return m.to_json() | {"name": m.name, "domain": m.domain,
                          **({"restore": True} if m.restore else {}), **({"confirmed": True} if m.confirmed else {}),
                          **({"before": True} if m.before else {}),
                          **({"confidence": m.confidence} if m.confidence != 1.0 else {}),
                          **({"sentence": m.sentence} if m.sentence != -1 else {}),
                          **({"guessed": m.guessed} if m.guessed else {})}


def _noted(note: str, why: str) -> str:
    return f"{note} · {why}"[:200] if note else why[:200]

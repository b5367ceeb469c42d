"""The studio's PostgreSQL: where a shared project's journal is ordered for the whole team.

One schema, ``kelvin``: ``projects`` (one row per shared project, holding the last sequence number
given), ``events`` (every event, keyed by its global id: the idempotency key) and
``schema_version``. A push takes the project's row lock, numbers the events the server does not
have yet right after the last number (so the sequence is gap-free and in commit order — a reader
tailing it by number never skips a row, which tailing by an auto-increment id or a timestamp
would), inserts them with ``INSERT … ON CONFLICT DO NOTHING`` and says so with ``NOTIFY``: pushing
the same batch twice changes nothing. Pulls read by that number.

The connection is a libpq connection string or service name (the ``team_server`` setting);
passwords stay where PostgreSQL's own tools keep them (``~/.pgpass``, the service file, ``PG*``
variables) and every message from here is said without them (:func:`redact`).
"""
from __future__ import annotations

import json
import logging
import os
import re
import time
from dataclasses import dataclass

from app.memory.journal import Entry

log = logging.getLogger("kelvin.team")

SCHEMA_VERSION = 1
CHANNEL = "kelvin_events"
CONNECT_TIMEOUT_S = 5
_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS kelvin;
CREATE TABLE IF NOT EXISTS kelvin.schema_version (version integer NOT NULL);
CREATE TABLE IF NOT EXISTS kelvin.projects (
    id uuid PRIMARY KEY,
    name text NOT NULL UNIQUE,
    created_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    last_seq bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS kelvin.events (
    id uuid PRIMARY KEY,
    project uuid NOT NULL REFERENCES kelvin.projects (id),
    seq bigint NOT NULL,
    author text NOT NULL,
    origin text NOT NULL,
    seen bigint NOT NULL,
    made_at bigint NOT NULL,
    stored_at timestamptz NOT NULL DEFAULT now(),
    op text NOT NULL,
    data jsonb NOT NULL,
    UNIQUE (project, seq)
);
"""


class TeamServerError(RuntimeError):
    """The studio's server could not be used; the message says why in one plain sentence.
    ``kind``: "offline" (unreachable, cut, restarting), "refused" (a login or setup problem),
    "read_only" (this role may read but not write), "newer" (a newer Kelvin's schema)."""

    def __init__(self, message: str, kind: str = "offline"):
        super().__init__(message)
        self.kind = kind


def redact(text: str) -> str:
    """A message with every password taken out (``password=…``, a URI's ``user:password@``, the
    value of PGPASSWORD wherever it appears)."""
    text = re.sub(r"(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)", r"\1***", str(text), flags=re.IGNORECASE)
    text = re.sub(r"(postgres(?:ql)?://[^:/@\s]+):[^@\s]*@", r"\1:***@", text)
    secret = os.environ.get("PGPASSWORD")
    return text.replace(secret, "***") if secret else text


def conninfo(setting: str) -> str:
    """The ``team_server`` setting as a libpq connection string: a bare word is a service name
    (from pg_service.conf); a short timeout is added unless the setting has its own."""
    s = setting.strip()
    if s and "=" not in s and "://" not in s:
        s = f"service={s}"
    if "connect_timeout" not in s:
        s = f"{s}{'&' if '?' in s else '?'}connect_timeout={CONNECT_TIMEOUT_S}" if "://" in s \
            else f"{s} connect_timeout={CONNECT_TIMEOUT_S}"
    return s


def where(setting: str) -> str:
    """Where the server is, in words safe to show (host, port, database, user; never a password)."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(conninfo(setting))
    except Exception:  # noqa: BLE001 — a malformed string: said as such by connect()
        return "the studio's server"
    if d.get("service"):
        return f"the studio's server (service {d['service']})"
    host = str(d.get("host") or os.environ.get("PGHOST") or "localhost")
    local = host.startswith("/")
    bits = ["a local socket" if local else host + (f":{d['port']}" if d.get("port") else ""),
            f"database {d['dbname']}" if d.get("dbname") else "",
            f"user {d['user']}" if d.get("user") else ""]
    return "the studio's server (" + ", ".join(b for b in bits if b) + ")"


@dataclass(frozen=True)
class ServerProject:
    id: str
    name: str
    last_seq: int
    created_by: str


def _plain(exc: Exception, setting: str) -> TeamServerError:
    """A psycopg error as one plain sentence (no password), and its kind."""
    import psycopg
    from psycopg import errors

    place = where(setting)
    msg = redact(" ".join(str(exc).split()))
    if isinstance(exc, errors.InsufficientPrivilege):
        return TeamServerError(f"your role on {place} may read this project but not write to it ({msg}); your work "
                               "stays on this machine — ask the studio's admin for write rights", "read_only")
    if isinstance(exc, (errors.InvalidPassword, errors.InvalidAuthorizationSpecification)) or \
            "password authentication failed" in msg or "no password supplied" in msg:
        return TeamServerError(f"{place} refused the login ({msg}); put the password in ~/.pgpass or the service "
                               "file, never in kelvin.toml", "refused")
    if isinstance(exc, errors.InvalidCatalogName):
        return TeamServerError(f"{place}: {msg}; check the database name in team_server", "refused")
    if isinstance(exc, errors.UndefinedTable) or isinstance(exc, errors.InvalidSchemaName):
        return TeamServerError(f"{place} has no Kelvin tables yet; the first `kelvin team share` by a role allowed to "
                               "create them sets them up (see README, Team memory)", "refused")
    if isinstance(exc, psycopg.ProgrammingError) and "invalid" in msg.lower():
        return TeamServerError(f"the team_server setting is not a connection string libpq understands ({msg})",
                               "refused")
    return TeamServerError(f"{place} cannot be reached ({msg}); Kelvin keeps working on this machine and sends "
                           "what is waiting when it is back", "offline")


def _event_row(r: tuple) -> Entry:
    seq, uid, author, origin, seen, made_at, op, data = r
    return Entry(0, op, int(made_at), json.loads(data) if isinstance(data, str) else data, uid=uid, by=author,
                 kv=origin, seen=int(seen), ss=int(seq))


class TeamServer:
    """One connection to the studio's server (opened on first use, opened again after a failure)."""

    def __init__(self, setting: str):
        self.setting = setting
        self._conn = None

    # ---- the connection ------------------------------------------------------------------------------
    def _connect(self):
        try:
            import psycopg
        except ImportError:
            raise TeamServerError("team memory needs the psycopg package, which this Kelvin lacks: "
                                  "pip install 'kelvin[team]'", "refused") from None
        if self._conn is None or self._conn.closed or self._conn.broken:
            self.close()
            try:
                self._conn = psycopg.connect(conninfo(self.setting), application_name="kelvin")
            except psycopg.Error as exc:
                raise _plain(exc, self.setting) from None
        return self._conn

    def _run(self, fn):
        """``fn(conn)`` in one transaction; a psycopg error becomes a plain TeamServerError (and the
        connection is dropped, to be opened again next time). A connection kept from before that
        turns out dead (the server restarted, the network cut it) is opened again once at once:
        every call here may run twice (a push changes nothing the second time)."""
        import psycopg

        for attempt in (1, 2):
            kept = self._conn is not None and not self._conn.closed
            conn = self._connect()
            try:
                with conn.transaction():
                    return fn(conn)
            except psycopg.Error as exc:
                dead = conn.broken or isinstance(exc, psycopg.OperationalError)
                if dead:
                    self.close()
                if dead and kept and attempt == 1:
                    continue
                raise _plain(exc, self.setting) from None

    def close(self) -> None:
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001 — closing a connection that is already gone
                pass
            self._conn = None

    # ---- the schema ----------------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The server's schema version (0: no Kelvin tables yet)."""
        def read(conn):
            if conn.execute("SELECT to_regclass('kelvin.schema_version')").fetchone()[0] is None:
                return 0
            row = conn.execute("SELECT max(version) FROM kelvin.schema_version").fetchone()
            return int(row[0] or 0)

        return self._run(read)

    def ensure_schema(self) -> None:
        """Create the tables if the server has none (needs the right to create them); refuse a
        server set up by a newer Kelvin."""
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise TeamServerError(f"{where(self.setting)} was set up by a newer Kelvin (schema {version}; this one "
                                  f"knows {SCHEMA_VERSION}); update Kelvin to work with it — your work stays here "
                                  "meanwhile", "newer")
        if version == SCHEMA_VERSION:
            return

        def create(conn):
            conn.execute("SELECT pg_advisory_xact_lock(7242011)")  # two first shares at once: one creates
            conn.execute(_SCHEMA)
            if conn.execute("SELECT count(*) FROM kelvin.schema_version").fetchone()[0] == 0:
                conn.execute("INSERT INTO kelvin.schema_version VALUES (%s)", (SCHEMA_VERSION,))

        self._run(create)

    def check_version(self) -> None:
        version = self.schema_version()
        if version > SCHEMA_VERSION:
            raise TeamServerError(f"{where(self.setting)} was set up by a newer Kelvin (schema {version}; this one "
                                  f"knows {SCHEMA_VERSION}); update Kelvin to work with it — your work stays here "
                                  "meanwhile", "newer")

    # ---- projects ------------------------------------------------------------------------------------
    def projects(self) -> list[ServerProject]:
        return self._run(lambda conn: [ServerProject(str(i), n, int(s), c) for i, n, s, c in conn.execute(
            "SELECT id::text, name, last_seq, created_by FROM kelvin.projects ORDER BY lower(name)").fetchall()])

    def find(self, name: str) -> ServerProject | None:
        return next((p for p in self.projects() if p.name.casefold() == name.casefold()), None)

    def create_project(self, project_id: str, name: str, by: str) -> ServerProject:
        def create(conn):
            conn.execute("INSERT INTO kelvin.projects (id, name, created_by) VALUES (%s, %s, %s) "
                         "ON CONFLICT DO NOTHING", (project_id, name, by))
            i, n, s, c = conn.execute("SELECT id::text, name, last_seq, created_by FROM kelvin.projects "
                                      "WHERE name = %s", (name,)).fetchone()
            return ServerProject(i, n, int(s), c)

        return self._run(create)

    # ---- pushing and pulling -------------------------------------------------------------------------
    def push(self, project_id: str, events: list[Entry]) -> dict[str, int]:
        """Put events in the project's shared order, once each: returns every event's place (the
        new ones numbered after the last, those already there where they are)."""
        if not events:
            return {}

        def push(conn):
            row = conn.execute("SELECT last_seq FROM kelvin.projects WHERE id = %s FOR UPDATE", (project_id,)).fetchone()
            if row is None:
                raise TeamServerError("this project is no longer on the studio's server (removed there); share it "
                                      "again with `kelvin team share`", "refused")
            last = int(row[0])
            uids = [e.uid for e in events]
            there = dict(conn.execute("SELECT id::text, seq FROM kelvin.events WHERE id = ANY(%s::uuid[])",
                                      (uids,)).fetchall())
            new = [e for e in dict((e.uid, e) for e in events).values() if e.uid not in there]
            places = {e.uid: last + 1 + i for i, e in enumerate(new)}
            if new:
                cur = conn.execute(
                    "INSERT INTO kelvin.events (id, project, seq, author, origin, seen, made_at, op, data) "
                    "SELECT u, %s, s, a, o, n, m, op, d::jsonb FROM unnest(%s::uuid[], %s::bigint[], %s::text[], "
                    "%s::text[], %s::bigint[], %s::bigint[], %s::text[], %s::text[]) AS t(u, s, a, o, n, m, op, d) "
                    "ON CONFLICT (id) DO NOTHING",
                    (project_id, [e.uid for e in new], [places[e.uid] for e in new], [e.by for e in new],
                     [e.kv for e in new], [e.seen for e in new], [e.at for e in new], [e.op for e in new],
                     [json.dumps(e.data, ensure_ascii=False) for e in new]))
                if cur.rowcount != len(new):  # cannot happen under the row lock; a gap never reaches the log
                    raise TeamServerError("the studio's server took only part of a push; nothing of it was kept "
                                          "and it is sent again", "offline")
                conn.execute("UPDATE kelvin.projects SET last_seq = %s WHERE id = %s", (last + len(new), project_id))
                conn.execute("SELECT pg_notify(%s, %s)", (CHANNEL, f"{project_id}:{last + len(new)}"))
            return {**{u: int(s) for u, s in there.items()}, **places}

        return self._run(push)

    def pull(self, project_id: str, after: int, limit: int = 5000) -> tuple[list[Entry], int]:
        """The project's events after ``after``, in order (at most ``limit``), and its last number."""
        def pull(conn):
            last = conn.execute("SELECT last_seq FROM kelvin.projects WHERE id = %s", (project_id,)).fetchone()
            if last is None:
                raise TeamServerError("this project is no longer on the studio's server (removed there)", "refused")
            rows = conn.execute(
                "SELECT seq, id::text, author, origin, seen, made_at, op, data::text FROM kelvin.events "
                "WHERE project = %s AND seq > %s ORDER BY seq LIMIT %s", (project_id, after, limit)).fetchall()
            return [_event_row(r) for r in rows], int(last[0])

        events, last = self._run(pull)
        contiguous = []
        for e in events:  # gap-free by construction; never settle past a hole if one ever showed
            if e.ss != after + len(contiguous) + 1:
                log.warning("the server's sequence has a hole after %d; pulling again later", after + len(contiguous))
                break
            contiguous.append(e)
        return contiguous, last

    # ---- the doctor's questions ---------------------------------------------------------------------
    def facts(self) -> dict:
        """Reachable, version, rights, clock skew (ms, the server's clock minus this one's, the round
        trip halved), schema version."""
        def read(conn):
            t0 = time.time()
            server_ms, version, user = conn.execute(
                "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint, current_setting('server_version'), "
                "current_user").fetchone()
            t1 = time.time()
            rights = {}
            if conn.execute("SELECT to_regclass('kelvin.events')").fetchone()[0] is not None:
                rights = dict(zip(("read", "write", "share"), conn.execute(
                    "SELECT has_table_privilege('kelvin.events', 'SELECT'), "
                    "has_table_privilege('kelvin.events', 'INSERT') AND has_table_privilege('kelvin.projects', 'UPDATE'), "
                    "has_table_privilege('kelvin.projects', 'INSERT')").fetchone()))
            return {"version": version, "user": user, "skew_ms": int(server_ms - (t0 + t1) * 500),
                    "rtt_ms": round((t1 - t0) * 1000, 1), "rights": rights}

        facts = self._run(read)
        facts["schema"] = self.schema_version()
        return facts


class Listener:
    """A connection that waits for the server's word that a project has new events
    (``LISTEN``/``NOTIFY``); the sync polls as well, so a lost word only delays."""

    def __init__(self, setting: str):
        self.setting = setting
        self._conn = None
        self._closed = False

    def wait(self, timeout: float) -> set[str] | None:
        """The projects (ids) with news within ``timeout`` seconds (empty: none came), or None when
        the server cannot be listened to (then the caller polls)."""
        import psycopg

        if self._closed:
            return None
        try:
            if self._conn is None or self._conn.closed:
                self._conn = psycopg.connect(conninfo(self.setting), autocommit=True, application_name="kelvin-listen")
                self._conn.execute(f"LISTEN {CHANNEL}")
            news = set()
            for n in self._conn.notifies(timeout=timeout, stop_after=1):
                news.add(n.payload.partition(":")[0])
            return news
        except psycopg.Error as exc:
            log.debug("listening for the team's news failed: %s", redact(str(exc)))
            self.close(for_good=False)
            return None

    def close(self, for_good: bool = True) -> None:
        self._closed = self._closed or for_good
        if self._conn is not None:
            try:
                self._conn.close()
            except Exception:  # noqa: BLE001
                pass
            self._conn = None

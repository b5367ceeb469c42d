"""A throwaway PostgreSQL 15 cluster for the team-memory tests and benches: ``initdb`` into a
temporary folder, a unix socket there (and 127.0.0.1 with passwords, for the login tests), run as
the unprivileged user ``pgtest`` when this is root (postgres refuses root). Stopped by ``pg_ctl stop
-m fast`` and, should that not end it, SIGKILL. No mock anywhere: every test talks to this server.
"""
from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

BIN = Path(os.environ.get("KELVIN_PG_BIN", "/usr/lib/postgresql/15/bin"))
USER = "pgtest"


def available() -> str:
    """"" when a cluster can be started here, else why not."""
    if not (BIN / "initdb").exists():
        return f"PostgreSQL 15 is not installed ({BIN}/initdb missing; apt-get install postgresql-15)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(USER)
        except KeyError:
            return f"running as root and there is no user {USER!r} to run postgres as (useradd {USER})"
    return ""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    def __init__(self, durable: bool = False):
        """``durable``: fsync as a studio's server would (the benches); tests run without it."""
        self.durable = durable
        self.root = Path(tempfile.mkdtemp(prefix="kelvin-pg-"))
        self.data = self.root / "data"
        self.port = _free_port()
        self.socket_dir = str(self.root)
        self._user = None
        if os.geteuid() == 0:
            self._user = pwd.getpwnam(USER)
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
        os.chmod(self.root, 0o755)

    def _as_owner(self, *cmd: str, timeout: float = 120) -> subprocess.CompletedProcess:
        argv = [str(c) for c in cmd]
        if self._user is not None:
            argv = ["runuser", "-u", USER, "--", *argv]
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              stdin=subprocess.DEVNULL)

    # ---- life --------------------------------------------------------------------------------------
    def start(self) -> "Cluster":
        if not self.data.exists():
            r = self._as_owner(BIN / "initdb", "-D", self.data, "-U", "postgres", "-A", "trust", "--no-sync",
                               "-E", "UTF8", "--locale=C")
            if r.returncode:
                raise RuntimeError(f"initdb failed: {r.stderr}")
            hba = self.data / "pg_hba.conf"
            rules = ("local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n")
            self._as_owner("sh", "-c", f"printf '{rules}' > {hba}")
        opts = (f"-k {self.socket_dir} -p {self.port} -c listen_addresses=127.0.0.1 -c max_connections=200 "
                f"-c shared_buffers=32MB")
        if not self.durable:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        r = self._as_owner(BIN / "pg_ctl", "-D", self.data, "-o", opts, "-l", self.root / "log.txt", "-w", "-t", "60",
                           "start")
        if r.returncode:
            log = (self.root / "log.txt").read_text(errors="replace") if (self.root / "log.txt").exists() else ""
            raise RuntimeError(f"postgres did not start: {r.stderr}\n{log[-2000:]}")
        return self

    def ensure_started(self) -> None:
        """Start the cluster unless it runs (a test that stopped it and failed before starting it again)."""
        pid = self.pid()
        if pid is not None:
            try:
                os.kill(pid, 0)
                return
            except ProcessLookupError:
                pass
        self.start()

    def pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        """pg_ctl stop -m fast; SIGKILL if it is still there after that."""
        pid = self.pid()
        self._as_owner(BIN / "pg_ctl", "-D", self.data, "-m", "fast", "-w", "-t", "20", "stop", timeout=40)
        if pid is not None:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            os.kill(pid, signal.SIGKILL)
            for _ in range(100):
                try:
                    os.kill(pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.05)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # ---- inside ------------------------------------------------------------------------------------
    def conninfo(self, dbname: str = "postgres", user: str = "postgres") -> str:
        return f"host={self.socket_dir} port={self.port} dbname={dbname} user={user}"

    def sql(self, statement: str, dbname: str = "postgres", user: str = "postgres") -> list:
        import psycopg

        with psycopg.connect(self.conninfo(dbname, user), autocommit=True) as conn:
            cur = conn.execute(statement)
            return cur.fetchall() if cur.description else []

    def database(self, name: str) -> str:
        """A fresh database with three roles in it: ``writer_<name>`` (may share, push and pull),
        ``reader_<name>`` (may only read), both logging in through the socket without a password.
        Returns its name."""
        self.sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        self.sql(f'CREATE DATABASE "{name}"')
        for role in (f"writer_{name}", f"reader_{name}"):
            if not self.sql(f"SELECT 1 FROM pg_roles WHERE rolname = '{role}'"):
                self.sql(f'CREATE ROLE "{role}" LOGIN')
        self.sql(f'GRANT CREATE ON DATABASE "{name}" TO "writer_{name}"')
        return name

    def grant_reader(self, name: str) -> None:
        """After the writer made the tables: the reader may read them, nothing more."""
        self.sql(f'GRANT USAGE ON SCHEMA kelvin TO "reader_{name}"', dbname=name, user=f"writer_{name}")
        self.sql(f'GRANT SELECT ON ALL TABLES IN SCHEMA kelvin TO "reader_{name}"', dbname=name, user=f"writer_{name}")

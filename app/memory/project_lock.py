"""The locks that let several Kelvin processes share one project (the window, ``kelvin`` commands in a
terminal, the Blender add-on's ``kelvin scene import -``).

* :class:`WriteLock` (``journal/LOCK``): exclusive, held for the length of **one write** — a journal
  append and its projections — never for a process's life. A writer that finds it taken waits, a
  bounded time, then says in one sentence who holds it and for how long. The holder writes its pid,
  what it is (``kelvin memory import day.jsonl``, ``Kelvin's window``) and since when into the file.
* :class:`InUse` (``journal/IN-USE``): shared, held by every process that has the project open,
  for its whole life; only moving the project's folder (a rename) asks for it exclusively, so a
  folder is never moved from under a process that reads or writes it.

Both are OS locks (``flock`` on POSIX, ``msvcrt.locking`` on Windows), released by the OS when the
process dies — a killed writer never leaves a project locked. Both files open with ``O_NOFOLLOW``:
a lock file planted as a link is refused, and nothing it points at is touched.
"""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from app.core.records import now_ms
from app.durable import open_lockfile

POLL_S = (0.002, 0.05)  # a waiting writer tries again this often: first quickly, then less often
_holder = ""  # what this process is, in the words a waiting writer reads (set by the entry points)


class LockBusy(OSError):
    """The lock is held by another process (or another open file in this one)."""


def set_holder(words: str) -> None:
    """What this process is, as another Kelvin waiting for the lock will name it
    ("kelvin memory import day.jsonl", "Kelvin's window", "the Blender add-on")."""
    global _holder
    _holder = " ".join(words.split())[:120]


def holder() -> str:
    return _holder or " ".join(["kelvin", *sys.argv[1:4]])[:120]


def _try(fh, shared: bool = False) -> bool:
    try:
        if os.name == "nt":
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)  # Windows has no shared lock: exclusive
        else:
            import fcntl

            fcntl.flock(fh.fileno(), (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        return True
    except OSError:
        return False


def _unlock(fh) -> None:
    try:
        if os.name == "nt":
            import msvcrt

            fh.seek(0)
            msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
    except OSError:
        pass
    fh.close()  # closing the file releases a flock


class WriteLock:
    """The project's write lock: one writer at a time, for one write."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None

    @property
    def held(self) -> bool:
        return self._fh is not None

    def acquire(self, wait_s: float = 0.0) -> float:
        """Take the lock, waiting up to ``wait_s`` seconds for the writer that holds it. Returns the
        seconds waited. Raises :class:`LockBusy` with who holds it, in words, when the wait is over."""
        fh = open_lockfile(self.path)
        start = time.monotonic()
        delay = POLL_S[0]
        while not _try(fh):
            waited = time.monotonic() - start
            if waited >= wait_s:
                said = self._holder_words(fh)
                fh.close()
                raise LockBusy(said)
            time.sleep(min(delay, max(0.0, wait_s - waited)))
            delay = min(delay * 2, POLL_S[1])
        try:
            fh.seek(0)
            fh.truncate()
            fh.write(f"{os.getpid()}\t{holder()}\t{now_ms()}".encode("utf-8", "replace"))
            fh.flush()
        except OSError:
            pass  # the words are a courtesy for the message above; the lock is what counts (a full disk)
        self._fh = fh
        return time.monotonic() - start

    def release(self) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            _unlock(fh)

    def busy(self) -> bool:
        """Whether another writer holds it now (asks without waiting and lets go at once)."""
        if self._fh is not None:
            return False
        try:
            fh = open_lockfile(self.path)
        except OSError:
            return False
        if _try(fh):
            _unlock(fh)
            return False
        fh.close()
        return True

    @staticmethod
    def _holder_words(fh) -> str:
        """"pid 4242, kelvin memory import day.jsonl, for 31 s" (what the holder wrote; its pid alone
        from an older Kelvin)."""
        try:
            fh.seek(0)
            raw = fh.read(400).decode("utf-8", "replace").strip()
        except OSError:
            raw = ""
        pid, _, rest = raw.partition("\t")
        what, _, since = rest.partition("\t")
        bits = [f"pid {pid}" if pid.isdigit() else "pid unknown"]
        if what:
            bits.append(what)
        if since.isdigit():
            bits.append(f"for {max(0, now_ms() - int(since)) / 1000:.0f} s")
        return ", ".join(bits)


class InUse:
    """Shared while a process has the project open; exclusive only to move its folder."""

    def __init__(self, path: Path):
        self.path = path
        self._fh = None

    def share(self) -> bool:
        """Say this process has the project open (False: its folder is being moved right now)."""
        if self._fh is not None or os.name == "nt":  # Windows refuses to move a folder in use by itself
            return True
        try:
            fh = open_lockfile(self.path)
        except FileNotFoundError:
            return False  # no journal folder yet: nothing to protect
        if not _try(fh, shared=True):
            fh.close()
            return False
        self._fh = fh
        return True

    def take_over(self) -> "InUse | None":
        """This process alone has the project open: the lock turned exclusive and handed back as its
        own object (held until its release(); this one holds nothing any more, so closing the store
        does not let go of it), or None when another process has the project open."""
        if os.name == "nt":  # no shared locks there; Windows itself refuses to move a folder in use
            self.release()
            return InUse(self.path)
        fh, own = (self._fh, True) if self._fh is not None else (open_lockfile(self.path), False)
        if not _try(fh):  # flock turns this file's shared lock exclusive, or fails (and may drop it)
            if own:
                self._fh = None
                fh.close()
                self.share()
            else:
                fh.close()
            return None
        self._fh = None
        held = InUse(self.path)
        held._fh = fh
        return held

    def release(self) -> None:
        if self._fh is not None:
            fh, self._fh = self._fh, None
            _unlock(fh)

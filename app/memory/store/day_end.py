"""The day's end: a ``day.rollover`` event moves the live Markdown blocks said before its cutoff into
``archive/<day>/``; a message edited or put back later goes to the day whose range covers it.
``rebuild()`` places them the same way from the journal (app.memory.store.fold)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from app.memory.journal import Entry
from app.memory.markdown import before
from app.memory.store.events import OP_DAY_ROLLOVER
from app.memory.store.fold import local_day, place_in

if TYPE_CHECKING:
    from app.memory.store import ProjectStore


def rollovers(store: ProjectStore) -> list[list]:
    """[seq, cutoff_ms, day] of every day rollover, in journal order."""
    with store.state_lock:
        if store.state.rollovers is None:  # state from before rollovers, or lost: the journal knows
            store.state.rollovers = [[e.seq, int(e.data["cutoff_ms"]), str(e.data["day"])]
                                     for e in store.journal.read() if e.op == OP_DAY_ROLLOVER]
        return store.state.rollovers


def project_rollover(store: ProjectStore, entry: Entry, force: bool) -> None:
    """A ``day.rollover`` applied to the Markdown (and remembered with the projections' positions)."""
    cutoff, day = int(entry.data["cutoff_ms"]), str(entry.data["day"])
    _note(store, [entry.seq, cutoff, day])
    if force or entry.seq > store.state.markdown_seq:  # a replay from an index behind must not move later blocks
        store.book.roll_over(cutoff, day)
        since = store.state.live_since_ms  # nothing live is older now (the events after lower it again)
        store.state.live_since_ms = cutoff if since is None else max(since, cutoff)


def _note(store: ProjectStore, roll: list) -> None:
    known = rollovers(store)  # (read from the journal if not known, this one included)
    if all(r[0] != roll[0] for r in known):
        with store.state_lock:
            store.state.rollovers = [*known, roll]


def place(store: ProjectStore, ts_ms: int) -> str | None:
    """Where a message said at ``ts_ms`` goes back to: the archived day whose range covers it,
    or None (the live files). The same rule as :func:`~app.memory.store.fold.place_in`, which
    ``rebuild`` uses."""
    day = place_in(rollovers(store), ts_ms)
    if day is None:
        lower_live_since(store, ts_ms)
    return day


def lower_live_since(store: ProjectStore, ts_ms: int) -> None:
    """A message said at ``ts_ms`` is in the live files now."""
    if store.state.live_since_ms is not None and ts_ms < store.state.live_since_ms:
        store.state.live_since_ms = ts_ms


def roll_over(store: ProjectStore, cutoff_ms: int) -> int:
    """Under the write lock: journal a ``day.rollover`` if a live block is older than ``cutoff_ms``
    (see :meth:`ProjectStore.roll_over`). Returns how many blocks move."""
    since = store.state.live_since_ms
    if since is not None and not before(since, cutoff_ms):
        return 0
    times = store.book.live_times()
    old = [t for t in times if before(t, cutoff_ms)]
    if not old:
        store.state.live_since_ms = min(times, default=cutoff_ms)
        store.save_state()
        return 0
    store.write([(OP_DAY_ROLLOVER, {"day": local_day(max(old)), "cutoff_ms": cutoff_ms})])
    return len(old)

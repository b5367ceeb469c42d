"""Settling a shared project: the studio server's order arrives, and the local projections follow it.

A pull brings the server's events after this Kelvin's cursor, in the server's order. Some are
this Kelvin's own (it pushed them; they are in its journal already, applied tentatively when they
were made), the rest come from the team and are appended to the local journal with their ids.
Every projection must end as if the events had been applied in the server's order, then this
Kelvin's own events the server has not ordered yet:

* the settings ledger always takes off its tentative part, applies the server's events (persisted)
  and puts the tentative part back on top (app.memory.settings_book);
* the index and the Markdown apply the team's events at once when none of them comes before one
  of this Kelvin's tentative events — the usual case. When one does (two artists writing at the
  same moment), the tentative messages are taken out, the server's events applied in order (this
  Kelvin's own among them, where the server put them), and the still-tentative events applied
  again after them: an edit of one message on two Kelvins ends with the later one in the shared
  order everywhere, and the Markdown's blocks stand in the same order everywhere.

Every event is applied exactly once by its id: a pulled event already in the journal (a kill
between the append and ``team.json``) is not appended again, and applying it again changes
nothing (index upserts; Markdown blocks that are there stay).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass

from app.memory import team_ledger
from app.memory.journal import Entry
from app.memory.store import journaling, projecting
from app.memory.team_file import TeamFile

log = logging.getLogger("kelvin.team")

_ADDS = ("message.add", "message.restore")


@dataclass(frozen=True)
class Settled:
    appended: int  # the team's events new to this Kelvin
    mine: int  # this Kelvin's own events the server ordered in this pull
    rebased: bool  # tentative messages were taken out and applied again after the server's events
    cursor: int


def settle(store, rows: list[Entry], upto: int) -> Settled:
    """Apply the server's events ``rows`` (all of them after the cursor, up to ``upto``, in order;
    ``ss`` set) to a shared project's journal and projections. On the writer thread, under the
    project's write lock (``store.writing()``), which caught this process up with the team file
    and the journal as another process on this machine may have left them: rows that process
    settled already are left out, so nothing is settled twice."""
    team: TeamFile = store.team
    rows = [r for r in rows if r.ss > team.cursor]
    if not rows or upto <= team.cursor:
        return Settled(0, 0, False, team.cursor)
    pending: list[tuple[Entry, tuple[str, int]]] = []  # each event after settled_at, with the position before it
    at = (team.settled_at[0], team.settled_at[1])
    for e, seg, pos in store.journal.read_from(*at):
        pending.append((e, at))
        at = (seg, pos)
    end = at
    local = {e.uid: e for e, _ in pending}
    tentative = [e for e, _ in pending if not e.ss and not team.settled(e)]  # applied tentatively so far
    mine = {r.uid: r.ss for r in rows if r.uid in local and not local[r.uid].ss}
    team.add_acks(mine)
    fresh = [r for r in rows if r.uid not in local]
    leftover = [local[r.uid] for r in rows if r.uid in local and local[r.uid].ss]  # journaled by a pull that was cut
    last_mine = max((team.position(e) for e in tentative), default=0)
    theirs = [r.ss for r in rows if r.uid not in mine]
    rebase = bool(tentative) and any(ss < last_mine for ss in theirs)

    appended = store.journal.append_remote(fresh) if fresh else []
    by_uid = {e.uid: e for e in appended} | {e.uid: e for e in leftover} | {u: local[u] for u in mine}
    in_order = [by_uid[r.uid] for r in rows]
    still = [e for e in tentative if team.position(e) > upto]
    if rebase:
        _take_out(store, tentative, {e.data.get("id") for e, _ in pending if e.ss and e.op in _ADDS})
        present = store.book.ids_present() if leftover else None
        _apply(store, in_order, force=True, present=present)
        _apply(store, still, force=True)
    else:
        theirs_new = [e for e in in_order if e.ss]
        present = store.book.ids_present() if leftover else None
        if theirs_new:
            _apply(store, theirs_new, force=bool(leftover), present=present)
    if store.settings is not None:
        with store.settings.changing():  # readers in this process see the ledger before or after, never between
            store.settings.undo_tentative()
            if in_order:
                store.settings.project([team.shared_view(e) for e in in_order], store.lookup, store.bare_message,
                                       shared="settled")
            if still:
                store.settings.project([team.shared_view(e) for e in still], store.lookup, store.bare_message,
                                       shared="tentative")
            store.settings.seq = max(store.settings.seq, store.journal.last_seq())
    if appended:
        store.state.markdown_seq = max(store.state.markdown_seq, appended[-1].seq)
        store.state.index_seq = max(store.state.index_seq, appended[-1].seq)
        store.state.save(store.state_path)
    # where the next settlement starts reading: the first event still not ordered, else the end
    first_still = next((pos for e, pos in pending if e in still), None)
    team.cursor = upto
    team.settled_at = list(first_still or (end if not appended else _end(store, end)))
    team.save()
    team_ledger.written(store)  # the ledger's tentative part: every event still not ordered, to the journal's end
    return Settled(len(appended), len(mine), rebase, upto)


def _end(store, after: tuple[str, int]) -> tuple[str, int]:
    for _e, seg, pos in store.journal.read_from(*after):
        after = (seg, pos)
    return after


def _take_out(store, tentative: list[Entry], settled_adds: set) -> None:
    """Take the messages this Kelvin's tentative events brought in out of the index and the
    Markdown (what the server ordered before them goes in first; they come back after it)."""
    ids = [e.data["id"] for e in tentative if e.op in _ADDS and e.data["id"] not in settled_adds]
    if not ids:
        return
    store.index.delete_messages(ids)
    store.book.remove_many(set(ids))
    if store.message_ids is not None:
        store.message_ids.difference_update(ids)


def _apply(store, entries: list[Entry], force: bool, present: set[str] | None = None) -> None:
    """Project events (the index and the Markdown; the ledger is settled apart) in the given order.
    A message already there is not added twice (the first add in the shared order wins)."""
    if not entries:
        return
    known = journaling.known_ids(store)
    out: list[Entry] = []
    for e in entries:
        d = e.data
        if e.op in _ADDS:
            if d["id"] in known:
                continue
            known.add(d["id"])
        elif e.op == "message.delete":
            known.discard(d["id"])
        out.append(e)
    for i in range(0, len(out), 2000):
        projecting.project(store, out[i : i + 2000], replay=True, present=present, force=force)

"""A shared project's settings ledger while several Kelvin processes on this machine write the
project at once (the window, a command in a terminal, the Blender add-on's ``kelvin scene import``).

The ledger of a shared project has two parts (app.memory.settings_book): what the studio's server
has ordered, applied in that order and persisted in ``settings.jsonl`` by whichever process
settled it; and this machine's events the server has not ordered yet, applied on top in memory
only (*tentative*). The processes share one journal, so every one of them makes its tentative part
from it — the events of the others too, not only its own:

* when only the journal grew (another process wrote), the events after the part already applied
  are applied on top, read from a byte position (a catch-up costs what was written);
* when another process settled a pull (the cursor in ``team.json`` moved) or rebuilt the ledger
  (``settings.state.json`` changed), the tentative part is taken off, the settled part read on from
  ``settings.jsonl`` with its contexts, and the tentative part made again from the journal after
  the last settled position. Sending alone (``acks.jsonl``, ``pushed_at``) changes nothing here:
  an event the server took but this machine has not settled yet stays tentative.

So ``kelvin settings list`` in a terminal shows the window's decision that is not on the server
yet, the window shows the terminal's, and both fold them as the server will order them.
"""
from __future__ import annotations


def follow(store, full: bool) -> None:
    """Bring a shared project's ledger in step with the journal and the files other processes
    wrote (with or without the write lock: a line still being written is read next time)."""
    book, team = store.settings, store.team
    if book is None or team is None:
        return
    with book.changing():
        if full or store.tentative_at is None:
            book.undo_tentative()
            book.follow()
            start = (team.settled_at[0], team.settled_at[1])
        else:
            start = store.tentative_at
        mine, at, last = [], start, 0
        for e, seg, pos in store.journal.read_from(*start):
            at, last = (seg, pos), max(last, e.seq)
            if not e.ss and not team.settled(e):
                mine.append(team.shared_view(e))
        if mine:
            book.project(mine, store.lookup, store.bare_message, shared="tentative")
        book.seq = max(book.seq, last)
        store.tentative_at = at


def written(store) -> None:
    """Under the lock, after this process applied its own events to the ledger (a write, a
    settlement, a rebuild): the tentative part reaches the journal's end."""
    if store.team is not None:
        store.tentative_at = store.journal.end()

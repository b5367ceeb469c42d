"""Opening a project for this process's writes, and recovering it: the first write checks that no
folder or file Kelvin writes is a link, that the journal's numbers have no unexplained gap, and that
the projections can be trusted — else they are rebuilt from the journal (an interrupted rebuild,
projections ahead of the journal, a missing index, one restored from an older copy, one made by an
older Kelvin); what they missed is replayed, and a reply cut off by a kill is kept."""
from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from app.durable import refuse_links, refuse_links_within
from app.memory import completeness, replies
from app.memory.index import CHUNKS, INDEX_FORMAT, MEMORIES, version_on_disk
from app.memory.store import catching_up, projecting, rebuilding
from app.memory.store.rebuilding import GAP_WHY

if TYPE_CHECKING:
    from app.memory.store import ProjectStore

log = logging.getLogger("kelvin.store")

_WRITTEN = {".md", ".json", ".jsonl", ".bin", ".lance"}  # what Kelvin writes in a project's folders
_LOCKS = ("LOCK", "IN-USE")



def open_locked(store: ProjectStore) -> int:
    """Under the write lock, the first write in this process: the journal checked for gaps, the
    projections caught up or rebuilt, a cut-off reply kept. Returns the events replayed."""
    # the journal's numbers prove it whole: a gap nothing accounts for (a segment deleted from the
    # middle, lines cut out, a lost end the next event would number past) is recorded now and
    # rescued by the rebuild below (app.memory.completeness, app.memory.store.rescue)
    store.gaps = completeness.unexplained(store.journal, thorough=True, upto=store.journal.next_seq - 1)
    for gap in store.gaps:
        log.warning("project %s: %s", store.name, gap.describe())
        store.journal.note_missing(gap.first, gap.last, gap.count, GAP_WHY)
    replayed = _open_projections(store)
    catching_up.keep_cut_replies(store)
    return replayed


def _open_projections(store: ProjectStore) -> int:
    why = _why_rebuild(store)
    if why:
        log.warning("project %s: %s; rebuilding the index and Markdown from the journal", store.name, why)
        rebuilding.rebuild(store, rescue=True)
        store.journal.read_to_end()
        return store.journal.last_seq()
    # (the local index is looked at on disk first: a write of settings alone never imports LanceDB)
    if index_gone(store):
        store.index.create(store.vectors.dim())
        store.state = replace(store.state, index_seq=0, embedder=store.embedder.spec, index_format=INDEX_FORMAT)
        store.save_state()
    elif store.state.embedder != store.embedder.spec:
        _switch_embedder(store)
    replayed = projecting.replay(store)
    store.journal.read_to_end()
    store.message_ids = None  # loaded from the index at the first write
    return replayed


def check_folders(store: ProjectStore) -> None:
    """Refuse a project in which a folder or a file Kelvin writes is a symbolic link: writes would
    land outside the data folder (appends and locks also refuse links one by one)."""
    refuse_links(store.folder, store.data_dir)
    archive = store.folder / "archive"
    days = [d for d in archive.iterdir()] if archive.is_dir() and not archive.is_symlink() else []
    for folder in (store.folder, store.journal.folder, archive, *days):
        if folder.is_symlink():
            refuse_links(folder)
        if folder.is_dir():
            for child in folder.iterdir():
                if child.is_symlink() and (child.suffix in _WRITTEN or child.name in _LOCKS or child.is_dir()):
                    refuse_links(child)
    for index in local_index(store):
        refuse_links_within(index)  # LanceDB writes anywhere in it: its tables, versions, data, indexes


def local_index(store: ProjectStore) -> list[Path]:
    """The index's folder when it is the default one inside the project (not elsewhere by ``index_uri``)."""
    default = store.folder / "memory.lance"
    return [default] if store.index_uri == str(default) else []


def _why_rebuild(store: ProjectStore) -> str:
    last = store.journal.last_seq()
    if store.state.rebuilding:
        return "a rebuild of the index was interrupted"
    if store.gaps:
        return "; ".join(g.describe() for g in store.gaps)
    ahead = max(store.state.index_seq, store.state.markdown_seq, store.settings.seq if store.settings else 0)
    if ahead > last:
        return f"the index and Markdown are ahead of the journal (event {ahead}, the journal ends at {last})"
    if last and index_gone(store):
        return "the search index is missing"
    if _index_rolled_back(store):
        return (f"the search index is an older copy (version {version_on_disk(store.index_uri)}; Kelvin had written "
                f"version {store.state.index_version}): it holds less than it claims")
    if last and store.state.index_format < INDEX_FORMAT:
        return "the search index was made by an older Kelvin (no stemming, no context)"
    return ""


def behind(store: ProjectStore, thorough: bool = False) -> bool:
    """Whether the projections need catching up (a reader asks before its first read), or the
    journal has a gap nobody has looked into yet (``thorough``: lost lines too, not only segments)."""
    if store.state.rebuilding:
        return True
    if completeness.unexplained(store.journal, thorough=thorough):
        return True
    if any(not replies.alive(pid, started) for _seq, pid, started in store.state.unfinished.values()):
        return True  # a reply cut off by a kill mid-stream: kept by the next writer
    last = store.journal.last_seq()
    if last == 0:
        return False
    settled = min(store.state.index_seq, store.state.markdown_seq, store.settings.seq if store.settings else last)
    # behind, ahead, the index gone, restored from an older copy, or made by an older Kelvin
    return settled != last or index_gone(store) or _index_rolled_back(store) or \
        store.state.index_format < INDEX_FORMAT


def _index_rolled_back(store: ProjectStore) -> bool:
    """Whether the local index is at an older version than the one the positions were saved with."""
    if not store.state.index_version or not local_index(store):
        return False
    version = version_on_disk(store.index_uri)
    return version is not None and version < store.state.index_version


def index_gone(store: ProjectStore) -> bool:
    """Whether the index is missing; for the default local index without importing LanceDB
    (1.5 s), so a command that reads only the ledger or the journal stays quick."""
    if local_index(store) and not store.index_opened:
        return not all((Path(store.index_uri) / f"{t}.lance").is_dir() for t in (CHUNKS, MEMORIES))
    return not store.index.exists


def _switch_embedder(store: ProjectStore) -> None:
    """Vectors from another embedder cannot be compared with the new one's: drop them, then
    fill them in again in the background (``fill_vectors``)."""
    log.info("embedder changed from %r to %r: re-embedding %s", store.state.embedder, store.embedder.spec, store.name)
    store.index.set_vector_dim(store.vectors.dim())
    store.state.embedder = store.embedder.spec
    store.save_state()

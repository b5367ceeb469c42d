"""One project's memory on disk: the journal and its projections, behind :class:`ProjectStore`
(app.memory.store.project_store says how the package is laid out, one job per module)."""
from app.memory.store.disk_room import DiskFull
from app.memory.store.events import (
    CONTEXT_ENGINE,
    OP_DAY_ROLLOVER,
    OP_MEMORY_ADD,
    OP_MEMORY_DELETE,
    OP_MESSAGE_ADD,
    OP_MESSAGE_DELETE,
    OP_MESSAGE_EDIT,
    OP_MESSAGE_RESTORE,
    OPS,
    with_engine,
)
from app.memory.store.fold import Folded
from app.memory.store.project_store import LOCK_WAIT_S, ProjectStore
from app.memory.store.projections import PROJECT_META, Projections, stored_name

__all__ = [
    "CONTEXT_ENGINE", "LOCK_WAIT_S", "OPS", "OP_DAY_ROLLOVER", "OP_MEMORY_ADD", "OP_MEMORY_DELETE", "OP_MESSAGE_ADD",
    "OP_MESSAGE_DELETE", "OP_MESSAGE_EDIT", "OP_MESSAGE_RESTORE", "PROJECT_META", "DiskFull", "Folded", "ProjectStore",
    "Projections", "stored_name", "with_engine",
]

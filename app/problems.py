"""What went wrong with the disk, in one sentence with its true cause and its fix.

An ``OSError`` (or an index error carrying one: LanceDB says "… (os error 28)") is an expected
problem — a full disk, a folder that belongs to someone else, a read-only disk, a data folder that
is not a folder — never a reason to advise a reindex. :func:`explain` names which, where, and what
to do; anything it does not recognise is said as it is, with no advice it cannot back.
"""
from __future__ import annotations

import errno
import re
from pathlib import Path

_OS_ERROR = re.compile(r"os error (\d+)|\[Errno (\d+)\]")
_WORDS = {"No space left on device": errno.ENOSPC, "Disk quota exceeded": errno.EDQUOT,
          "Permission denied": errno.EACCES, "Read-only file system": errno.EROFS, "Not a directory": errno.ENOTDIR}


def _errno(exc: BaseException) -> int | None:
    """The system error behind ``exc``: its own, or the one its message names (an index error)."""
    if isinstance(exc, OSError) and exc.errno:
        return exc.errno
    text = str(exc)
    m = _OS_ERROR.search(text)
    if m:
        return int(m.group(1) or m.group(2))
    return next((code for words, code in _WORDS.items() if words in text), None)


def _where(exc: BaseException, data_dir: Path | None) -> str:
    name = getattr(exc, "filename", None)
    return str(name) if name else str(data_dir) if data_dir else "the data folder"


def explain(exc: BaseException, data_dir: Path | None = None) -> str | None:
    """One sentence for an expected problem of the disk (None: not one of them)."""
    code = _errno(exc)
    where = _where(exc, data_dir)
    folder = str(data_dir) if data_dir else "the data folder"
    if code in (errno.ENOSPC, errno.EDQUOT):
        return (f"the disk holding {folder} is full ({'quota exceeded' if code == errno.EDQUOT else 'no space left'}); "
                "nothing of this was written and nothing saved was lost: free some space and try again")
    if code in (errno.EACCES, errno.EPERM):
        return (f"no permission to write {where} (it belongs to another user, or its permissions forbid it); reading "
                "works: to write, ask its owner, or use a data folder of your own (--data-dir, or data_dir in "
                "kelvin.toml)")
    if code == errno.EROFS:
        return (f"{where} is on a read-only disk; reading works: to write, use a data folder on a writable disk "
                "(--data-dir, or data_dir in kelvin.toml)")
    if code in (errno.ENOTDIR, errno.EEXIST) and data_dir is not None and data_dir.exists() and not data_dir.is_dir():
        return not_a_folder(data_dir)
    if code == errno.ENOTDIR:
        return f"{where}: a file stands where Kelvin needs a folder; move it away, or use another data folder (--data-dir)"
    if code == errno.EIO:
        return f"the disk could not read or write {where} (an input/output error): check the disk, then try again"
    return None


def not_a_folder(data_dir: Path) -> str:
    """The data folder that is a file or a device (``--data-dir /dev/null``)."""
    return (f"the data folder {data_dir} is not a folder; give --data-dir (or data_dir in kelvin.toml) a folder, "
            "new or Kelvin's")

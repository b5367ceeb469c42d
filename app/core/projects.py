"""Project names and the folder each one lives in.

An artist may call a project anything ("Nike / Shot 010", "../../etc", "CON"); the folder name
derived here can never leave the data folder and is safe on Windows, macOS and Linux.
"""
from __future__ import annotations

import hashlib
import re
import unicodedata

from app.core.records import RecordError, check_name

MAX_PROJECT_CHARS = 64  # of a folder name; longer names get a short digest instead of the rest
MAX_NAME_CHARS = 128  # of a project's name as the artist gives it
_WINDOWS_RESERVED = {"con", "prn", "aux", "nul", *(f"com{i}" for i in range(1, 10)), *(f"lpt{i}" for i in range(1, 10))}


def folder_name(name: str) -> str:
    """The folder for a project: letters, digits, ``-``, ``_`` and ``.`` only, never ``.``/``..``."""
    if not isinstance(name, str) or not name.strip():
        raise RecordError("project name is empty")
    if len(name) > 200:
        raise RecordError("project name is longer than 200 characters")
    if any(ord(c) < 32 for c in name):
        raise RecordError("project name contains control characters")
    decomposed = unicodedata.normalize("NFKD", name)
    ascii_name = decomposed.encode("ascii", "ignore").decode("ascii")
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", ascii_name).strip("-. ").lower()
    slug = re.sub(r"\.{2,}", ".", slug)
    # Two names must not share a folder unless they differ only in case, accents or punctuation:
    # where letters had no Latin spelling ("Проект А", "日本") or the name was cut to fit, a short
    # digest of the whole name keeps them apart.
    lost = any(not c.isascii() and unicodedata.category(c)[0] in "LN" for c in decomposed)
    if lost or len(slug) > MAX_PROJECT_CHARS or not slug:
        digest = hashlib.sha1(" ".join(name.casefold().split()).encode("utf-8")).hexdigest()[:8]
        slug = (slug[:MAX_PROJECT_CHARS - 9].rstrip("-. ") + "-" + digest) if slug else "p-" + digest
    slug = slug.lstrip("-. ")
    if slug.split(".")[0] in _WINDOWS_RESERVED:
        slug = "_" + slug
    return slug


def check_project(name: object) -> str:
    """A project's name as given (stripped), refused in one sentence when it cannot be one: the same
    rule wherever a name comes from (``--project``, ``/project``, the window, an import's lines)."""
    name = check_name(name, "project")
    if len(name) > MAX_NAME_CHARS:
        raise RecordError(f"project name is too long ({len(name)} characters; keep it to {MAX_NAME_CHARS})")
    folder_name(name)
    return name


def same_project(a: str, b: str) -> bool:
    """Whether two names are one project: compared as the folder is made (case, accents, spaces, dashes)."""
    try:
        return folder_name(a) == folder_name(b)
    except RecordError:
        return a == b

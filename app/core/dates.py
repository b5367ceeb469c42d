"""Moments as an artist reads them: "10:42" today, "yesterday 18:05", "Tue 10:42" this week,
"12 Nov 10:42" this year, "12 Nov 2025" before — local time, never an ISO stamp or a time zone.
Everything the window shows goes through here; the model's prompt keeps full dates
(app.core.context.when)."""
from __future__ import annotations

from datetime import datetime


def _local(ts_ms: int) -> datetime:
    return datetime.fromtimestamp(ts_ms / 1000).astimezone()


def as_read(ts_ms: int, now: datetime | None = None) -> str:
    """When ``ts_ms`` was, in as few words as a person needs today ("" for no time)."""
    if not ts_ms:
        return ""
    then = _local(ts_ms)
    now = (now or datetime.now()).astimezone()
    days = (now.date() - then.date()).days
    clock = f"{then:%H:%M}"
    if days == 0:
        return clock
    if days == 1:
        return f"yesterday {clock}"
    if 1 < days < 7:
        return f"{then:%a} {clock}"
    if then.year == now.year and days > 0:
        return f"{then.day} {then:%b} {clock}"
    return f"{then.day} {then:%b} {then.year}"


def written(ts_ms: int) -> str:
    """A moment for something kept and read later (a brief, a quote from memory, a model's prompt):
    "24 Nov 2026 10:42", local time — never relative, never an ISO stamp."""
    then = _local(ts_ms)
    return f"{then.day} {then:%b %Y %H:%M}"


def long_day(ts_ms: int) -> str:
    """The day for a document read later: "Thursday 26 November 2026"."""
    then = _local(ts_ms)
    return f"{then:%A} {then.day} {then:%B %Y}"


def day_as_read(ts_ms: int, now: datetime | None = None) -> str:
    """The day alone, for a line between days: "Today", "Yesterday", "Tuesday 24 November" (with the
    year when it is not this one)."""
    if not ts_ms:
        return ""
    then = _local(ts_ms)
    now = (now or datetime.now()).astimezone()
    days = (now.date() - then.date()).days
    if days == 0:
        return "Today"
    if days == 1:
        return "Yesterday"
    return f"{then:%A} {then.day} {then:%B}" + (f" {then.year}" if then.year != now.year else "")

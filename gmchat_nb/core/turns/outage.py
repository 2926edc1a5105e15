"""A store that cannot take a turn's writes, said to the people following the turn.

A turn whose write fails in passing (a full disk, a store made read-only, a database server
that is down) waits for its store at its step and then ends with ``chat_error`` once the store
can take it (:mod:`.writer`, :mod:`gmchat_nb.core.session.ending`). Meanwhile nothing new can be
journaled, so the journal's followers would see nothing: a stuck turn would look like a slow one.
What they are told instead is a ``notice`` of kind ``store`` — never journaled (the store cannot
take it), handed by the turn's :class:`~.owner.TurnOwner` to the surfaces' live followers in the
process that runs the turn — with ``details.code`` one of :data:`STORE_CODES`.
"""

from __future__ import annotations

import errno
import sqlite3
from typing import Final, Literal

from ..events import Notice

__all__ = [
    "STORE_CODES",
    "STORE_FULL",
    "STORE_READ_ONLY",
    "STORE_UNREACHABLE",
    "store_notice",
    "store_problem",
]

STORE_FULL: Final = "store_full"
STORE_READ_ONLY: Final = "store_read_only"
STORE_UNREACHABLE: Final = "store_unreachable"
STORE_CODES: Final = (STORE_FULL, STORE_READ_ONLY, STORE_UNREACHABLE)

Waiting = Literal["step", "end"]

# SQLite's primary result codes (the low byte of an extended code) and PostgreSQL's SQLSTATEs
_SQLITE_FULL, _SQLITE_READONLY = 13, 8
_PG_DISK_FULL, _PG_READ_ONLY = "53100", "25006"

_WHAT: Final = {
    STORE_FULL: "is full (its disk has no space left)",
    STORE_READ_ONLY: "is read-only",
    STORE_UNREACHABLE: "cannot be reached",
}


def store_problem(error: BaseException) -> str:
    """Which of :data:`STORE_CODES` a failed store write is: a full disk (SQLite's
    ``SQLITE_FULL``, ``ENOSPC``, PostgreSQL's ``disk_full``), a store that refuses writes
    (``SQLITE_READONLY``, ``EROFS``, a read-only PostgreSQL transaction), else unreachable (a
    database server that is down or restarting, a file that cannot be opened or stays locked)."""
    for cause in _causes(error):
        code = getattr(cause, "sqlite_errorcode", None)
        if isinstance(cause, sqlite3.Error) and isinstance(code, int):
            if code & 0xFF == _SQLITE_FULL:
                return STORE_FULL
            if code & 0xFF == _SQLITE_READONLY:
                return STORE_READ_ONLY
        state = getattr(cause, "sqlstate", None)
        if state == _PG_DISK_FULL or getattr(cause, "errno", None) == errno.ENOSPC:
            return STORE_FULL
        if state == _PG_READ_ONLY or getattr(cause, "errno", None) == errno.EROFS:
            return STORE_READ_ONLY
        text = str(cause).lower()
        if "disk is full" in text or "no space left" in text:
            return STORE_FULL
        if "read-only" in text or "readonly" in text:
            return STORE_READ_ONLY
    return STORE_UNREACHABLE


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from (a backend's error wrapped by the store)."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and len(chain) < 8:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def store_notice(code: str, waiting: Waiting, *, step_seconds: float) -> Notice:
    """The ``notice`` of kind ``store`` for a turn that cannot write: ``waiting`` ``step``
    (it waits at its step, up to ``step_seconds``, and goes on once the store takes writes) or
    ``end`` (it stopped waiting: its ``chat_error`` is written once the store takes writes)."""
    what = _WHAT.get(code, _WHAT[STORE_UNREACHABLE])
    if waiting == "step":
        message = (
            f"The chat store {what}: this request cannot save its progress. It waits for the "
            f"store (up to {step_seconds:g} s at each step) and goes on once it can write."
        )
    else:
        message = (
            f"The chat store {what}: this request stopped waiting for it. It ends with an "
            "error as soon as the store can be written again."
        )
    return Notice(kind="store", message=message, details={"code": code, "waiting": waiting})

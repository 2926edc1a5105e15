"""The chat store on SQLite: a file (WAL mode, so readers never block the writer) or
``":memory:"``.

Every write is one ``BEGIN IMMEDIATE`` transaction: it takes SQLite's single writer lock at its
start, so a write never decides from a stale snapshot, and two processes on one file wait for each
other (up to the busy timeout) instead of failing half-way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from .database import Signal
from .schema import apply_schema

__all__ = ["SqliteBackend"]


class SqliteBackend:
    """One ``sqlite3`` connection with the chat store's schema (see :class:`.database.Backend`)."""

    kind = "sqlite"
    clock_offset = 0.0  # one host's file: its clock is the store's

    def __init__(self, location: str) -> None:
        in_memory = location == ":memory:"
        if not in_memory:
            path = Path(location).expanduser()
            path.parent.mkdir(parents=True, exist_ok=True)
            location = str(path)
        self.location = location
        # Autocommit mode (isolation_level=None): transactions are explicit BEGIN IMMEDIATE.
        self._connection = sqlite3.connect(
            location, timeout=10.0, check_same_thread=False, isolation_level=None
        )
        self._connection.row_factory = sqlite3.Row
        try:
            self._connection.execute("PRAGMA foreign_keys = ON")
            if not in_memory:
                self._connection.execute("PRAGMA journal_mode = WAL")
                # WAL + NORMAL loses at most the last commits on power loss, never consistency.
                self._connection.execute("PRAGMA synchronous = NORMAL")
            with self.transaction():
                apply_schema(self._connection, location)
        except BaseException:
            self._connection.close()
            raise

    def execute(self, sql: str, parameters: tuple[Any, ...]) -> sqlite3.Cursor:
        return self._connection.execute(sql, parameters)

    def executemany(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> sqlite3.Cursor:
        return self._connection.executemany(sql, rows)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back when the body or the commit fails (a
        full disk can fail either; a transaction left open would refuse every later write)."""
        self._connection.execute("BEGIN IMMEDIATE")
        try:
            yield
            self._connection.execute("COMMIT")
        except BaseException:
            if self._connection.in_transaction:  # SQLite may have rolled it back already
                with suppress(sqlite3.Error):  # the error that got here is the one to see
                    self._connection.execute("ROLLBACK")
            raise

    def announce(self, signals: list[Signal]) -> None:
        """Nothing: a SQLite file has no notifications (readers of another process find new
        events when their keep-alive interval ends, a turn its cancel at its next step)."""

    def listen(self, hear: Callable[[Signal], None]) -> None:
        """Nothing: see :meth:`announce`."""

    def close(self) -> None:
        self._connection.close()

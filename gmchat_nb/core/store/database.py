"""SQLite plumbing of the chat store: one connection, its lock, and transactions.

:class:`Database` owns one ``sqlite3`` connection. Every statement runs under a lock, so a store
can be shared by the kernel's threads and a server's executor; two stores on the same file (two
processes) are safe too because every write is one ``BEGIN IMMEDIATE`` transaction. Files use WAL
mode so readers never block the writer.
"""

from __future__ import annotations

import importlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from ..text import clean_text
from .schema import apply_schema

__all__ = ["Database", "Statements", "bindable", "time_or_now"]

log = logging.getLogger(__name__)


def _jupyter_data_dir() -> Path:
    # jupyter_core is optional: a notebook has it, a bare `pip install gmchat_nb` may not.
    try:
        paths = importlib.import_module("jupyter_core.paths")
    except ImportError:
        configured = os.environ.get("JUPYTER_DATA_DIR")
        if configured:
            return Path(configured).expanduser()
        return Path.home() / ".local" / "share" / "jupyter"
    return Path(str(paths.jupyter_data_dir()))


def time_or_now(value: float | None) -> float:
    """``value`` as a timestamp, or the current time when it is ``None``."""
    return time.time() if value is None else float(value)


def bindable(parameters: Iterable[Any]) -> tuple[Any, ...]:
    """Statement parameters SQLite can bind: text with a lone surrogate (which UTF-8 cannot
    encode, so the whole statement would fail) gets U+FFFD in its place."""
    values = tuple(parameters)
    # Almost every parameter is ASCII (ids, JSON written with ensure_ascii): one cheap pass.
    if all(value.isascii() for value in values if isinstance(value, str)):
        return values
    return tuple(clean_text(value) if isinstance(value, str) else value for value in values)


class Statements:
    """The connection inside one write transaction, binding parameters with :func:`bindable`:
    a model's broken character must never make a turn's whole write fail."""

    __slots__ = ("_connection", "journaled")

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection
        self.journaled: set[str] = set()  # conversations whose journal this write extended

    def execute(self, sql: str, parameters: Iterable[Any] = ()) -> sqlite3.Cursor:
        """``sqlite3.Connection.execute`` with bindable parameters."""
        return self._connection.execute(sql, bindable(parameters))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> sqlite3.Cursor:
        """``sqlite3.Connection.executemany`` with bindable parameters."""
        return self._connection.executemany(sql, (bindable(row) for row in rows))


@contextmanager
def _transaction(connection: sqlite3.Connection) -> Iterator[None]:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, rolled back when the body raises."""
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class Database:
    """One SQLite connection with the chat store's schema, shared safely by threads.

    ``path`` is a file (its directory is created) or ``":memory:"`` (private to this object).
    Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:") -> None:
        self.path = str(path)
        in_memory = self.path == ":memory:"
        if not in_memory:
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self.path = str(Path(self.path).expanduser())
        self._lock = threading.Lock()
        self._journal_listeners: list[Callable[[str], None]] = []
        # Autocommit mode (isolation_level=None): transactions are explicit BEGIN IMMEDIATE, so a
        # write never starts from a stale snapshot and contending processes wait (timeout) instead
        # of failing half-way.
        self._connection = sqlite3.connect(
            self.path, timeout=10.0, check_same_thread=False, isolation_level=None
        )
        self._connection.row_factory = sqlite3.Row
        self._closed = False
        try:
            self._prepare(in_memory)
        except BaseException:
            self._connection.close()
            raise

    @staticmethod
    def default_path() -> Path:
        """``$GMCHAT_STORE`` when set, else ``<Jupyter data dir>/gmchat_nb/chat.sqlite3``."""
        configured = os.environ.get("GMCHAT_STORE")
        if configured:
            return Path(configured).expanduser()
        return _jupyter_data_dir() / "gmchat_nb" / "chat.sqlite3"

    def _prepare(self, in_memory: bool) -> None:
        with self._lock:
            connection = self._connection
            connection.execute("PRAGMA foreign_keys = ON")
            if not in_memory:
                connection.execute("PRAGMA journal_mode = WAL")
                # WAL + NORMAL loses at most the last commits on power loss, never consistency.
                connection.execute("PRAGMA synchronous = NORMAL")
            with _transaction(connection):
                apply_schema(connection, self.path)

    @contextmanager
    def _write(self) -> Iterator[Statements]:
        """One write transaction under the lock; rolled back when the body raises. Once it
        committed, the journal listeners hear of every conversation it journaled events in."""
        with self._lock, _transaction(self._connection):
            statements = Statements(self._connection)
            yield statements
        for conversation_id in statements.journaled:
            for listener in list(self._journal_listeners):
                try:
                    listener(conversation_id)
                except Exception:  # a listener only wakes readers: it must not fail a write
                    log.exception("a journal listener failed")

    def on_journal(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(conversation_id)`` after every write that journaled events (from the
        writing thread); returns the function that removes it. Readers use it as a wake-up only:
        the journal stays the truth."""
        self._journal_listeners.append(listener)
        return lambda: self._journal_listeners.remove(listener)

    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._connection.execute(sql, bindable(parameters)).fetchall()

    @property
    def journal_mode(self) -> str:
        """SQLite's journal mode for this connection (``"wal"`` for files, ``"memory"`` else)."""
        return str(self._read("PRAGMA journal_mode")[0][0]).lower()

    def close(self) -> None:
        """Close the connection (idempotent). Later calls raise ``sqlite3.ProgrammingError``."""
        with self._lock:
            if not self._closed:
                self._closed = True
                self._connection.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

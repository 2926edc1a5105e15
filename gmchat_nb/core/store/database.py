"""The chat store's plumbing: one connection to SQLite or PostgreSQL, its lock, transactions and
journal wake-ups.

:class:`Database` owns one connection of a backend (:mod:`.sqlite_backend` for a file or
``":memory:"``, :mod:`.postgresql_backend` for a ``postgresql://`` URL). Every statement runs
under a lock, so a store can be shared by the kernel's threads and a server's executor. Every write
is one transaction that holds the backend's single writer lock (SQLite's ``BEGIN IMMEDIATE``, a
PostgreSQL advisory lock), so the store's read-then-write decisions are written once and hold for
two processes on one file and for several servers on one PostgreSQL database alike.

Statements are written once, in the SQL both engines accept; the PostgreSQL backend only changes
the parameter marks.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any, Protocol, Self

from ..dsn import is_postgresql_url, without_password
from ..text import clean_text
from .schema import StoreVersionError

__all__ = [
    "Backend",
    "Cursor",
    "Database",
    "Row",
    "Signal",
    "Statements",
    "StoreClosedError",
    "StoreUnavailableError",
    "bindable",
    "open_failure",
    "time_or_now",
]

log = logging.getLogger(__name__)


class StoreClosedError(RuntimeError):
    """The store was closed; open a new one."""


class StoreUnavailableError(RuntimeError):
    """The store cannot be used right now: its database server is down, restarting or refused
    the connection, or (opened with ``open_later``) its file cannot be opened — read-only, not a
    database, damaged. The message names the store (without password) and what is wrong. (A
    missing driver is an ImportError, and a URL libpq cannot read a ValueError: neither gets
    better by waiting.)"""


Signal = tuple[str, str, str]
"""What a committed write tells readers: ``("journal", conversation_id, "")`` (events were
journaled) or ``("cancel", conversation_id, turn_id)`` (a cancel command was recorded)."""


class Row(Protocol):
    """A result row: by column index or by name (``sqlite3.Row`` and the PostgreSQL rows)."""

    def __getitem__(self, key: int | str, /) -> Any: ...


class Cursor(Protocol):
    """What a statement returns: its rows and how many rows it changed."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...

    def close(self) -> None: ...


class Backend(Protocol):
    """One connection of a storage engine, used under :class:`Database`'s lock only."""

    location: str
    kind: str

    def execute(self, sql: str, parameters: tuple[Any, ...]) -> Cursor: ...

    def executemany(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> Cursor: ...

    def transaction(self) -> AbstractContextManager[None]:
        """One write transaction holding the engine's writer lock; rolled back on error."""
        ...

    @property
    def clock_offset(self) -> float:
        """Seconds to add to this host's clock to read the store's (leases compare times
        written by several hosts: they are measured on one clock)."""
        ...

    def announce(self, signals: list[Signal]) -> None:
        """Inside a write, before it commits: tell other processes what it did."""
        ...

    def listen(self, hear: Callable[[Signal], None]) -> None:
        """Call ``hear(signal)`` for each signal another process's write sends (idempotent)."""
        ...

    def close(self) -> None: ...


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
    """Statement parameters the engines can bind: text with a lone surrogate (which UTF-8 cannot
    encode, so the whole statement would fail) gets U+FFFD in its place."""
    values = tuple(parameters)
    # Almost every parameter is ASCII (ids, JSON written with ensure_ascii): one cheap pass.
    if all(value.isascii() for value in values if isinstance(value, str)):
        return values
    return tuple(clean_text(value) if isinstance(value, str) else value for value in values)


class Statements:
    """The connection inside one write transaction, binding parameters with :func:`bindable`:
    a model's broken character must never make a turn's whole write fail."""

    __slots__ = ("_backend", "cancelled", "journaled", "noticed")

    def __init__(self, backend: Backend) -> None:
        self._backend = backend
        self.journaled: set[str] = set()  # conversations whose journal this write extended
        self.cancelled: set[tuple[str, str]] = set()  # (conversation, turn) cancel commands
        # (conversation, turn) whose cancel command, recorded earlier (maybe by another
        # process), this write found: told to this process's listeners only, never announced
        self.noticed: set[tuple[str, str]] = set()

    def signals(self) -> list[Signal]:
        """What this write tells readers once it commits."""
        journal = [("journal", conversation_id, "") for conversation_id in sorted(self.journaled)]
        return journal + [("cancel", *turn) for turn in sorted(self.cancelled)]

    def execute(self, sql: str, parameters: Iterable[Any] = ()) -> Cursor:
        """Run one statement with bindable parameters."""
        return self._backend.execute(sql, bindable(parameters))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Cursor:
        """Run one statement per row of bindable parameters."""
        return self._backend.executemany(sql, (bindable(row) for row in rows))


def open_failure(location: str, error: BaseException) -> str:
    """What is wrong with a store that cannot be opened, in words a user can act on."""
    text = str(error).strip() or type(error).__name__
    lowered = text.lower()
    code = getattr(error, "errno", None)
    if isinstance(error, StoreVersionError):
        return text  # a newer gmchat_nb's store: its own message names it and what to do
    if _read_only(location) or "readonly" in lowered or code in (errno.EROFS, errno.EACCES):
        problem = f"is read-only: its file or folder cannot be written ({text})"
    elif "not a database" in lowered:
        problem = "is not a SQLite database (the file holds something else)"
    elif "malformed" in lowered or "corrupt" in lowered:
        problem = f"is damaged ({text}); restore it from a backup or move it away"
    elif "disk is full" in lowered or code == errno.ENOSPC:
        problem = "cannot be written: the disk is full"
    elif "unable to open" in lowered:
        problem = f"cannot be opened ({text}): check that its folder exists and is writable"
    else:
        problem = f"cannot be opened: {text}"
    return f"the chat store {location} {problem}"


def _read_only(location: str) -> bool:
    """Whether a SQLite store's file, or the folder it needs for its journal, cannot be written
    (permissions, or a file system mounted read-only: SQLite then only says it cannot open it)."""
    if location == ":memory:" or is_postgresql_url(location):
        return False
    path = Path(location)
    folder = path.parent
    with contextlib.suppress(OSError):
        if os.statvfs(folder).f_flag & os.ST_RDONLY:
            return True
    if path.exists() and not os.access(path, os.W_OK):
        return True
    return folder.exists() and not os.access(folder, os.W_OK)


def open_backend(location: str) -> Backend:
    """The backend for a store location: PostgreSQL for a ``postgresql://`` URL, else SQLite."""
    if is_postgresql_url(location):
        from .postgresql_backend import PostgresBackend  # psycopg only when it is used

        return PostgresBackend(location)
    from .sqlite_backend import SqliteBackend

    return SqliteBackend(location)


class Database:
    """One connection with the chat store's schema, shared safely by threads.

    ``path`` is a SQLite file (its directory is created), ``":memory:"`` (private to this
    object) or a ``postgresql://`` URL (a database several servers share). Use as a context
    manager or call :meth:`close`.
    """

    def __init__(
        self, path: str | os.PathLike[str] = ":memory:", *, open_later: bool = False
    ) -> None:
        self._location = os.fspath(path)
        self._lock = threading.Lock()
        self._listeners: dict[str, list[Callable[[str, str], None]]] = {}  # by signal kind
        self._closed = False
        self._backend: Backend | None = None
        self._open_later = open_later
        self._reported: str | None = None  # the open failure last logged (logged once)
        self.path = without_password(self._location)
        self.writes = 0  # write transactions committed through this object (benchmarks read it)
        try:
            self._backend = open_backend(self._location)
            self.path = self._backend.location
        except StoreUnavailableError as error:
            # A database server that is down or restarting (a hub's servers may start before
            # it): every call says so until one finds it back, then the store works.
            if not is_postgresql_url(self._location):
                raise
            self._report(str(error))
        except (sqlite3.Error, OSError, StoreVersionError) as error:
            if not open_later:
                raise
            # A server keeps its routes with a store it cannot open (read-only, not a database,
            # damaged): they answer 503 naming the problem until the file is fixed.
            self._report(open_failure(self.path, error))

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @property
    def backend(self) -> str:
        """``"sqlite"`` or ``"postgresql"``."""
        return "postgresql" if is_postgresql_url(self._location) else "sqlite"

    @staticmethod
    def default_path() -> Path | str:
        """``$GMCHAT_STORE`` when set (a path, or a ``postgresql://`` URL as it is), else
        ``<Jupyter data dir>/gmchat_nb/chat.sqlite3``."""
        configured = os.environ.get("GMCHAT_STORE")
        if configured and is_postgresql_url(configured):
            return configured  # a Path would fold its "//"
        if configured:
            return Path(configured).expanduser()
        return _jupyter_data_dir() / "gmchat_nb" / "chat.sqlite3"

    def _report(self, problem: str) -> None:
        """Log why the store cannot be opened, once per distinct reason."""
        if problem != self._reported:
            self._reported = problem
            log.error("%s; every request that needs it answers 503 until it is fixed", problem)

    def _open(self) -> Backend:
        """The backend (under the lock), opened now if it was unavailable before."""
        if self._closed:
            raise StoreClosedError(f"the chat store {self.path} is closed")
        if self._backend is None:
            try:
                self._backend = open_backend(self._location)
            except StoreUnavailableError as error:
                self._report(str(error))
                raise
            except (sqlite3.Error, OSError, StoreVersionError) as error:
                if not self._open_later:
                    raise
                problem = open_failure(self.path, error)
                self._report(problem)
                raise StoreUnavailableError(problem) from None
            self._reported = None
            if self._listeners:
                self._backend.listen(self._hear)
        return self._backend

    def now(self) -> float:
        """The store's time (this host's clock, corrected by the offset a PostgreSQL server's
        clock showed when the connection opened): what leases are written and compared in."""
        backend = self._backend
        return time.time() + (backend.clock_offset if backend is not None else 0.0)

    @contextmanager
    def _write(self) -> Iterator[Statements]:
        """One write transaction under the lock; rolled back when the body raises. Once it
        committed, the journal listeners hear of every conversation it journaled events in."""
        with self._lock:
            backend = self._open()
            with backend.transaction():
                statements = Statements(backend)
                yield statements
                signals = statements.signals()
                if signals:
                    backend.announce(signals)
            self.writes += 1
        noticed = [("cancel", *turn) for turn in sorted(statements.noticed - statements.cancelled)]
        for signal in signals + noticed:
            self._hear(signal)

    def _hear(self, signal: Signal) -> None:
        kind, conversation_id, turn_id = signal
        for listener in list(self._listeners.get(kind, ())):
            try:
                listener(conversation_id, turn_id)
            except Exception:  # a listener only wakes readers: it must not fail a write
                log.exception("a chat store listener failed")

    def _listen(self, kind: str, listener: Callable[[str, str], None]) -> Callable[[], None]:
        self._listeners.setdefault(kind, []).append(listener)
        with self._lock, contextlib.suppress(StoreUnavailableError):  # else listens once open
            self._open().listen(self._hear)
        return lambda: self._listeners[kind].remove(listener)

    def on_journal(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call ``listener(conversation_id)`` after every write that journaled events — this
        object's (from the writing thread) and, on PostgreSQL, another process's (from a
        listening thread). Readers use it as a wake-up only: the journal stays the truth.
        Returns the function that removes it."""
        return self._listen("journal", lambda conversation_id, _turn: listener(conversation_id))

    def on_cancel(self, listener: Callable[[str, str], None]) -> Callable[[], None]:
        """Call ``listener(conversation_id, turn_id)`` after a cancel command was recorded (as
        :meth:`on_journal`: this object's writes and, on PostgreSQL, other processes'), and
        after a write of the turn's driver here found one recorded (a SQLite file's other
        processes send no notification), so the process running that turn can stop it now
        rather than at its next step. A listener may hear a turn more than once."""
        return self._listen("cancel", listener)

    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[Any]:
        with self._lock:
            return self._open().execute(sql, bindable(parameters)).fetchall()

    @property
    def journal_mode(self) -> str:
        """SQLite's journal mode for this connection (``"wal"`` for files, ``"memory"`` else);
        ``"postgresql"`` on PostgreSQL."""
        if self.backend != "sqlite":
            return self.backend
        return str(self._read("PRAGMA journal_mode")[0][0]).lower()

    def close(self) -> None:
        """Close the connection (idempotent). Later calls raise :class:`StoreClosedError`."""
        with self._lock:
            if not self._closed:
                self._closed = True
                if self._backend is not None:
                    self._backend.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

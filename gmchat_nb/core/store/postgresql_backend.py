"""The chat store on PostgreSQL (``store: postgresql://…``), for hubs: several servers, or the
single-user servers of a JupyterHub, share conversations, the journal, confirmations and usage.

Behaviour is SQLite's, by the same means:

* Every write transaction first takes one advisory lock (``pg_advisory_xact_lock``), PostgreSQL's
  counterpart of SQLite's ``BEGIN IMMEDIATE``: writers of all processes run one at a time, so the
  store's read-then-write decisions (the next journal position, an admission, a cancel command, a
  rate-limit total) are written once for both engines and cannot interleave. Reads never wait:
  each is its own snapshot, as in WAL mode.
* A write that journaled events or recorded a cancel command sends ``pg_notify`` before it
  commits (PostgreSQL delivers it at commit, never for a rolled-back write). A thread
  ``LISTEN``\\ ing on its own connection tells this process when *another* process wrote: its
  readers wake and read the journal, which stays the truth (a lost notification delays a reader
  to its keep-alive and never loses an event), and the turn a cancel names stops now.
* Commits wait for their WAL (PostgreSQL's default ``synchronous_commit``): a commit a client
  was told of survives the database server crashing. (``synchronous_commit = off``, tried before,
  lost the last half second of commits when the server was stopped as by a crash, and a later
  write then reused their journal positions: a reader's cursor pointed at other events.)
* Text PostgreSQL cannot store (NUL characters) becomes U+FFFD, as lone surrogates do on both.

Statements use SQLite's ``?`` marks; :func:`translate` turns them into psycopg's ``%s``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from functools import lru_cache
from typing import Any

from ..dsn import postgresql_url_problem, without_password
from .database import Signal, StoreUnavailableError
from .postgresql_schema import migrate

__all__ = ["PostgresBackend", "PostgresRow", "translate"]

log = logging.getLogger(__name__)

WRITER_LOCK = 0x676D636861745F6E  # the advisory lock every write holds ("gmchat_n")
LISTEN_POLL_SECONDS = 0.5  # how often the listening thread looks whether it should stop
REPLACEMENT = "\ufffd"
APP = "gmchat_nb"  # the connections' application_name


@lru_cache(maxsize=1024)
def translate(sql: str) -> str:
    """A statement with ``?`` marks as psycopg's ``%s`` (a literal ``%`` doubled)."""
    return sql.replace("%", "%%").replace("?", "%s")


def _storable(parameters: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(
        value.replace("\x00", REPLACEMENT) if isinstance(value, str) and "\x00" in value else value
        for value in parameters
    )


class PostgresRow:
    """A result row readable by index and by column name, like ``sqlite3.Row``."""

    __slots__ = ("_names", "_values")

    def __init__(self, values: Sequence[Any], names: Mapping[str, int]) -> None:
        self._values = values
        self._names = names

    def __getitem__(self, key: int | str, /) -> Any:
        return self._values[self._names[key] if isinstance(key, str) else key]

    def __len__(self) -> int:
        return len(self._values)

    def __iter__(self) -> Iterator[Any]:
        return iter(self._values)

    def keys(self) -> list[str]:
        return list(self._names)


def _row_factory(cursor: Any) -> Callable[[Sequence[Any]], PostgresRow]:
    names = {column.name: index for index, column in enumerate(cursor.description or ())}
    return lambda values: PostgresRow(values, names)


def _psycopg() -> Any:
    try:
        import psycopg
    except ImportError:
        # an installation to fix, not a server to wait for: raised at once, never retried
        raise ImportError(
            "a postgresql:// store needs psycopg 3: pip install 'gmchat_nb[postgresql]'"
        ) from None
    return psycopg


class PostgresBackend:
    """One psycopg connection (autocommit; explicit write transactions) with the chat store's
    schema migrated, and on demand a thread listening for other processes' journal writes."""

    kind = "postgresql"

    def __init__(self, location: str) -> None:
        self._psycopg = _psycopg()
        self._dsn = location
        self.location = without_password(location)
        problem = postgresql_url_problem(location)
        if problem is not None:  # a configuration error, not a server that is away
            raise ValueError(f"the chat store {self.location} is not a PostgreSQL URL: {problem}")
        self._token = uuid.uuid4().hex  # tells this connection's notifications from others'
        # named for pg_stat_activity, unless the URL names it
        self._application = {} if "application_name" in location else {"application_name": APP}
        self._hear: Callable[[Signal], None] | None = None
        self._announcements: list[str] = []  # the current write's notification payloads
        self._in_transaction = False
        self._listener: threading.Thread | None = None
        self._listening = threading.Event()
        self._stop = threading.Event()
        self.clock_offset = 0.0
        self._connection = self._connect()
        try:
            schema = str(self.execute("SELECT current_schema()", ()).fetchone()[0])
            # one channel per schema: stores in other schemas of the database never wake it
            self._channel = "gmchat_journal_" + hashlib.sha256(schema.encode()).hexdigest()[:16]
            with self.transaction():
                migrate(self._connection.execute, self.location)
        except BaseException:
            self._connection.close()
            raise

    def _connect(self) -> Any:
        try:
            connection = self._psycopg.connect(
                self._dsn, autocommit=True, row_factory=_row_factory, **self._application
            )
            before = time.time()
            server = connection.execute("SELECT extract(epoch FROM clock_timestamp())").fetchone()
            # Leases written by several hosts are compared on the server's clock: this host's
            # clock plus the offset seen now (to within half a round trip).
            self.clock_offset = float(server[0]) - (before + time.time()) / 2
            return connection
        except self._psycopg.Error as error:
            raise StoreUnavailableError(
                f"cannot open the chat store {self.location}: {str(error).strip()}"
            ) from None

    def _live(self) -> Any:
        # A connection the server dropped (a restart, a failover) is replaced on next use; the
        # statement that found it broken failed, and its write was rolled back.
        if self._connection.closed:
            self._connection = self._connect()
        return self._connection

    @contextmanager
    def _reachable(self) -> Iterator[None]:
        # A server that went away (a restart, a failover, a cut network) is "unavailable" to
        # callers, who answer 503 and try again later; the next statement reconnects. So is a
        # database that takes no writes for now (full, or made read-only: a standby, or
        # `default_transaction_read_only`): a turn waits for it as for a restart.
        try:
            yield
        except self._psycopg.errors.ReadOnlySqlTransaction as error:
            raise StoreUnavailableError(
                f"the chat store {self.location} is read-only: {str(error).strip()}"
            ) from error
        except self._psycopg.errors.DiskFull as error:
            raise StoreUnavailableError(
                f"the chat store {self.location} is full: {str(error).strip()}"
            ) from error
        except self._psycopg.OperationalError as error:
            raise StoreUnavailableError(
                f"the chat store {self.location} is unreachable: {str(error).strip()}"
            ) from error

    def execute(self, sql: str, parameters: tuple[Any, ...]) -> Any:
        statement = translate(sql) if parameters else sql
        values = _storable(parameters) if parameters else None
        with self._reachable():
            connection = self._live()
            try:
                return connection.execute(statement, values)
            except self._psycopg.OperationalError:
                # A read outside a transaction that finds its idle connection dropped (the
                # server restarted) is asked once more on a new one: nothing was done yet.
                if self._in_transaction or not connection.closed:
                    raise
                return self._live().execute(statement, values)

    def executemany(self, sql: str, rows: Iterable[tuple[Any, ...]]) -> Any:
        with self._reachable():
            cursor = self._live().cursor()
            values = [_storable(row) for row in rows]
            if values:  # none: no round trip
                cursor.executemany(translate(sql), values)
            return cursor

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """``BEGIN`` and the writer lock … ``COMMIT`` (``ROLLBACK`` when the body raises).

        A connection the server dropped while idle (a restart, a failover) is found out by the
        ``BEGIN``: nothing was done yet, so it reconnects and begins once more rather than fail
        the first write after the server is back."""
        begin = f"BEGIN; SELECT pg_advisory_xact_lock({WRITER_LOCK})"
        with self._reachable():
            connection = self._live()
            try:
                # one round trip for both: a turn writes several times, each a few round trips
                connection.execute(begin)
            except self._psycopg.OperationalError:
                if not connection.closed:
                    raise
                connection = self._live()
                connection.execute(begin)
        self._announcements = []
        self._in_transaction = True
        try:
            yield
        except BaseException:
            self._in_transaction = False
            if not connection.closed:
                with suppress(self._psycopg.Error):  # the error that got here is the one to see
                    connection.execute("ROLLBACK")
            raise
        self._in_transaction = False
        with self._reachable():
            connection.execute(self._commit())

    def _commit(self) -> Any:
        """``COMMIT``, after the write's notifications in the same round trip (quoted as
        literals: a statement of several commands takes no parameters)."""
        sql = self._psycopg.sql
        notify = sql.SQL("SELECT pg_notify({}, {}); ")
        return sql.Composed(
            [notify.format(sql.Literal(self._channel), sql.Literal(payload))
             for payload in self._announcements] + [sql.SQL("COMMIT")]
        )  # fmt: skip

    def announce(self, signals: list[Signal]) -> None:
        """Sent with the ``COMMIT`` (:meth:`_commit`): PostgreSQL delivers them at commit."""
        self._announcements.extend(json.dumps([self._token, *signal]) for signal in signals)

    def listen(self, hear: Callable[[Signal], None]) -> None:
        """Start the listening thread once; returns when it listens (or after 10 s)."""
        self._hear = hear
        if self._listener is None:
            self._listener = threading.Thread(
                target=self._listen, name="gmchat-store-listen", daemon=True
            )
            self._listener.start()
            self._listening.wait(10.0)

    def _listen(self) -> None:
        psycopg = self._psycopg
        while not self._stop.is_set():
            try:
                with psycopg.connect(self._dsn, autocommit=True, **self._application) as connection:
                    connection.execute(
                        psycopg.sql.SQL("LISTEN {}").format(psycopg.sql.Identifier(self._channel))
                    )
                    self._listening.set()
                    while not self._stop.is_set():
                        for notification in connection.notifies(timeout=LISTEN_POLL_SECONDS):
                            self._heard(notification.payload)
            except psycopg.Error as error:
                log.warning("chat store %s: listening failed (%s); retrying", self.location, error)
                self._stop.wait(1.0)

    def _heard(self, payload: str) -> None:
        # another program's notification on our channel is not ours to read
        try:
            token, kind, conversation_id, turn_id = json.loads(payload)
        except (ValueError, TypeError):
            return
        hear = self._hear
        if token != self._token and hear is not None:
            hear((str(kind), str(conversation_id), str(turn_id)))

    def close(self) -> None:
        self._stop.set()
        if self._listener is not None:
            self._listener.join(LISTEN_POLL_SECONDS * 4)
        self._connection.close()

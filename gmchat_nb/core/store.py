"""SQLite persistence for conversations: messages, summaries, confirmations, the event journal
and usage counters.

One :class:`ChatStore` owns one ``sqlite3`` connection. Every statement runs under a lock, so a
store can be shared by the kernel's threads and a server's executor; two stores on the same file
(two processes) are safe too because every write is one ``BEGIN IMMEDIATE`` transaction and the
one decision that must never be made twice — claiming a mutation confirmation — is a single
conditional ``UPDATE``. Files use WAL mode so readers never block the writer.

Unlike GeneralManager's single rolling conversation per user, conversations have ids, and a failed
turn's dangling messages can be removed (:meth:`ChatStore.delete_messages`).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import closing, contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Final

from .text import clean_text

__all__ = [
    "CONFIRMATION_STATES",
    "SCHEMA_VERSION",
    "TURN_STATES",
    "ChatStore",
    "ConfirmationRecord",
    "ConversationRecord",
    "StoreVersionError",
    "StoredMessage",
    "TurnRecord",
]

SCHEMA_VERSION: Final = 2
"""The schema this module writes; kept in SQLite's ``PRAGMA user_version``. Version 2 added
tables only (``CREATE TABLE IF NOT EXISTS``), so a version-1 file is upgraded by opening it."""

CONFIRMATION_STATES: Final = frozenset(
    {"pending", "claimed", "executed", "rejected", "expired", "failed", "unknown"}
)
"""Every state a confirmation can be in. ``unknown``: it was claimed and its mutation may have
run, but the process died before the outcome was recorded (never retried automatically)."""

# States a confirmation ends in; finish_confirmation accepts only these.
_FINAL_STATES: Final = frozenset({"executed", "rejected", "expired", "failed", "unknown"})

TURN_STATES: Final = frozenset({"running", "suspended", "done", "failed", "interrupted"})
"""Every state a turn can be in: ``running`` (some process drives it), ``suspended`` (stopped at a
confirmation a later request resumes), and the final ``done``, ``failed`` and ``interrupted``."""
_ROLES: Final = frozenset({"system", "user", "assistant", "tool"})
_DAY_SECONDS: Final = 86400.0

_SCHEMA: Final = """
CREATE TABLE IF NOT EXISTS conversations (
    id TEXT PRIMARY KEY,
    actor_id TEXT NOT NULL,
    title TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    summary TEXT,
    summarized_through INTEGER
);
CREATE INDEX IF NOT EXISTS conversations_by_actor ON conversations (actor_id, updated_at);
CREATE INDEX IF NOT EXISTS conversations_by_update ON conversations (updated_at);

CREATE TABLE IF NOT EXISTS messages (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    tool_calls TEXT NOT NULL DEFAULT '[]',
    tool_call_id TEXT,
    tool_name TEXT,
    tool_result TEXT,
    turn_id TEXT,
    created_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS messages_by_conversation ON messages (conversation_id, id);

CREATE TABLE IF NOT EXISTS events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    turn_id TEXT NOT NULL,
    sequence INTEGER NOT NULL,
    payload TEXT NOT NULL,
    created_at REAL NOT NULL,
    UNIQUE (conversation_id, turn_id, sequence)
);

CREATE TABLE IF NOT EXISTS confirmations (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    actor_id TEXT NOT NULL,
    mutation TEXT NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL,
    created_at REAL NOT NULL,
    expires_at REAL NOT NULL,
    resolved_at REAL,
    turn_state TEXT NOT NULL,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX IF NOT EXISTS confirmations_by_state ON confirmations (state, expires_at);

CREATE TABLE IF NOT EXISTS turns (
    conversation_id TEXT NOT NULL REFERENCES conversations (id) ON DELETE CASCADE,
    id TEXT NOT NULL,
    state TEXT NOT NULL,
    owner TEXT NOT NULL DEFAULT '',
    started_at REAL NOT NULL,
    ended_at REAL,
    PRIMARY KEY (conversation_id, id)
);
CREATE INDEX IF NOT EXISTS turns_by_state ON turns (state, conversation_id);

CREATE TABLE IF NOT EXISTS usage (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    actor_id TEXT NOT NULL,
    counter TEXT NOT NULL,
    amount INTEGER NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS usage_by_actor ON usage (actor_id, counter, at);
CREATE INDEX IF NOT EXISTS usage_by_time ON usage (at);

CREATE TABLE IF NOT EXISTS usage_totals (
    actor_id TEXT NOT NULL,
    counter TEXT NOT NULL,
    window_seconds REAL NOT NULL,
    window_start REAL NOT NULL,
    total INTEGER NOT NULL,
    PRIMARY KEY (actor_id, counter, window_seconds)
) WITHOUT ROWID;
"""


class StoreVersionError(RuntimeError):
    """The database was written by a newer gmchat_nb whose schema this version cannot read."""


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    """One conversation. ``summarized_through`` is the id of the last message ``summary`` covers
    (``None`` when there is no summary)."""

    id: str
    actor_id: str
    title: str
    created_at: float
    updated_at: float
    summary: str | None
    summarized_through: int | None
    message_count: int


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One persisted history entry. ``tool_calls`` are ``{"id", "name", "args"}`` dicts on
    assistant messages; a ``tool`` message answers one call with its JSON ``tool_result``."""

    id: int
    conversation_id: str
    role: str
    content: str
    tool_calls: tuple[dict[str, Any], ...]
    tool_call_id: str | None
    tool_name: str | None
    tool_result: Any
    turn_id: str | None
    created_at: float


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One turn's lifecycle: ``state`` is one of :data:`TURN_STATES`; ``owner`` names the process
    that last drove it (see :mod:`gmchat_nb.core.recovery`)."""

    conversation_id: str
    id: str
    state: str
    owner: str
    started_at: float
    ended_at: float | None


@dataclass(frozen=True, slots=True)
class ConfirmationRecord:
    """A mutation waiting for (or past) a human's decision.

    ``id`` is the provider's tool-call id, unique within its conversation. ``state`` is one of
    :data:`CONFIRMATION_STATES`; ``turn_state`` is whatever the loop needs to resume the turn.
    """

    conversation_id: str
    id: str
    actor_id: str
    mutation: str
    input: dict[str, Any]
    state: str
    created_at: float
    expires_at: float
    resolved_at: float | None
    turn_state: dict[str, Any]


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


def _now(value: float | None) -> float:
    return time.time() if value is None else float(value)


def _bindable(parameters: Iterable[Any]) -> tuple[Any, ...]:
    """Statement parameters SQLite can bind: text with a lone surrogate (which UTF-8 cannot
    encode, so the whole statement would fail) gets U+FFFD in its place."""
    return tuple(clean_text(value) if isinstance(value, str) else value for value in parameters)


class _Statements:
    """The connection inside one write transaction, binding parameters with :func:`_bindable`:
    a model's broken character must never make a turn's whole write fail."""

    __slots__ = ("_connection",)

    def __init__(self, connection: sqlite3.Connection) -> None:
        self._connection = connection

    def execute(self, sql: str, parameters: Iterable[Any] = ()) -> sqlite3.Cursor:
        """``sqlite3.Connection.execute`` with bindable parameters."""
        return self._connection.execute(sql, _bindable(parameters))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> sqlite3.Cursor:
        """``sqlite3.Connection.executemany`` with bindable parameters."""
        return self._connection.executemany(sql, (_bindable(row) for row in rows))


class ChatStore:
    """Conversations, messages, confirmations, the event journal and usage counters in SQLite.

    ``path`` is a file (its directory is created) or ``":memory:"`` (private to this object).
    All methods are synchronous and thread-safe. Use as a context manager or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:") -> None:
        self.path = str(path)
        in_memory = self.path == ":memory:"
        if not in_memory:
            Path(self.path).expanduser().parent.mkdir(parents=True, exist_ok=True)
            self.path = str(Path(self.path).expanduser())
        self._lock = threading.Lock()
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

    # -- plumbing ------------------------------------------------------------------------------

    def _prepare(self, in_memory: bool) -> None:
        with self._lock:
            connection = self._connection
            connection.execute("PRAGMA foreign_keys = ON")
            if not in_memory:
                connection.execute("PRAGMA journal_mode = WAL")
                # WAL + NORMAL loses at most the last commits on power loss, never consistency.
                connection.execute("PRAGMA synchronous = NORMAL")
            connection.execute("BEGIN IMMEDIATE")
            try:
                version = int(connection.execute("PRAGMA user_version").fetchone()[0])
                if version > SCHEMA_VERSION:
                    raise StoreVersionError(
                        f"{self.path} has chat store schema version {version}; this gmchat_nb "
                        f"reads version {SCHEMA_VERSION}. Upgrade gmchat_nb or use another file."
                    )
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        connection.execute(statement)
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextmanager
    def _write(self) -> Iterator[_Statements]:
        """One write transaction under the lock; rolled back when the body raises."""
        with self._lock:
            connection = self._connection
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield _Statements(connection)
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    def _read(self, sql: str, parameters: Iterable[Any] = ()) -> list[sqlite3.Row]:
        with self._lock:
            return self._connection.execute(sql, _bindable(parameters)).fetchall()

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

    def __enter__(self) -> ChatStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- conversations -------------------------------------------------------------------------

    _CONVERSATION_COLUMNS: Final = (
        "c.id, c.actor_id, c.title, c.created_at, c.updated_at, c.summary, c.summarized_through, "
        "(SELECT COUNT(*) FROM messages m WHERE m.conversation_id = c.id) AS message_count"
    )

    @staticmethod
    def _conversation(row: sqlite3.Row) -> ConversationRecord:
        return ConversationRecord(
            id=row["id"],
            actor_id=row["actor_id"],
            title=row["title"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            summary=row["summary"],
            summarized_through=row["summarized_through"],
            message_count=row["message_count"],
        )

    def create_conversation(
        self, actor_id: str, title: str = "", *, now: float | None = None
    ) -> ConversationRecord:
        """A new, empty conversation owned by ``actor_id``."""
        at = _now(now)
        record = ConversationRecord(uuid.uuid4().hex, actor_id, title, at, at, None, None, 0)
        with self._write() as connection:
            connection.execute(
                "INSERT INTO conversations (id, actor_id, title, created_at, updated_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (record.id, actor_id, title, at, at),
            )
        return record

    def conversation(self, conversation_id: str) -> ConversationRecord | None:
        """The conversation with this id, or ``None``."""
        rows = self._read(
            f"SELECT {self._CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",
            (conversation_id,),
        )
        return self._conversation(rows[0]) if rows else None

    def conversations(self, actor_id: str) -> list[ConversationRecord]:
        """The actor's conversations, most recently updated first."""
        rows = self._read(
            f"SELECT {self._CONVERSATION_COLUMNS} FROM conversations c WHERE c.actor_id = ? "
            "ORDER BY c.updated_at DESC, c.created_at DESC, c.rowid DESC",
            (actor_id,),
        )
        return [self._conversation(row) for row in rows]

    def rename_conversation(self, conversation_id: str, title: str) -> None:
        """Set the title. An unknown id is a ``KeyError``."""
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE conversations SET title = ? WHERE id = ?", (title, conversation_id)
            )
            if cursor.rowcount == 0:
                raise KeyError(conversation_id)

    def delete_conversation(self, conversation_id: str) -> bool:
        """Delete the conversation with its messages, events and confirmations. ``False`` when
        there was no such conversation."""
        with self._write() as connection:
            cursor = connection.execute(
                "DELETE FROM conversations WHERE id = ?", (conversation_id,)
            )
            return cursor.rowcount == 1

    # -- messages ------------------------------------------------------------------------------

    @staticmethod
    def _message(row: sqlite3.Row) -> StoredMessage:
        result = row["tool_result"]
        return StoredMessage(
            id=row["id"],
            conversation_id=row["conversation_id"],
            role=row["role"],
            content=row["content"],
            tool_calls=tuple(json.loads(row["tool_calls"])),
            tool_call_id=row["tool_call_id"],
            tool_name=row["tool_name"],
            tool_result=None if result is None else json.loads(result),
            turn_id=row["turn_id"],
            created_at=row["created_at"],
        )

    def append_message(
        self,
        conversation_id: str,
        role: str,
        content: str = "",
        *,
        tool_calls: Iterable[Mapping[str, Any]] = (),
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        tool_result: Any = None,
        turn_id: str | None = None,
        now: float | None = None,
    ) -> StoredMessage:
        """Append one message and touch the conversation's ``updated_at``.

        ``tool_calls`` are mappings with ``id``, ``name`` and ``args`` (``{}`` when missing);
        ``tool_result`` is any JSON value. An unknown conversation is a ``KeyError``; an unknown
        role, or a tool call without id or name, is a ``ValueError``.
        """
        row = _message_row(role, content, tool_calls, tool_call_id, tool_name, tool_result, turn_id)
        at = _now(now)
        with self._write() as connection:
            _touch(connection, conversation_id, at)
            message_id = _insert_message(connection, conversation_id, row, at)
        return StoredMessage(
            id=message_id,
            conversation_id=conversation_id,
            role=role,
            content=content,
            tool_calls=tuple(json.loads(row[1])),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            # Round-tripped so the caller sees exactly what a later read returns.
            tool_result=None if row[4] is None else json.loads(row[4]),
            turn_id=turn_id,
            created_at=at,
        )

    def record_turn(
        self,
        conversation_id: str,
        turn_id: str,
        messages: Iterable[Mapping[str, Any]],
        events: Iterable[tuple[int, Mapping[str, Any]]],
        *,
        state: str | None = None,
        owner: str = "",
    ) -> None:
        """Append a turn's new messages (keyword arguments of :meth:`append_message`, with
        ``role``) and journal its new events, all in one transaction; with ``state`` (one of
        :data:`TURN_STATES`) the turn's lifecycle row is written in the same transaction."""
        if state is not None and state not in TURN_STATES:
            raise ValueError(f"state must be one of {sorted(TURN_STATES)}, not {state!r}")
        rows = [_message_row_of(message, turn_id) for message in messages]
        journal = [
            (sequence, json.dumps(dict(payload), sort_keys=True)) for sequence, payload in events
        ]
        if not rows and not journal and state is None:
            return
        at = time.time()
        with self._write() as connection:
            _touch(connection, conversation_id, at)
            if state is not None:
                _set_turn_state(connection, conversation_id, turn_id, state, owner, at)
            _insert_messages(connection, conversation_id, rows, at)
            _insert_events(connection, conversation_id, turn_id, journal, at)

    # -- turns ---------------------------------------------------------------------------------

    def turn(self, conversation_id: str, turn_id: str) -> TurnRecord | None:
        """The turn's lifecycle row, or ``None`` (turns written before store version 2 have
        none)."""
        rows = self._read(
            "SELECT * FROM turns WHERE conversation_id = ? AND id = ?", (conversation_id, turn_id)
        )
        return _turn(rows[0]) if rows else None

    def turns(self, *, state: str, conversation_id: str | None = None) -> list[TurnRecord]:
        """Turns in ``state`` (of one conversation, or of all), oldest first."""
        sql = "SELECT * FROM turns WHERE state = ?"
        parameters: list[Any] = [state]
        if conversation_id is not None:
            sql += " AND conversation_id = ?"
            parameters.append(conversation_id)
        return [_turn(row) for row in self._read(sql + " ORDER BY started_at, rowid", parameters)]

    def close_turn(
        self,
        conversation_id: str,
        turn_id: str,
        *,
        expect_state: str,
        expect_owner: str,
        final_state: str,
        messages: Iterable[Mapping[str, Any]] = (),
        events: Iterable[tuple[int, Mapping[str, Any]]] = (),
        confirmations: Mapping[str, str] | None = None,
    ) -> bool:
        """End a turn nobody is driving any more, in one transaction: only while it is still
        ``expect_state`` under ``expect_owner`` (so two processes recovering the same turn close it
        once), append its closing ``messages`` and ``events``, and move ``confirmations``
        (id -> final state) that are still pending or claimed. ``False`` when the turn had already
        moved on."""
        if final_state not in TURN_STATES:
            raise ValueError(f"state must be one of {sorted(TURN_STATES)}, not {final_state!r}")
        for target in (confirmations or {}).values():
            if target not in _FINAL_STATES:
                raise ValueError(f"confirmation state must be final, not {target!r}")
        rows = [_message_row_of(message, turn_id) for message in messages]
        journal = [
            (sequence, json.dumps(dict(payload), sort_keys=True)) for sequence, payload in events
        ]
        at = time.time()
        with self._write() as connection:
            moved = connection.execute(
                "UPDATE turns SET state = ?, ended_at = ? WHERE conversation_id = ? AND id = ? "
                "AND state = ? AND owner = ?",
                (final_state, at, conversation_id, turn_id, expect_state, expect_owner),
            )
            if moved.rowcount != 1:
                return False
            _touch(connection, conversation_id, at)
            _insert_messages(connection, conversation_id, rows, at)
            _insert_events(connection, conversation_id, turn_id, journal, at)
            for confirmation_id, target in (confirmations or {}).items():
                connection.execute(
                    "UPDATE confirmations SET state = ?, resolved_at = ? WHERE conversation_id = ? "
                    "AND id = ? AND state IN ('pending', 'claimed')",
                    (target, at, conversation_id, confirmation_id),
                )
        return True

    # -- messages (read) -----------------------------------------------------------------------

    def messages(self, conversation_id: str, *, after_id: int | None = None) -> list[StoredMessage]:
        """The conversation's messages in order (only those after ``after_id`` when given)."""
        rows = self._read(
            "SELECT * FROM messages WHERE conversation_id = ? AND id > ? ORDER BY id",
            (conversation_id, -1 if after_id is None else after_id),
        )
        return [self._message(row) for row in rows]

    def delete_messages(self, conversation_id: str, ids: Iterable[int]) -> int:
        """Delete these messages of the conversation (a failed turn's leftovers); returns how many.

        A summary whose marker message is deleted is dropped too, so it is regenerated rather than
        trusted with unknown coverage.
        """
        wanted = sorted({int(value) for value in ids})
        if not wanted:
            return 0
        marks = ", ".join("?" for _ in wanted)
        with self._write() as connection:
            cursor = connection.execute(
                f"DELETE FROM messages WHERE conversation_id = ? AND id IN ({marks})",
                (conversation_id, *wanted),
            )
            connection.execute(
                "UPDATE conversations SET summary = NULL, summarized_through = NULL "
                f"WHERE id = ? AND summarized_through IN ({marks})",
                (conversation_id, *wanted),
            )
            return cursor.rowcount

    def set_summary(self, conversation_id: str, text: str, through_message_id: int) -> None:
        """Record a summary covering every message up to and including ``through_message_id``.

        An unknown conversation is a ``KeyError``; a message of another conversation (or none) is a
        ``ValueError``.
        """
        with self._write() as connection:
            owner = connection.execute(
                "SELECT conversation_id FROM messages WHERE id = ?", (through_message_id,)
            ).fetchone()
            cursor = connection.execute(
                "UPDATE conversations SET summary = ?, summarized_through = ? WHERE id = ?",
                (text, through_message_id, conversation_id),
            )
            if cursor.rowcount == 0:
                raise KeyError(conversation_id)
            if owner is None or owner[0] != conversation_id:
                raise ValueError(
                    f"message {through_message_id} is not in conversation {conversation_id}"
                )

    # -- the event journal ---------------------------------------------------------------------

    def append_event(
        self, conversation_id: str, turn_id: str, sequence: int, payload: Mapping[str, Any]
    ) -> None:
        """Journal one event of a turn at its sequence number.

        Appending the same event again (same turn, sequence and payload) is a no-op, so a retried
        write is harmless; a different payload at a taken sequence is a ``ValueError``. An unknown
        conversation is a ``KeyError``.
        """
        self.append_events(conversation_id, turn_id, [(sequence, payload)])

    def append_events(
        self,
        conversation_id: str,
        turn_id: str,
        items: Iterable[tuple[int, Mapping[str, Any]]],
    ) -> None:
        """Journal several events of a turn in one transaction (as :meth:`append_event`)."""
        rows = [
            (sequence, json.dumps(dict(payload), sort_keys=True)) for sequence, payload in items
        ]
        if not rows:
            return
        with self._write() as connection:
            exists = connection.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
            ).fetchone()
            if exists is None:
                raise KeyError(conversation_id)
            _insert_events(connection, conversation_id, turn_id, rows, time.time())

    def events(
        self,
        conversation_id: str,
        *,
        turn_id: str | None = None,
        after_sequence: int | None = None,
    ) -> list[dict[str, Any]]:
        """Journaled event payloads in order: by sequence within a turn, turns in the order they
        were first journaled. ``after_sequence`` keeps only events with a larger sequence (meant
        with ``turn_id``: resuming a turn's stream after the last event a client saw)."""
        clauses = ["e.conversation_id = ?"]
        parameters: list[Any] = [conversation_id]
        if turn_id is not None:
            clauses.append("e.turn_id = ?")
            parameters.append(turn_id)
        if after_sequence is not None:
            clauses.append("e.sequence > ?")
            parameters.append(after_sequence)
        rows = self._read(
            "SELECT e.payload FROM events e WHERE "
            + " AND ".join(clauses)
            + " ORDER BY (SELECT MIN(f.id) FROM events f WHERE f.conversation_id = e.conversation_id"
            " AND f.turn_id = e.turn_id), e.sequence",
            parameters,
        )
        return [json.loads(row[0]) for row in rows]

    # -- confirmations -------------------------------------------------------------------------

    @staticmethod
    def _confirmation(row: sqlite3.Row) -> ConfirmationRecord:
        return ConfirmationRecord(
            conversation_id=row["conversation_id"],
            id=row["id"],
            actor_id=row["actor_id"],
            mutation=row["mutation"],
            input=json.loads(row["input"]),
            state=row["state"],
            created_at=row["created_at"],
            expires_at=row["expires_at"],
            resolved_at=row["resolved_at"],
            turn_state=json.loads(row["turn_state"]),
        )

    def add_confirmation(self, record: ConfirmationRecord) -> None:
        """Persist a confirmation.

        Provider tool-call ids can repeat within a conversation (``tool-1`` every turn), so a
        record whose id belongs to a finished confirmation replaces it; one that is still pending
        or claimed is a ``ValueError``. An unknown conversation is a ``KeyError``; an unknown
        state is a ``ValueError``.
        """
        if record.state not in CONFIRMATION_STATES:
            raise ValueError(f"state must be one of {sorted(CONFIRMATION_STATES)}")
        values = (
            record.conversation_id,
            record.id,
            record.actor_id,
            record.mutation,
            json.dumps(record.input),
            record.state,
            record.created_at,
            record.expires_at,
            record.resolved_at,
            json.dumps(record.turn_state),
        )
        with self._write() as connection:
            exists = connection.execute(
                "SELECT 1 FROM conversations WHERE id = ?", (record.conversation_id,)
            ).fetchone()
            if exists is None:
                raise KeyError(record.conversation_id)
            current = connection.execute(
                "SELECT state FROM confirmations WHERE conversation_id = ? AND id = ?",
                (record.conversation_id, record.id),
            ).fetchone()
            if current is not None and current[0] not in _FINAL_STATES:
                raise ValueError(
                    f"confirmation {record.id} of conversation {record.conversation_id} is "
                    f"still {current[0]}"
                )
            connection.execute(
                "INSERT OR REPLACE INTO confirmations (conversation_id, id, actor_id, mutation, "
                "input, state, created_at, expires_at, resolved_at, turn_state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )

    def confirmation(self, conversation_id: str, confirmation_id: str) -> ConfirmationRecord | None:
        """The confirmation in any state, or ``None``."""
        rows = self._read(
            "SELECT * FROM confirmations WHERE conversation_id = ? AND id = ?",
            (conversation_id, confirmation_id),
        )
        return self._confirmation(rows[0]) if rows else None

    def claim_confirmation(
        self,
        conversation_id: str,
        confirmation_id: str,
        actor_id: str,
        *,
        now: float | None = None,
        owner: str | None = None,
    ) -> ConfirmationRecord | None:
        """Claim a pending, unexpired confirmation of ``actor_id`` for execution.

        Returns the claimed record only to the one caller whose claim changed the row; every
        other caller — a second click, another thread, another process on the same file, a
        foreign actor, a late or unknown id — gets ``None``. Execute the mutation only on a
        record, then :meth:`finish_confirmation`. With ``owner``, the confirmation's turn is
        marked ``running`` under that owner in the same transaction, so a process that dies
        between claiming and recording leaves a turn recovery can find.
        """
        at = _now(now)
        with self._write() as connection:
            # The single conditional UPDATE is the whole decision: SQLite serialises writers, so
            # exactly one claimer sees rowcount 1.
            cursor = connection.execute(
                "UPDATE confirmations SET state = 'claimed' WHERE conversation_id = ? AND id = ? "
                "AND state = 'pending' AND expires_at > ? AND actor_id = ?",
                (conversation_id, confirmation_id, at, actor_id),
            )
            if cursor.rowcount != 1:
                return None
            row = connection.execute(
                "SELECT * FROM confirmations WHERE conversation_id = ? AND id = ?",
                (conversation_id, confirmation_id),
            ).fetchone()
            record = self._confirmation(row)
            turn_id = record.turn_state.get("state", {}).get("turn_id")
            if owner is not None and isinstance(turn_id, str):
                _set_turn_state(connection, conversation_id, turn_id, "running", owner, at)
        return record

    def finish_confirmation(
        self,
        conversation_id: str,
        confirmation_id: str,
        state: str,
        *,
        now: float | None = None,
    ) -> bool:
        """Move a pending or claimed confirmation to a final state (``executed``, ``rejected``,
        ``expired`` or ``failed``) and stamp ``resolved_at``. ``False`` when it was unknown or
        already final (a final state never changes)."""
        if state not in _FINAL_STATES:
            raise ValueError(f"state must be one of {sorted(_FINAL_STATES)}, not {state!r}")
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE confirmations SET state = ?, resolved_at = ? WHERE conversation_id = ? "
                "AND id = ? AND state IN ('pending', 'claimed')",
                (state, _now(now), conversation_id, confirmation_id),
            )
            return cursor.rowcount == 1

    def pending_confirmation(
        self, conversation_id: str, *, now: float | None = None
    ) -> ConfirmationRecord | None:
        """The newest confirmation of the conversation still pending and not expired."""
        rows = self._read(
            "SELECT * FROM confirmations WHERE conversation_id = ? AND state = 'pending' "
            "AND expires_at > ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (conversation_id, _now(now)),
        )
        return self._confirmation(rows[0]) if rows else None

    def expire_confirmations(self, *, now: float | None = None) -> int:
        """Mark every pending confirmation past its expiry ``expired``; returns how many."""
        at = _now(now)
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE confirmations SET state = 'expired', resolved_at = ? "
                "WHERE state = 'pending' AND expires_at <= ?",
                (at, at),
            )
            return cursor.rowcount

    # -- usage counters ------------------------------------------------------------------------

    def record_usage(
        self, actor_id: str, counter: str, amount: int, *, at: float | None = None
    ) -> None:
        """Add ``amount`` to the actor's ``counter`` at time ``at``."""
        with self._write() as connection:
            _add_usage(connection, actor_id, {counter: amount}, _now(at))

    def usage(self, actor_id: str, counter: str, *, since: float) -> list[tuple[float, int]]:
        """``(at, amount)`` of the actor's counter at or after ``since``, in time order."""
        rows = self._read(
            "SELECT at, amount FROM usage WHERE actor_id = ? AND counter = ? AND at >= ? "
            "ORDER BY at, id",
            (actor_id, counter, since),
        )
        return [(float(row[0]), int(row[1])) for row in rows]

    def admit_usage(
        self,
        actor_id: str,
        amounts: Mapping[str, int],
        *,
        limits: Mapping[str, int],
        window_seconds: float,
        now: float,
    ) -> dict[str, float]:
        """Add ``amounts`` (counter → amount) at ``now`` unless a counter of ``limits`` (counter
        → positive limit) is at or over its limit in the window ``(now - window_seconds, ...]``.

        Returns ``{}`` when nothing is exhausted and the amounts were added. Otherwise nothing is
        added, and each exhausted counter (in ``limits`` order) maps to the time its usage in the
        window is below its limit again: ``at + window_seconds`` of the oldest row whose leaving
        brings it there.

        Check and add are one write transaction, so two threads or two stores on one file never
        both admit the last unit of a budget. The cost does not grow with history: a running
        total per (actor, counter, window) is brought up to date by reading only the rows that
        crossed the window's start since the last call, and only a refusal reads in-window rows,
        oldest first, as many as it takes to get below the limit.
        """
        for counter, limit in limits.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"the limit of {counter!r} must be a positive integer")
        if not limits and not amounts:
            return {}
        start = now - window_seconds
        with self._write() as connection:
            exhausted: dict[str, float] = {}
            for counter, limit in limits.items():
                used = _window_total(connection, actor_id, counter, window_seconds, start)
                if used >= limit:
                    exhausted[counter] = _below_limit_at(
                        connection, actor_id, counter, window_seconds, start, used - limit
                    )
            if not exhausted:
                _add_usage(connection, actor_id, amounts, now)
            return exhausted

    # -- retention -----------------------------------------------------------------------------

    def cleanup(self, ttl_hours: float, *, now: float | None = None) -> dict[str, int]:
        """Delete what is older than ``ttl_hours``; returns how many rows of each kind went.

        Conversations not updated within the ttl go with everything they own; resolved or expired
        confirmations resolved (or expired) before the ttl go too; usage rows go once older than
        both the ttl and one day. Keys: ``conversations``, ``messages``, ``events``,
        ``confirmations``, ``usage``.
        """
        if not math.isfinite(ttl_hours) or ttl_hours < 0:
            raise ValueError(f"ttl_hours must be a non-negative number, not {ttl_hours!r}")
        at = _now(now)
        cutoff = at - ttl_hours * 3600.0
        usage_cutoff = at - max(ttl_hours * 3600.0, _DAY_SECONDS)
        stale = "SELECT id FROM conversations WHERE updated_at < ?"
        with self._write() as connection:

            def count(sql: str, *parameters: Any) -> int:
                return int(connection.execute(sql, parameters).fetchone()[0])

            messages = count(
                f"SELECT COUNT(*) FROM messages WHERE conversation_id IN ({stale})", cutoff
            )
            events = count(
                f"SELECT COUNT(*) FROM events WHERE conversation_id IN ({stale})", cutoff
            )
            owned_confirmations = count(
                f"SELECT COUNT(*) FROM confirmations WHERE conversation_id IN ({stale})", cutoff
            )
            conversations = connection.execute(
                "DELETE FROM conversations WHERE updated_at < ?", (cutoff,)
            ).rowcount
            # Pending rows whose expiry passed long ago were never marked expired (nobody
            # confirmed); they are as dead as expired ones. Claimed rows stay: their outcome is
            # unknown until the conversation itself ages out.
            confirmations = connection.execute(
                "DELETE FROM confirmations WHERE "
                "(state IN ('executed', 'rejected', 'expired', 'failed', 'unknown') "
                " AND COALESCE(resolved_at, expires_at) < ?) "
                "OR (state = 'pending' AND expires_at < ?)",
                (cutoff, cutoff),
            ).rowcount
            usage = connection.execute("DELETE FROM usage WHERE at < ?", (usage_cutoff,)).rowcount
            # A running total counts the rows after its window's start, so only one that starts
            # before the cutoff can hold deleted rows; it goes and is summed afresh on next use.
            connection.execute("DELETE FROM usage_totals WHERE window_start < ?", (usage_cutoff,))
        return {
            "conversations": conversations,
            "messages": messages,
            "events": events,
            "confirmations": owned_confirmations + confirmations,
            "usage": usage,
        }


def _message_row(
    role: str,
    content: str,
    tool_calls: Iterable[Mapping[str, Any]],
    tool_call_id: str | None,
    tool_name: str | None,
    tool_result: Any,
    turn_id: str | None,
) -> _MessageRow:
    """``(role, tool_calls json, tool_call_id, tool_name, tool_result json, content, turn_id)``,
    validated: an unknown role or a tool call without id or name is a ``ValueError``."""
    if role not in _ROLES:
        raise ValueError(f"role must be one of {sorted(_ROLES)}, not {role!r}")
    calls = []
    for call in tool_calls:
        if not call.get("id") or not call.get("name"):
            raise ValueError(f"a tool call needs an id and a name: {dict(call)!r}")
        calls.append({"id": call["id"], "name": call["name"], "args": call.get("args") or {}})
    result_json = None if tool_result is None else json.dumps(tool_result)
    return (role, json.dumps(calls), tool_call_id, tool_name, result_json, content, turn_id)


_MessageRow = tuple[str, str, str | None, str | None, str | None, str, str | None]


def _message_row_of(message: Mapping[str, Any], turn_id: str) -> _MessageRow:
    """:func:`_message_row` from a mapping of :meth:`ChatStore.append_message`'s arguments."""
    return _message_row(
        message["role"],
        message.get("content", ""),
        message.get("tool_calls", ()),
        message.get("tool_call_id"),
        message.get("tool_name"),
        message.get("tool_result"),
        turn_id,
    )


def _insert_messages(
    connection: _Statements, conversation_id: str, rows: list[_MessageRow], at: float
) -> None:
    connection.executemany(
        "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, "
        "tool_name, tool_result, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (conversation_id, role, content, calls, call_id, name, result, turn, at)
            for role, calls, call_id, name, result, content, turn in rows
        ],
    )


def _set_turn_state(
    connection: _Statements, conversation_id: str, turn_id: str, state: str, owner: str, at: float
) -> None:
    """Upsert a turn's lifecycle row (a resumed turn runs again under its new owner)."""
    ended = None if state in ("running", "suspended") else at
    connection.execute(
        "INSERT INTO turns (conversation_id, id, state, owner, started_at, ended_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, id) DO UPDATE SET "
        "state = excluded.state, owner = excluded.owner, ended_at = excluded.ended_at",
        (conversation_id, turn_id, state, owner, at, ended),
    )


def _turn(row: sqlite3.Row) -> TurnRecord:
    return TurnRecord(
        conversation_id=row["conversation_id"],
        id=row["id"],
        state=row["state"],
        owner=row["owner"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
    )


def _touch(connection: _Statements, conversation_id: str, at: float) -> None:
    touched = connection.execute(
        "UPDATE conversations SET updated_at = MAX(updated_at, ?) WHERE id = ?",
        (at, conversation_id),
    )
    if touched.rowcount == 0:
        raise KeyError(conversation_id)


def _insert_message(
    connection: _Statements,
    conversation_id: str,
    row: _MessageRow,
    at: float,
) -> int:
    role, calls_json, tool_call_id, tool_name, result_json, content, turn_id = row
    cursor = connection.execute(
        "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, "
        "tool_name, tool_result, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation_id,
            role,
            content,
            calls_json,
            tool_call_id,
            tool_name,
            result_json,
            turn_id,
            at,
        ),
    )
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _insert_events(
    connection: _Statements,
    conversation_id: str,
    turn_id: str,
    rows: list[tuple[int, str]],
    at: float,
) -> None:
    """Insert journal rows; the same event again is a no-op, a different one a ValueError."""
    inserted = connection.executemany(
        "INSERT INTO events (conversation_id, turn_id, sequence, payload, created_at) "
        "VALUES (?, ?, ?, ?, ?) ON CONFLICT (conversation_id, turn_id, sequence) DO NOTHING",
        [(conversation_id, turn_id, sequence, text, at) for sequence, text in rows],
    )
    if inserted.rowcount == len(rows):
        return  # the usual case: every event was new
    for sequence, text in rows:
        taken = connection.execute(
            "SELECT payload FROM events WHERE conversation_id = ? AND turn_id = ? AND sequence = ?",
            (conversation_id, turn_id, sequence),
        ).fetchone()
        if taken is not None and taken[0] != text:
            raise ValueError(
                f"turn {turn_id} of conversation {conversation_id} already journaled a "
                f"different event at sequence {sequence}"
            )


# -- usage counters ----------------------------------------------------------------------------


def _add_usage(
    connection: _Statements, actor_id: str, amounts: Mapping[str, int], at: float
) -> None:
    """Insert a usage row per counter and count each in every running total whose window
    holds ``at``."""
    rows = [(actor_id, counter, int(amount), at) for counter, amount in amounts.items()]
    connection.executemany(
        "INSERT INTO usage (actor_id, counter, amount, at) VALUES (?, ?, ?, ?)", rows
    )
    connection.executemany(
        "UPDATE usage_totals SET total = total + ?3 "
        "WHERE actor_id = ?1 AND counter = ?2 AND window_start < ?4",
        rows,
    )


def _usage_between(
    connection: _Statements, actor_id: str, counter: str, low: float, high: float
) -> tuple[int, int]:
    """``(rows, summed amount)`` of the actor's counter with ``low < at <= high``: one range of
    the ``usage_by_actor`` index."""
    row = connection.execute(
        "SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM usage "
        "WHERE actor_id = ? AND counter = ? AND at > ? AND at <= ?",
        (actor_id, counter, low, high),
    ).fetchone()
    return int(row[0]), int(row[1])


def _window_total(
    connection: _Statements,
    actor_id: str,
    counter: str,
    window_seconds: float,
    start: float,
) -> int:
    """The actor's ``counter`` summed over the rows after ``start``, from the running total of
    this window length (created from the rows on first use).

    A total sums the rows after its stored ``window_start``. Moving that to ``start`` reads only
    the rows in between — those that left the window since the last call, or, when this caller's
    clock is behind the last one's, those that are back in it — so each row is read about once.
    """
    key = (actor_id, counter, window_seconds)
    row = connection.execute(
        "SELECT window_start, total FROM usage_totals "
        "WHERE actor_id = ? AND counter = ? AND window_seconds = ?",
        key,
    ).fetchone()
    if row is None:
        total = _usage_between(connection, actor_id, counter, start, math.inf)[1]
        connection.execute(
            "INSERT INTO usage_totals (actor_id, counter, window_seconds, window_start, total) "
            "VALUES (?, ?, ?, ?, ?)",
            (*key, start, total),
        )
        return total
    window_start, total = float(row[0]), int(row[1])
    if start >= window_start:
        crossed, amount = _usage_between(connection, actor_id, counter, window_start, start)
        total -= amount
    else:
        crossed, amount = _usage_between(connection, actor_id, counter, start, window_start)
        total += amount
    if crossed:
        # Untouched otherwise: with no row in between, both starts give the same total, and a
        # check that writes nothing commits without touching the file.
        connection.execute(
            "UPDATE usage_totals SET window_start = ?, total = ? "
            "WHERE actor_id = ? AND counter = ? AND window_seconds = ?",
            (start, total, *key),
        )
    return total


def _below_limit_at(
    connection: _Statements,
    actor_id: str,
    counter: str,
    window_seconds: float,
    start: float,
    excess: int,
) -> float:
    """When the counter's usage after ``start``, ``excess`` (≥ 0) over its limit, is below the
    limit: ``at + window_seconds`` of the row whose leaving takes away more than ``excess``.
    Reads the oldest rows in order, only as many as that takes."""
    rows = connection.execute(
        "SELECT at, amount FROM usage WHERE actor_id = ? AND counter = ? AND at > ? "
        "ORDER BY at, id",
        (actor_id, counter, start),
    )
    with closing(rows):
        for row in rows:
            excess -= int(row[1])
            if excess < 0:
                # A row at time t counts while now < t + window.
                return float(row[0]) + window_seconds
    raise AssertionError(
        "unreachable: the running total is the sum of these rows"
    )  # pragma: no cover

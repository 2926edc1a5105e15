"""The turns table: each turn's lifecycle, written with the turn's messages and events, and
closed once by whoever recovers a turn nobody drives any more."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .conversations import touch
from .database import Database, Row, Statements
from .journal import insert_events, journal_rows
from .messages import insert_messages, message_row_of
from .records import FINAL_CONFIRMATION_STATES, FINAL_TURN_STATES, TURN_STATES, TurnRecord

__all__ = ["Admission", "TurnConflict", "Turns", "input_hash", "set_turn_state"]


def input_hash(text: str) -> str:
    """What makes a retried admission the same turn: the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TurnConflict(ValueError):
    """A turn id reused with another input: the caller's idempotency key names a different
    turn."""


@dataclass(frozen=True, slots=True)
class Admission:
    """A turn admitted under a client's turn id: ``created`` is False when the same turn was
    admitted before (a retried POST); ``position`` is the conversation's journal position when
    it was first admitted, after which its events appear."""

    conversation_id: str
    turn_id: str
    state: str
    position: int
    created: bool


def set_turn_state(
    connection: Statements, conversation_id: str, turn_id: str, state: str, owner: str, at: float
) -> None:
    """Upsert a turn's lifecycle row (a resumed turn runs again under its new owner)."""
    ended = None if state in ("running", "suspended") else at
    connection.execute(
        "INSERT INTO turns (conversation_id, id, state, owner, started_at, ended_at) "
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, id) DO UPDATE SET "
        "state = excluded.state, owner = excluded.owner, ended_at = excluded.ended_at",
        (conversation_id, turn_id, state, owner, at, ended),
    )


def _turn(row: Row) -> TurnRecord:
    return TurnRecord(
        conversation_id=row["conversation_id"],
        id=row["id"],
        state=row["state"],
        owner=row["owner"],
        started_at=row["started_at"],
        ended_at=row["ended_at"],
        input_hash=row["input_hash"],
        admitted_position=row["admitted_position"],
        cancel_command=row["cancel_command"],
        input=row["input"],
    )


def _check_turn_state(state: str) -> None:
    if state not in TURN_STATES:
        raise ValueError(f"state must be one of {sorted(TURN_STATES)}, not {state!r}")


class Turns(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over turns: a turn's writes in one
    transaction, its lifecycle row, and closing it."""

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
        if state is not None:
            _check_turn_state(state)
        rows = [message_row_of(message, turn_id) for message in messages]
        journal = journal_rows(events)
        if not rows and not journal and state is None:
            return
        at = time.time()
        with self._write() as connection:
            touch(connection, conversation_id, at)
            if state is not None:
                set_turn_state(connection, conversation_id, turn_id, state, owner, at)
            insert_messages(connection, conversation_id, rows, at)
            insert_events(connection, conversation_id, turn_id, journal, at)

    def admit_turn(
        self,
        conversation_id: str,
        turn_id: str,
        input_hash: str,
        *,
        owner: str = "",
        text: str | None = None,
    ) -> Admission:
        """Admit a turn under the client's ``turn_id`` before any work: stored as ``accepted``
        with the hash of its input (and the input ``text``, which lets a server that restarts
        after a crash run it again). The same id with the same input is the same admission again
        (``created`` False); with another input it is a :class:`TurnConflict`."""
        at = time.time()
        with self._write() as connection:
            row = connection.execute(
                "SELECT state, input_hash, admitted_position FROM turns "
                "WHERE conversation_id = ? AND id = ?",
                (conversation_id, turn_id),
            ).fetchone()
            if row is not None:
                if row[1] != input_hash:
                    raise TurnConflict(
                        f"turn {turn_id} was admitted with another input; use a new turn id"
                    )
                return Admission(conversation_id, turn_id, row[0], int(row[2] or 0), False)
            position = connection.execute(
                "SELECT COALESCE(MAX(position), 0) FROM events WHERE conversation_id = ?",
                (conversation_id,),
            ).fetchone()[0]
            touch(connection, conversation_id, at)
            connection.execute(
                "INSERT INTO turns (conversation_id, id, state, owner, started_at, input_hash, "
                "admitted_position, input) VALUES (?, ?, 'accepted', ?, ?, ?, ?, ?)",
                (conversation_id, turn_id, owner, at, input_hash, position, text),
            )
        return Admission(conversation_id, turn_id, "accepted", int(position), True)

    def admitted_turn(self, actor_id: str, turn_id: str) -> TurnRecord | None:
        """The actor's turn admitted under ``turn_id``, in whichever of their conversations."""
        rows = self._read(
            "SELECT t.* FROM turns t JOIN conversations c ON c.id = t.conversation_id "
            "WHERE c.actor_id = ? AND t.id = ? AND t.input_hash IS NOT NULL",
            (actor_id, turn_id),
        )
        return _turn(rows[0]) if rows else None

    def request_cancel(self, conversation_id: str, turn_id: str, command_id: str) -> str | None:
        """Record an explicit cancel of a turn: ``"cancelled"`` (recorded now), ``"duplicate"``
        (this command was recorded before), ``"too_late"`` (the turn had ended, or another
        command cancelled it), or None for an unknown turn. One conditional write decides."""
        with self._write() as connection:
            row = connection.execute(
                "SELECT state, cancel_command FROM turns WHERE conversation_id = ? AND id = ?",
                (conversation_id, turn_id),
            ).fetchone()
            if row is None:
                return None
            if row[1] is not None:
                return "duplicate" if row[1] == command_id else "too_late"
            if row[0] in FINAL_TURN_STATES:
                return "too_late"
            connection.execute(
                "UPDATE turns SET cancel_command = ? WHERE conversation_id = ? AND id = ?",
                (command_id, conversation_id, turn_id),
            )
            connection.cancelled.add((conversation_id, turn_id))
        return "cancelled"

    def take_over_turn(self, turn: TurnRecord, owner: str) -> bool:
        """Make ``owner`` the turn's owner, only while it is as ``turn`` says (same state, same
        owner): of two servers that would run a dead process's turn again, one wins."""
        with self._write() as connection:
            moved = connection.execute(
                "UPDATE turns SET owner = ? WHERE conversation_id = ? AND id = ? AND state = ? "
                "AND owner = ?",
                (owner, turn.conversation_id, turn.id, turn.state, turn.owner),
            )
            return moved.rowcount == 1

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
        _check_turn_state(final_state)
        for target in (confirmations or {}).values():
            if target not in FINAL_CONFIRMATION_STATES:
                raise ValueError(f"confirmation state must be final, not {target!r}")
        rows = [message_row_of(message, turn_id) for message in messages]
        journal = journal_rows(events)
        at = time.time()
        with self._write() as connection:
            moved = connection.execute(
                "UPDATE turns SET state = ?, ended_at = ? WHERE conversation_id = ? AND id = ? "
                "AND state = ? AND owner = ?",
                (final_state, at, conversation_id, turn_id, expect_state, expect_owner),
            )
            if moved.rowcount != 1:
                return False
            touch(connection, conversation_id, at)
            insert_messages(connection, conversation_id, rows, at)
            insert_events(connection, conversation_id, turn_id, journal, at)
            for confirmation_id, target in (confirmations or {}).items():
                connection.execute(
                    "UPDATE confirmations SET state = ?, resolved_at = ? WHERE conversation_id = ? "
                    "AND id = ? AND state IN ('pending', 'claimed')",
                    (target, at, conversation_id, confirmation_id),
                )
        return True

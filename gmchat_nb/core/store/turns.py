"""The turns table: each turn's lifecycle, its owner's lease, written with the turn's messages and
events, and closed once by whoever recovers a turn nobody drives any more.

A process that drives a turn *owns* it (``owner``) and holds a *lease* on it
(``lease_expires_at``) that it renews while it works. Every write of a turn's progress is fenced
by ownership: it applies only while the row still names the writer as owner and the turn is still
driven, so a process that lost its turn (its lease lapsed and another server took the turn over,
or closed it) can never add a second run's events or a second terminal event (:class:`TurnLost`).

A recorded cancel command is final: once :meth:`Turns.request_cancel` answered ``cancelled``, the
turn's driver can no longer end it ``done`` or ``failed`` (nor suspend it) — that write is refused
with :class:`TurnCancelRequested` and the turn is closed as ``interrupted`` instead. The store's
one writer lock orders the two writes, so a cancel and a turn's end racing each other agree on
the outcome: whichever committed first. A driver's write that finds a command recorded by another
process tells this process's cancel listeners (a SQLite file has no notifications to carry it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .conversations import touch
from .database import Database, Row, Statements
from .journal import insert_events, journal_rows
from .messages import insert_messages, message_row_of
from .records import (
    DRIVEN_TURN_STATES,
    FINAL_CONFIRMATION_STATES,
    FINAL_TURN_STATES,
    TURN_STATES,
    TurnRecord,
)
from .usage import add_usage
from .usage_records import insert_usage_records

__all__ = [
    "TurnCancelRequested",
    "TurnConflict",
    "TurnLost",
    "Turns",
    "input_hash",
    "set_turn_state",
    "turn_record",
]

_DRIVEN = "('accepted', 'running')"
assert str(DRIVEN_TURN_STATES) == _DRIVEN


def input_hash(text: str) -> str:
    """What makes a retried admission the same turn: the SHA-256 of its text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class TurnConflict(ValueError):
    """A turn id reused with another input (or in another conversation): the caller's idempotency
    key names a different turn."""


class TurnLost(RuntimeError):
    """This process no longer owns the turn: its lease lapsed and another process took it over
    or closed it. Nothing was written; the turn's end is the new owner's to write."""


class TurnCancelRequested(RuntimeError):
    """A cancel command was recorded for the turn before its driver could end (or suspend) it:
    nothing was written, and the turn's end can only be ``interrupted``. ``command`` is the
    command's id."""

    def __init__(self, turn_id: str, command: str) -> None:
        super().__init__(f"turn {turn_id} was cancelled (command {command})")
        self.command = command


def set_turn_state(
    connection: Statements,
    conversation_id: str,
    turn_id: str,
    state: str,
    owner: str,
    at: float,
    *,
    lease_until: float | None = None,
) -> None:
    """Upsert a turn's lifecycle row (a resumed turn runs again under its new owner and lease;
    without ``lease_until`` the lease stays as it was)."""
    ended = None if state in ("running", "suspended") else at
    connection.execute(
        "INSERT INTO turns (conversation_id, id, state, owner, started_at, ended_at, "
        "lease_expires_at, actor_id) VALUES (?, ?, ?, ?, ?, ?, ?, "
        "(SELECT actor_id FROM conversations WHERE id = ?)) "
        "ON CONFLICT (conversation_id, id) DO UPDATE SET state = excluded.state, "
        "owner = excluded.owner, ended_at = excluded.ended_at, "
        "lease_expires_at = COALESCE(excluded.lease_expires_at, turns.lease_expires_at)",
        (conversation_id, turn_id, state, owner, at, ended, lease_until, conversation_id),
    )


def turn_record(row: Row) -> TurnRecord:
    """A turns row as a :class:`TurnRecord`."""
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
        actor_id=row["actor_id"],
        scope=row["scope"],
        lease_expires_at=row["lease_expires_at"],
        committed_sequence=row["committed_sequence"],
    )


def _check_turn_state(state: str) -> None:
    if state not in TURN_STATES:
        raise ValueError(f"state must be one of {sorted(TURN_STATES)}, not {state!r}")


def fence(
    connection: Statements,
    conversation_id: str,
    turn_id: str,
    owner: str,
    at: float,
    *,
    state: str | None = None,
    lease_until: float | None = None,
    committed_sequence: int | None = None,
) -> None:
    """Inside a write: move the turn on (its state, lease and committed sequence) only while
    ``owner`` drives it; :class:`TurnLost` (rolling the write back) when it does not. A move out
    of the driven states (``done``, ``failed``, ``suspended``) is refused with
    :class:`TurnCancelRequested` once a cancel command is recorded; any other write tells this
    process's cancel listeners of a recorded command (:attr:`Statements.noticed`)."""
    ended = at if state in FINAL_TURN_STATES else None
    leaving = state is not None and state not in DRIVEN_TURN_STATES
    moved = connection.execute(
        "UPDATE turns SET state = COALESCE(?, state), ended_at = ?, "
        "lease_expires_at = COALESCE(?, lease_expires_at), "
        "committed_sequence = COALESCE(?, committed_sequence) "
        f"WHERE conversation_id = ? AND id = ? AND owner = ? AND state IN {_DRIVEN}"
        + (" AND cancel_command IS NULL" if leaving else "")
        + " RETURNING cancel_command",
        (state, ended, lease_until, committed_sequence, conversation_id, turn_id, owner),
    ).fetchall()
    if not moved:
        row = connection.execute(
            "SELECT owner, state, cancel_command FROM turns WHERE conversation_id = ? AND id = ?",
            (conversation_id, turn_id),
        ).fetchone()
        if row is not None and row[0] == owner and row[1] in DRIVEN_TURN_STATES and row[2]:
            raise TurnCancelRequested(turn_id, str(row[2]))
        raise TurnLost(f"turn {turn_id} of conversation {conversation_id} is not driven here")
    if moved[0][0] is not None:
        connection.noticed.add((conversation_id, turn_id))


class Turns(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over turns: a turn's writes in one
    transaction, its lifecycle row and lease, and closing it."""

    def record_turn(
        self,
        conversation_id: str,
        turn_id: str,
        messages: Iterable[Mapping[str, Any]],
        events: Iterable[tuple[int, Mapping[str, Any]]],
        *,
        state: str | None = None,
        owner: str = "",
        lease_until: float | None = None,
        committed_sequence: int | None = None,
        usage: tuple[str, Mapping[str, int]] | None = None,
        records: Sequence[Mapping[str, Any]] = (),
        fenced: bool = False,
    ) -> dict[int, int]:
        """Append a turn's new messages (keyword arguments of :meth:`append_message`, with
        ``role``), journal its new events, count its provider ``usage`` (actor id, counter ->
        amount) and keep its model requests' usage ``records`` (of that actor), all in one
        transaction; returns the events' journal positions by sequence.

        ``fenced``: the write applies only while ``owner`` drives the turn, and moves its
        ``state``, lease and ``committed_sequence`` (else :class:`TurnLost`, nothing written; a
        cancelled turn's end or suspension: :class:`TurnCancelRequested`, see :func:`fence`).
        Unfenced, ``state`` (one of :data:`TURN_STATES`) upserts the lifecycle row."""
        if state is not None:
            _check_turn_state(state)
        rows = [message_row_of(message, turn_id) for message in messages]
        journal = journal_rows(events)
        amounts = usage[1] if usage is not None else {}
        if (
            not rows
            and not journal
            and not amounts
            and not records
            and state is None
            and not fenced
        ):
            return {}
        with self._write() as connection:
            at = self.now()
            touch(connection, conversation_id, at)
            if fenced:
                fence(
                    connection,
                    conversation_id,
                    turn_id,
                    owner,
                    at,
                    state=state,
                    lease_until=lease_until,
                    committed_sequence=committed_sequence,
                )
            elif state is not None:
                set_turn_state(
                    connection, conversation_id, turn_id, state, owner, at, lease_until=lease_until
                )
            insert_messages(connection, conversation_id, rows, at)
            positions = insert_events(connection, conversation_id, turn_id, journal, at)
            if usage is not None and amounts:
                add_usage(connection, usage[0], amounts, at)
            if usage is not None and records:
                insert_usage_records(connection, usage[0], conversation_id, turn_id, records, at)
        return positions

    def admitted_turn(self, actor_id: str, turn_id: str) -> TurnRecord | None:
        """The actor's turn admitted under ``turn_id``, in whichever of their conversations."""
        rows = self._read(
            "SELECT * FROM turns WHERE actor_id = ? AND id = ? AND input_hash IS NOT NULL",
            (actor_id, turn_id),
        )
        return turn_record(rows[0]) if rows else None

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

    def take_over_turn(self, turn: TurnRecord, owner: str, *, lease_until: float) -> bool:
        """Make ``owner`` the turn's owner with a lease until ``lease_until``, only while it is as
        ``turn`` says (same state, owner and lease): of two servers that would run a dead
        process's turn again, one wins."""
        with self._write() as connection:
            moved = connection.execute(
                "UPDATE turns SET owner = ?, lease_expires_at = ? WHERE conversation_id = ? "
                "AND id = ? AND state = ? AND owner = ? AND COALESCE(lease_expires_at, -1) = ?",
                (
                    owner,
                    lease_until,
                    turn.conversation_id,
                    turn.id,
                    turn.state,
                    turn.owner,
                    -1 if turn.lease_expires_at is None else turn.lease_expires_at,
                ),
            )
            return moved.rowcount == 1

    def renew_leases(
        self, owner: str, turns: Iterable[tuple[str, str]], *, lease_until: float
    ) -> list[tuple[str, str]]:
        """Extend ``owner``'s lease on each (conversation, turn) it drives, in one transaction;
        returns the turns it no longer owns (another process took them over). A turn with a
        cancel command recorded is told to this process's cancel listeners (a command another
        process recorded in a SQLite file reaches its turn here, if no write found it first)."""
        lost: list[tuple[str, str]] = []
        with self._write() as connection:
            for conversation_id, turn_id in turns:
                moved = connection.execute(
                    "UPDATE turns SET lease_expires_at = ? WHERE conversation_id = ? AND id = ? "
                    f"AND owner = ? AND state IN {_DRIVEN} RETURNING cancel_command",
                    (lease_until, conversation_id, turn_id, owner),
                ).fetchall()
                if moved and moved[0][0] is not None:
                    connection.noticed.add((conversation_id, turn_id))
                if not moved:
                    row = connection.execute(
                        "SELECT owner FROM turns WHERE conversation_id = ? AND id = ?",
                        (conversation_id, turn_id),
                    ).fetchone()
                    if row is not None and row[0] != owner:
                        lost.append((conversation_id, turn_id))
        return lost

    def release_turn(self, conversation_id: str, turn_id: str, owner: str) -> bool:
        """Give up ``owner``'s lease on a turn it still drives (a server shutting down): the next
        server that may run it takes it over at once."""
        with self._write() as connection:
            moved = connection.execute(
                "UPDATE turns SET lease_expires_at = 0 WHERE conversation_id = ? AND id = ? "
                f"AND owner = ? AND state IN {_DRIVEN}",
                (conversation_id, turn_id, owner),
            )
            return moved.rowcount == 1

    def turn(self, conversation_id: str, turn_id: str) -> TurnRecord | None:
        """The turn's lifecycle row, or ``None`` (turns written before store version 2 have
        none)."""
        rows = self._read(
            "SELECT * FROM turns WHERE conversation_id = ? AND id = ?", (conversation_id, turn_id)
        )
        return turn_record(rows[0]) if rows else None

    def turns(
        self, *, state: str, conversation_id: str | None = None, scope: str | None = None
    ) -> list[TurnRecord]:
        """Turns in ``state`` (of one conversation, or of all; of one take-over ``scope``, or of
        every one), oldest first."""
        sql = "SELECT * FROM turns WHERE state = ?"
        parameters: list[Any] = [state]
        if conversation_id is not None:
            sql += " AND conversation_id = ?"
            parameters.append(conversation_id)
        if scope is not None:
            sql += " AND COALESCE(scope, '') = ?"
            parameters.append(scope)
        return [
            turn_record(row) for row in self._read(sql + " ORDER BY started_at, rowid", parameters)
        ]

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
        lease_expired_by: float | None = None,
    ) -> bool:
        """End a turn nobody is driving any more, in one transaction: only while it is still
        ``expect_state`` under ``expect_owner`` (so two processes recovering the same turn close it
        once) and, with ``lease_expired_by``, while its lease has lapsed by then (an owner that
        renewed it is alive after all), append its closing ``messages`` and ``events``, and move
        ``confirmations`` (id -> final state) that are still pending or claimed. ``False`` when
        the turn had already moved on."""
        _check_turn_state(final_state)
        for target in (confirmations or {}).values():
            if target not in FINAL_CONFIRMATION_STATES:
                raise ValueError(f"confirmation state must be final, not {target!r}")
        rows = [message_row_of(message, turn_id) for message in messages]
        journal = journal_rows(events)
        lease_clause = ""
        parameters: list[Any] = [final_state, 0.0, conversation_id, turn_id, expect_state]
        parameters.append(expect_owner)
        if lease_expired_by is not None:
            lease_clause = " AND (lease_expires_at IS NULL OR lease_expires_at <= ?)"
            parameters.append(lease_expired_by)
        with self._write() as connection:
            at = self.now()
            parameters[1] = at
            moved = connection.execute(
                "UPDATE turns SET state = ?, ended_at = ? WHERE conversation_id = ? AND id = ? "
                "AND state = ? AND owner = ?" + lease_clause,
                parameters,
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

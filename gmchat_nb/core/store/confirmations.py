"""The confirmations table: mutations waiting for a human's decision, claimed at most once.

The one decision that must never be made twice — claiming a mutation confirmation — is a single
conditional ``UPDATE``, so two threads, or two processes on one file, never both get the claim.
A claim also records who decided, where and when, in a ``change_records`` row that outlives the
confirmation (``cleanup`` never deletes it).
"""

from __future__ import annotations

import json

from .conversations import require_conversation
from .database import Database, Row, time_or_now
from .records import (
    CONFIRMATION_STATES,
    DECIDED_VIA,
    FINAL_CONFIRMATION_STATES,
    ChangeRecord,
    ConfirmationRecord,
)
from .turns import set_turn_state

__all__ = ["Confirmations"]


def _confirmation(row: Row) -> ConfirmationRecord:
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
        decided_by=row["decided_by"],
        decided_via=row["decided_via"],
        decided_at=row["decided_at"],
    )


def _change(row: Row) -> ChangeRecord:
    return ChangeRecord(
        conversation_id=row["conversation_id"],
        confirmation_id=row["confirmation_id"],
        actor_id=row["actor_id"],
        mutation=row["mutation"],
        input=json.loads(row["input"]),
        turn_id=row["turn_id"],
        decided_by=row["decided_by"],
        decided_via=row["decided_via"],
        decided_at=float(row["decided_at"]),
        state=row["state"],
        resolved_at=row["resolved_at"],
    )


class Confirmations(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over mutation confirmations."""

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
            require_conversation(connection, record.conversation_id)
            current = connection.execute(
                "SELECT state FROM confirmations WHERE conversation_id = ? AND id = ?",
                (record.conversation_id, record.id),
            ).fetchone()
            if current is not None and current[0] not in FINAL_CONFIRMATION_STATES:
                raise ValueError(
                    f"confirmation {record.id} of conversation {record.conversation_id} is "
                    f"still {current[0]}"
                )
            connection.execute(
                "INSERT INTO confirmations (conversation_id, id, actor_id, mutation, input, "
                "state, created_at, expires_at, resolved_at, turn_state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (conversation_id, id) DO UPDATE "
                "SET actor_id = excluded.actor_id, mutation = excluded.mutation, "
                "input = excluded.input, state = excluded.state, created_at = excluded.created_at, "
                "expires_at = excluded.expires_at, resolved_at = excluded.resolved_at, "
                "turn_state = excluded.turn_state",
                values,
            )

    def pending_conversation(self, actor_id: str, confirmation_id: str) -> str | None:
        """The actor's conversation with a pending confirmation of this id (the newest), if
        any: one indexed look-up, however many conversations the actor has."""
        rows = self._read(
            "SELECT conversation_id FROM confirmations WHERE actor_id = ? AND id = ? "
            "AND state = 'pending' ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (actor_id, confirmation_id),
        )
        return str(rows[0][0]) if rows else None

    def actor_confirmation(self, actor_id: str, confirmation_id: str) -> ConfirmationRecord | None:
        """The actor's newest confirmation of this id in any state (an agent asking how its
        change ended), or ``None``: another actor's is never found."""
        rows = self._read(
            "SELECT * FROM confirmations WHERE actor_id = ? AND id = ? "
            "ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (actor_id, confirmation_id),
        )
        return _confirmation(rows[0]) if rows else None

    def confirmation(self, conversation_id: str, confirmation_id: str) -> ConfirmationRecord | None:
        """The confirmation in any state, or ``None``."""
        rows = self._read(
            "SELECT * FROM confirmations WHERE conversation_id = ? AND id = ?",
            (conversation_id, confirmation_id),
        )
        return _confirmation(rows[0]) if rows else None

    def claim_confirmation(
        self,
        conversation_id: str,
        confirmation_id: str,
        actor_id: str,
        *,
        now: float | None = None,
        owner: str | None = None,
        lease_until: float | None = None,
        decided_by: str | None = None,
        decided_via: str = "unknown",
    ) -> ConfirmationRecord | None:
        """Claim a pending, unexpired confirmation of ``actor_id`` for execution.

        The claim records who decided (``decided_by``, default ``actor_id``), where
        (``decided_via``: :data:`~.records.DECIDED_VIA`) and when, on the confirmation and in a
        ``change_records`` row of its own that :meth:`finish_confirmation` completes and
        ``cleanup`` never deletes: what was changed, by whose decision, stays known.

        Returns the claimed record only to the one caller whose claim changed the row; every
        other caller — a second click, another thread, another process on the same file, a
        foreign actor, a late or unknown id — gets ``None``. Execute the mutation only on a
        record, then :meth:`finish_confirmation`. With ``owner``, the confirmation's turn is
        marked ``running`` under that owner (and its lease until ``lease_until``) in the same
        transaction, so a process that dies between claiming and recording leaves a turn
        recovery can find.
        """
        at = time_or_now(now)
        with self._write() as connection:
            # The single conditional UPDATE is the whole decision: SQLite serialises writers, so
            # exactly one claimer sees rowcount 1.
            via = decided_via if decided_via in DECIDED_VIA else "unknown"
            cursor = connection.execute(
                "UPDATE confirmations SET state = 'claimed', decided_by = ?, decided_via = ?, "
                "decided_at = ? WHERE conversation_id = ? AND id = ? "
                "AND state = 'pending' AND expires_at > ? AND actor_id = ?",
                (decided_by or actor_id, via, at, conversation_id, confirmation_id, at, actor_id),
            )
            if cursor.rowcount != 1:
                return None
            row = connection.execute(
                "SELECT * FROM confirmations WHERE conversation_id = ? AND id = ?",
                (conversation_id, confirmation_id),
            ).fetchone()
            record = _confirmation(row)
            connection.execute(
                "INSERT INTO change_records (conversation_id, confirmation_id, actor_id, mutation, "
                "input, turn_id, decided_by, decided_via, decided_at, state) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'claimed')",
                (
                    conversation_id,
                    confirmation_id,
                    actor_id,
                    record.mutation,
                    json.dumps(record.input, ensure_ascii=False, default=str),
                    record.turn_state.get("state", {}).get("turn_id"),
                    decided_by or actor_id,
                    via,
                    at,
                ),
            )
            turn_id = record.turn_state.get("state", {}).get("turn_id")
            if owner is not None and isinstance(turn_id, str):
                set_turn_state(
                    connection,
                    conversation_id,
                    turn_id,
                    "running",
                    owner,
                    at,
                    lease_until=lease_until,
                )
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
        if state not in FINAL_CONFIRMATION_STATES:
            raise ValueError(
                f"state must be one of {sorted(FINAL_CONFIRMATION_STATES)}, not {state!r}"
            )
        at = time_or_now(now)
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE confirmations SET state = ?, resolved_at = ? WHERE conversation_id = ? "
                "AND id = ? AND state IN ('pending', 'claimed')",
                (state, at, conversation_id, confirmation_id),
            )
            connection.execute(
                "UPDATE change_records SET state = ?, resolved_at = ? WHERE conversation_id = ? "
                "AND confirmation_id = ? AND state = 'claimed'",
                (state, at, conversation_id, confirmation_id),
            )
            return cursor.rowcount == 1

    def change_records(self, conversation_id: str) -> list[ChangeRecord]:
        """The conversation's decided changes, in the order they were decided (kept past
        ``cleanup``)."""
        rows = self._read(
            "SELECT * FROM change_records WHERE conversation_id = ? "
            "ORDER BY decided_at, confirmation_id",
            (conversation_id,),
        )
        return [_change(row) for row in rows]

    def pending_confirmation(
        self, conversation_id: str, *, now: float | None = None
    ) -> ConfirmationRecord | None:
        """The newest confirmation of the conversation still pending and not expired."""
        rows = self._read(
            "SELECT * FROM confirmations WHERE conversation_id = ? AND state = 'pending' "
            "AND expires_at > ? ORDER BY created_at DESC, rowid DESC LIMIT 1",
            (conversation_id, time_or_now(now)),
        )
        return _confirmation(rows[0]) if rows else None

    def expire_confirmations(self, *, now: float | None = None) -> int:
        """Mark every pending confirmation past its expiry ``expired``; returns how many."""
        at = time_or_now(now)
        with self._write() as connection:
            cursor = connection.execute(
                "UPDATE confirmations SET state = 'expired', resolved_at = ? "
                "WHERE state = 'pending' AND expires_at <= ?",
                (at, at),
            )
            return cursor.rowcount

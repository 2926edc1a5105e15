"""The event journal: every event of every turn, by sequence, so a client can replay a turn or
resume its stream after the last event it saw."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .conversations import require_conversation
from .database import Database, Statements
from .records import JournalEntry

__all__ = ["EventJournal", "insert_events", "journal_rows"]

REPLAY_PAGE = 500  # journal rows one replay read returns; a reader asks again for the rest


def journal_rows(events: Iterable[tuple[int, Mapping[str, Any]]]) -> list[tuple[int, str]]:
    """``(sequence, payload json)`` of each event, keys sorted so the same event is the same
    text (which is what makes a repeated write a no-op)."""
    return [(sequence, json.dumps(dict(payload), sort_keys=True)) for sequence, payload in events]


def insert_events(
    connection: Statements,
    conversation_id: str,
    turn_id: str,
    rows: list[tuple[int, str]],
    at: float,
) -> dict[int, int]:
    """Insert journal rows; the same event again is a no-op, a different one a ValueError.
    Returns each row's journal position by sequence (an event journaled before keeps its own).

    Each new event takes the conversation's next ``position``, inside the caller's write
    transaction, so positions have no gaps and a repeated write consumes none."""
    if not rows:
        return {}
    sequences = [sequence for sequence, _ in rows]
    # One statement (a round trip on PostgreSQL) for both: the conversation's last position and
    # the events of these sequences already journaled (none: one row of NULLs).
    found = connection.execute(
        "SELECT last.position, e.sequence, e.payload, e.position FROM "
        "(SELECT COALESCE(MAX(position), 0) AS position FROM events WHERE conversation_id = ?) "
        "AS last LEFT JOIN events e ON e.conversation_id = ? AND e.turn_id = ? "
        "AND e.sequence BETWEEN ? AND ?",
        (conversation_id, conversation_id, turn_id, min(sequences), max(sequences)),
    ).fetchall()
    last = int(found[0][0])
    taken = {row[1]: row[2] for row in found if row[1] is not None}
    positions = {int(row[1]): int(row[3]) for row in found if row[1] is not None}
    fresh = []
    for sequence, text in rows:
        if sequence in taken:
            if taken[sequence] != text:
                raise ValueError(
                    f"turn {turn_id} of conversation {conversation_id} already journaled a "
                    f"different event at sequence {sequence}"
                )
            continue
        taken[sequence] = text
        fresh.append((sequence, text))
    if not fresh:
        return positions
    connection.journaled.add(conversation_id)
    values = []
    for offset, (sequence, text) in enumerate(fresh, start=1):
        positions[sequence] = last + offset
        values.append((conversation_id, turn_id, sequence, text, at, last + offset))
    connection.executemany(
        "INSERT INTO events (conversation_id, turn_id, sequence, payload, created_at, position) "
        "VALUES (?, ?, ?, ?, ?, ?)",
        values,
    )
    return positions


class EventJournal(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over the event journal."""

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
        rows = journal_rows(items)
        if not rows:
            return
        with self._write() as connection:
            require_conversation(connection, conversation_id)
            insert_events(connection, conversation_id, turn_id, rows, time.time())

    def last_sequence(self, conversation_id: str, turn_id: str) -> int:
        """The highest sequence journaled for the turn (0 when none)."""
        rows = self._read(
            "SELECT MAX(sequence) FROM events WHERE conversation_id = ? AND turn_id = ?",
            (conversation_id, turn_id),
        )
        return int(rows[0][0] or 0)

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

    def turn_end_position(self, conversation_id: str, turn_id: str) -> int:
        """The journal position of the turn's last event so far (0 when it journaled none)."""
        rows = self._read(
            "SELECT MAX(position) FROM events WHERE conversation_id = ? AND turn_id = ?",
            (conversation_id, turn_id),
        )
        return int(rows[0][0] or 0)

    def last_position(self, conversation_id: str) -> int:
        """The conversation's latest journal position (0 before its first event)."""
        rows = self._read(
            "SELECT MAX(position) FROM events WHERE conversation_id = ?", (conversation_id,)
        )
        return int(rows[0][0] or 0)

    def first_position(self, conversation_id: str) -> int:
        """The earliest position still journaled (0 when none): retention may have pruned the
        ones before it."""
        rows = self._read(
            "SELECT MIN(position) FROM events WHERE conversation_id = ?", (conversation_id,)
        )
        return int(rows[0][0] or 0)

    def journal_after(
        self, conversation_id: str, position: int, limit: int = REPLAY_PAGE
    ) -> list[JournalEntry]:
        """The conversation's events strictly after ``position``, in order, at most ``limit``."""
        rows = self._read(
            "SELECT position, turn_id, payload FROM events WHERE conversation_id = ? "
            "AND position > ? ORDER BY position LIMIT ?",
            (conversation_id, position, limit),
        )
        return [JournalEntry(row[0], row[1], json.loads(row[2])) for row in rows]

    def journal_since(self, conversation_id: str, position: int) -> Iterator[JournalEntry]:
        """Every event after ``position``, read a page (:data:`REPLAY_PAGE`) at a time."""
        while entries := self.journal_after(conversation_id, position):
            yield from entries
            position = entries[-1].position

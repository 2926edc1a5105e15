"""What an export reads of a conversation, read from the store once: its record, its finished
turns in order with their journaled events (a crash's cut-off steps dropped), and the record of
each decided change. Never the project: everything a notebook shows was journaled when it ran.

Four reads in all, whatever the conversation's length (the journal a page of 500 events at a
time): the conversation, its turns, its journal, its change records.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from ..session.evidence import surviving_events
from ..turns import FINAL_TURN_STATES, ChangeRecord, ChatStore, ConversationRecord

__all__ = ["ExportError", "ExportedTurn", "Source", "read_source"]


class ExportError(Exception):
    """A conversation that cannot become a notebook: ``code`` ``not_found`` (no such
    conversation in the store; whether it is the caller's to export is the caller's check) or
    ``empty`` (no turn of it has finished)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class ExportedTurn:
    """One finished turn: its place among the exported ones (1, 2, ...), its question, how it
    ended, when, and its journaled events (their JSON, in order)."""

    number: int
    turn_id: str
    question: str
    state: str
    started_at: float
    ended_at: float | None
    events: list[dict[str, Any]]


@dataclass(frozen=True, slots=True)
class Source:
    """A conversation as an export reads it."""

    conversation: ConversationRecord
    turns: list[ExportedTurn]
    changes: dict[str, ChangeRecord]
    """Confirmation id -> the latest record of its decision (who, how, when, outcome)."""
    unfinished: int
    """Turns left out because they have not ended (running, or waiting for a decision)."""


def read_source(store: ChatStore, conversation_id: str) -> Source:
    """The conversation ``conversation_id`` as an export reads it; :class:`ExportError` when
    the store has no such conversation or none of its turns has finished."""
    conversation = store.conversation(conversation_id)
    if conversation is None:
        raise ExportError("not_found", "There is no such conversation.")
    summaries = store.conversation_turns(conversation_id)
    finished = [turn for turn in summaries if turn.state in FINAL_TURN_STATES]
    if not finished:
        raise ExportError(
            "empty", "The conversation has no finished turn yet: there is nothing to export."
        )
    journal: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for entry in store.journal_since(conversation_id, 0):
        journal[entry.turn_id].append(entry.payload)
    changes = {record.confirmation_id: record for record in store.change_records(conversation_id)}
    turns = [
        ExportedTurn(
            number=number,
            turn_id=summary.turn_id,
            question=summary.text or "",
            state=summary.state,
            started_at=summary.started_at,
            ended_at=summary.ended_at,
            events=[dict(event) for event in surviving_events(journal.get(summary.turn_id, []))],
        )
        for number, summary in enumerate(finished, start=1)
    ]
    return Source(conversation, turns, changes, len(summaries) - len(finished))

"""The values the chat store hands out and accepts, and the states they can be in."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

__all__ = [
    "CONFIRMATION_STATES",
    "DECIDED_VIA",
    "DRIVEN_TURN_STATES",
    "FINAL_CONFIRMATION_STATES",
    "FINAL_TURN_STATES",
    "TURN_STATES",
    "ChangeRecord",
    "ConfirmationRecord",
    "ConversationRecord",
    "JournalEntry",
    "StoredMessage",
    "TurnRecord",
    "TurnSummary",
]

CONFIRMATION_STATES: Final = frozenset(
    {"pending", "claimed", "executed", "rejected", "expired", "failed", "unknown"}
)
"""Every state a confirmation can be in. ``unknown``: it was claimed and its mutation may have
run, but the process died before the outcome was recorded (never retried automatically)."""

FINAL_CONFIRMATION_STATES: Final = frozenset(
    {"executed", "rejected", "expired", "failed", "unknown"}
)
"""The states a confirmation ends in; finishing or closing accepts only these."""

TURN_STATES: Final = frozenset(
    {"accepted", "running", "suspended", "done", "failed", "interrupted"}
)
"""Every state a turn can be in: ``accepted`` (admitted under a client's turn id, not started
yet), ``running`` (some process drives it), ``suspended`` (stopped at a confirmation a later
request resumes), and the final ``done``, ``failed`` and ``interrupted``."""

FINAL_TURN_STATES: Final = frozenset({"done", "failed", "interrupted"})
"""The states a turn ends in: it has journaled its terminal event."""

DRIVEN_TURN_STATES: Final = ("accepted", "running")
"""The states in which a process owns a turn and holds a lease on it."""


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
    project: str | None = None
    """The identity of the project its turns asked about (:mod:`gmchat_nb.core.knowledge`)."""
    knowledge: str | None = None
    """Recall in this conversation (``"off"``, ``"keyword"``, ``"hybrid"``); ``None``: as the
    settings say."""


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
    input_hash: str | None = None  # set when the turn was admitted under a client's turn id
    admitted_position: int | None = None  # the journal position it was admitted after
    cancel_command: str | None = None  # the command id of an explicit cancel, if one came
    input: str | None = None  # an admitted turn's text (to run it again after a crash)
    actor_id: str | None = None  # whose turn id it is (unique per actor)
    scope: str | None = None  # the servers that may take it over (see core.turns.identity)
    lease_expires_at: float | None = None  # when its owner's claim lapses unless renewed
    committed_sequence: int | None = None  # the last event its stored messages cover


@dataclass(frozen=True, slots=True)
class TurnSummary:
    """One turn of a conversation as a client lists it (``GET {url}conversations/{id}/turns/``):
    its question, its state and where its events are in the conversation's journal.

    ``text`` is an admitted turn's ``input``, else its stored question (the turn's first user
    message), else ``None``. ``first_position`` and ``last_position`` are the journal positions
    of its first and last event (``None`` before its first). A turn stored before turns had rows
    of their own is known by its events alone: its state is read from its last event
    (``done``, ``failed``, ``interrupted``) or is ``unknown``, and its times are its events'."""

    turn_id: str
    text: str | None
    state: str
    started_at: float
    ended_at: float | None
    first_position: int | None
    last_position: int | None


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """One journaled event with its place in the conversation (``position``, the cursor a client
    replays after) and its turn."""

    position: int
    turn_id: str
    payload: dict[str, Any]

    def frame(self) -> dict[str, Any]:
        """The event as a reader of the journal gets it (``GET events``, the WebSocket after a
        cursor, ``Chat.events``): its JSON with ``position``, its place in the conversation's
        journal, and its ``turn_id``. ``sequence`` carries the same position there, as the
        durable contract names its cursor; on a live stream ``sequence`` numbers the events of
        one turn instead."""
        return {
            **self.payload,
            "sequence": self.position,
            "position": self.position,
            "turn_id": self.turn_id,
        }


DECIDED_VIA: Final = frozenset(
    {"browser", "token", "kernel", "socket", "elicitation", "terminal", "unknown"}
)
"""Where a confirmation was decided: a person's browser session on the server (the side panel,
``confirm/`` with the login cookie), a token-authenticated request (a chat turn's own script),
a notebook's kernel (``Chat``, its widget), a WebSocket's own turn, an agent host's elicitation,
the terminal (``gmchat``'s prompt), or not said."""


@dataclass(frozen=True, slots=True)
class ChangeRecord:
    """A decided change, kept past ``cleanup``: what it was, who decided it, where and when, and
    how it ended (``state``: ``claimed`` while it runs, then ``executed``, ``rejected`` or
    ``failed``; what the mutation's result said, never what the model said)."""

    conversation_id: str
    confirmation_id: str
    actor_id: str
    mutation: str
    input: dict[str, Any]
    turn_id: str | None
    decided_by: str
    decided_via: str
    decided_at: float
    state: str
    resolved_at: float | None


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
    decided_by: str | None = None  # the actor whose decision claimed it
    decided_via: str | None = None  # where: DECIDED_VIA
    decided_at: float | None = None

"""Which of the chat widget's turns a view that (re)appears lacks, in journal positions.

A view remembers a *cursor*: the conversation, the journal position through which it has
rendered the widget's turns, and the *epoch* of the turns it rendered them from. A ``hello``
that carries one is answered with a ``replay`` of the turns that changed after it, not a full
``snapshot``.

Why the turns come from the widget's memory and only the positions from the store's journal:
the widget renders more than the journal holds (result tables and evidence rows, a turn refused
before it started, the ``cancelled`` a Stop shows) and shows events before the session writes
them (a turn's writes are grouped: every ~50 ms while it streams, and at its steps). So a replay
sends the widget's own turn records, the same ones a snapshot sends, and the journal says where
each finished turn ends. Every widget turn is admitted under its own turn id, so its events'
positions are what its writes returned, and its end is its last journaled event. Positions are
per finished turn: a view's cursor is always the end of a turn it has whole, a running turn is
replayed whole (the front end skips the events it already has by their per-turn ``sequence``),
and live ``events`` carry no position (``turn_end`` does, once the session has written the
turn).

The *epoch* token names one run of turns whose ends are journal positions of one
conversation. It changes whenever that stops being true: the widget's turns were cleared,
replaced (a new or opened conversation) or gained a turn the journal does not hold (one refused
before it started, or whose write failed), or a turn ran in another conversation than the one
before it. A cursor of another epoch gets a snapshot; a snapshot is always correct.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.turns import ChatStore

if TYPE_CHECKING:
    from ..chat import Turn

__all__ = [
    "TranscriptPositions",
    "ViewCursor",
    "pending_confirmation",
    "place_turn",
    "requested_cursor",
]


@dataclass(frozen=True, slots=True)
class ViewCursor:
    """What a view says it has: the turns through journal position ``after`` of
    ``conversation_id``, as the kernel's turns of epoch ``epoch`` had them."""

    conversation_id: str
    after: int
    epoch: str


def requested_cursor(message: Mapping[str, Any]) -> ViewCursor | None:
    """The cursor a ``hello`` carries, or None when it carries none or a malformed one (a
    position that is not a whole number >= 0, booleans and floats included: a view never sends
    those, so they come from a damaged store or another client, and get a snapshot)."""
    conversation_id = message.get("conversation_id")
    after = message.get("after")
    epoch = message.get("epoch")
    if not isinstance(conversation_id, str) or not conversation_id:
        return None
    if type(after) is not int or after < 0:  # bool is an int subclass: excluded on purpose
        return None
    if not isinstance(epoch, str) or not epoch:
        return None
    return ViewCursor(conversation_id, after, epoch)


@dataclass
class TranscriptPositions:
    """Where the widget's finished turns end in the conversation's journal (see the module)."""

    epoch: str = field(default_factory=lambda: secrets.token_hex(8))
    conversation_id: str | None = None
    floor: int = 0  # the position the epoch starts after: what views had before it
    first_index: int = 0  # the first turn index of this epoch (earlier ones predate it)
    ends: dict[int, int] = field(default_factory=dict)  # turn index -> its last position
    settled: bool = False  # False until the conversation and floor are known

    def reset(self, conversation_id: str | None, position: int, first_index: int) -> None:
        """Start a new epoch: everything before ``first_index`` (and ``position``) is what
        a snapshot brings; cursors of the old epoch no longer replay."""
        self.epoch = secrets.token_hex(8)
        self.conversation_id = conversation_id
        self.floor = position
        self.first_index = first_index
        self.ends = {}
        self.settled = True

    @property
    def position(self) -> int:
        """The position through which a view with every finished turn is complete."""
        return max(self.ends.values(), default=self.floor)

    def cursor(self) -> dict[str, Any]:
        """The cursor a view that has every finished turn should remember."""
        return {
            "conversation_id": self.conversation_id,
            "position": self.position,
            "epoch": self.epoch,
        }

    def turn_ended(self, index: int, conversation_id: str | None, end: int, placed: bool) -> None:
        """Place an ended turn at ``end``, its last journal position. Unless the journal holds it
        (``placed``) in this epoch's conversation, a new epoch starts after it (at
        ``end``, the conversation's last position), and views that missed it resync."""
        same = self.settled and conversation_id is not None
        if placed and same and conversation_id == self.conversation_id:
            self.ends[index] = max(end, self.position)  # never behind an earlier turn
        else:
            self.reset(conversation_id, end, index + 1)

    def replays(self, cursor: ViewCursor, first: int, last: int) -> bool:
        """Whether ``cursor`` can be brought up to date by a replay: same epoch and
        conversation, and a position inside what the journal holds (``first``..``last``, as
        the server's events stream requires: pruned or ahead is a resync) and this epoch."""
        return (
            self.settled
            and cursor.epoch == self.epoch
            and cursor.conversation_id == self.conversation_id
            and max(self.floor, first - 1) <= cursor.after <= last
        )

    def turns_after(self, turns: list[dict[str, Any]], after: int) -> list[dict[str, Any]]:
        """The turn records a view at ``after`` lacks: those ending after it, and the running
        (or not yet placed) ones, whole."""
        return [
            record
            for record in turns[self.first_index :]
            if self.ends.get(int(record["index"]), after + 1) > after
        ]


def place_turn(
    store: ChatStore, conversation_id: str, turn: Turn, events: list[dict[str, Any]]
) -> tuple[int, bool]:
    """Where a turn that just ended (its ``events``, as the widget streamed them) ends in the
    journal, and whether the journal holds it (``placed``): its events get the ``position`` its
    writes returned, its end is the last position of its turn id (a stopped turn's closing
    events included). An unplaced turn (refused before it started, its writes failed) ends at
    the conversation's last position."""
    if turn.turn_id is None or not turn.positions:
        return store.last_position(conversation_id), False
    for event in events:
        sequence = event.get("sequence")
        if type(sequence) is int and sequence in turn.positions:
            event["position"] = turn.positions[sequence]
    return store.turn_end_position(conversation_id, turn.turn_id), True


def pending_confirmation(record: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``confirm_mutation`` a running turn waits on (no ``tool_result`` for it yet)."""
    if not record.get("running"):
        return None
    answered = {e.get("id") for e in record["events"] if e.get("type") == "tool_result"}
    waiting = [
        event
        for event in record["events"]
        if event.get("type") == "confirm_mutation" and event.get("id") not in answered
    ]
    return waiting[-1] if waiting else None

"""Reading the conversation: the current turn's question and tool calls, rebuilt from history.

The provider keeps no state between calls; every call reads the last user message, the rounds of
tool calls after it (sorted by what they were for) and the previous turn's final query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...charts.tool import CHART
from ...project.tools import TOOLS
from ..base import Message

__all__ = ["ID_PREFIX", "Call", "Turn", "call_id", "is_probe", "read_turn"]

ID_PREFIX = (
    "offline-"  # the provider's tool-call ids: offline-1, offline-2, ... across a conversation
)


def call_id(number: int) -> str:
    """The id of the conversation's ``number``-th tool call."""
    return f"{ID_PREFIX}{number}"


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of this turn with its result (``answered`` is False while it has none)."""

    name: str
    args: Mapping[str, Any]
    result: Any
    answered: bool

    @property
    def ok(self) -> bool:
        """Whether the call came back with a usable (non-error) result."""
        if not self.answered:
            return False
        return not (isinstance(self.result, dict) and self.result.get("status") == "error")

    @property
    def error_message(self) -> str:
        """The error a failed call reported, for an honest answer."""
        if isinstance(self.result, dict) and self.result.get("message"):
            return str(self.result["message"])
        return f"{self.name} returned no result."


@dataclass(slots=True)
class Turn:
    """The last user question, the rounds of tool calls after it (by kind) and the history."""

    question: str
    rounds: dict[str, list[Call]]
    previous: tuple[str, dict[str, Any]] | None  # the last turn's row manager and filters
    next_id: int


def read_turn(messages: Sequence[Message]) -> Turn | None:
    """The state of the current turn, rebuilt from history alone (the provider keeps none)."""
    last_user = next(
        (index for index in range(len(messages) - 1, -1, -1) if messages[index].role == "user"),
        None,
    )
    if last_user is None:
        return None
    tail = messages[last_user + 1 :]
    results = {
        message.tool_call_id: message.tool_result
        for message in tail
        if message.role == "tool" and message.tool_call_id is not None
    }
    rounds: dict[str, list[Call]] = {}
    for message in tail:
        if message.role == "assistant" and message.tool_calls:
            calls = [
                Call(call.name, dict(call.args), results.get(call.id), call.id in results)
                for call in message.tool_calls
            ]
            rounds[_round_kind(calls)] = calls
    previous: tuple[str, dict[str, Any]] | None = None
    for message in messages[:last_user]:
        for call in message.tool_calls if message.role == "assistant" else ():
            if call.name == TOOLS.query.name and not is_probe(call.args):
                filters = call.args.get("filters")
                previous = (
                    str(call.args.get("manager", "")),
                    dict(filters) if isinstance(filters, dict) else {},
                )
    next_id = 1 + sum(
        len(message.tool_calls) for message in messages if message.role == "assistant"
    )
    return Turn(messages[last_user].content, rounds, previous, next_id)


def is_probe(args: Mapping[str, Any]) -> bool:
    """Whether ``query`` arguments are a value probe's.

    Probes ask for one row; the final query always asks for at least two.
    """
    return args.get("limit") == 1


def _round_kind(calls: Sequence[Call]) -> str:
    names = {call.name for call in calls}
    if CHART.name in names:
        return "chart"
    if TOOLS.search_managers.name in names:
        return "search"
    if TOOLS.get_manager_schema.name in names:
        return "schema"
    if TOOLS.find_path.name in names or any(
        c.name == TOOLS.query.name and is_probe(c.args) for c in calls
    ):
        return "locate"
    if TOOLS.query.name in names:
        return "final"
    return "other"

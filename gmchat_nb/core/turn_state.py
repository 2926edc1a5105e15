"""The types a turn's engines share: what a turn has used (:class:`TurnState`, persisted with a
pending confirmation), the limits the loop enforces, and the session the loop is driven through
(:class:`TurnIO`). Apart from ``core/loop.py`` so that the loop module holds the state machine
only."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from .events import Error
from .project.mutations import PreparedMutation
from .providers.base import Message, TokenUsage, ToolCallEvent
from .providers.pricing import ServedRequest

__all__ = ["Decision", "LoopLimits", "Transport", "TurnIO", "TurnState", "Waiter"]

Transport = Literal["stream", "sse", "http"]
Decision = Literal["confirmed", "rejected", "timed_out", "unavailable"]


@dataclass
class TurnState:
    """What a turn has used so far; persisted with a pending confirmation so it can resume."""

    turn_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    rounds: int = 0
    failures: int = 0
    mutations: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    recovered: bool = False
    queried: bool = False
    tools_used: int = 0
    stopped_by: str = ""  # the loop guard ended the turn with one final answer, tools off
    corrected: bool = False  # the completion gates sent the answer back once

    @property
    def usage(self) -> TokenUsage:
        """Tokens over the whole turn."""
        return TokenUsage(self.input_tokens, self.output_tokens)

    def add_usage(self, usage: TokenUsage) -> None:
        """Count one provider response's tokens."""
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    def to_dict(self) -> dict[str, Any]:
        """JSON form for the store."""
        return asdict(self)

    @classmethod
    def from_dict(cls, payload: dict[str, Any]) -> TurnState:
        """Back from :meth:`to_dict`."""
        known = {name: payload[name] for name in cls.__dataclass_fields__ if name in payload}
        return cls(**known)


@dataclass(frozen=True, slots=True)
class LoopLimits:
    """The settings the loop enforces (which changes are allowed or confirm-listed, and whether
    charts are drawn, are the turn's tool-call scope's: its stages enforce them)."""

    max_rounds: int
    max_retries: int
    max_mutations: int
    confirm_timeout_seconds: float
    recover_missing_tool_calls: bool


class Waiter(Protocol):
    """A pending confirmation the loop can wait for."""

    async def wait(self) -> Decision:
        """The human's decision (or the timeout)."""
        ...


class TurnIO(Protocol):
    """What the loop needs from its session."""

    async def persist(self, message: Message, state: TurnState) -> None:
        """Store one new message of the turn."""
        ...

    async def check_rate(self, estimate: Callable[[], ServedRequest] | None = None) -> Error | None:
        """An error event when a budget forbids another provider round (the turn's progress is
        written first: a store away for a moment is waited for); ``estimate`` gives that
        round's request, whose input a cost budget reserves (called only when there is one)."""
        ...

    async def checkpoint(self) -> None:
        """Write what the turn has so far (before a data change, and after it)."""
        ...

    def record_usage(self, usage: TokenUsage) -> None:
        """Count one response's tokens against the actor's budgets."""
        ...

    def provider_failed(self, error: BaseException) -> None:
        """Report a provider failure server-side (its details never reach the client)."""
        ...

    async def open_confirmation(
        self, call: ToolCallEvent, prepared: PreparedMutation, state: TurnState, *, wait: bool
    ) -> Waiter:
        """Persist a pending confirmation; with ``wait``, return something to wait on (without,
        the turn is suspended and a later confirm request resumes it)."""
        ...

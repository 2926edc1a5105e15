"""The provider of an agent's turn: the agent's own tool call, relayed.

A data change an agent asks for over MCP runs as a turn of the session, so it keeps every rule a
chat's change keeps (validation, the allow-list, a confirmation claimed once in the store, an
idempotency key, the journal, audit and hooks). The "model" of that turn is the agent: its first
round is the agent's call, its second the end of the turn, saying how the call ended. Nothing is
generated: this is an adapter, not a model.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from ..providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)

__all__ = ["AgentCallRelay"]


class AgentCallRelay(BaseLLMProvider):
    """Plays one agent's tool call (``call``: ``None`` for a session that only resumes one)."""

    name = "agent"

    def __init__(self, call: ToolCallEvent | None = None) -> None:
        super().__init__({})
        self.call = call

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """The agent's call first; once its result is in the turn, the turn's closing line."""
        results = [m for m in messages if m.role == "tool"]
        if self.call is not None and not results:
            yield self.call
            yield DoneEvent(finish_reason="tool_calls")
            return
        yield TextChunkEvent(closing_line(results[-1].tool_result if results else None))
        yield DoneEvent(finish_reason="stop")


def closing_line(result: Any) -> str:
    """What an agent's turn says at its end: how its call ended, in its result's words."""
    status = result.get("status") if isinstance(result, dict) else None
    if status == "cancelled":
        return f"The agent's change was not made ({result.get('reason', 'cancelled')})."
    if status == "error":
        return f"The agent's change was refused: {result.get('message', '')}".strip()
    return "The agent's change ran: " + json.dumps(result, default=str)[:2000]

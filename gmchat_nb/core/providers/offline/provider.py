"""The offline provider itself: one response per call, planned from the conversation alone."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import ClassVar

from ..base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from .conversation import read_turn
from .planner import Planner, Step

__all__ = ["ID_PREFIX", "OfflineProvider"]

ID_PREFIX = "offline-"


class OfflineProvider(BaseLLMProvider):
    """A deterministic provider that plans tool calls from the schema alone (no model, no keys).

    Each response is either read-only tool calls or a final text answer, followed by exactly one
    ``DoneEvent`` with zero token usage. Tool-call ids are ``offline-<n>``, numbered across the
    whole conversation so that they stay unique.
    """

    name: ClassVar[str] = "offline"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream the next step for ``messages``: tool calls, or the answer."""
        turn = read_turn(messages)
        offered = frozenset(tool.name for tool in tools)
        step = (
            Planner(turn, offered).step()
            if turn is not None
            else Step(text="Ask me a question about the project's data.")
        )
        if step.calls:
            next_id = turn.next_id if turn is not None else 1
            for offset, (name, args) in enumerate(step.calls):
                yield ToolCallEvent(f"{ID_PREFIX}{next_id + offset}", name, args)
            yield DoneEvent(TokenUsage(0, 0), finish_reason="tool_calls")
            return
        yield TextChunkEvent(step.text)
        yield DoneEvent(TokenUsage(0, 0), finish_reason="stop")

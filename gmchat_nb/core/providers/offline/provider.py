"""The offline provider itself: one response per call, planned from the conversation alone."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from typing import Any, ClassVar

from ..base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from .conversation import ID_PREFIX, call_id, read_turn
from .planner import REQUIRED_TOOLS, Planner, Step
from .planning import offline_plan, reference_of
from .recalled import Road, planned_recall, verified_road

__all__ = ["ID_PREFIX", "OfflineProvider"]


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
        # Offered no tools, it is answering from results already in the turn (a planned turn's
        # synthesis): it reads them as its own; a step that needs more says nothing.
        answering = not tools
        offered = frozenset(REQUIRED_TOOLS) if answering else frozenset(t.name for t in tools)
        road = Road() if turn is None or answering else verified_road(messages, turn, offered)
        if turn is not None and road.rest is not None:  # the recalled query failed: plan anew
            rest = read_turn(road.rest)
            turn = replace(rest, next_id=turn.next_id) if rest is not None else turn
        if road.step is not None:
            step = road.step
        elif turn is not None:
            step = Planner(turn, offered, answering=answering).step()
        else:
            step = Step(text="Ask me a question about the project's data.")
        if answering and step.calls:
            yield DoneEvent(TokenUsage(0, 0), finish_reason="stop")
            return
        if step.calls:
            next_id = turn.next_id if turn is not None else 1
            for offset, (name, args) in enumerate(step.calls):
                yield ToolCallEvent(call_id(next_id + offset), name, args)
            yield DoneEvent(TokenUsage(0, 0), finish_reason="tool_calls")
            return
        yield TextChunkEvent(step.text)
        yield DoneEvent(TokenUsage(0, 0), finish_reason="stop")

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """Plans only (planned orchestration's planner role): its reading of the question."""
        if name != "plan":
            raise ProviderError(f"the offline provider answers only plan requests, not {name!r}")
        question, candidates = reference_of(messages)
        return StructuredReply(
            offline_plan(question, candidates, planned_recall(question, messages))
        )

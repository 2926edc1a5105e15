"""The provider as the eval runner sees it: each request counted, with what it was sent.

:class:`CountingProvider` wraps the provider a case runs with (never a stand-in for it): the
chat asks it as it would ask the provider, and it forwards every request and counts it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from ..core.guards.envelope import tool_result_text
from ..core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    StructuredReply,
    ToolCallEvent,
    ToolDefinition,
)
from ..core.providers.registry import provider_label
from .strategy import RoleTally, request_role

__all__ = ["CountingProvider", "prompt_characters"]


def prompt_characters(messages: Sequence[Message]) -> int:
    """The characters of ``messages`` as a model reads them: each message's text, each tool
    call's name and JSON arguments, and each tool result as its envelope (what knowledge
    saves shows here: a recalled verified query replaces the schemas a turn would fetch)."""
    total = 0
    for message in messages:
        total += len(message.content)
        for call in message.tool_calls:
            total += len(call.name) + len(json.dumps(call.args, ensure_ascii=False, default=str))
        if message.role == "tool":
            if message.envelope is not None:
                total += len(message.envelope.text)
            else:
                total += len(
                    tool_result_text(
                        message.tool_name or "", message.tool_call_id or "", message.tool_result
                    )
                )
    return total


class CountingProvider(BaseLLMProvider):
    """Wraps a provider and counts its requests, streamed (``complete``) and structured
    (``complete_structured``, a planner's), in total and per role (:func:`request_role`).

    It also counts the streamed requests that offered tools (``tool_offers``) and the tool calls
    the provider returned (``tool_calls``): a server that drops the tools from the request shows
    as offers answered by no call, and the characters of the messages each request sent
    (``prompt_characters``, :func:`prompt_characters`). :meth:`take_system_prompts` returns the
    distinct system messages sent since it was last called.
    """

    name = "counting"

    def __init__(self, inner: Any) -> None:
        super().__init__(dict(getattr(inner, "provider_config", {}) or {}))
        self.inner = inner
        # Its requests are the wrapped provider's: priced as that provider's (``offline``,
        # ``scripted`` and ``local`` cost nothing), not as an unknown "counting" model.
        vars(self)["name"] = str(getattr(inner, "name", None) or type(inner).__name__)
        self.requests = 0
        self.tool_offers = 0
        self.tool_calls = 0
        self.prompt_characters = 0
        self._system_prompts: dict[str, None] = {}  # insertion-ordered set
        self.roles = RoleTally()

    @property
    def label(self) -> str:
        return provider_label(self.inner)

    @property
    def timeout_seconds(self) -> float:
        return float(getattr(self.inner, "timeout_seconds", 60))

    @property
    def stream_timeout_seconds(self) -> float:
        return float(getattr(self.inner, "stream_timeout_seconds", 30))

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        # A provider that takes some steps itself (small-model mode) says how many requests
        # reached its model; any other request is one.
        before = getattr(self.inner, "model_requests", None)
        if tools:
            self.tool_offers += 1
        self.prompt_characters += prompt_characters(messages)
        self._note_system_prompts(messages)
        role = request_role(messages)
        try:
            async for event in self.inner.complete(messages, tools):
                if isinstance(event, DoneEvent):
                    self.roles.tokens(role, event.usage)
                elif isinstance(event, ToolCallEvent):
                    self.tool_calls += 1
                yield event
        finally:
            after = getattr(self.inner, "model_requests", None)
            made = after - before if isinstance(before, int) and isinstance(after, int) else 1
            self.requests += made
            for _ in range(made):
                self.roles.request(role)

    def _note_system_prompts(self, messages: Sequence[Message]) -> None:
        # the fixed texts of prompts a provider writes itself are what its model was told too
        for text in getattr(self.inner, "instructions", ()):
            self._system_prompts.setdefault(str(text))
        for message in messages:
            if message.role == "system":
                self._system_prompts.setdefault(message.content)

    def take_system_prompts(self) -> list[str]:
        """The distinct system messages sent since the last call, in the order first sent."""
        prompts = list(self._system_prompts)
        self._system_prompts.clear()
        return prompts

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        # Forwarded, not the base class's single-tool default: the wrapped provider's own
        # structured output (a vendor's, a script's 'structured' round) is what is measured.
        self.requests += 1
        self.prompt_characters += prompt_characters(messages)
        self._note_system_prompts(messages)
        self.roles.request("planner")
        reply: StructuredReply = await self.inner.complete_structured(
            messages, response_schema, name=name
        )
        self.roles.tokens("planner", reply.usage)
        return reply

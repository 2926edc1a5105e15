"""The providers of a planned turn's roles, and the ledger of what each role cost.

Each profile is built once per turn from its own ``provider_config`` (never the legacy one, as the
spec requires), and every provider request goes through :meth:`RoleProviders.request` or
:meth:`RoleProviders.structured`, which count requests and tokens per role — the numbers the eval
reports and ``done.orchestration.requests`` show.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderCompletionError,
    ProviderError,
    ProviderEvent,
    TokenUsage,
    ToolDefinition,
)
from ..providers.registry import create_provider
from ..settings.planned import DEFAULT_PROFILE, PlannedSettings

__all__ = ["LEDGER_ROLES", "RoleLedger", "RoleProviders"]

# Roles as the ledger counts them: both executors count as "executor" (and the fallback executor
# as the role it stands in for).
LEDGER_ROLES = ("planner", "executor", "synthesizer")


@dataclass(slots=True)
class RoleLedger:
    """Requests and tokens per role over one turn."""

    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(LEDGER_ROLES, 0))
    usage: dict[str, TokenUsage] = field(
        default_factory=lambda: dict.fromkeys(LEDGER_ROLES, TokenUsage())
    )

    def add(self, role: str, usage: TokenUsage) -> None:
        self.usage[role] = self.usage[role] + usage

    @property
    def total(self) -> TokenUsage:
        total = TokenUsage()
        for usage in self.usage.values():
            total = total + usage
        return total

    def to_dict(self) -> dict[str, Any]:
        return dict(self.requests)


class RoleProviders:
    """One provider per profile, counted per role. ``on_usage`` sees every request's tokens
    (the session counts them against the actor's budgets)."""

    def __init__(
        self,
        settings: PlannedSettings,
        *,
        legacy: BaseLLMProvider,
        implicit: bool,
        on_usage: Callable[[TokenUsage], None] = lambda usage: None,
        built: Mapping[str, BaseLLMProvider] | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = RoleLedger()
        self._on_usage = on_usage
        self.providers: dict[str, BaseLLMProvider] = dict(built or {})
        self._providers = self.providers
        if implicit:  # no provider_profiles: every role is the session's own provider
            self._providers[DEFAULT_PROFILE] = legacy

    def provider(self, role: str) -> BaseLLMProvider:
        """The provider of ``role`` (the implicit default profile is the session's own)."""
        profile = self.settings.roles[role]
        provider = self._providers.get(profile.name)
        if provider is None:
            provider = create_provider(profile.provider, dict(profile.provider_config))
            self._providers[profile.name] = provider
        return provider

    def _count(self, role: str, usage: TokenUsage) -> None:
        ledger_role = "executor" if role.endswith("executor") else role
        self.ledger.add(ledger_role, usage)
        self._on_usage(usage)

    def _charge(self, role: str) -> None:
        ledger_role = "executor" if role.endswith("executor") else role
        self.ledger.requests[ledger_role] += 1

    async def structured(
        self, role: str, messages: list[Message], schema: Mapping[str, Any], *, name: str
    ) -> dict[str, Any]:
        """One structured request, within the provider's first-event timeout."""
        provider = self.provider(role)
        self._charge(role)
        try:
            async with asyncio.timeout(provider.timeout_seconds):
                reply = await provider.complete_structured(messages, schema, name=name)
        except TimeoutError:
            raise ProviderError(f"the {role} did not answer in time") from None
        self._count(role, reply.usage)
        return reply.value

    async def request(
        self, role: str, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """One streamed request: events as they come, the first within ``timeout_seconds`` and
        each next within ``stream_timeout_seconds``; exactly one Done or a ProviderError."""
        provider = self.provider(role)
        self._charge(role)
        stream = provider.complete(messages, tools).__aiter__()
        timeout = provider.timeout_seconds
        done = False
        try:
            while True:
                try:
                    async with asyncio.timeout(timeout):
                        event = await anext(stream)
                except StopAsyncIteration:
                    break
                except TimeoutError:
                    raise ProviderError(f"the {role} stopped answering") from None
                timeout = provider.stream_timeout_seconds
                if done:
                    raise ProviderCompletionError("events_after_done")
                if isinstance(event, DoneEvent):
                    done = True
                    self._count(role, event.usage)
                yield event
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()
        if not done:
            raise ProviderCompletionError("incomplete_provider_response", "no Done")

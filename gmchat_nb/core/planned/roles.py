"""The providers of a planned turn's roles, and the ledger of what each role cost.

Each profile is built once per turn from its own ``provider_config`` (never the legacy one, as the
spec requires), and every provider request goes through :meth:`RoleProviders.request` or
:meth:`RoleProviders.structured`, which count requests and tokens per role — the numbers the eval
reports and ``done.orchestration.requests`` show — and retry a request that fails before its
answer begins through the turn's :class:`~gmchat_nb.core.providers.attempts.ProviderRetries`
(a request counts once however often it was asked again).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..providers.attempts import AttemptEvent, ProviderRetries
from ..providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    TokenUsage,
    ToolDefinition,
)
from ..providers.registry import create_provider
from ..settings.planned import DEFAULT_PROFILE, PlannedSettings
from ..text import MAX_JSON_DEPTH, clean_json, json_depth_exceeds
from ..trace import Span, TurnTrace

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
        retries: ProviderRetries | None = None,
        trace: TurnTrace | None = None,
    ) -> None:
        self.settings = settings
        self.ledger = RoleLedger()
        self._on_usage = on_usage
        self.retries = retries or ProviderRetries()
        self.trace = trace  # each request a span of the turn's trace, as the loop's are
        self.providers: dict[str, BaseLLMProvider] = dict(built or {})
        if implicit:  # no provider_profiles: every role is the session's own provider
            self.providers[DEFAULT_PROFILE] = legacy

    def provider(self, role: str) -> BaseLLMProvider:
        """The provider of ``role`` (the implicit default profile is the session's own)."""
        profile = self.settings.roles[role]
        provider = self.providers.get(profile.name)
        if provider is None:
            provider = create_provider(profile.provider, dict(profile.provider_config))
            self.providers[profile.name] = provider
        return provider

    def _count(self, stage: str, usage: TokenUsage) -> None:
        self.ledger.add(stage, usage)
        self._on_usage(usage)

    def _charge(self, role: str, stage: str | None) -> str:
        """The ledger's row for a request: the stage it serves (the fallback profile counts as
        the planner or synthesizer it stands in for), else what its role does."""
        stage = stage or ("executor" if role.endswith("executor") else role)
        self.ledger.requests[stage] += 1
        return stage

    async def structured(
        self,
        role: str,
        messages: list[Message],
        schema: Mapping[str, Any],
        *,
        name: str,
        stage: str | None = None,
    ) -> dict[str, Any]:
        """One structured request, each attempt within the provider's first-event timeout."""
        provider = self.provider(role)
        stage = self._charge(role, stage)
        span = self._span(provider, role)
        try:
            reply = await self.retries.structured(
                provider, messages, schema, name=name, within=provider.timeout_seconds
            )
        except TimeoutError:
            self._end(span, error_type="timeout")
            raise ProviderError(f"the {role} did not answer in time") from None
        except Exception as error:
            self._end(span, error_type=type(error).__name__)
            raise
        self._end(span, usage=reply.usage)
        self._count(stage, reply.usage)
        # The same boundary as streamed text: nothing a model wrote may break a store or a socket.
        if json_depth_exceeds(reply.value):
            raise ProviderError(f"the {role}'s answer nests JSON more than {MAX_JSON_DEPTH} levels")
        cleaned: dict[str, Any] = clean_json(reply.value)
        return cleaned

    async def request(
        self,
        role: str,
        messages: list[Message],
        tools: list[ToolDefinition],
        *,
        stage: str | None = None,
    ) -> AsyncIterator[AttemptEvent]:
        """One streamed request held to the loop's protocol (timeouts, one Done, text and calls
        made storable); a late provider is a ProviderError like any other failure."""
        provider = self.provider(role)
        stage = self._charge(role, stage)
        span = self._span(provider, role)
        try:
            async for event in self.retries.events(provider, messages, tools):
                if isinstance(event, DoneEvent):
                    self._end(span, usage=event.usage, finish_reason=event.finish_reason)
                    self._count(stage, event.usage)
                yield event
        except TimeoutError:
            self._end(span, error_type="timeout")
            raise ProviderError(f"the {role} stopped answering") from None
        except Exception as error:
            self._end(span, error_type=type(error).__name__)
            raise

    def _span(self, provider: BaseLLMProvider, role: str) -> Span | None:
        if self.trace is None:
            return None
        vendor, _, model = self.retries.serving(provider).label.partition(":")
        span = self.trace.model_request(provider=vendor, model=model or vendor)
        span.attributes["role"] = role
        return span

    def _end(
        self,
        span: Span | None,
        *,
        usage: TokenUsage | None = None,
        finish_reason: str | None = None,
        error_type: str | None = None,
    ) -> None:
        if span is None or self.trace is None:
            return
        if usage is not None:
            self.trace.end(
                span,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                finish_reason=finish_reason,
            )
        else:
            self.trace.end(span, error_type=error_type)

"""The two engines a session runs a turn with, assembled from its settings: the tool loop, and
the planned turn that reads by plan (``planned.enabled``); and the turn's provider retries
(``provider_retries``), which both engines (and the context's summary) share, so a turn has one
retry owner and one count of its retries for its ``done`` event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ..audit import AuditLog
from ..events import Error
from ..loop import LoopLimits, ToolLoop, Transport, TurnIO, TurnState
from ..planned.catalog import Catalog
from ..planned.roles import RoleProviders
from ..planned.turn import PlannedTurn
from ..planned.work import TurnWork
from ..project.project import Project, QueryOutcome
from ..project.tools import run_tool
from ..providers.base import BaseLLMProvider, TokenUsage, ToolDefinition
from ..providers.retries import ProviderRetries, RetryPolicy
from ..settings import ChatSettings
from .actor import Actor

__all__ = ["planned_turn", "provider_retries", "tool_loop"]


def provider_retries(settings: ChatSettings) -> ProviderRetries:
    """One turn's retry owner, as ``provider_retries`` says (``attempts: 1``: none)."""
    configured = settings.provider_retries
    return ProviderRetries(
        RetryPolicy(
            attempts=configured.attempts, max_wait_seconds=float(configured.max_wait_seconds)
        )
    )


def tool_loop(
    project: Project,
    provider: BaseLLMProvider,
    tools: list[ToolDefinition],
    settings: ChatSettings,
    mutations: tuple[str, ...],
    io: TurnIO,
    actor: Actor,
    transport: Transport,
    outcomes: dict[str, QueryOutcome],
    retries: ProviderRetries,
) -> ToolLoop:
    """The tool loop with the settings' limits, offering ``tools`` and the allowed ``mutations``,
    its requests retried by the turn's ``retries``."""
    return ToolLoop(
        project,
        provider,
        tools,
        LoopLimits(
            max_rounds=settings.max_rounds,
            max_retries=settings.max_retries_per_message,
            max_mutations=settings.max_mutations_per_message,
            confirm_mutations=frozenset(settings.confirm_mutations),
            confirm_timeout_seconds=float(settings.confirm_timeout_seconds),
            allowed_mutations=frozenset(mutations),
            recover_missing_tool_calls=settings.recover_missing_tool_calls,
        ),
        io,
        authenticated=actor.authenticated,
        transport=transport,
        outcomes=outcomes,
        retries=retries,
    )


def planned_turn(
    project: Project,
    provider: BaseLLMProvider,
    settings: ChatSettings,
    catalog: Catalog,
    io: TurnIO,
    state: TurnState,
    outcomes: dict[str, QueryOutcome],
    *,
    built: dict[str, BaseLLMProvider],
    on_usage: Callable[[TokenUsage], None],
    check_rate: Callable[[], Awaitable[Error | None]],
    audit: AuditLog,
    retries: ProviderRetries,
) -> PlannedTurn:
    """A planned read turn; its role providers are taken from (and added to) ``built``, so a
    session builds them once and shares them across its turns; their requests are retried by the
    turn's ``retries``."""
    roles = RoleProviders(
        settings.planned_settings,
        legacy=provider,
        implicit=not settings.provider_profiles,
        on_usage=on_usage,
        built=built,
        retries=retries,
    )
    built.update(roles.providers)
    work = TurnWork(
        question="",
        settings=settings.planned_settings,
        roles=roles,
        run_tool=lambda name, args: run_tool(project, name, args),
        io=io,
        state=state,
        emit=lambda event: None,
        project=project,
        outcomes=outcomes,
    )
    return PlannedTurn(work, catalog=catalog, check_rate=check_rate, audit=audit.emit)

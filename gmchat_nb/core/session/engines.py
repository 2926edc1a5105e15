"""The two engines a session runs a turn with, assembled from its settings: the tool loop, and
the planned turn that reads by plan (``planned.enabled``)."""

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
from ..settings import ChatSettings
from .actor import Actor

__all__ = ["planned_turn", "tool_loop"]


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
) -> ToolLoop:
    """The tool loop with the settings' limits, offering ``tools`` and the allowed ``mutations``."""
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
) -> PlannedTurn:
    """A planned read turn; its role providers are taken from (and added to) ``built``, so a
    session builds them once and shares them across its turns."""
    roles = RoleProviders(
        settings.planned_settings,
        legacy=provider,
        implicit=not settings.provider_profiles,
        on_usage=on_usage,
        built=built,
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

"""The two engines a session runs a turn with, assembled from its settings: the tool loop, and
the planned turn that reads by plan (``planned.enabled``); and the turn's provider retries
(``provider_retries``), which both engines (and the context's summary) share, so a turn has one
retry owner and one count of its retries for its ``done`` event."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..audit import AuditLog
from ..charts.turn import TurnCharts
from ..events import Error
from ..guards.loop_guard import Budgets
from ..guards.turn import GuardSettings, TurnGuards
from ..loop import ToolLoop
from ..planned.catalog import Catalog
from ..planned.roles import RoleProviders
from ..planned.turn import PlannedTurn
from ..planned.work import TurnWork
from ..project.idempotency import mutation_key
from ..project.mutations import PreparedMutation
from ..project.project import Project, QueryOutcome
from ..project.tools import ToolRun
from ..providers.attempts import FallbackChain, ProviderRetries
from ..providers.base import BaseLLMProvider, Message, TokenUsage, ToolCallEvent, ToolDefinition
from ..providers.registry import create_provider
from ..providers.retries import RetryPolicy
from ..settings import ChatSettings
from ..toolcalls import CallScope, ToolCallPipeline
from ..trace import TurnTrace
from ..turn_state import LoopLimits, Transport, TurnIO, TurnState
from .actor import Actor
from .hooks import Hooks

__all__ = ["planned_turn", "provider_retries", "tool_loop", "turn_guards", "turn_scope"]


def provider_retries(settings: ChatSettings) -> ProviderRetries:
    """One turn's retry owner, as ``provider_retries`` says (``attempts: 1``: none), with the
    ``provider_fallbacks`` chain (each fallback built from its spec and config only when the turn
    first needs it)."""
    configured = settings.provider_retries
    return ProviderRetries(
        RetryPolicy(
            attempts=configured.attempts, max_wait_seconds=float(configured.max_wait_seconds)
        ),
        FallbackChain(settings.provider_fallbacks, _fallback_provider),
    )


def _fallback_provider(entry: Any) -> BaseLLMProvider:
    return create_provider(entry.provider, dict(entry.provider_config))


def tool_loop(
    project: Project,
    provider: BaseLLMProvider,
    tools: list[ToolDefinition],
    settings: ChatSettings,
    io: TurnIO,
    transport: Transport,
    scope: CallScope,
    retries: ProviderRetries,
) -> ToolLoop:
    """The tool loop with the settings' limits, offering ``tools``, its calls in the turn's
    ``scope``, its requests retried by the turn's ``retries``."""
    return ToolLoop(
        project,
        provider,
        tools,
        LoopLimits(
            max_rounds=settings.max_rounds,
            max_retries=settings.max_retries_per_message,
            max_mutations=settings.max_mutations_per_message,
            confirm_timeout_seconds=float(settings.confirm_timeout_seconds),
            recover_missing_tool_calls=settings.recover_missing_tool_calls,
        ),
        io,
        scope=scope,
        transport=transport,
        retries=retries,
    )


def turn_scope(
    project: Project,
    settings: ChatSettings,
    guards: TurnGuards,
    *,
    mutations: tuple[str, ...],
    actor: Actor,
    origin: str,
    outcomes: dict[str, QueryOutcome],
    trace: TurnTrace,
    audit: AuditLog,
    hooks: Hooks,
    session_key: str | None,
    turn_id: str,
    settle: Callable[[ToolCallEvent, ToolRun], None],
    checkpoint: Callable[[], Awaitable[None]],
) -> CallScope:
    """The tool-call scope of one turn: its defences, charts, query results and trace, and
    the session's audit log, hooks and records, shared by every engine of the turn."""

    def key(call: ToolCallEvent, prepared: PreparedMutation) -> str:
        return mutation_key(turn_id, call.id, prepared.mutation, prepared.input)

    return CallScope(
        kind="turn",
        project=project,
        guards=guards,
        origin="agent" if origin == "agent" else "chat",
        authenticated=actor.authenticated,
        actor=actor,
        allowed_mutations=frozenset(mutations),
        confirm_mutations=frozenset(settings.confirm_mutations),
        charts=TurnCharts(outcomes) if settings.charts else None,
        outcomes=outcomes,
        trace=trace,
        audit=audit,
        hooks=hooks,
        session_key=session_key,
        settle=settle,
        mutation_key=key,
        checkpoint=checkpoint,
    )


def turn_guards(
    settings: ChatSettings, messages: Sequence[Message], state: TurnState | None = None
) -> TurnGuards:
    """The defences of a turn whose context is ``messages``, as the settings switch them: the
    user's own words of this turn are the messages after the last answer or tool result. A
    turn resumed after a confirmation, or taken over, has rounds of its own in ``messages``
    (after its question): they are replayed, so its defences know what they knew (``state``'s
    rounds are then at least as many as its responses replayed)."""
    user_texts: list[str] = []
    position = len(messages)
    while position and messages[position - 1].role not in ("assistant", "tool"):
        position -= 1
        if messages[position].role == "user":
            user_texts.insert(0, messages[position].content)
    own: Sequence[Message] = ()
    if not user_texts:  # a turn resumed or continued: its question is further back
        asked = [i for i, m in enumerate(messages) if m.role == "user"]
        if asked:
            position = asked[-1]
            while position and messages[position - 1].role == "user":
                position -= 1
            user_texts = [m.content for m in messages[position : asked[-1] + 1]]
            own = messages[asked[-1] + 1 :]
    context: list[Any] = []  # what a follow-up's numbers may rest on
    for message in messages[:position]:
        if message.role == "tool":
            context.append(message.tool_result)
        elif message.content:  # earlier answers and a summary, in pieces the gates read
            text = message.content
            context.extend(text[start : start + 400] for start in range(0, len(text), 400))
    guard = settings.loop_guard
    guards = TurnGuards(
        GuardSettings(
            loop_guard=guard.enabled,
            budgets=Budgets(
                # the guard's stop comes before the spec's turn_limit: its forced final
                # request is the turn's last round
                model_requests=min(guard.model_requests, max(settings.max_rounds - 1, 1)),
                tool_calls=guard.tool_calls,
                tokens=guard.tokens,
                seconds=float(guard.seconds),
            ),
            gates=settings.completion_gates.enabled,
            mutation_intent=settings.injection.mutation_intent,
            flag_results=settings.injection.flag_results,
            question=settings.injection.question,
            question_threshold=float(settings.injection.question_threshold),
        ),
        user_texts,
        context,
    )
    if own:
        tokens = state.input_tokens + state.output_tokens if state is not None else 0
        replayed = guards.replay(own, tokens)
        if state is not None:
            state.rounds = max(state.rounds, replayed)
    return guards


def planned_turn(
    project: Project,
    provider: BaseLLMProvider,
    settings: ChatSettings,
    catalog: Catalog,
    io: TurnIO,
    state: TurnState,
    scope: CallScope,
    *,
    built: dict[str, BaseLLMProvider],
    on_usage: Callable[[TokenUsage], None],
    check_rate: Callable[[], Awaitable[Error | None]],
    audit: AuditLog,
    retries: ProviderRetries,
) -> PlannedTurn:
    """A planned read turn, its calls in the turn's ``scope``; its role providers are taken
    from (and added to) ``built``, so a session builds them once and shares them across its
    turns; their requests are retried by the turn's ``retries``."""
    roles = RoleProviders(
        settings.planned_settings,
        legacy=provider,
        implicit=not settings.provider_profiles,
        on_usage=on_usage,
        built=built,
        retries=retries,
        trace=scope.trace,
    )
    built.update(roles.providers)
    work = TurnWork(
        question="",
        settings=settings.planned_settings,
        roles=roles,
        pipeline=ToolCallPipeline(scope, serial=True),
        io=io,
        state=state,
        emit=lambda event: None,
        project=project,
        charts=settings.charts,
    )
    return PlannedTurn(work, catalog=catalog, check_rate=check_rate, audit=audit.emit)

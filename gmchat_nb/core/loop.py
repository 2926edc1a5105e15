"""One chat turn: provider rounds, tool calls, guardrails and mutation confirmations.

:class:`ToolLoop` streams a provider's answer, runs the tools it asks for (read tools of one round
concurrently when the project is remote), feeds the results back as native tool results and repeats
until the model answers. Each ``tool_call`` is announced as its call starts, and each
``tool_result`` says how long its tool worked (``duration_ms``, measured here around the tool's
execution; the model never sees it).
Tools never end a turn: their failures go back to the model as error results it can correct.
Only the guardrails end a turn early, with the spec's codes:

* ``turn_limit`` — more provider rounds than ``max_rounds``;
* ``tool_retry_limit`` — once ``max_retries_per_message`` read calls have *failed*, the model gets
  no more tools; calling one anyway ends the turn (GeneralManager counts every read call, so three
  successful lookups exhaust it);
* ``mutation_limit``, ``mutation_batch_unsupported`` (checked before any tool runs);
* ``deadline_exceeded`` (first-event and between-chunk provider timeouts), ``provider_failed``
  (also for an empty final answer: a turn never ends in a silent ``done``; a request that failed
  before its first event was first asked again as the turn's :class:`ProviderRetries` allows);
* ``rate_limited`` (checked before each round), ``confirmation_required_transport``.

The loop knows nothing of storage or transports: a :class:`TurnIO` (the session) persists
messages, checks budgets and waits for confirmations.

Over 400 lines: one state machine, :class:`ToolLoop`, whose steps (streaming, reads,
confirmations, guardrails) share one turn's state and the :class:`TurnIO` it is driven through.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from .events import (
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    TextChunk,
    ToolCall,
    ToolResult,
    error_event,
)
from .frames import frame_summary
from .project.errors import ToolError
from .project.idempotency import mutation_key
from .project.mutations import PreparedMutation
from .project.project import Project, QueryOutcome
from .project.tools import TOOLS, ToolRun, is_read_tool, run_tool
from .providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from .providers.completion import completed_events
from .providers.retries import ProviderRetries

__all__ = [
    "Decision",
    "LoopLimits",
    "ToolLoop",
    "TurnIO",
    "TurnState",
    "Waiter",
    "complete_text",
    "completed_events",
]

Transport = Literal["stream", "sse", "http"]
Decision = Literal["confirmed", "rejected", "timed_out", "unavailable"]
TRUNCATED = ("length", "max_tokens")

RECOVERY_NO_TOOLS = (
    "You answered without looking at the data. Call the tools "
    f"({TOOLS.search_managers.name}, {TOOLS.get_manager_schema.name}, {TOOLS.query.name}) first, "
    "then answer from their results."
)
RECOVERY_NO_QUERY = (
    f"You have not queried the data yet. Call {TOOLS.query.name} for the rows the user asked "
    "about, then answer from its result."
)
RECOVERY_EMPTY = "Write the answer to the user now, from the tool results above."
BUDGET_SPENT = (
    "The tool budget for this message is used up. Answer with what the tool results show, or "
    "explain what failed; do not call tools."
)
_DATA_QUESTION = re.compile(
    r"\b(which|what|who|list|show|find|how many|how much|count|give me|are there|is there|"
    r"total|average|sum|top|highest|lowest)\b|\?",
    re.IGNORECASE,
)


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
    """The settings the loop enforces."""

    max_rounds: int
    max_retries: int
    max_mutations: int
    confirm_mutations: frozenset[str]
    confirm_timeout_seconds: float
    recover_missing_tool_calls: bool
    allowed_mutations: frozenset[str] = frozenset()


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

    async def check_rate(self) -> Error | None:
        """An error event when a budget forbids another provider round (the turn's progress is
        written first: a store away for a moment is waited for)."""
        ...

    async def checkpoint(self) -> None:
        """Write what the turn has so far (before a data change, and after it)."""
        ...

    def record_usage(self, usage: TokenUsage) -> None:
        """Count one response's tokens against the actor's budgets."""
        ...

    def tool_finished(self, call: ToolCallEvent, run: ToolRun) -> None:
        """Audit and hooks for one finished tool call."""
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


def _milliseconds_since(started: float) -> float:
    """Milliseconds since a ``time.perf_counter()`` reading, to three significant digits."""
    return float(f"{(time.perf_counter() - started) * 1000:.3g}")


async def complete_text(
    provider: BaseLLMProvider, messages: list[Message], retries: ProviderRetries | None = None
) -> tuple[str, TokenUsage]:
    """One tool-free request (summaries): its text and usage, retried at its start as
    ``retries`` (the turn's) says; without it, never."""
    parts: list[str] = []
    usage = TokenUsage()
    async for event in (retries or ProviderRetries()).events(provider, messages, []):
        if isinstance(event, TextChunkEvent):
            parts.append(event.content)
        elif isinstance(event, DoneEvent):
            usage = event.usage
    return "".join(parts), usage


class ToolLoop:
    """Runs turns for one project, provider and set of limits."""

    def __init__(
        self,
        project: Project,
        provider: BaseLLMProvider,
        tools: list[ToolDefinition],
        limits: LoopLimits,
        io: TurnIO,
        *,
        authenticated: bool = True,
        transport: Transport = "stream",
        outcomes: dict[str, QueryOutcome] | None = None,
        retries: ProviderRetries | None = None,
    ) -> None:
        self.project = project
        self.provider = provider
        self.tools = tools
        self.limits = limits
        self.io = io
        self.authenticated = authenticated
        self.transport = transport
        # call id -> the evidence of a query, filled as results arrive
        self.outcomes: dict[str, QueryOutcome] = {} if outcomes is None else outcomes
        # each round's request is retried at its start (never its tools: they run after it)
        self.retries = retries or ProviderRetries()

    async def run(self, messages: list[Message], state: TurnState) -> AsyncIterator[ChatEvent]:
        """Provider rounds until the model answers or a guardrail ends the turn."""
        while True:
            if state.rounds >= self.limits.max_rounds:
                yield error_event("turn_limit")
                return
            refused = await self.io.check_rate()
            if refused is not None:
                yield refused
                return
            state.rounds += 1
            budget_spent = state.failures >= self.limits.max_retries
            offered = [] if budget_spent else self.tools
            if budget_spent:
                messages.append(Message("system", BUDGET_SPENT))
            text_parts: list[str] = []
            calls: list[ToolCallEvent] = []
            done: DoneEvent | None = None
            buffer = self.limits.recover_missing_tool_calls and not state.recovered
            try:
                async for event in self.retries.events(self.provider, messages, offered):
                    if isinstance(event, TextChunkEvent):
                        text_parts.append(event.content)
                        if not buffer and event.content:
                            yield TextChunk(content=event.content)
                    elif isinstance(event, ToolCallEvent):
                        calls.append(event)
                    else:
                        done = event
            except TimeoutError as error:
                self.io.provider_failed(error)
                yield error_event("deadline_exceeded")
                return
            except ProviderError as error:
                self.io.provider_failed(error)
                yield error_event("provider_failed")
                return
            assert done is not None
            state.add_usage(done.usage)
            self.io.record_usage(done.usage)
            text = "".join(text_parts)
            if calls:
                if budget_spent:
                    yield error_event("tool_retry_limit")
                    return
                if len(calls) > 1 and any(not is_read_tool(call.name) for call in calls):
                    yield error_event("mutation_batch_unsupported")
                    return
                if buffer and text:
                    yield TextChunk(content=text)
                assistant = Message("assistant", text, tool_calls=tuple(calls))
                messages.append(assistant)
                await self.io.persist(assistant, state)
                if is_read_tool(calls[0].name):
                    async for item in self._run_reads(messages, calls, state):
                        yield item
                    continue
                async for item in self._run_mutation(messages, calls[0], state):
                    yield item
                    if isinstance(item, Error):
                        return
                    if isinstance(item, ConfirmMutation) and self.transport == "sse":
                        return  # suspended: the confirm request resumes the turn
                continue
            recovery = self._recovery(messages, state, text)
            if recovery is not None:
                state.recovered = True
                messages.append(Message("system", recovery))
                continue
            if not text.strip():
                # an empty answer is a failed request, not a finished turn: say so
                self.io.provider_failed(
                    ProviderError(
                        "the model's final answer was empty "
                        f"(finish_reason {done.finish_reason!r}, round {state.rounds})"
                    )
                )
                yield error_event("provider_failed")
                return
            if buffer and text:
                yield TextChunk(content=text)
            if done.finish_reason in TRUNCATED:
                note = "\n\n(The answer was cut off at the provider's length limit.)"
                text += note
                yield TextChunk(content=note)
            answer = Message("assistant", text)
            messages.append(answer)
            await self.io.persist(answer, state)
            yield Done(usage=state.usage.to_dict())
            return

    async def finish_mutation(
        self,
        messages: list[Message],
        call: ToolCallEvent,
        prepared: PreparedMutation,
        decision: Decision,
        state: TurnState,
    ) -> AsyncIterator[ChatEvent]:
        """Turn a human's decision into the mutation's tool result (and run it if confirmed)."""
        if decision == "unavailable":
            yield error_event("confirmation_unavailable")
            return
        if decision == "confirmed":
            yield await self._mutate(messages, call, prepared, state)
            return
        if decision == "rejected":
            run = ToolRun({"status": "cancelled", "reason": "user_rejected"})
        else:
            run = ToolRun({"status": "cancelled", "reason": "confirmation_timed_out"})
        yield await self.record_result(messages, call, run, state)

    # -- rounds --------------------------------------------------------------------------------

    async def _run_reads(
        self, messages: list[Message], calls: list[ToolCallEvent], state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """One round's read calls, each announced as it starts.

        Over a remote executor they run concurrently, so all are announced first and their
        results follow in call order. In process they cannot overlap (tasks would only add
        overhead): each call is announced right before it runs and reported right after.
        """
        if len(calls) > 1 and self.project.executor.concurrent:
            for call in calls:
                yield ToolCall(id=call.id, name=call.name, args=call.args)
            timed = await asyncio.gather(*(self._read(call) for call in calls))
            for call, (run, duration_ms) in zip(calls, timed, strict=True):
                yield await self.record_result(messages, call, run, state, duration_ms=duration_ms)
            return
        for call in calls:
            yield ToolCall(id=call.id, name=call.name, args=call.args)
            run, duration_ms = await self._read(call)
            yield await self.record_result(messages, call, run, state, duration_ms=duration_ms)

    async def _read(self, call: ToolCallEvent) -> tuple[ToolRun, float]:
        """The call's result and how long it took (ms)."""
        started = time.perf_counter()
        if call.error is not None:
            run = ToolRun(
                {
                    "status": "error",
                    "code": "invalid_arguments",
                    "message": f"{call.name}: {call.error}",
                }
            )
        else:
            run = await run_tool(self.project, call.name, call.args)
        return run, _milliseconds_since(started)

    async def _run_mutation(
        self, messages: list[Message], call: ToolCallEvent, state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        yield ToolCall(id=call.id, name=call.name, args=call.args)
        if state.mutations >= self.limits.max_mutations:
            yield error_event("mutation_limit")
            return
        state.mutations += 1
        prepared: PreparedMutation | None = None
        started = time.perf_counter()  # a refused mutation's duration is its validation
        if call.error is not None:
            run = ToolRun({"status": "error", "code": "invalid_arguments", "message": call.error})
        elif not self.authenticated:
            run = ToolRun(
                {
                    "status": "error",
                    "code": "authentication_required",
                    "message": "Chat mutations require an authenticated user.",
                }
            )
        else:
            try:
                prepared = self.prepare(call.args)
            except ToolError as error:
                run = ToolRun(error.to_result())
            else:
                run = ToolRun(None)
        if prepared is None:
            duration_ms = _milliseconds_since(started)
            yield await self.record_result(messages, call, run, state, duration_ms=duration_ms)
            return
        if prepared.mutation not in self.limits.confirm_mutations:
            yield await self._mutate(messages, call, prepared, state)
            return
        if self.transport == "http":
            yield error_event("confirmation_required_transport")
            return
        waiter = await self.io.open_confirmation(
            call, prepared, state, wait=self.transport != "sse"
        )
        yield ConfirmMutation(
            id=call.id,
            mutation=prepared.mutation,
            input=prepared.input,
            expires_in_seconds=self.limits.confirm_timeout_seconds,
        )
        if self.transport == "sse":
            return
        decision = await waiter.wait()
        async for item in self.finish_mutation(messages, call, prepared, decision, state):
            yield item

    def prepare(self, args: dict[str, Any]) -> PreparedMutation:
        """Validate a ``mutate`` call completely (allow-list, names, types) before anyone is asked."""
        unknown = set(args) - {"mutation", "input"}
        if unknown or "mutation" not in args:
            raise ToolError(
                "invalid_arguments",
                f"{TOOLS.mutate.name} takes 'mutation' and 'input', e.g. {{\"mutation\": "
                '"createPart", "input": {"name": "Bolt"}}.',
            )
        return self.project.mutation_compiler.prepare(
            args["mutation"], args.get("input"), self.limits.allowed_mutations
        )

    async def _mutate(
        self,
        messages: list[Message],
        call: ToolCallEvent,
        prepared: PreparedMutation,
        state: TurnState,
    ) -> ToolResult:
        """Run a mutation once and record its result, written before and after it runs.

        The call is in the store before the data can change, so a process that dies mid-way
        leaves an *unknown outcome* for recovery to report, never a silent gap. A cancelled turn
        (a client that went away) lets a mutation already under way finish and records what it
        did before stopping: cancelling must never pretend an effect did not happen.
        """
        await self.io.checkpoint()
        key = mutation_key(state.turn_id, call.id, prepared.mutation, prepared.input)
        effect = asyncio.ensure_future(self._execute(prepared, key))
        cancelled: asyncio.CancelledError | None = None
        try:
            run, duration_ms = await asyncio.shield(effect)
        except asyncio.CancelledError as cancel:
            cancelled = cancel
            run, duration_ms = await asyncio.shield(effect)  # a second cancel leaves it to recovery
        result = await self.record_result(messages, call, run, state, duration_ms=duration_ms)
        await asyncio.shield(self.io.checkpoint())  # written even while the turn is cancelled
        if cancelled is not None:
            raise cancelled
        return result

    async def _execute(self, prepared: PreparedMutation, key: str) -> tuple[ToolRun, float]:
        """The mutation's result and how long it ran (ms); ``key`` is its idempotency key."""
        started = time.perf_counter()
        try:
            run = ToolRun(await self.project.execute_mutation(prepared, idempotency_key=key))
        except ToolError as error:
            run = ToolRun(error.to_result())
        return run, _milliseconds_since(started)

    async def record_result(
        self,
        messages: list[Message],
        call: ToolCallEvent,
        run: ToolRun,
        state: TurnState,
        *,
        duration_ms: float | None = None,
    ) -> ToolResult:
        """Count, persist and report one tool call's result (``duration_ms``: how long the tool
        worked, for displays; it is not part of the message the model receives)."""
        state.tools_used += 1
        if run.failed and is_read_tool(call.name):
            state.failures += 1
        frame = None
        if run.outcome is not None:
            state.queried = True
            self.outcomes[call.id] = run.outcome
            frame = frame_summary(run.outcome.rows)
        message = Message("tool", tool_call_id=call.id, tool_name=call.name, tool_result=run.result)
        messages.append(message)
        await self.io.persist(message, state)
        self.io.tool_finished(call, run)
        return ToolResult(
            id=call.id, name=call.name, result=run.result, frame=frame, duration_ms=duration_ms
        )

    def _recovery(self, messages: list[Message], state: TurnState, text: str) -> str | None:
        """A bounded nudge (once per turn) when the model skipped the tools it needed."""
        if not self.limits.recover_missing_tool_calls or state.recovered or not self.tools:
            return None
        question = next((m.content for m in reversed(messages) if m.role == "user"), "")
        if state.tools_used == 0:
            return RECOVERY_NO_TOOLS if _DATA_QUESTION.search(question) else None
        if not text.strip():
            return RECOVERY_EMPTY
        if not state.queried and _DATA_QUESTION.search(question):
            return RECOVERY_NO_QUERY
        return None

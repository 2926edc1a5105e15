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
import functools
import re
import time
from collections.abc import AsyncIterator
from typing import Any

from .charts.tool import CHART
from .charts.turn import TurnCharts
from .events import (
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    Notice,
    StreamReset,
    TextChunk,
    ToolCall,
    ToolResult,
    error_event,
)
from .frames import frame_summary
from .guards.gates import GateResult, correction_request, warning_note
from .guards.loop_guard import final_answer_request
from .guards.turn import GuardSettings, TurnGuards
from .project.errors import ToolError
from .project.idempotency import mutation_key
from .project.mutations import PreparedMutation
from .project.project import Project, QueryOutcome
from .project.tools import TOOLS, ToolRun, is_read_tool, run_tool
from .providers.attempts import ProviderRetries, StreamResetEvent
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
from .providers.pricing import estimate_request
from .trace import TurnTrace
from .turn_state import Decision, LoopLimits, Transport, TurnIO, TurnState, Waiter

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
        elif isinstance(event, StreamResetEvent):
            parts.clear()
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
        guards: TurnGuards | None = None,
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
        self.charts = TurnCharts(self.outcomes) if limits.charts else None
        # each round's request is retried at its start (never its tools: they run after it)
        self.retries = retries or ProviderRetries()
        # the turn's defences (loop guard, data flags, mutation intent, completion gates); off
        # unless the session gives them
        self.guards = guards or TurnGuards(GuardSettings.off(), ())
        self._flags: dict[str, list[dict[str, Any]]] = {}  # call id -> flags of its result
        self._not_run: set[str] = set()  # calls answered by the loop guard (no hook, no audit)
        self.trace = TurnTrace()  # what the turn did (the session gives its own, with ids)

    async def run(self, messages: list[Message], state: TurnState) -> AsyncIterator[ChatEvent]:
        """Provider rounds until the model answers or a guardrail ends the turn."""
        while True:
            if state.rounds >= self.limits.max_rounds:
                yield error_event("turn_limit")
                return
            serving = self.retries.serving(self.provider)
            refused = await self.io.check_rate(  # estimated only when a cost budget asks
                functools.partial(
                    estimate_request, serving.label, serving.name, messages, self.tools
                )
            )
            if refused is not None:
                yield refused
                return
            if not state.stopped_by and (stop := self.guards.stop_reason()) is not None:
                yield self._stop(messages, state, stop)
            state.rounds += 1
            budget_spent = state.failures >= self.limits.max_retries
            offered = [] if budget_spent or state.stopped_by else self._offered(state)
            if budget_spent:
                messages.append(Message("system", BUDGET_SPENT))
            text_parts: list[str] = []
            calls: list[ToolCallEvent] = []
            done: DoneEvent | None = None
            buffer = self.limits.recover_missing_tool_calls and not state.recovered
            vendor, _, model = self.retries.serving(self.provider).label.partition(":")
            span = self.trace.model_request(provider=vendor, model=model or vendor)
            try:
                async for event in self.retries.events(self.provider, messages, offered):
                    if isinstance(event, TextChunkEvent):
                        text_parts.append(event.content)
                        if not buffer and event.content:
                            yield TextChunk(content=event.content)
                    elif isinstance(event, ToolCallEvent):
                        calls.append(event)
                    elif isinstance(event, DoneEvent):
                        done = event
                    elif isinstance(event, StreamResetEvent):
                        # the request is asked again: what it streamed is withdrawn everywhere
                        if not buffer and any(text_parts):
                            yield StreamReset(reason=event.reason)
                        text_parts.clear()
                        calls.clear()
                        self.trace.event("stream_reset", span, reason=event.reason)
                    else:
                        self.trace.event(event.kind, span, **event.details)
                        yield Notice(
                            kind=event.kind, message=event.message, details=dict(event.details)
                        )
            except TimeoutError as error:
                self.trace.end(span, error_type="timeout")
                self.io.provider_failed(error)
                yield error_event("deadline_exceeded")
                return
            except ProviderError as error:
                self.trace.end(span, error_type=type(error).__name__)
                self.io.provider_failed(error)
                yield error_event("provider_failed")
                return
            assert done is not None
            self.trace.end(
                span,
                input_tokens=done.usage.input_tokens,
                output_tokens=done.usage.output_tokens,
                finish_reason=done.finish_reason,
                tool_calls=len(calls),
            )
            state.add_usage(done.usage)
            self.io.record_usage(done.usage)
            text = "".join(text_parts)
            usage = done.usage.input_tokens + done.usage.output_tokens
            self.guards.after_response(text=text, calls=len(calls), tokens=usage)
            if state.stopped_by or (
                state.corrected and not all(is_read_tool(c.name) for c in calls)
            ):
                calls = []  # a final answer or a correction: tools off, never a change
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
            failed = [gate for gate in self.guards.check_answer(text) if not gate.passed]
            if failed and not state.corrected and state.rounds < self.limits.max_rounds:
                async for item in self._correct(messages, state, text, failed, shown=not buffer):
                    yield item
                continue
            if buffer and text:
                yield TextChunk(content=text)
            if failed:  # corrected once and still failing: shown, with what is not verified
                note = warning_note(failed)
                text += note
                yield TextChunk(content=note)
            if done.finish_reason in TRUNCATED:
                note = "\n\n(The answer was cut off at the provider's length limit.)"
                text += note
                yield TextChunk(content=note)
            answer = Message("assistant", text)
            messages.append(answer)
            await self.io.persist(answer, state)
            yield Done(
                usage=state.usage.to_dict(),
                gates=self.guards.gates_summary(),
                guards=self.guards.summary(),
            )
            return

    def _offered(self, state: TurnState) -> list[ToolDefinition]:
        """The tools of a round: all, but never ``mutate`` in the gates' corrective request."""
        if not state.corrected:
            return self.tools
        return [tool for tool in self.tools if tool.name != TOOLS.mutate.name]

    def _stop(self, messages: list[Message], state: TurnState, reason: str) -> Notice:
        """The loop guard ends the turn: one more request, tools off, for the final answer."""
        state.stopped_by = reason
        self.guards.stopped(reason)
        self.trace.event("loop_guard", stopped_by=reason)
        messages.append(Message("system", final_answer_request(reason)))
        return Notice(
            kind="loop_guard",
            message="The assistant was going round in circles or reached its budget; "
            "it answers now from what it found.",
            details={"stopped_by": reason},
        )

    async def _correct(
        self,
        messages: list[Message],
        state: TurnState,
        text: str,
        failed: list[GateResult],
        *,
        shown: bool,
    ) -> AsyncIterator[ChatEvent]:
        """One corrective request for an answer the gates failed: the draft is withdrawn (when
        it was shown) and, with the exact claims and facts, sent back (never offering
        ``mutate``). Neither the draft nor the request enters the conversation's history."""
        state.corrected = True
        for gate in failed:
            self.trace.event("gate", gate=gate.name, passed=False, details=list(gate.details))
        if shown:
            yield StreamReset(reason="the answer did not match this turn's data")
        yield Notice(
            kind="gate",
            message="The answer said something this turn's data does not show; "
            "it is being corrected.",
            details={"gates": [gate.name for gate in failed]},
        )
        messages.append(Message("assistant", text))
        messages.append(Message("user", correction_request(failed, self.guards.facts())))

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
        self.guards.mutation_ended(prepared.mutation, call.args, decision, prepared.input)
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
        # A chart draws a query the round's other reads may be answering: charts run after them.
        charts = [call for call in calls if call.name == CHART.name]
        if charts:
            calls = [call for call in calls if call.name != CHART.name]
        if len(calls) > 1 and self.project.executor.concurrent:
            for call in calls:
                yield ToolCall(id=call.id, name=call.name, args=call.args)
            timed = await asyncio.gather(*(self._read(call) for call in calls))
            for call, (run, duration_ms) in zip(calls, timed, strict=True):
                yield await self.record_result(messages, call, run, state, duration_ms=duration_ms)
            calls = []
        for call in calls + charts:
            yield ToolCall(id=call.id, name=call.name, args=call.args)
            run, duration_ms = await self._read(call)
            yield await self.record_result(messages, call, run, state, duration_ms=duration_ms)
            chart = self.charts.take(call.id) if self.charts is not None else None
            if chart is not None:
                yield chart

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
            span = self.trace.tool_call(call_id=call.id, tool=call.name, arguments=call.args)
            verdict = self.guards.before_call(call.name, call.args)
            if verdict.action != "run":  # a repeat answered from before, or a refusal
                self._not_run.add(call.id)
                self.trace.event("loop_guard", span, action=verdict.action, reason=verdict.reason)
                self.trace.end(span, status=verdict.action, result=verdict.result)
                return ToolRun(verdict.result), _milliseconds_since(started)
            if self.charts is not None and call.name == CHART.name:
                run = self.charts.run(call.id, call.args)
            else:
                run = await run_tool(self.project, call.name, call.args)
            flags = self.guards.after_call(call.name, call.args, run.result, failed=run.failed)
            if flags:
                self._flags[call.id] = flags
                self.trace.event("injection_flag", span, flags=flags)
            rows = len(run.outcome.rows) if run.outcome is not None else None
            self.trace.end(
                span, status="error" if run.failed else "ok", rows=rows, result=run.result
            )
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
                run = ToolRun(self.guards.mutation_refusal(prepared.mutation, call.args))
                if run.result is not None:  # no change asked for, or one the user rejected
                    prepared = None
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
            provenance=self.guards.provenance(prepared.input),
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
        effect = asyncio.ensure_future(self._execute(prepared, key, call.id))
        cancelled: asyncio.CancelledError | None = None
        try:
            run, duration_ms = await asyncio.shield(effect)
        except asyncio.CancelledError as cancel:
            cancelled = cancel
            run, duration_ms = await asyncio.shield(effect)  # a second cancel leaves it to recovery
        status = "failed" if run.failed else "executed"
        self.guards.mutation_ended(prepared.mutation, call.args, status, prepared.input)
        result = await self.record_result(messages, call, run, state, duration_ms=duration_ms)
        await asyncio.shield(self.io.checkpoint())  # written even while the turn is cancelled
        if cancelled is not None:
            raise cancelled
        return result

    async def _execute(
        self, prepared: PreparedMutation, key: str, call_id: str
    ) -> tuple[ToolRun, float]:
        """The mutation's result and how long it ran (ms); ``key`` is its idempotency key."""
        started = time.perf_counter()
        span = self.trace.tool_call(
            call_id=call_id, tool=TOOLS.mutate.name, arguments={"mutation": prepared.mutation}
        )
        try:
            run = ToolRun(await self.project.execute_mutation(prepared, idempotency_key=key))
        except ToolError as error:
            run = ToolRun(error.to_result())
        self.trace.end(span, status="error" if run.failed else "ok", result=run.result)
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
        if call.id in self._not_run:
            self._not_run.discard(call.id)
        else:
            self.io.tool_finished(call, run)
        return ToolResult(
            id=call.id,
            name=call.name,
            result=run.result,
            frame=frame,
            duration_ms=duration_ms,
            flags=self._flags.pop(call.id, None),
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

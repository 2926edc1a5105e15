"""One chat turn: provider rounds, tool calls, guardrails and mutation confirmations.

:class:`ToolLoop` streams a provider's answer, runs the tools it asks for (each through the
tool-call pipeline, by :class:`~gmchat_nb.core.loop_calls.LoopCalls`: read tools of one round
concurrently when the project is remote), feeds the results back as native tool results and
repeats until the model answers. Tools never end a turn: their failures go back to the model as
error results it can correct. Only the guardrails end a turn early, with the spec's codes:

* ``turn_limit`` — more provider rounds than ``max_rounds`` (with the loop guard on, its
  ``model_requests`` budget ends the turn first, one round before, with an answer);
* ``tool_retry_limit`` — once ``max_retries_per_message`` read calls have *failed*, the model gets
  no more tools; calling one anyway ends the turn (GeneralManager counts every read call, so three
  successful lookups exhaust it);
* ``mutation_limit``, ``mutation_batch_unsupported`` (checked before any tool runs);
* ``deadline_exceeded`` (first-event and between-chunk provider timeouts), ``provider_failed``
  (also for an empty final answer: a turn never ends in a silent ``done``; a request that failed
  before its first event was first asked again as the turn's :class:`ProviderRetries` allows);
* ``rate_limited`` (checked before each round), ``confirmation_required_transport``.

When the loop guard stops a turn (stuck, or a budget spent), one last request is made with the
tools off; a model that still answers with only calls or nothing ends the turn ``done`` with an
answer written from the turn's evidence (:func:`~gmchat_nb.core.guards.stopped.stopped_answer`).

The loop knows nothing of storage or transports: a :class:`TurnIO` (the session) persists
messages, checks budgets and waits for confirmations.
"""

from __future__ import annotations

import functools
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from .events import (
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    Notice,
    StreamReset,
    TextChunk,
    error_event,
)
from .guards.gates import GateResult, correction_request, warning_note
from .guards.loop_guard import final_answer_request
from .guards.stopped import stop_notice, stopped_answer
from .loop_calls import LoopCalls
from .project.project import Project
from .project.tools import TOOLS, is_read_tool
from .providers.attempts import ProviderRetries, StreamResetEvent
from .providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from .providers.completion import completed_events
from .providers.pricing import estimate_request
from .toolcalls import CallScope, ToolCallPipeline
from .trace import TurnTrace
from .turn_state import Decision, LoopLimits, Transport, TurnIO, TurnState, Waiter

__all__ = [
    "Decision",
    "LoopLimits",
    "ToolLoop",
    "TurnIO",
    "TurnState",
    "Waiter",
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


@dataclass(slots=True)
class _Response:
    """What one provider request answered."""

    text: list[str] = field(default_factory=list)
    calls: list[ToolCallEvent] = field(default_factory=list)
    done: DoneEvent | None = None
    failed: bool = False


class ToolLoop:
    """Runs turns for one project, provider and set of limits; ``scope`` is the turn's
    tool-call scope (its defences, charts, query results and trace), shared with any other
    engine of the turn."""

    def __init__(
        self,
        project: Project,
        provider: BaseLLMProvider,
        tools: list[ToolDefinition],
        limits: LoopLimits,
        io: TurnIO,
        *,
        scope: CallScope,
        transport: Transport = "stream",
        retries: ProviderRetries | None = None,
    ) -> None:
        self.project = project
        self.provider = provider
        self.tools = tools
        self.limits = limits
        self.io = io
        self.transport = transport
        self.scope = scope
        self.guards = scope.guards
        self.trace = scope.trace if scope.trace is not None else TurnTrace()
        self.outcomes = scope.outcomes  # call id -> the evidence of a query
        # each round's request is retried at its start (never its tools: they run after it)
        self.retries = retries or ProviderRetries()
        self.calls = LoopCalls(
            ToolCallPipeline(scope),
            io,
            limits,
            transport,
            concurrent=project.executor.concurrent,
        )

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
            buffer = self.limits.recover_missing_tool_calls and not state.recovered
            response = _Response()
            async for event in self._request(messages, offered, buffer, response):
                yield event
            if response.failed:
                return
            done = response.done
            assert done is not None
            state.add_usage(done.usage)
            self.io.record_usage(done.usage)
            text, calls = "".join(response.text), response.calls
            usage = done.usage.input_tokens + done.usage.output_tokens
            self.guards.after_response(text=text, calls=len(calls), tokens=usage)
            if state.stopped_by or (
                state.corrected and not all(is_read_tool(c.name) for c in calls)
            ):
                calls = []  # a final answer or a correction: tools off, never a change
            if calls:
                async for item in self._tool_round(messages, text, calls, state, buffer):
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
            written = False  # the answer is the turn's evidence, not the model's
            if not text.strip() and state.stopped_by:
                # stopped, and the model would still not answer: its evidence answers
                text, written = stopped_answer(state.stopped_by, self.outcomes.values()), True
                self.trace.event("loop_guard", stopped_by=state.stopped_by, answer="evidence")
            elif not text.strip():
                # an empty answer is a failed request, not a finished turn: say so
                self.io.provider_failed(
                    ProviderError(
                        "the model's final answer was empty "
                        f"(finish_reason {done.finish_reason!r}, round {state.rounds})"
                    )
                )
                yield error_event("provider_failed")
                return
            checked = [] if written else self.guards.check_answer(text)
            failed = [gate for gate in checked if not gate.passed]
            if failed and not state.corrected and state.rounds < self.limits.max_rounds:
                async for item in self._correct(messages, state, text, failed, shown=not buffer):
                    yield item
                continue
            if (buffer or written) and text:
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

    async def _request(
        self,
        messages: list[Message],
        offered: list[ToolDefinition],
        buffer: bool,
        response: _Response,
    ) -> AsyncIterator[ChatEvent]:
        """One provider request, streamed: its text shown as it comes (unless ``buffer``), its
        calls and its end kept in ``response`` (``failed``: the turn ended with the error
        yielded last)."""
        vendor, _, model = self.retries.serving(self.provider).label.partition(":")
        span = self.trace.model_request(provider=vendor, model=model or vendor)
        try:
            async for event in self.retries.events(self.provider, messages, offered):
                if isinstance(event, TextChunkEvent):
                    response.text.append(event.content)
                    if not buffer and event.content:
                        yield TextChunk(content=event.content)
                elif isinstance(event, ToolCallEvent):
                    response.calls.append(event)
                elif isinstance(event, DoneEvent):
                    response.done = event
                elif isinstance(event, StreamResetEvent):
                    # the request is asked again: what it streamed is withdrawn everywhere
                    if not buffer and any(response.text):
                        yield StreamReset(reason=event.reason)
                    response.text.clear()
                    response.calls.clear()
                    self.trace.event("stream_reset", span, reason=event.reason)
                else:
                    self.trace.event(event.kind, span, **event.details)
                    yield Notice(
                        kind=event.kind, message=event.message, details=dict(event.details)
                    )
        except TimeoutError as error:
            self.trace.end(span, error_type="timeout")
            self.io.provider_failed(error)
            response.failed = True
            yield error_event("deadline_exceeded")
            return
        except ProviderError as error:
            self.trace.end(span, error_type=type(error).__name__)
            self.io.provider_failed(error)
            response.failed = True
            yield error_event("provider_failed")
            return
        done = response.done
        assert done is not None
        self.trace.end(
            span,
            input_tokens=done.usage.input_tokens,
            output_tokens=done.usage.output_tokens,
            finish_reason=done.finish_reason,
            tool_calls=len(response.calls),
        )

    async def _tool_round(
        self,
        messages: list[Message],
        text: str,
        calls: list[ToolCallEvent],
        state: TurnState,
        buffer: bool,
    ) -> AsyncIterator[ChatEvent]:
        """The calls of one response: reads together, or one change."""
        if state.failures >= self.limits.max_retries:
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
            async for item in self.calls.reads(messages, calls, state):
                yield item
            return
        async for item in self.calls.change(messages, calls[0], state):
            yield item

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
        return stop_notice(reason)

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

    async def resume(
        self, messages: list[Message], call: ToolCallEvent, decision: Decision, state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """A turn suspended at ``call``'s confirmation, decided: the change's result, then (for
        a chat's turn) the rounds go on."""
        async for event in self.calls.resume(messages, call, decision, state):
            yield event

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

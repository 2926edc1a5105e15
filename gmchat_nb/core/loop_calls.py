"""The tool loop's calls: each through the tool-call pipeline, then into the conversation.

:class:`LoopCalls` runs one round's calls for :class:`~gmchat_nb.core.loop.ToolLoop`. Every call
goes through :class:`~gmchat_nb.core.toolcalls.ToolCallPipeline` (arguments, access, hooks, the
loop guard, the intent gate, the tool, evidence and charts, the scan, audit, the trace); what
is left here is the turn's side: announcing each call as it starts, counting it against the
spec's guardrails (``max_retries_per_message`` failures, ``max_mutations_per_message``),
keeping its result in the conversation (persisted, with the envelope the model will read), and
a change's confirmation -- opened in the store, waited for or suspended, decided once.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from .charts.tool import CHART
from .events import ChatEvent, ConfirmMutation, ToolCall, ToolResult, error_event
from .project.tools import is_read_tool
from .providers.base import Message, ToolCallEvent
from .toolcalls import ToolCallPipeline, ToolCallRecord
from .turn_state import Decision, LoopLimits, Transport, TurnIO, TurnState

__all__ = ["LoopCalls"]


class LoopCalls:
    """One turn's tool calls in the tool loop."""

    def __init__(
        self,
        pipeline: ToolCallPipeline,
        io: TurnIO,
        limits: LoopLimits,
        transport: Transport,
        *,
        concurrent: bool,
    ) -> None:
        self.pipeline = pipeline
        self.io = io
        self.limits = limits
        self.transport = transport
        self.concurrent = concurrent  # the project's executor runs reads side by side

    async def reads(
        self, messages: list[Message], calls: list[ToolCallEvent], state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """One round's read calls, each announced as it starts.

        Over a remote executor they run concurrently, so all are announced first and their
        results follow in call order. In process they cannot overlap (tasks would only add
        overhead): each call is announced right before it runs and reported right after. A
        ``chart`` call draws a query the round's other reads may be answering: charts run last.
        """
        charts = [call for call in calls if call.name == CHART.name]
        if charts:
            calls = [call for call in calls if call.name != CHART.name]
        if len(calls) > 1 and self.concurrent:
            for call in calls:
                yield ToolCall(id=call.id, name=call.name, args=call.args)
            records = await asyncio.gather(*(self.pipeline.run(call) for call in calls))
            for record in records:
                yield await self.record(messages, record, state)
            calls = []
        for call in calls + charts:
            yield ToolCall(id=call.id, name=call.name, args=call.args)
            record = await self.pipeline.run(call)
            yield await self.record(messages, record, state)
            if record.chart is not None:
                yield record.chart

    async def change(
        self, messages: list[Message], call: ToolCallEvent, state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """A ``mutate`` call: refused, run at once, or held for a person's confirmation (waited
        for here, or -- over SSE -- the turn suspends and a confirm request resumes it)."""
        yield ToolCall(id=call.id, name=call.name, args=call.args)
        if state.mutations >= self.limits.max_mutations:
            yield error_event("mutation_limit")
            return
        state.mutations += 1
        record = await self.pipeline.run(call)
        if not record.pending:
            yield await self.record(messages, record, state)
            return
        if self.transport == "http":
            yield error_event("confirmation_required_transport")
            return
        prepared = record.prepared
        assert prepared is not None
        waiter = await self.io.open_confirmation(
            call, prepared, state, wait=self.transport != "sse"
        )
        yield ConfirmMutation(
            id=call.id,
            mutation=prepared.mutation,
            input=prepared.input,
            expires_in_seconds=self.limits.confirm_timeout_seconds,
            provenance=self.pipeline.scope.guards.provenance(prepared.input),
        )
        if self.transport == "sse":
            return
        decision = await waiter.wait()
        async for event in self.decide(messages, record, decision, state):
            yield event

    async def decide(
        self, messages: list[Message], record: ToolCallRecord, decision: Decision, state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """A person's decision on a held change, turned into its result (run once if
        confirmed)."""
        if decision == "unavailable":
            yield error_event("confirmation_unavailable")
            return
        await self.pipeline.decided(record, decision)
        yield await self.record(messages, record, state)

    async def resume(
        self, messages: list[Message], call: ToolCallEvent, decision: Decision, state: TurnState
    ) -> AsyncIterator[ChatEvent]:
        """A change its suspended turn held, decided: checked again first (the schema or the
        allow-list may have changed since it was asked), then as :meth:`decide`."""
        record = self.pipeline.prepare(call)
        if record.run is not None:
            yield await self.record(messages, record, state)
            return
        async for event in self.decide(messages, record, decision, state):
            yield event

    async def record(
        self, messages: list[Message], record: ToolCallRecord, state: TurnState
    ) -> ToolResult:
        """Count, persist and report one call's result. A change that ran is written at once
        (even while the turn is being cancelled), and a cancel that came while it ran is raised
        once it is (cancelling must never pretend an effect did not happen)."""
        run = record.run
        assert run is not None
        state.tools_used += 1
        if run.failed and is_read_tool(record.name):
            state.failures += 1
        if run.outcome is not None:
            state.queried = True
        message = Message(
            "tool",
            tool_call_id=record.id,
            tool_name=record.name,
            tool_result=run.result,
            envelope=record.envelope,
        )
        messages.append(message)
        await self.io.persist(message, state)
        if record.prepared is not None and record.ran:
            await asyncio.shield(self.io.checkpoint())
            if record.cancelled is not None:
                raise record.cancelled
        return record.result_event()

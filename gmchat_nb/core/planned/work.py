"""What the tasks of one planned turn share: tools that become evidence, and the turn's events.

Every tool call of a task goes through :meth:`TurnWork.call`: it is announced as a ``tool_call``
with its ``task_id`` and runs through the turn's tool-call pipeline
(:class:`~gmchat_nb.core.toolcalls.ToolCallPipeline`, in the turn's scope: the same stages and
the same loop guard as the tool loop's calls; the tasks run concurrently, so their calls take
the scope's lock one at a time, which also numbers the evidence in the order results arrive).
A plan's own query that an earlier call of the turn already answered is served from the
evidence store (the engine reads what a plan needs once); a call of the executor model that
repeats one is the loop guard's to answer (a repeat, then a refusal), or the evidence store's
when the loop guard is switched off. A successful result
becomes an evidence record (``task_1:query:1``) and the pair is persisted as native tool
history, so a follow-up question sees what this turn read.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..events import ChatEvent, ToolCall, ToolResult
from ..guards.stopped import stop_notice
from ..guards.turn import TurnGuards
from ..project.project import Project, QueryOutcome
from ..project.tools import TOOLS, ToolRun
from ..providers.base import Message, TokenUsage, ToolCallEvent
from ..settings.planned import PlannedSettings
from ..toolcalls import ToolCallPipeline
from .catalog import Candidate
from .evidence import EvidenceRecord, EvidenceStore, call_hash, canonical_call_identity
from .roles import RoleProviders

__all__ = ["CallResult", "PlannedIO", "TurnWork"]


class PlannedIO(Protocol):
    """What a planned turn needs of its session (a subset of the loop's TurnIO)."""

    async def persist(self, message: Message, state: Any) -> None: ...

    def record_usage(self, usage: TokenUsage) -> None: ...

    def provider_failed(self, error: BaseException) -> None: ...


@dataclass(frozen=True, slots=True)
class CallResult:
    """One call's result and, when it succeeded, its evidence record."""

    result: Any
    record: EvidenceRecord | None
    identity: str
    cached: bool = False

    @property
    def failed(self) -> bool:
        return isinstance(self.result, dict) and self.result.get("status") == "error"


@dataclass(slots=True)
class TurnWork:
    """The shared state of one planned turn's evidence stage."""

    question: str
    settings: PlannedSettings
    roles: RoleProviders
    pipeline: ToolCallPipeline
    io: PlannedIO
    state: Any
    emit: Callable[[ChatEvent], None]
    project: Project | None = None  # None in GeneralManager's stubbed eval world
    candidates: list[Candidate] = field(default_factory=list)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    task_ids: set[str] = field(default_factory=set)  # every task of the turn, children too
    explicit_completion: bool = False  # GeneralManager's protocol: executors say "complete"
    charts: bool = False  # the ``charts`` setting: a query requirement's chart is drawn
    calls: int = 0
    call_hashes: list[str] = field(default_factory=list)

    @property
    def outcomes(self) -> dict[str, QueryOutcome]:
        """The turn's query results by call id (the scope's)."""
        return self.pipeline.scope.outcomes

    @property
    def guards(self) -> TurnGuards:
        """The turn's defences (the scope's: the tool loop's too, when a plan hands over)."""
        return self.pipeline.scope.guards

    def stopped(self) -> bool:
        """Whether the loop guard ends the turn's executor work (the turn is stuck or a budget
        is spent): the first time, said in a ``loop_guard`` notice; the answer is then written
        from the evidence the tasks have."""
        guards = self.guards
        if guards.stopped_by is not None:
            return True
        reason = guards.stop_reason()
        if reason is None:
            return False
        guards.stopped(reason)
        trace = self.pipeline.scope.trace
        if trace is not None:
            trace.event("loop_guard", stopped_by=reason)
        self.emit(stop_notice(reason))
        return True

    async def call(
        self, task_id: str, name: str, args: dict[str, Any], *, planned: bool = False
    ) -> CallResult:
        """Run one read tool call for ``task_id`` through the pipeline (``planned``: the plan's
        own query, served from this turn's evidence when an earlier call read the same)."""
        self.calls += 1
        call_id = f"{task_id}_call_{self.calls}"
        identity = canonical_call_identity(name, args)
        self.call_hashes.append(call_hash(identity))
        self.emit(ToolCall(id=call_id, name=name, args=args, task_id=task_id))
        event = ToolCallEvent(call_id, name, args)
        # the engine serves what it already read itself: its own plan's queries, and every call
        # when no loop guard is there to answer a model's repeat (GeneralManager's protocol)
        memo = planned or self.guards.loop is None
        record = self.evidence.cached(identity) if memo else None
        served = record is not None  # from the turn's evidence, without running again
        chart = None
        query = None  # the request a query that ran here sent (journaled with its result)
        if record is not None:
            run, frame, duration, flags = ToolRun(record.payload_json()), None, None, None
        else:
            done = await self.pipeline.run(event)
            assert done.run is not None
            run, frame, duration, flags = done.run, done.frame, done.duration_ms, done.flags
            query = done.query
            chart = done.chart
            if done.verdict == "repeat":  # the loop guard's: the earlier call's evidence
                record = self.evidence.cached(identity)
                served = record is not None
                duration = None if served else duration
            tool = TOOLS.get(name)
            if done.ran and not run.failed and tool is not None and tool.evidence is not None:
                record = self.evidence.record(
                    task_id,
                    tool.evidence,
                    run.result,
                    call_identity=identity,
                    provenance=_provenance(name, args),
                )
        await self.io.persist(Message("assistant", tool_calls=(event,)), self.state)
        await self.io.persist(
            Message("tool", tool_call_id=call_id, tool_name=name, tool_result=run.result),
            self.state,
        )
        self.emit(
            ToolResult(
                id=call_id,
                name=name,
                result=run.result,
                frame=frame,
                duration_ms=duration,
                task_id=task_id,
                evidence_id=record.evidence_id if record is not None else None,
                flags=flags,
                query=query,
            )
        )
        if chart is not None:  # reported after its result, as the loop reports one
            self.emit(chart)
        return CallResult(run.result, record, identity, served)


def _provenance(name: str, args: dict[str, Any]) -> dict[str, Any]:
    provenance: dict[str, Any] = {"tool": name}
    manager = args.get("manager")
    if isinstance(manager, str):
        provenance["manager"] = manager[:200]
    return provenance

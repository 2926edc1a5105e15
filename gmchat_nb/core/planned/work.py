"""What the tasks of one planned turn share: tools that become evidence, and the turn's events.

Every tool call of a task goes through :meth:`TurnWork.call`: it is announced as a ``tool_call``
with its ``task_id``, an identical call earlier in the turn is served from the evidence store
without running again (the announced result says so), a successful result becomes an evidence
record (``task_1:query:1``) and the pair is persisted as native tool history, so a follow-up
question sees what this turn read.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..events import ChatEvent, ToolCall, ToolResult
from ..frames import frame_summary
from ..project.project import Project, QueryOutcome
from ..project.tools import TOOLS, ToolRun
from ..providers.base import Message, TokenUsage, ToolCallEvent
from ..settings.planned import PlannedSettings
from .catalog import Candidate
from .evidence import EvidenceRecord, EvidenceStore, call_hash, canonical_call_identity
from .roles import RoleProviders

__all__ = ["CallResult", "PlannedIO", "ToolRunner", "TurnWork"]

ToolRunner = Callable[[str, dict[str, Any]], Awaitable[ToolRun]]


class PlannedIO(Protocol):
    """What a planned turn needs of its session (a subset of the loop's TurnIO)."""

    async def persist(self, message: Message, state: Any) -> None: ...

    def record_usage(self, usage: TokenUsage) -> None: ...

    def tool_finished(self, call: ToolCallEvent, run: ToolRun) -> None: ...

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
    run_tool: ToolRunner
    io: PlannedIO
    state: Any
    emit: Callable[[ChatEvent], None]
    project: Project | None = None  # None in GeneralManager's stubbed eval world
    candidates: list[Candidate] = field(default_factory=list)
    schemas: dict[str, dict[str, Any]] = field(default_factory=dict)
    outcomes: dict[str, QueryOutcome] = field(default_factory=dict)
    evidence: EvidenceStore = field(default_factory=EvidenceStore)
    task_ids: set[str] = field(default_factory=set)  # every task of the turn, children too
    explicit_completion: bool = False  # GeneralManager's protocol: executors say "complete"
    charts: bool = False  # the ``charts`` setting: a query requirement's chart is drawn
    calls: int = 0
    call_hashes: list[str] = field(default_factory=list)
    _tool_lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    async def call(self, task_id: str, name: str, args: dict[str, Any]) -> CallResult:
        """Run (or serve from this turn's evidence) one read tool call for ``task_id``."""
        self.calls += 1
        call_id = f"{task_id}_call_{self.calls}"
        identity = canonical_call_identity(name, args)
        self.call_hashes.append(call_hash(identity))
        self.emit(ToolCall(id=call_id, name=name, args=args, task_id=task_id))
        cached = self.evidence.cached(identity)
        started = time.perf_counter()
        if cached is not None:
            run = ToolRun(cached.payload_json())
            record: EvidenceRecord | None = cached
        else:
            # Remote reads could run side by side, but a task's tool calls are few and the
            # evidence numbering must follow the order results arrive in: one at a time.
            async with self._tool_lock:
                run = await self.run_tool(name, args)
            record = None
            tool = TOOLS.get(name)
            if not run.failed and tool is not None and tool.evidence is not None:
                record = self.evidence.record(
                    task_id,
                    tool.evidence,
                    run.result,
                    call_identity=identity,
                    provenance=_provenance(name, args),
                )
        duration = round((time.perf_counter() - started) * 1000, 3)
        if run.outcome is not None:
            self.outcomes[call_id] = run.outcome
        event = ToolCallEvent(call_id, name, args)
        await self.io.persist(Message("assistant", tool_calls=(event,)), self.state)
        await self.io.persist(
            Message("tool", tool_call_id=call_id, tool_name=name, tool_result=run.result),
            self.state,
        )
        self.io.tool_finished(event, run)
        frame = frame_summary(run.outcome.rows) if run.outcome is not None else None
        self.emit(
            ToolResult(
                id=call_id,
                name=name,
                result=run.result,
                frame=frame,
                duration_ms=None if cached is not None else duration,
                task_id=task_id,
                evidence_id=record.evidence_id if record is not None else None,
            )
        )
        return CallResult(run.result, record, identity, cached is not None)


def _provenance(name: str, args: dict[str, Any]) -> dict[str, Any]:
    provenance: dict[str, Any] = {"tool": name}
    manager = args.get("manager")
    if isinstance(manager, str):
        provenance["manager"] = manager[:200]
    return provenance

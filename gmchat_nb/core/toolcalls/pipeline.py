"""The tool-call pipeline: every tool call of gmchat_nb, whoever makes it, takes this one road.

The chain, in its one written order (:data:`STAGES`):

    arguments → access → hooks → loop_guard → intent → execute → evidence → reference
    → scan → audit → trace

* ``arguments`` (:mod:`.arguments`): the call checked against the tool's declaration;
* ``access`` (:mod:`.access`): a budget, hidden managers, an authenticated caller and a change
  validated against the allow-list;
* ``hooks`` (:mod:`.hooks`): ``tool_called`` (and ``mutation_executed``), once the result is
  known;
* ``loop_guard`` (:mod:`.loop_guard`): a repeat answered from before, then refused; budgets;
* ``intent`` (:mod:`.intent`): who decides a change, and holding it for a person;
* ``execute`` (:mod:`.execute`): the tool runs (the only caller of ``run_tool``);
* ``evidence`` (:mod:`.evidence`): query results kept, rows summarised, charts taken;
* ``reference`` (:mod:`.reference`): an executed call matched against reference calls;
* ``scan`` (:mod:`.scan`): suspicious text flagged, the result's envelope for the model;
* ``audit`` (:mod:`.auditing`): the audit log, and a change's ending recorded;
* ``trace`` (:mod:`.tracing`): the call's span ends (and is exported when the scope has no turn).

Each stage has a part before the tool runs (``check``: in this order, until a stage answers the
call or holds it for a person) and a part once the call has a result (``after``: in the same
order, for every call). The callers: the tool loop (``core/loop.py``), a planned turn's tasks
(``core/planned/work.py``), the agent toolbox (``core/agent/toolbox.py``; stdio and HTTP MCP),
and ``gmchat tool``, which may switch stages off by name (``--skip-stage``); the eval oracle
is a provider, so its calls take the loop's road. What the stages share is a
:class:`~.scope.CallScope`, made by the caller for as long as its calls belong together.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Collection, Iterable
from typing import Final, Literal

from ..guards.turn import DECLINED
from ..providers.base import ToolCallEvent
from .access import AccessStage
from .arguments import ArgumentsStage
from .auditing import AuditStage
from .evidence import EvidenceStage
from .execute import execute
from .hooks import HooksStage
from .intent import IntentStage
from .loop_guard import LoopGuardStage
from .record import ToolCallRecord
from .reference import ReferenceStage
from .scan import ScanStage
from .scope import CallScope
from .stage import Stage
from .tracing import TraceStage, open_span

__all__ = ["EXECUTE", "STAGES", "Decided", "ToolCallPipeline", "UnknownStage"]

EXECUTE: Final = "execute"
_STAGES: Final[tuple[Stage, ...]] = (
    ArgumentsStage(),
    AccessStage(),
    HooksStage(),
    LoopGuardStage(),
    IntentStage(),
    # the tool runs here (execute)
    EvidenceStage(),
    ReferenceStage(),
    ScanStage(),
    AuditStage(),
    TraceStage(),
)
STAGES: Final[tuple[str, ...]] = (
    *(stage.name for stage in _STAGES[:5]),
    EXECUTE,
    *(stage.name for stage in _STAGES[5:]),
)
"""Every stage's name, in the order the chain runs them."""
PREPARE: Final = frozenset({"arguments", "access"})
"""The stages that say whether a change can still be made (a confirmation resumed later)."""

Decided = Literal["confirmed", "rejected", "timed_out"]


class UnknownStage(ValueError):
    """A stage name the pipeline does not have (or ``execute``, which cannot be skipped)."""


class ToolCallPipeline:
    """The chain of stages for one scope's calls; ``skip`` switches stages off by name;
    ``serial``: the caller's calls run concurrently (a planned turn's tasks), and each call
    takes the scope's lock for its whole way through the chain."""

    def __init__(
        self, scope: CallScope, *, skip: Collection[str] = (), serial: bool = False
    ) -> None:
        unknown = sorted(set(skip) - set(STAGES))
        if unknown or EXECUTE in skip:
            names = ", ".join(name for name in STAGES if name != EXECUTE)
            wrong = ", ".join(unknown) or EXECUTE
            raise UnknownStage(f"no stage {wrong} can be skipped; stages: {names}")
        self.scope = scope
        self.skipped = tuple(name for name in STAGES if name in skip)
        self.stages, self._checks, self._afters, self._prepare = _chain(frozenset(skip))
        self._traced = "trace" not in skip
        self._lock = scope.lock if serial else None

    async def run(self, call: ToolCallEvent) -> ToolCallRecord:
        """One call through the chain: its record, with its result, or ``pending`` when a
        person must decide it first (then :meth:`decided`)."""
        lock = self._lock
        if lock is None:
            return await self._run(call)
        async with lock:
            return await self._run(call)

    async def _run(self, call: ToolCallEvent) -> ToolCallRecord:
        record = self._start(call)
        self._check(record, self._checks)
        if record.pending:
            return record
        if record.run is None:
            await execute(record, self.scope)
        else:  # answered by a stage: how long deciding it took
            record.duration_ms = _milliseconds_since(record.started)
        self._after(record)
        return record

    def prepare(self, call: ToolCallEvent) -> ToolCallRecord:
        """A change decided after its turn was suspended, checked again (the schema or the
        allow-list may have changed meanwhile): answered when it can no longer be made, else
        ready for :meth:`decided`."""
        record = self._start(call)
        self._check(record, self._prepare)
        if record.run is not None:
            self._after(record)
        return record

    async def decided(self, record: ToolCallRecord, decision: Decided) -> ToolCallRecord:
        """A held change, decided by a person: run once when confirmed, else answered as
        cancelled; then the stages after execution."""
        record.pending = False
        if decision == "confirmed":
            await execute(record, self.scope)
        else:
            reason = DECLINED[decision]
            record.answer("intent", {"status": "cancelled", "reason": reason}, reason)
            record.duration_ms = None
        self._after(record)
        return record

    def _start(self, call: ToolCallEvent) -> ToolCallRecord:
        record = ToolCallRecord(call)
        if self._traced:
            open_span(record, self.scope)
        return record

    def _check(self, record: ToolCallRecord, stages: Iterable[Stage]) -> None:
        scope = self.scope
        for stage in stages:
            stage.check(record, scope)
            if record.run is not None or record.pending:
                return

    def _after(self, record: ToolCallRecord) -> None:
        scope = self.scope
        for stage in self._afters:
            stage.after(record, scope)


@functools.cache
def _chain(
    skip: frozenset[str],
) -> tuple[tuple[Stage, ...], tuple[Stage, ...], tuple[Stage, ...], tuple[Stage, ...]]:
    """The stages without ``skip``: all, those with a part before the tool, those with one
    after it, and the checks a resumed change takes again (made once per set of skipped
    stages: every turn makes a pipeline)."""
    stages = tuple(stage for stage in _STAGES if stage.name not in skip)
    checks = tuple(stage for stage in stages if _overrides(stage, "check"))
    afters = tuple(stage for stage in stages if _overrides(stage, "after"))
    return stages, checks, afters, tuple(stage for stage in checks if stage.name in PREPARE)


def _milliseconds_since(started: float) -> float:
    """Milliseconds since a ``time.perf_counter()`` reading, to three significant digits."""
    return float(f"{(time.perf_counter() - started) * 1000:.3g}")


def _overrides(stage: Stage, method: str) -> bool:
    return getattr(type(stage), method) is not getattr(Stage, method)

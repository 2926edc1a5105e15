"""One planned turn: plan, resolve the tasks concurrently, synthesize, report coverage.

The session runs :meth:`PlannedTurn.events` in place of the tool loop when ``planned.enabled``.
A plan whose intent is a mutation hands the turn to the unchanged loop (``legacy``), so executors
never hold ``mutate``. Otherwise independent tasks run side by side (``max_concurrent_tasks``),
a dependent task starts when its parents resolved (and is ``dependency_blocked`` when one did
not), the whole evidence stage is bounded by ``evidence_timeout_seconds``, and the answer streams
from the evidence. Exactly one terminal event: ``done`` with ``orchestration`` when anything was
resolved, else the first unresolved task's stable error.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from ..events import ChatEvent, Done, Error, TextChunk, error_event
from ..guards.gates import warning_note
from ..guards.recalled import recall_message
from ..providers.base import Message
from .catalog import Catalog, rank_managers
from .executor import TaskRun, resolve_task
from .plan import ValidatedPlan
from .planner import PlanningFailed, make_plan
from .synthesis import Synthesis, synthesize
from .work import TurnWork

__all__ = ["PlannedTurn", "question_of"]

MAX_SCHEMAS = 3


def question_of(messages: list[Message]) -> tuple[str, str]:
    """The turn's question and the user's question before it (for follow-ups)."""
    asked = [message.content for message in messages if message.role == "user" and message.content]
    return (asked[-1] if asked else ""), (asked[-2] if len(asked) > 1 else "")


def _hash(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class PlannedTurn:
    """The planned path of one turn (see the module docstring)."""

    def __init__(
        self,
        work: TurnWork,
        *,
        catalog: Catalog,
        check_rate: Callable[[], Awaitable[Error | None]],
        audit: Callable[[str, dict[str, Any]], None] = lambda kind, payload: None,
    ) -> None:
        self.work = work
        self.catalog = catalog
        self.check_rate = check_rate
        self.audit = audit
        self.runs: dict[str, TaskRun] = {}

    async def events(
        self, messages: list[Message], legacy: Callable[[], AsyncIterator[ChatEvent]]
    ) -> AsyncIterator[ChatEvent]:
        """The turn's events, ending in one ``done`` or ``error``."""
        started = time.perf_counter()
        question, previous = question_of(messages)
        self.work.question = question
        refused = await self.check_rate()
        if refused is not None:
            yield refused
            return
        self._prepare_candidates(question)
        try:
            plan = await make_plan(
                self.work.roles,
                question,
                self.work.schemas,
                previous,
                on_failure=self.work.io.provider_failed,
                recalled=recall_message(messages),
            )
        except PlanningFailed as failure:
            self._audit_end(failure.reason, started)
            yield error_event(failure.reason)
            return
        lineage = _hash({"question": question, "plan": [task.task_id for task in plan.tasks]})
        self.audit(
            "planned_plan", {"lineage": lineage, "intent": plan.intent, "tasks": len(plan.tasks)}
        )
        if plan.intent == "mutation":
            async for event in legacy():
                yield event
            return
        async for event in self._evidence_stage(plan):
            yield event
        resolved = [run for run in self.runs.values() if run.status == "resolved"]
        unresolved = [run for run in self.runs.values() if run.status != "resolved"]
        for run in unresolved:
            self.audit(
                "planned_task",
                {
                    "lineage": lineage,
                    "task": _hash([lineage, run.task.task_id]),
                    "status": run.status,
                    "reason": run.reason,
                },
            )
        if not resolved:
            reason = unresolved[0].reason or "manager_unresolved"
            self._audit_end(reason, started)
            yield error_event(reason)
            return
        refused = await self.check_rate()
        if refused is not None:
            yield refused
            return
        synthesis = Synthesis()
        async for chunk in synthesize(self.work, question, resolved, unresolved, synthesis):
            yield chunk
        text = synthesis.text
        note = self._gates(text)
        if note:  # the answer stands on evidence, but a gate doubts it: shown, and said
            text += note
            yield TextChunk(content=note)
        await self.work.io.persist(Message("assistant", text), self.work.state)
        orchestration = self._orchestration(resolved, unresolved, synthesis)
        self._audit_end(None, started, orchestration)
        guards = self.work.guards
        yield Done(
            usage=self.work.roles.ledger.total.to_dict(),
            orchestration=orchestration,
            gates=guards.gates_summary(),
            guards=guards.summary(),
        )

    def _gates(self, answer: str) -> str:
        """The completion gates on a synthesized answer (the engine's calculations count as
        facts): a footnote naming what is not verified, or ``""``. A synthesized answer is
        written from the evidence, so there is no corrective request to make."""
        guards = self.work.guards
        for record in self.work.evidence:
            if record.kind == "calculation":
                guards.results.append(record.payload_json())
        failed = [gate for gate in guards.check_answer(answer) if not gate.passed]
        trace = self.work.pipeline.scope.trace
        for gate in failed:
            if trace is not None:
                trace.event("gate", gate=gate.name, passed=False, details=list(gate.details))
        return warning_note(failed) if failed else ""

    def _prepare_candidates(self, question: str) -> None:
        project = self.work.project
        if project is None:
            return
        self.work.candidates = rank_managers(question, project, self.catalog)
        for candidate in self.work.candidates[:MAX_SCHEMAS]:
            self.work.schemas[candidate.manager] = project.get_manager_schema(candidate.manager)

    async def _evidence_stage(self, plan: ValidatedPlan) -> AsyncIterator[ChatEvent]:
        queue: asyncio.Queue[ChatEvent | None] = asyncio.Queue()
        self.work.emit = queue.put_nowait
        self.runs = {task.task_id: TaskRun(task) for task in plan.tasks}
        self.work.task_ids.update(self.runs)
        finished = {task_id: asyncio.Event() for task_id in self.runs}
        gate = asyncio.Semaphore(self.work.settings.max_concurrent_tasks)

        async def one(run: TaskRun) -> None:
            try:
                parents = [self.runs[parent] for parent in run.task.depends_on]
                for parent in parents:
                    await finished[parent.task.task_id].wait()
                if any(parent.status != "resolved" for parent in parents):
                    run.block("dependency_blocked")
                    return
                async with gate:
                    await resolve_task(self.work, run, parents, run)
            finally:
                finished[run.task.task_id].set()

        async def stage() -> None:
            try:
                async with asyncio.timeout(self.work.settings.evidence_timeout_seconds):
                    await asyncio.gather(*(one(run) for run in self.runs.values()))
            except TimeoutError:
                for run in self.runs.values():
                    if run.status in ("pending", "running"):
                        run.block("deadline_exceeded")
            finally:
                queue.put_nowait(None)

        worker = asyncio.create_task(stage())
        try:
            while (event := await queue.get()) is not None:
                yield event
        finally:
            if not worker.done():
                worker.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await worker

    def _orchestration(
        self, resolved: list[TaskRun], unresolved: list[TaskRun], synthesis: Synthesis
    ) -> dict[str, Any]:
        calculations = []
        for record in self.work.evidence:
            if record.kind == "calculation":
                calculations.append(
                    {
                        "evidence_id": record.evidence_id,
                        "task_id": record.task_id,
                        **record.payload_json(),
                    }
                )
        return {
            "status": "partial" if unresolved else "complete",
            "coverage": {"resolved": len(resolved), "total": len(self.runs)},
            "unresolved": [
                {"task_id": run.task.task_id, "reason": run.reason or "manager_unresolved"}
                for run in unresolved
            ],
            "tasks": [run.to_dict() for run in self.runs.values()],
            "calculations": calculations,
            "cited": synthesis.cited,
            "requests": self.work.roles.ledger.to_dict(),
        }

    def _audit_end(
        self, reason: str | None, started: float, orchestration: dict[str, Any] | None = None
    ) -> None:
        payload: dict[str, Any] = {
            "terminal_reason": reason,
            "latency_ms": round((time.perf_counter() - started) * 1000, 1),
            "requests": self.work.roles.ledger.to_dict(),
            "usage": {
                role: usage.to_dict() for role, usage in self.work.roles.ledger.usage.items()
            },
            "evidence_kinds": self.work.evidence.kind_counts(),
            "call_hashes": list(self.work.call_hashes),
        }
        if orchestration is not None:
            payload["coverage"] = orchestration["coverage"]
        self.audit("planned_terminal", payload)

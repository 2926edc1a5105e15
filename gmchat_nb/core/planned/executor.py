"""Resolving one task: the plan's own query first, an executor model only when needed.

A ``query`` requirement whose plan names the query tool's arguments runs at once: the project's
compiler validates it and no executor request is made. Whatever is left goes to an executor model
that is offered only read tools — the ``query`` tool typed for the task's candidate managers (their
names, field names and filter paths as enums) — and answers with tool calls or one JSON action
(GeneralManager's ``complete``, ``block``, ``spawn_children``, ``calculate``). A task completes as
soon as every query requirement has evidence (unless the turn follows GeneralManager's protocol,
where the executor must say ``complete``); calculations bound in the plan are then computed by the
engine. Two identical failing calls end the task as ``manager_unresolved`` (no progress).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..charts.tool import CHART, ChartedQuery, chart_event, run_chart
from ..events import Notice
from ..project.errors import ToolError
from ..project.tools import TOOLS
from ..providers.attempts import StreamResetEvent
from ..providers.base import (
    DoneEvent,
    Message,
    ProviderError,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from ..text import json_depth_exceeds
from .binding import compute_action, compute_bound
from .calculations import CalculationError
from .evidence import EvidenceError, EvidenceRecord, child_alias_id
from .offer import READ_TOOLS, executor_tools
from .plan import PlannedTask, PlanValidationError, validate_children
from .prompts import EXECUTOR_PROMPT, reference_message
from .work import CallResult, TurnWork

__all__ = ["REASONS", "TaskRun", "resolve_task"]

REASONS = (
    "invalid_plan",
    "manager_unresolved",
    "dependency_blocked",
    "budget_exhausted",
    "deadline_exceeded",
    "provider_failed",
    "synthesis_failed",
)


@dataclass(slots=True)
class TaskRun:
    """A task's progress through the turn."""

    task: PlannedTask
    status: str = "pending"
    reason: str | None = None
    linked: dict[str, list[str]] = field(default_factory=dict)
    managers: list[str] = field(default_factory=list)
    rounds: int = 0  # executor requests of this task's subtree (a root counts its children's)
    children: list[TaskRun] = field(default_factory=list)
    spawned: int = 0
    unbound: str | None = None  # why a bound calculation could not be computed

    @property
    def evidence_ids(self) -> list[str]:
        return list(dict.fromkeys(item for ids in self.linked.values() for item in ids))

    def link(self, requirement_id: str, record: EvidenceRecord) -> None:
        ids = self.linked.setdefault(requirement_id, [])
        if record.evidence_id not in ids:
            ids.append(record.evidence_id)

    def missing_queries(self) -> list[str]:
        return [
            item.requirement_id
            for item in self.task.requirements
            if item.kind in ("query", "schema", "path") and not self.linked.get(item.requirement_id)
        ]

    def block(self, reason: str) -> None:
        self.status = "blocked" if reason != "budget_exhausted" else "budget_exhausted"
        self.reason = reason if reason in REASONS else "manager_unresolved"

    def to_dict(self) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "task_id": self.task.task_id,
            "objective": self.task.objective,
            "managers": list(self.managers),
            "status": self.status,
            "depends_on": list(self.task.depends_on),
        }
        if self.reason:
            payload["reason"] = self.reason
        if self.unbound:
            payload["calculation_failed"] = self.unbound
        return payload


def _executor_role(run: TaskRun) -> str:
    features = run.task.routing_features
    return "complex_executor" if features else "simple_executor"


async def resolve_task(work: TurnWork, run: TaskRun, parents: list[TaskRun], root: TaskRun) -> None:
    """Resolve ``run`` (its status and evidence are updated in place; never raises for a model's
    or a tool's mistake — those become the task's reason)."""
    run.status = "running"
    failures: list[dict[str, Any]] = []
    for requirement in run.task.requirements:
        if requirement.kind != "query" or requirement.query is None:
            continue
        args = dict(requirement.query)
        outcome = await work.call(run.task.task_id, TOOLS.query.name, args, planned=True)
        _note_manager(run, args)
        if outcome.record is not None:
            run.link(requirement.requirement_id, outcome.record)
            if work.charts and requirement.chart is not None:
                _draw(work, requirement.chart, outcome)
        elif outcome.failed:
            failures.append(
                {"call": {"name": TOOLS.query.name, "args": args}, "result": outcome.result}
            )
    if not work.explicit_completion and _finish_if_covered(work, run):
        return
    await _executor_rounds(work, run, parents, root, failures)


def _draw(work: TurnWork, intent: Mapping[str, Any], outcome: CallResult) -> None:
    """The chart a plan asked of a query requirement's rows, as the ``chart`` tool draws it
    (its evidence id names the query); one that cannot be drawn is a ``notice`` saying why."""
    if outcome.record is None:
        return
    result = outcome.result if isinstance(outcome.result, dict) else {}
    data = result.get("data")
    rows: list[Any] = data if isinstance(data, list) else []
    evidence_id = outcome.record.evidence_id
    try:
        built = run_chart(intent, [ChartedQuery(evidence_id, rows)], query=evidence_id)
    except ToolError as error:
        work.emit(
            Notice(
                kind="chart",
                message=f"The chart of {evidence_id} could not be drawn: {error.message}",
                details={"evidence_id": evidence_id, "code": error.code},
            )
        )
        return
    work.emit(chart_event(f"{evidence_id}:chart", built))


def _note_manager(run: TaskRun, args: dict[str, Any]) -> None:
    manager = args.get("manager")
    if isinstance(manager, str) and manager not in run.managers:
        run.managers.append(manager[:200])


def _finish_if_covered(work: TurnWork, run: TaskRun) -> bool:
    if run.missing_queries():
        return False
    _complete(work, run)
    return True


async def _executor_rounds(
    work: TurnWork,
    run: TaskRun,
    parents: list[TaskRun],
    root: TaskRun,
    failures: list[dict[str, Any]],
) -> None:
    role = _executor_role(run)
    tools = executor_tools(work)
    # The reference rides in the system message and the task's objective is the user's: a model
    # (the offline one included) reads the task as the question it answers.
    messages = [
        Message("system", f"{EXECUTOR_PROMPT}\n{reference_message(work, run, parents, failures)}"),
        Message("user", run.task.objective or work.question),
    ]
    failed_calls: set[str] = set()
    while True:
        if work.stopped():  # the loop guard ended the turn's work: it answers from its evidence
            if run.evidence_ids:
                _complete(work, run)
            else:
                run.block("budget_exhausted")
            return
        if root.rounds >= work.settings.max_rounds_per_task:
            run.block("budget_exhausted")
            return
        root.rounds += 1
        try:
            text, calls = await _one_round(work, role, messages, tools)
        except ProviderError as error:
            work.io.provider_failed(error)
            if role != "fallback_executor":
                role = "fallback_executor"  # the fallback profile gets one chance
                continue
            run.block("provider_failed")
            return
        if calls:
            messages.append(Message("assistant", text, tool_calls=tuple(calls)))
            repeated = False
            for call in calls:
                result, failed = await _run_call(work, run, call)
                messages.append(
                    Message("tool", tool_call_id=call.id, tool_name=call.name, tool_result=result)
                )
                if failed is not None:
                    repeated = repeated or failed in failed_calls
                    failed_calls.add(failed)
            if repeated:  # the same failing call twice: the executor is going round in circles
                run.block("manager_unresolved")
                return
            # A model's query may be a step on the way (a probe for a value), so its task ends
            # when the executor says so (text or an action), not at its first result.
            continue
        reply = await _act(work, run, root, parents, text)
        if reply is None:
            return
        messages.append(Message("assistant", text))
        messages.append(Message("user", reply))


async def _one_round(
    work: TurnWork, role: str, messages: list[Message], tools: list[ToolDefinition]
) -> tuple[str, list[ToolCallEvent]]:
    """One executor request: its text and calls, counted against the turn's loop guard."""
    text: list[str] = []
    calls: list[ToolCallEvent] = []
    tokens = 0
    async for event in work.roles.request(role, messages, tools):
        if isinstance(event, TextChunkEvent):
            text.append(event.content)
        elif isinstance(event, ToolCallEvent):
            calls.append(event)
        elif isinstance(event, DoneEvent):
            tokens = event.usage.input_tokens + event.usage.output_tokens
        elif isinstance(event, StreamResetEvent):  # asked again: the broken answer is withdrawn
            text.clear()
            calls.clear()
    answer = "".join(text)
    work.guards.after_response(text=answer, calls=len(calls), tokens=tokens)
    return answer, calls


async def _run_call(work: TurnWork, run: TaskRun, call: ToolCallEvent) -> tuple[Any, str | None]:
    """Run one executor call: its result, and its identity when it failed."""
    offered = READ_TOOLS + ((CHART.name,) if work.charts else ())
    if call.name not in offered or call.error:
        message = call.error or f"Only the read tools {', '.join(offered)} are available here."
        return {"status": "error", "code": "invalid_arguments", "message": message}, (
            f"{call.name}:{message}"
        )
    outcome = await work.call(run.task.task_id, call.name, dict(call.args))
    if call.name == TOOLS.query.name:
        _note_manager(run, call.args)
    if outcome.record is not None:
        run.link(_requirement_for(run, outcome.record), outcome.record)
    return outcome.result, outcome.identity if outcome.failed else None


_REFUSED = "That action was not accepted; answer with tool calls or one JSON action."


async def _act(
    work: TurnWork, run: TaskRun, root: TaskRun, parents: list[TaskRun], text: str
) -> str | None:
    """Apply a text answer: a JSON action, or plain text (done when there is evidence).
    ``None`` when the task is finished, else what the executor is told next."""
    action = _decode_action(text)
    if action is None:
        if run.evidence_ids:
            _complete(work, run)
        else:
            run.block("manager_unresolved")
        return None
    kind = action.get("action")
    if kind == "complete":
        for evidence_id in action.get("evidence_ids") or []:
            if isinstance(evidence_id, str) and evidence_id in work.evidence:
                record = work.evidence.get(evidence_id)
                if record.evidence_id not in run.evidence_ids:
                    run.link(_requirement_for(run, record), record)
        if run.evidence_ids:
            _complete(work, run)
        else:
            run.block("manager_unresolved")
        return None
    if kind == "block":
        run.block(str(action.get("reason") or "manager_unresolved"))
        return None
    if kind == "spawn_children":
        await _spawn(work, run, root, parents, action.get("children"))
        if run.status != "running":
            return None
        ids = [item for child in run.children for item in child.evidence_ids]
        return f"The children finished; their evidence: {', '.join(ids) or 'none'}."
    if kind in ("calculate", "calculate_batch"):
        items = action.get("calculations") if kind == "calculate_batch" else [action]
        done = []
        try:
            for item in items or []:
                record = compute_action(work, run, item)
                run.link(str(item.get("requirement_id") or record.evidence_id), record)
                done.append(f"{record.evidence_id} = {record.payload_json().get('text')}")
        except (CalculationError, EvidenceError, TypeError, ValueError) as error:
            return f"The calculation was not accepted: {str(error)[:200]}"
        # The executor goes on (GeneralManager's executors then say complete).
        return f"Calculated: {'; '.join(done) or 'nothing'}."
    return _REFUSED


def _requirement_for(run: TaskRun, record: EvidenceRecord) -> str:
    """The first requirement of the record's kind still without evidence (else its own id)."""
    for requirement in run.task.requirements:
        if requirement.kind == record.kind and not run.linked.get(requirement.requirement_id):
            return requirement.requirement_id
    return record.evidence_id


def _complete(work: TurnWork, run: TaskRun) -> None:
    """Resolve ``run``: its evidence stands; a bound calculation the rows cannot feed (a row
    without the grouped relation, a text value) is left out and named, not the whole task."""
    try:
        compute_bound(work, run)
    except (CalculationError, EvidenceError) as error:
        run.unbound = str(error)[:200]
    run.status = "resolved"


async def _spawn(
    work: TurnWork, run: TaskRun, root: TaskRun, parents: list[TaskRun], payload: Any
) -> None:
    try:
        children = validate_children(run.task, payload, sorted(work.task_ids), run.spawned)
    except PlanValidationError:
        run.block("invalid_plan")
        return
    run.spawned += len(children)
    work.task_ids.update(child.task_id for child in children)
    for child in children:
        child_run = TaskRun(child)
        run.children.append(child_run)
        await resolve_task(work, child_run, [*parents, run], root)
        for evidence_id in child_run.evidence_ids:
            record = work.evidence.get(evidence_id)
            alias = child_alias_id(run.task.task_id, evidence_id)
            if alias not in work.evidence:
                work.evidence.alias(alias, record)


def _decode_action(text: str) -> dict[str, Any] | None:
    stripped = text.strip().removeprefix("```json").removeprefix("```").removesuffix("```")
    try:
        value = json.loads(stripped)
    except (ValueError, RecursionError):  # a model's text may nest past the parser's stack
        return None
    if json_depth_exceeds(value):
        return None
    return value if isinstance(value, dict) and "action" in value else None

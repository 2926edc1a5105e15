"""Plans: the planner's JSON, validated before any data is read.

The shape is GeneralManager 0.87.1's (``{"intent", "tasks": [{task_id, objective, depends_on,
requirements: [{requirement_id, kind, description, operation, binding?}], completion_criteria,
routing_features}]}``), so its recorded plans and eval scripts validate here unchanged. One
addition makes a simple read cheap: a ``query`` requirement may carry ``query`` — the ``query``
tool's arguments (manager, fields, filters, ...). When the project's compiler accepts them the
engine runs the query with no executor request at all.

Limits as GeneralManager's: 1–6 root tasks, dependencies only on earlier roots and one level deep,
at most two children per root (spawned by an executor). Fields a small model gets wrong but the
engine can derive (``completion_criteria``, ``routing_features``) are derived, not refused.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from .calculations import OPERATIONS

__all__ = [
    "MAX_CHILDREN_PER_ROOT",
    "MAX_ROOT_TASKS",
    "PLAN_SCHEMA",
    "PlanValidationError",
    "PlannedTask",
    "Requirement",
    "ValidatedPlan",
    "validate_children",
    "validate_plan",
]

MAX_ROOT_TASKS = 6
MAX_CHILDREN_PER_ROOT = 2
MAX_REQUIREMENTS = 8
KINDS = ("schema", "path", "query", "calculation")
_TASK_ID = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,39}")
_TEXT_LIMIT = 500

Intent = Literal["read", "mutation"]


class PlanValidationError(ValueError):
    """Why a plan was refused (shown to the planner once, for its correction; never to users)."""


@dataclass(frozen=True, slots=True)
class Requirement:
    """One piece of evidence a task needs."""

    requirement_id: str
    kind: str
    description: str = ""
    operation: str | None = None
    binding: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    query: Mapping[str, Any] | None = None  # gmchat_nb: the query tool's arguments, if known
    chart: Mapping[str, Any] | None = None  # gmchat_nb: a chart of the query's rows (an intent)


@dataclass(frozen=True, slots=True)
class PlannedTask:
    """A root task or a bounded child of one."""

    task_id: str
    objective: str
    depends_on: tuple[str, ...]
    requirements: tuple[Requirement, ...]
    parent: str | None = None

    @property
    def completion_criteria(self) -> tuple[str, ...]:
        return tuple(item.requirement_id for item in self.requirements)

    @property
    def routing_features(self) -> tuple[str, ...]:
        """Derived, as GeneralManager requires them to be."""
        features = []
        if self.depends_on:
            features.append("has_dependency")
        if any(item.kind == "calculation" for item in self.requirements):
            features.append("requires_calculation")
        if sum(item.kind == "query" for item in self.requirements) > 1:
            features.append("multiple_queries")
        return tuple(features)

    @property
    def named_managers(self) -> tuple[str, ...]:
        """Managers the plan names for this task's queries."""
        names = [str(item.query.get("manager")) for item in self.requirements if item.query]
        return tuple(dict.fromkeys(names))


@dataclass(frozen=True, slots=True)
class ValidatedPlan:
    """An accepted plan: a read with 1–6 roots, or a mutation with none."""

    intent: Intent
    tasks: tuple[PlannedTask, ...]


def _text(value: object, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise PlanValidationError(f"{where} must be a string")
    return value[:_TEXT_LIMIT]


def _identifier(value: object, where: str) -> str:
    if not isinstance(value, str) or not _TASK_ID.fullmatch(value):
        raise PlanValidationError(
            f"{where} must be an identifier such as 'task_1' (letters, digits, _ and -)"
        )
    return value


def _requirement(raw: object, where: str) -> Requirement:
    if not isinstance(raw, Mapping):
        raise PlanValidationError(f"{where} must be an object")
    kind = raw.get("kind", "query")
    if kind not in KINDS:
        raise PlanValidationError(f"{where}.kind must be one of {', '.join(KINDS)}")
    operation = raw.get("operation")
    if kind == "calculation":
        if operation not in OPERATIONS:
            raise PlanValidationError(
                f"{where}.operation must be one of {', '.join(OPERATIONS)} for a calculation"
            )
    elif operation is not None:
        operation = None  # only calculations have one; a stray value changes nothing
    binding = raw.get("binding") or {}
    if not isinstance(binding, Mapping):
        raise PlanValidationError(f"{where}.binding must be an object")
    query = raw.get("query")
    on_query = kind == "query"
    if query is not None and (not on_query or not isinstance(query, Mapping)):
        raise PlanValidationError(f"{where}.query must be an object on a query requirement")
    chart = raw.get("chart")
    if chart is not None and (not on_query or not isinstance(chart, Mapping)):
        raise PlanValidationError(f"{where}.chart must be an object on a query requirement")
    return Requirement(
        _identifier(raw.get("requirement_id"), f"{where}.requirement_id"),
        kind,
        _text(raw.get("description"), f"{where}.description"),
        operation,
        MappingProxyType(dict(binding)),
        MappingProxyType(dict(query)) if query is not None else None,
        MappingProxyType(dict(chart)) if chart is not None else None,
    )


def _task(raw: object, where: str, parent: str | None = None) -> PlannedTask:
    if not isinstance(raw, Mapping):
        raise PlanValidationError(f"{where} must be an object")
    task_id = _identifier(raw.get("task_id"), f"{where}.task_id")
    depends = raw.get("depends_on") or []
    if not isinstance(depends, list) or not all(isinstance(item, str) for item in depends):
        raise PlanValidationError(f"{where}.depends_on must be a list of task ids")
    requirements_raw = raw.get("requirements")
    if not isinstance(requirements_raw, list) or not requirements_raw:
        raise PlanValidationError(f"{where}.requirements must be a non-empty list")
    if len(requirements_raw) > MAX_REQUIREMENTS:
        raise PlanValidationError(f"{where} has more than {MAX_REQUIREMENTS} requirements")
    requirements = tuple(
        _requirement(item, f"{where}.requirements[{number}]")
        for number, item in enumerate(requirements_raw)
    )
    ids = [item.requirement_id for item in requirements]
    if len(set(ids)) != len(ids):
        raise PlanValidationError(f"{where} repeats a requirement_id")
    for item in requirements:
        sources = item.binding.get("source_requirement_ids") or []
        if item.kind == "calculation" and any(source not in ids for source in sources):
            raise PlanValidationError(
                f"{where}: calculation '{item.requirement_id}' binds a requirement the task "
                "does not have"
            )
    return PlannedTask(
        task_id,
        _text(raw.get("objective"), f"{where}.objective"),
        tuple(dict.fromkeys(depends)),
        requirements,
        parent,
    )


def validate_plan(payload: object) -> ValidatedPlan:
    """A plan, or :class:`PlanValidationError` saying what to correct."""
    if not isinstance(payload, Mapping):
        raise PlanValidationError("the plan must be a JSON object")
    intent = payload.get("intent")
    if intent not in ("read", "mutation"):
        raise PlanValidationError("intent must be 'read' or 'mutation'")
    if intent == "mutation":
        return ValidatedPlan("mutation", ())  # the legacy loop handles writes; tasks are moot
    raw_tasks = payload.get("tasks")
    if not isinstance(raw_tasks, list) or not 1 <= len(raw_tasks) <= MAX_ROOT_TASKS:
        raise PlanValidationError(f"a read plan needs 1 to {MAX_ROOT_TASKS} tasks")
    tasks: list[PlannedTask] = []
    seen: dict[str, PlannedTask] = {}
    for number, raw in enumerate(raw_tasks):
        task = _task(raw, f"tasks[{number}]")
        if task.task_id in seen:
            raise PlanValidationError(f"task_id '{task.task_id}' is used twice")
        for parent in task.depends_on:
            if parent not in seen:
                raise PlanValidationError(
                    f"task '{task.task_id}' depends on '{parent}', which is not an earlier task"
                )
            if seen[parent].depends_on:
                raise PlanValidationError(
                    f"task '{task.task_id}' depends on '{parent}', which has dependencies "
                    "itself (one level of dependencies at most)"
                )
        seen[task.task_id] = task
        tasks.append(task)
    return ValidatedPlan("read", tuple(tasks))


def validate_children(
    parent: PlannedTask, payload: object, existing: Sequence[str], spawned: int
) -> tuple[PlannedTask, ...]:
    """Children an executor spawns for ``parent``: at most two per root, never recursive, ids new
    across the turn, depending only on their root."""
    if parent.parent is not None:
        raise PlanValidationError("a child task cannot spawn children")
    if not isinstance(payload, list) or not payload:
        raise PlanValidationError("children must be a non-empty list of tasks")
    if spawned + len(payload) > MAX_CHILDREN_PER_ROOT:
        raise PlanValidationError(f"a task may spawn at most {MAX_CHILDREN_PER_ROOT} children")
    children: list[PlannedTask] = []
    taken = set(existing)
    for number, raw in enumerate(payload):
        child = _task(raw, f"children[{number}]", parent=parent.task_id)
        if child.task_id in taken:
            raise PlanValidationError(f"task_id '{child.task_id}' is already used")
        if any(item != parent.task_id for item in child.depends_on):
            raise PlanValidationError("a child may depend only on the task that spawned it")
        taken.add(child.task_id)
        children.append(child)
    return tuple(children)


_REQUIREMENT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "requirement_id": {"type": "string"},
        "kind": {"type": "string", "enum": list(KINDS)},
        "description": {"type": "string"},
        "operation": {"type": ["string", "null"], "enum": [*OPERATIONS, None]},
        "binding": {
            "type": "object",
            "properties": {
                "source_requirement_ids": {"type": "array", "items": {"type": "string"}},
                "value_path": {"type": "array", "items": {"type": ["string", "integer"]}},
                "group_by": {"type": "array", "items": {"type": ["string", "integer"]}},
            },
        },
        "query": {
            "type": "object",
            "description": "The query tool's arguments when you know them.",
            "properties": {
                "manager": {"type": "string"},
                "fields": {"type": "array", "items": {"type": "string"}},
                "filters": {"type": "object"},
                "order_by": {"type": "array", "items": {"type": "string"}},
                "limit": {"type": "integer"},
            },
            "required": ["manager", "fields"],
        },
        "chart": {
            "type": "object",
            "description": "When the user asks for a chart of this query's rows: the chart "
            "tool's arguments (mark, x, y, color, aggregate, sort, limit, title).",
        },
    },
    "required": ["requirement_id", "kind"],
}

PLAN_SCHEMA: Mapping[str, Any] = MappingProxyType(
    {
        "type": "object",
        "properties": {
            "intent": {"type": "string", "enum": ["read", "mutation"]},
            "tasks": {
                "type": "array",
                "maxItems": MAX_ROOT_TASKS,
                "items": {
                    "type": "object",
                    "properties": {
                        "task_id": {"type": "string"},
                        "objective": {"type": "string"},
                        "depends_on": {"type": "array", "items": {"type": "string"}},
                        "requirements": {
                            "type": "array",
                            "minItems": 1,
                            "maxItems": MAX_REQUIREMENTS,
                            "items": _REQUIREMENT_SCHEMA,
                        },
                    },
                    "required": ["task_id", "objective", "requirements"],
                },
            },
        },
        "required": ["intent", "tasks"],
    }
)
"""The JSON schema a planner's structured output follows (every vendor's way)."""

"""What each role is told: short instructions and one compact JSON reference message.

GeneralManager sends every role an 8–10k-character instruction; these are a few hundred
characters each, because the structure lives where it is enforced — the plan's JSON schema, the
executor's typed tool schema — and the reference carries only the candidate managers' names,
fields, filters and relations.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ..project.names import clip

if TYPE_CHECKING:
    from .executor import TaskRun
    from .work import TurnWork

__all__ = [
    "EXECUTOR_PROMPT",
    "PLANNER_PROMPT",
    "SYNTHESIZER_PROMPT",
    "compact_schema",
    "planner_message",
    "reference_message",
]

PLANNER_PROMPT = (
    "You plan how to answer a question about an application's data. Reply with one JSON plan. "
    'intent is "mutation" when the user asks to create, change or delete data (then tasks is '
    'empty), else "read". A read has 1-6 tasks, each about one manager from CANDIDATES; a task '
    "may depend on an earlier one. Give each query requirement a query: the manager, fields to "
    "show, filters as Django-style paths (name__icontains, material__name), order_by, limit. "
    "Use only names listed in CANDIDATES. For numbers the question asks for (how many, total, "
    "average, minimum, maximum, difference, ratio, percentage) add a calculation requirement "
    "with operation and binding {source_requirement_ids, value_path (the field inside a row), "
    "group_by}; never compute numbers yourself."
)

EXECUTOR_PROMPT = (
    "You gather the evidence for one task of a plan. Call the read tools (query with the "
    "listed managers, fields and filters). When the evidence is complete, reply with JSON "
    '{"action": "complete", "evidence_ids": [...]}; if the data does not exist, '
    '{"action": "block", "reason": "manager_unresolved"}. Never invent data.'
)

SYNTHESIZER_PROMPT = (
    "Answer the user's question from the tool results below only. Be brief and concrete; "
    "name the records. Cite evidence ids in brackets, e.g. [task_1:query:1]. The engine has "
    "computed every number shown as a calculation: quote those values, never compute your own. "
    "If part of the question could not be answered, say which part."
)

_MAX_DESCRIPTION = 120
_MAX_PARENT_ROWS = 30


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A manager's schema in the fewest characters a planner needs."""
    filters = {
        name: [item for item in spec.get("lookups", ()) if item != "exact"]
        for name, spec in schema.get("filters", {}).items()
    }
    return {
        "manager": schema.get("manager"),
        "description": clip(schema.get("description") or "", _MAX_DESCRIPTION),
        "fields": {name: spec.get("type") for name, spec in schema.get("fields", {}).items()},
        "relations": {
            name: spec.get("target") for name, spec in schema.get("relations", {}).items()
        },
        "filters": {name: lookups for name, lookups in filters.items()},
    }


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def planner_message(question: str, schemas: dict[str, dict[str, Any]], previous: str = "") -> str:
    """The planner's one user message: the question, prior context and the candidates."""
    reference: dict[str, Any] = {
        "question": question,
        "candidates": [compact_schema(schema) for schema in schemas.values()],
    }
    if previous:
        reference["previous_question"] = clip(previous, 300)
    return "REFERENCE_DATA=" + _json(reference)


def reference_message(
    work: TurnWork, run: TaskRun, parents: list[TaskRun], failures: list[dict[str, Any]]
) -> str:
    """An executor's one user message: its task, its parents' evidence, the candidates."""
    task = run.task
    reference: dict[str, Any] = {
        "question": work.question,
        "task_id": task.task_id,
        "objective": task.objective,
        "requirements": [
            {
                "requirement_id": item.requirement_id,
                "kind": item.kind,
                "description": item.description,
                "operation": item.operation,
            }
            for item in task.requirements
        ],
        "candidates": [compact_schema(schema) for schema in work.schemas.values()],
    }
    parent_evidence = []
    for parent in parents:
        for evidence_id in parent.evidence_ids:
            record = work.evidence.get(evidence_id)
            payload = record.payload_json()
            if isinstance(payload, dict) and isinstance(payload.get("data"), list):
                payload = {**payload, "data": payload["data"][:_MAX_PARENT_ROWS]}
            parent_evidence.append({"evidence_id": evidence_id, "payload": payload})
    if parent_evidence:
        reference["parent_evidence"] = parent_evidence
    if failures:
        reference["failed_calls"] = failures
    return "REFERENCE_DATA=" + _json(reference)

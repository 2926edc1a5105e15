"""The offline provider as a planner: its reading of a question, given as a plan.

A write request is a mutation plan (the legacy loop, with its confirmation gate, takes it). A read
is one task whose objective is the question — the offline executor then reads it exactly as the
legacy loop would — plus a calculation requirement when the question asks for a number over a
field the candidate managers have ("total unit price", "average density", "how many"), so the
engine, not prose, computes it. A question that asks for a chart names its query and the chart
of it on the query requirement when the candidates tell enough (:mod:`.chart_plan`): the engine
runs the query and draws the chart with no executor request.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from ...project.names import split_words
from ...project.tools import TOOLS
from ..base import Message
from .chart_plan import chart_plan
from .question import WRITE_REQUEST

__all__ = ["offline_plan", "reference_of"]

_OPERATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("average", re.compile(r"\b(?:average|mean)\b", re.IGNORECASE)),
    ("sum", re.compile(r"\b(?:total|sum)\b", re.IGNORECASE)),
    ("maximum", re.compile(r"\b(?:maximum|highest|largest)\b", re.IGNORECASE)),
    ("minimum", re.compile(r"\b(?:minimum|lowest|smallest)\b", re.IGNORECASE)),
    ("count", re.compile(r"\bhow many\b|\bnumber of\b", re.IGNORECASE)),
)
_NUMERIC = ("Int", "Float", "Decimal", "MeasurementType", "MeasurementScalar")


def reference_of(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    """The question and candidates of a planner request (``REFERENCE_DATA=`` JSON)."""
    for message in reversed(messages):
        if message.role == "user" and message.content.startswith("REFERENCE_DATA="):
            try:
                reference = json.loads(message.content.removeprefix("REFERENCE_DATA="))
            except ValueError:
                break
            if isinstance(reference, dict):
                candidates = reference.get("candidates")
                return str(reference.get("question", "")), (
                    candidates if isinstance(candidates, list) else []
                )
    last = next((m.content for m in reversed(messages) if m.role == "user"), "")
    return last, []


def _numeric_field(question: str, candidate: Mapping[str, Any]) -> str | None:
    asked = set(split_words(question))
    fields = candidate.get("fields")
    for name, kind in fields.items() if isinstance(fields, Mapping) else ():
        if str(kind) in _NUMERIC and set(split_words(name)) <= asked:
            return str(name)
    return None


def offline_plan(
    question: str,
    candidates: list[dict[str, Any]],
    recalled: tuple[dict[str, Any], dict[str, Any] | None] | None = None,
) -> dict[str, Any]:
    """The plan for ``question`` (see the module docstring); ``recalled``: the query and chart
    of a recalled verified query that fits it, which the plan names as they are."""
    if WRITE_REQUEST.search(question):
        return {"intent": "mutation", "tasks": []}
    rows: dict[str, Any] = {
        "requirement_id": "rows",
        "kind": TOOLS.query.evidence,
        "description": question[:200],
    }
    requirements: list[dict[str, Any]] = [rows]
    row = candidates[0] if candidates and isinstance(candidates[0], Mapping) else {}
    charted = recalled if recalled is not None else chart_plan(question, candidates)
    if charted is not None:
        rows["query"] = charted[0]
        if charted[1] is not None:
            rows["chart"] = charted[1]
        manager = charted[0]["manager"]
        row = next(
            (c for c in candidates if isinstance(c, Mapping) and c.get("manager") == manager), row
        )
    for operation, pattern in _OPERATIONS:
        if not pattern.search(question):
            continue
        field = None if operation == "count" else _numeric_field(question, row)
        if operation != "count" and field is None:
            continue  # a number over no field the data has: leave it to the prose
        requirements.append(
            {
                "requirement_id": operation,
                "kind": "calculation",
                "operation": operation,
                "binding": {
                    "source_requirement_ids": ["rows"],
                    "value_path": [field] if field else [],
                },
            }
        )
        break
    task = {"task_id": "task_1", "objective": question, "requirements": requirements}
    return {"intent": "read", "tasks": [task]}

"""Calculations bound to evidence: the plan's ``binding`` blocks and executors' actions.

A calculation requirement names its source requirements and a ``value_path`` inside each row
(``["unitPrice"]``), optionally a ``group_by`` path; the engine computes it in ``Decimal`` over
exactly the rows those requirements' evidence holds. Nothing a model wrote is a number here: the
operands are paths into evidence, never literals. ``count`` counts rows and uses the server's
``total_count`` when the rows were capped, so "how many" is right beyond the row limit.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from .calculations import CalculationError, Operand, Quantity, calculate, calculate_evidence
from .evidence import EvidenceRecord

if TYPE_CHECKING:
    from .executor import TaskRun
    from .work import TurnWork

__all__ = ["compute_action", "compute_bound"]

BINARY = ("difference", "ratio", "percentage")


def _path(value: object, where: str) -> tuple[str | int, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.replace("__", ".").split("."))
    if isinstance(value, Sequence) and all(isinstance(step, str | int) for step in value):
        return tuple(value)
    raise CalculationError(f"{where} must be a list of keys")


def _rows_counted(record: EvidenceRecord) -> int:
    payload = record.payload_json()
    rows = payload.get("data") if isinstance(payload, dict) else None
    if not isinstance(rows, list):
        raise CalculationError(f"{record.evidence_id} holds no rows to count")
    total = payload.get("total_count")
    if payload.get("complete") is False and isinstance(total, int) and total > len(rows):
        return total  # the server counted every row; only some were fetched
    return len(rows)


def _manual(
    work: TurnWork,
    run: TaskRun,
    requirement_id: str,
    operation: str,
    result: Quantity,
    inputs: list[dict[str, Any]],
) -> EvidenceRecord:
    payload = {
        "operation": operation,
        "value": result.text().split(" ")[0],
        "unit": result.unit,
        "text": result.text(),
        "inputs": inputs,
        "input_count": len(inputs),
    }
    return work.evidence.record(
        run.task.task_id,
        "calculation",
        payload,
        provenance={"operation": operation},
        requirement_id=requirement_id,
    )


def _sources(run: TaskRun, binding: Mapping[str, Any], work: TurnWork) -> list[EvidenceRecord]:
    names = binding.get("source_requirement_ids") or [
        item.requirement_id for item in run.task.requirements if item.kind == "query"
    ]
    records = [
        work.evidence.get(evidence_id)
        for name in names
        for evidence_id in run.linked.get(str(name), [])
    ]
    records = [record for record in records if record.kind == "query"]
    if not records:
        raise CalculationError("the calculation's source requirements have no query evidence")
    return records


def _bound(
    work: TurnWork, run: TaskRun, requirement_id: str, operation: str, binding: Mapping[str, Any]
) -> EvidenceRecord:
    records = _sources(run, binding, work)
    value_path = binding.get("value_path")
    group_by = _path(binding.get("group_by"), "group_by") or None
    if operation == "count" and group_by is None:
        counts = [Quantity(Decimal(_rows_counted(record))) for record in records]
        total = calculate("sum", counts)
        inputs = [
            {"evidence_id": r.evidence_id, "path": ["total_count"], "value": q.text()}
            for r, q in zip(records, counts, strict=True)
        ]
        return _manual(work, run, requirement_id, "count", total, inputs)
    if operation == "sum_products":
        paths = binding.get("value_paths") or value_path
        if not isinstance(paths, Sequence) or len(paths) != 2:
            raise CalculationError("sum_products needs two value paths")
        operands = [
            Operand(records[0].evidence_id, ("data", "*", *_path(p, "value_path"))) for p in paths
        ]
        return calculate_evidence(
            run.task.task_id, operation, operands, work.evidence, requirement_id=requirement_id
        )
    path = _path(value_path, "value_path")
    if operation in BINARY and len(records) == 2 and not path:
        counts = [Quantity(Decimal(_rows_counted(record))) for record in records]
        inputs = [
            {"evidence_id": r.evidence_id, "path": ["total_count"], "value": q.text()}
            for r, q in zip(records, counts, strict=True)
        ]
        return _manual(work, run, requirement_id, operation, calculate(operation, counts), inputs)
    operands = [Operand(record.evidence_id, ("data", "*", *path)) for record in records]
    return calculate_evidence(
        run.task.task_id,
        operation,
        operands,
        work.evidence,
        requirement_id=requirement_id,
        group_by=group_by,
    )


def compute_bound(work: TurnWork, run: TaskRun) -> None:
    """Compute every calculation requirement of ``run`` that has a binding and no evidence yet."""
    for requirement in run.task.requirements:
        if requirement.kind != "calculation" or run.linked.get(requirement.requirement_id):
            continue
        if requirement.operation is None or not requirement.binding:
            continue  # an executor computes it with an explicit action
        record = _bound(
            work, run, requirement.requirement_id, requirement.operation, requirement.binding
        )
        run.link(requirement.requirement_id, record)


def compute_action(work: TurnWork, run: TaskRun, item: Any) -> EvidenceRecord:
    """An executor's ``calculate`` action: operation and operands as evidence paths."""
    if not isinstance(item, Mapping):
        raise CalculationError("a calculation must be an object")
    operands_raw = item.get("operands")
    if not isinstance(operands_raw, list) or not operands_raw:
        raise CalculationError("operands must be a non-empty list of {evidence_id, path}")
    operands = []
    for operand in operands_raw:
        if not isinstance(operand, Mapping) or not isinstance(operand.get("evidence_id"), str):
            raise CalculationError("each operand needs an evidence_id")
        operands.append(Operand(operand["evidence_id"], _path(operand.get("path"), "path")))
    group_by = _path(item.get("group_by"), "group_by") or None
    return calculate_evidence(
        run.task.task_id,
        str(item.get("operation")),
        operands,
        work.evidence,
        group_by=group_by,
    )

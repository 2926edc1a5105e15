"""The evidence stage: what a result becomes beyond the model's answer.

A query's result is kept in the scope's ``outcomes`` (its rows are the turn's DataFrames, its
evidence rows and what a chart may draw) and summarised for displays (``frame``: rows and
columns) and its request journaled (:func:`journaled_query`: the document and variables it
sent, what its evidence and an exported notebook show without compiling it again); a ``chart``
call's drawn chart is taken from the scope's charts to be reported after its result.
"""

from __future__ import annotations

from typing import Any

from ..charts.tool import CHART
from ..frames import frame_summary
from ..project import QueryOutcome
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["EvidenceStage", "journaled_query"]


class EvidenceStage(Stage):
    name = "evidence"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        run = record.run
        if run is None or not record.ran:
            return
        if run.outcome is not None:
            scope.outcomes[record.id] = run.outcome
            record.frame = frame_summary(run.outcome.rows)
            record.query = journaled_query(run.outcome)
        elif record.name == CHART.name and scope.charts is not None:
            record.chart = scope.charts.take(record.id)


def journaled_query(outcome: QueryOutcome) -> dict[str, Any]:
    """What a query sent, as its ``tool_result`` journals it: ``{"manager", "document",
    "variables"}`` (the first page's variables), with ``pages`` (the other pages' variables) and
    ``window`` (``[start, end]``: the rows the chat kept of what the pages hold) when it read
    several pages or a window of them."""
    first, *pages = outcome.variables or [{}]
    query: dict[str, Any] = {
        "manager": outcome.manager,
        "document": outcome.document,
        "variables": first,
    }
    if pages:
        query["pages"] = pages
    plan = outcome.plan
    if pages or plan.window_start:
        query["window"] = [plan.window_start, plan.window_start + plan.limit]
    return query

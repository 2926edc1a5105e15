"""The evidence stage: what a result becomes beyond the model's answer.

A query's result is kept in the scope's ``outcomes`` (its rows are the turn's DataFrames, its
evidence rows and what a chart may draw) and summarised for displays (``frame``: rows and
columns); a ``chart`` call's drawn chart is taken from the scope's charts to be reported after
its result.
"""

from __future__ import annotations

from ..charts.tool import CHART
from ..frames import frame_summary
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["EvidenceStage"]


class EvidenceStage(Stage):
    name = "evidence"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        run = record.run
        if run is None or not record.ran:
            return
        if run.outcome is not None:
            scope.outcomes[record.id] = run.outcome
            record.frame = frame_summary(run.outcome.rows)
        elif record.name == CHART.name and scope.charts is not None:
            record.chart = scope.charts.take(record.id)

"""A turn's charts: the ``chart`` calls a tool loop runs over the queries it has answered."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..events import Chart
from ..project.errors import ToolError
from ..project.tools import ToolRun
from .tool import ChartedQuery, chart_event, run_chart

__all__ = ["TurnCharts"]


class _Rows(Protocol):
    @property
    def rows(self) -> list[dict[str, Any]]: ...


class TurnCharts:
    """Runs a turn's ``chart`` calls over ``outcomes`` (the turn's query results by call id, as
    the loop records them) and holds each drawn chart's event until its result is reported."""

    def __init__(self, outcomes: Mapping[str, _Rows]) -> None:
        self.outcomes = outcomes
        self._drawn: dict[str, Chart] = {}

    def run(self, call_id: str, args: Any) -> ToolRun:
        """One ``chart`` call's result (never raises: a mistake is a result the model reads)."""
        if not isinstance(args, Mapping):
            return ToolRun(
                ToolError(
                    "invalid_arguments", "The arguments of chart must be a JSON object."
                ).to_result()
            )
        queries = [ChartedQuery(key, outcome.rows) for key, outcome in self.outcomes.items()]
        try:
            built = run_chart(args, queries)
        except ToolError as error:
            return ToolRun(error.to_result())
        self._drawn[call_id] = chart_event(call_id, built)
        return ToolRun(built.summary())

    def take(self, call_id: str) -> Chart | None:
        """The chart ``call_id`` drew, once (``None`` when it drew none)."""
        return self._drawn.pop(call_id, None)

"""A result table's chart, for the **Chart** button of the widget's and the side panel's tables:
what a chart of the rows may use, and the suggested chart or the one a picker asks for.

One builder for both, so the widget (from its kernel's outcomes) and the server's chart route
(from the journal) answer alike; a mistake in a picker's choice is the answer's ``error``, as a
``chart`` call's would be its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..project.errors import ToolError
from .intent import ChartIntent
from .spec import build_chart
from .suggest import chart_options, suggest_intent
from .tool import chart_event

__all__ = ["chart_answer"]


def chart_answer(
    rows: Sequence[Mapping[str, Any]], call_id: str, intent: Any = None
) -> dict[str, Any]:
    """``{columns, marks, aggregates, intent, chart, error}`` for the rows of the query
    ``call_id``: the suggested chart without ``intent``, else the one ``intent`` (a picker's
    choice) asks for. ``chart`` is the chart event's JSON (id ``suggested:<call_id>``, no
    sequence); ``error`` is ``{code, message}`` when it cannot be drawn."""
    answer: dict[str, Any] = {**chart_options(rows), "intent": None, "chart": None, "error": None}
    try:
        if intent is None:
            wanted = suggest_intent(rows, query=call_id)
            if wanted is None:
                return answer
        elif isinstance(intent, Mapping):
            wanted = replace(ChartIntent.from_args(intent), query=call_id)
        else:
            raise ToolError("invalid_arguments", "A chart's intent is a JSON object.")
        answer["intent"] = wanted.to_dict()
        built = build_chart(rows, wanted)
    except ToolError as error:
        answer["error"] = {"code": error.code, "message": error.message}
        return answer
    event = chart_event(f"suggested:{call_id}", built).to_dict()
    event.pop("sequence", None)
    answer["intent"] = built.intent.to_dict()
    answer["chart"] = event
    return answer

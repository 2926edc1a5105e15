"""The ``chart`` tool: declared like the project's tools, run over the turn's own query results.

It is not one of the project's tools (:data:`~gmchat_nb.core.project.tools.TOOLS`, GeneralManager's
set): it reads no data, it draws a result the turn already holds. The ``charts`` setting offers
it (on by default); off, a model sees exactly GeneralManager's tools. A chart's data comes from
the query result, never from the model: the model declares columns and a mark.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ..events import Chart
from ..project.errors import ToolError
from ..project.names import clip, quoted_or
from ..project.tools import Tool
from .intent import AGGREGATES, MARKS, SORTS, ChartIntent
from .spec import BuiltChart, build_chart

__all__ = ["CHART", "ChartedQuery", "chart_event", "run_chart"]

CHART: Final = Tool(
    name="chart",
    description="Chart a query result of this turn: a mark and columns as the result names "
    "them ('material.name').",
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "description": "Its call id (default: latest)."},
            "mark": {"type": "string", "enum": list(MARKS)},
            "x": {"type": "string"},
            "y": {"type": "string", "description": "Numbers; omit to count."},
            "color": {"type": "string"},
            "aggregate": {"type": "string", "enum": list(AGGREGATES)},
            "sort": {"type": "string", "enum": list(SORTS)},
            "limit": {"type": "integer", "minimum": 1},
            "title": {"type": "string"},
        },
        "required": ["mark", "x"],
        "additionalProperties": False,
    },
    access="read",
    evidence=None,
    prompt_lines=(
        "Asked for a chart: query, then call chart on that result; never write chart code.",
    ),
)


@dataclass(frozen=True, slots=True)
class ChartedQuery:
    """A query result a chart may draw: its rows and the id a chart names it by."""

    evidence_id: str
    rows: Sequence[Mapping[str, Any]]


def run_chart(
    args: Mapping[str, Any],
    queries: Sequence[ChartedQuery],
    aliases: Mapping[str, str] = {},
    *,
    query: str | None = None,
) -> BuiltChart:
    """Build the chart a ``chart`` call asks for from the turn's ``queries`` (oldest first;
    ``aliases`` maps another id of a query, such as a planned evidence id, to its call id;
    ``query``, when given, is the query drawn whatever ``args`` name). Raises
    :class:`ToolError` for anything that cannot be drawn."""
    intent = ChartIntent.from_args(args)
    if query is not None:
        intent = replace(intent, query=query)
    drawn = _find(intent.query, queries, aliases)
    built = build_chart(drawn.rows, intent)
    return BuiltChart(
        built.spec,
        replace(built.intent, query=drawn.evidence_id),
        built.marks,
        built.title,
        built.notes,
    )


def _find(
    wanted: str | None, queries: Sequence[ChartedQuery], aliases: Mapping[str, str]
) -> ChartedQuery:
    if not queries:
        raise ToolError(
            "unknown_query",
            "There is no query result in this turn to chart: call query first, then chart it.",
        )
    if wanted is None:
        return queries[-1]
    wanted = aliases.get(wanted, wanted)
    for query in queries:
        if query.evidence_id == wanted:
            return query
    ids = [query.evidence_id for query in queries]
    raise ToolError(
        "unknown_query",
        f"No query of this turn has the id '{clip(wanted)}'. Its queries: {quoted_or(ids[-8:])} "
        "(or leave query out for the latest).",
    )


def chart_event(call_id: str, built: BuiltChart) -> Chart:
    """The ``chart`` event a drawn chart becomes."""
    return Chart(
        id=call_id,
        evidence_id=built.intent.query or "",
        title=built.title,
        spec=built.spec,
        intent=built.intent.to_dict(),
        marks=built.marks,
    )

"""A sensible chart for a result without a model: picked from its columns' kinds, the way a
person would (Vanna 2's rule, on the same kinds the intent is checked against).

category and number -> bar, date and number -> line, two numbers -> point, one number ->
histogram, only categories -> a bar of counts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from .aggregate import MAX_MARKS
from .columns import Table
from .intent import AGGREGATES, MARKS, ChartIntent

__all__ = ["SUGGESTED_LIMIT", "chart_options", "suggest_intent"]

SUGGESTED_LIMIT: Final = 25
"""A suggested bar chart of more categories shows the largest ones."""


def _is_key(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.lower() == "id" or last.endswith(("Id", "_id"))


def suggest_intent(
    rows: Iterable[Mapping[str, Any]] | Table, query: str | None = None
) -> ChartIntent | None:
    """The chart a result suggests (``query`` names it), or ``None`` when it has nothing a chart
    can show (no rows, or only lists)."""
    table = rows if isinstance(rows, Table) else Table(rows)
    if not table.rows:
        return None
    by_kind: dict[str, list[str]] = {"quantitative": [], "temporal": [], "nominal": []}
    for name, kind in table.kinds.items():
        if kind in by_kind and not (kind == "quantitative" and _is_key(name)):
            by_kind[kind].append(name)
    numbers, dates, categories = by_kind["quantitative"], by_kind["temporal"], by_kind["nominal"]
    if categories:
        x = categories[0]
        distinct = len({str(row.get(x)) for row in table.rows})
        limit = SUGGESTED_LIMIT if distinct > SUGGESTED_LIMIT else None
        if numbers:
            return ChartIntent(mark="bar", x=x, y=numbers[0], limit=limit, query=query)
        if not dates:
            return ChartIntent(mark="bar", x=x, aggregate="count", limit=limit, query=query)
    if dates and numbers:
        return ChartIntent(mark="line", x=dates[0], y=numbers[0], query=query)
    if len(numbers) >= 2 and len(table.rows) <= MAX_MARKS:
        return ChartIntent(mark="point", x=numbers[0], y=numbers[1], query=query)
    if numbers:
        return ChartIntent(mark="histogram", x=numbers[0], query=query)
    if dates:
        return ChartIntent(mark="line", x=dates[0], aggregate="count", query=query)
    return None


def chart_options(rows: Iterable[Mapping[str, Any]] | Table) -> dict[str, Any]:
    """What a chart picker offers for a result: ``{columns: [{name, kind}], marks,
    aggregates}`` (a ``list`` column cannot be drawn)."""
    table = rows if isinstance(rows, Table) else Table(rows)
    return {
        "columns": [{"name": name, "kind": kind} for name, kind in table.kinds.items()],
        "marks": list(MARKS),
        "aggregates": list(AGGREGATES),
    }

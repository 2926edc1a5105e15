"""An intent and a result's rows become a Vega-Lite v5 specification, built here, never written
by a model.

The spec is inert by construction: the data is inline (``data.values``, one row per mark, fields
named ``x``, ``y``, ``color`` and a bin's ``x2``), the result's own column names appear only as
titles (text, never field paths Vega would parse), and it has no ``url``, expression,
``calculate``, ``params`` or signals. :func:`check_spec` says so for a spec that comes from
anywhere else (the journal, a client).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Final

from ..project.errors import ToolError
from ..project.names import clip, did_you_mean, quoted_or, suggestion_hint
from .aggregate import MAX_MARKS, Point, aggregate_points, bin_values, has_repeats, order_points
from .columns import Table, as_category, as_number, as_temporal
from .intent import ChartIntent

__all__ = ["SCHEMA", "BuiltChart", "build_chart", "check_spec"]

SCHEMA: Final = "https://vega.github.io/schema/vega-lite/v5.json"
HEIGHT: Final = 240

# Keys a Vega-Lite spec could use to fetch, run an expression or keep state; none is ever built
# here, and a spec holding one is refused wherever a spec is read back.
FORBIDDEN_KEYS: Final = frozenset(
    {
        "url", "href", "expr", "signal", "signals", "params", "selection", "calculate",
        "labelExpr", "filter", "transform", "datasets", "image", "usermeta", "loader",
        "lookup", "sequence", "graticule", "sphere", "on", "update", "bind", "test", "param",
    }
)  # fmt: skip
MAX_SPEC_DEPTH: Final = 16
_WORDS: Final = {"quantitative": "numbers", "temporal": "dates", "nominal": "text", "list": "lists"}


@dataclass(frozen=True, slots=True)
class BuiltChart:
    """A chart ready to draw: its spec, the intent as applied (an aggregate filled in when the
    rows needed one), how many marks it draws, its title and notes for the model."""

    spec: dict[str, Any]
    intent: ChartIntent
    marks: int
    title: str
    notes: tuple[str, ...] = field(default=())

    def summary(self) -> dict[str, Any]:
        """What the model reads back: the chart described, not its data (it has the data)."""
        described: dict[str, Any] = {
            "status": "ok",
            "chart": {**self.intent.to_dict(), "marks": self.marks, "title": self.title},
            "message": f"The chart is shown to the user under the query's table ({self.marks} "
            "marks). Describe what it shows from the query's data; do not list its values "
            "again.",
        }
        if self.notes:
            described["notes"] = list(self.notes)
        return described


def build_chart(rows: Iterable[Mapping[str, Any]], intent: ChartIntent) -> BuiltChart:
    """The chart ``intent`` asks for, drawn from ``rows`` (a query's rows as it returned them)."""
    table = Table(rows)
    if not table.rows:
        raise ToolError(
            "empty_result", "The query returned no rows: there is nothing to chart. Say so."
        )
    for role in ("x", "y", "color"):
        name = getattr(intent, role)
        if name is not None:
            _check_column(table, role, name)
    if intent.mark == "histogram":
        return _histogram(table, intent)
    return _grouped(table, intent)


def _check_column(table: Table, role: str, name: str) -> None:
    kind = table.kinds.get(name)
    if kind is None:
        hint = suggestion_hint(did_you_mean(name, table.columns))
        raise ToolError(
            "unknown_column",
            f"The result has no column '{clip(name)}' for {role}.{hint} Columns: "
            f"{', '.join(repr(clip(c, 60)) for c in table.columns[:30])}.",
        )
    if not any(row.get(name) is not None for row in table.rows):
        raise ToolError(
            "empty_result", f"'{clip(name)}' has no value in any row: nothing to chart. Say so."
        )
    if kind == "list":
        raise ToolError(
            "invalid_chart",
            f"'{clip(name)}' holds lists (a to-many relation): chart a query of the related "
            "manager instead.",
        )


def _numbers_hint(table: Table) -> str:
    numbers = [c for c, kind in table.kinds.items() if kind == "quantitative"]
    return f" Number columns: {quoted_or(numbers[:8])}." if numbers else " It has none."


def _histogram(table: Table, intent: ChartIntent) -> BuiltChart:
    if table.kinds[intent.x] != "quantitative":
        raise ToolError(
            "invalid_chart",
            f"A histogram needs a number column on x; '{clip(intent.x)}' holds "
            f"{_WORDS[table.kinds[intent.x]]}.{_numbers_hint(table)} For categories use 'bar' with "
            "aggregate 'count'.",
        )
    if intent.y is not None or intent.color is not None or intent.aggregate not in (None, "count"):
        raise ToolError(
            "invalid_chart",
            "A histogram counts rows per range of x: leave out y, color and aggregate.",
        )
    values = [v for v in (as_number(row.get(intent.x)) for row in table.rows) if v is not None]
    bins = bin_values(values)
    x_title = clip(intent.x, 100)
    title = intent.title or f"Distribution of {x_title}"
    spec = _spec(
        title,
        "bar",
        bins,
        {
            "x": {"field": "x", "type": "quantitative", "bin": {"binned": True}, "title": x_title},
            "x2": {"field": "x2"},
            "y": {"field": "y", "type": "quantitative", "title": "Count of rows"},
        },
    )
    applied = replace(intent, aggregate="count")
    return BuiltChart(spec, applied, len(bins), title, _left_out(len(table.rows) - len(values)))


def _grouped(table: Table, intent: ChartIntent) -> BuiltChart:
    mark, x_kind = intent.mark, table.kinds[intent.x]
    if mark in ("line", "area", "point") and x_kind == "nominal":
        raise ToolError(
            "invalid_chart",
            f"A {mark} chart needs dates or numbers on x; '{clip(intent.x)}' holds text. Use "
            "'bar' (or 'arc') for categories.",
        )
    if mark == "arc" and intent.color is not None:
        raise ToolError("invalid_chart", "An arc chart colours its slices by x: leave out color.")
    aggregate = intent.aggregate
    if intent.y is None:
        if mark == "point" or aggregate not in (None, "count"):
            raise ToolError(
                "invalid_chart",
                f"A {mark} chart with aggregate '{aggregate or 'none'}' needs a number column "
                f"on y.{_numbers_hint(table)} Or use aggregate 'count' to count rows.",
            )
        aggregate = "count"
    elif table.kinds[intent.y] != "quantitative" and aggregate != "count":
        raise ToolError(
            "invalid_chart",
            f"y must be a number column; '{clip(intent.y)}' holds {_WORDS[table.kinds[intent.y]]}."
            f"{_numbers_hint(table)} Or use aggregate 'count'.",
        )
    x_type = _x_type(mark, x_kind)
    points, dropped = _points(table, intent, x_type)
    if not points:
        raise ToolError(
            "empty_result",
            f"No row has both a {clip(intent.x)} and a {clip(intent.y or 'value')}: nothing to "
            "chart.",
        )
    if aggregate is None and mark != "point" and has_repeats(points):
        aggregate = "sum"  # a bar per category, a line point per date: several rows add up
    if aggregate is not None:
        points = aggregate_points(points, aggregate)
    sort = intent.sort or ("-y" if x_type == "nominal" and mark in ("bar", "arc") else "x")
    points = order_points(points, sort, intent.limit)
    if len(points) > MAX_MARKS:
        raise ToolError(
            "too_many_marks",
            f"That chart would draw {len(points):,} marks (at most {MAX_MARKS:,}): set 'limit', "
            "an aggregate, or use a histogram.",
        )
    applied = replace(intent, aggregate=aggregate, sort=sort)
    y_title = _y_title(intent.y, aggregate)
    x_title = clip(intent.x, 100)
    title = intent.title or _title(mark, x_title, y_title, intent.color)
    encoding = _encoding(mark, x_type, x_title, y_title, intent.color)
    values = [point.to_json() for point in points]
    spec = _spec(title, mark, values, encoding)
    return BuiltChart(spec, applied, len(points), title, _left_out(dropped))


def _x_type(mark: str, kind: str) -> str:
    if mark in ("bar", "arc"):
        return "nominal" if kind == "nominal" else "ordinal"
    return kind  # temporal or quantitative (nominal was refused)


def _points(table: Table, intent: ChartIntent, x_type: str) -> tuple[list[Point], int]:
    points: list[Point] = []
    dropped = 0
    for row in table.rows:
        x = _x_value(row.get(intent.x), x_type)
        y = as_number(row.get(intent.y)) if intent.y is not None else None
        if x is None or (intent.y is not None and y is None and intent.aggregate != "count"):
            dropped += 1
            continue
        color = as_category(row.get(intent.color)) if intent.color is not None else None
        points.append(Point(x, y, color))
    return points, dropped


def _x_value(value: Any, x_type: str) -> Any:
    if x_type == "quantitative":
        return as_number(value)
    if x_type == "temporal":
        return as_temporal(value)
    if value is None:
        return None
    number = as_number(value) if x_type == "ordinal" else None
    if number is not None:
        return int(number) if number.is_integer() else number
    return as_category(value)


def _y_title(y: str | None, aggregate: str | None) -> str:
    if y is None or (aggregate == "count" and y is None):
        return "Count of rows"
    name = clip(y, 100)
    if aggregate is None:
        return name
    return {"count": "Count of", "sum": "Sum of", "mean": "Mean of", "min": "Minimum of",
            "max": "Maximum of"}[aggregate] + f" {name}"  # fmt: skip


def _title(mark: str, x_title: str, y_title: str, color: str | None) -> str:
    joined = f"{y_title} against {x_title}" if mark == "point" else f"{y_title} by {x_title}"
    return joined + (f", by {clip(color, 100)}" if color else "")


def _encoding(
    mark: str, x_type: str, x_title: str, y_title: str, color: str | None
) -> dict[str, Any]:
    x: dict[str, Any] = {"field": "x", "type": x_type, "title": x_title}
    if x_type in ("nominal", "ordinal"):
        x["sort"] = None  # the order computed here (the values' order in data)
    y = {"field": "y", "type": "quantitative", "title": y_title}
    if mark == "arc":
        return {"theta": y, "color": {**x, "title": x_title}}
    encoding: dict[str, Any] = {"x": x, "y": y}
    if color is not None:
        encoding["color"] = {"field": "color", "type": "nominal", "title": clip(color, 100)}
    return encoding


def _spec(
    title: str, mark: str, values: list[dict[str, Any]], encoding: dict[str, Any]
) -> dict[str, Any]:
    return {
        "$schema": SCHEMA,
        "title": title,
        "width": "container",
        "height": HEIGHT,
        "data": {"values": values},
        "mark": {"type": mark, "tooltip": True},
        "encoding": encoding,
    }


def _left_out(count: int) -> tuple[str, ...]:
    if count <= 0:
        return ()
    rows = "1 row" if count == 1 else f"{count} rows"
    return (f"{rows} without a value to draw {'was' if count == 1 else 'were'} left out.",)


def check_spec(spec: Any) -> None:
    """Raise ``ValueError`` unless ``spec`` looks like one :func:`build_chart` makes: a JSON
    object with the v5 ``$schema``, inline data only and no key that can fetch or evaluate."""
    if not isinstance(spec, dict):
        raise ValueError("a chart spec is a JSON object")
    if spec.get("$schema") != SCHEMA:
        raise ValueError("a chart spec names the Vega-Lite v5 schema")
    data = spec.get("data")
    if (
        not isinstance(data, dict)
        or set(data) != {"values"}
        or not isinstance(data["values"], list)
    ):
        raise ValueError("a chart spec's data is inline values only")
    stack: list[tuple[Any, int]] = [(spec, 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_SPEC_DEPTH:
            raise ValueError("a chart spec is nested too deeply")
        if isinstance(value, dict):
            for key, item in value.items():
                if not isinstance(key, str) or key in FORBIDDEN_KEYS:
                    raise ValueError(f"a chart spec may not hold {clip(key)!r}")
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            stack.extend((item, depth + 1) for item in value)

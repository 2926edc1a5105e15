"""Charts for questions that ask for one: the phrasing rule, the chart the words ask for, and the
words of a chart request that are no values to look up.

**When a chart is drawn.** A question asks for a chart (:func:`asks_for_chart`) when, outside
quotes, it uses a picture word in any of its forms -- chart, plot, graph, diagram, histogram, pie,
donut, visualise/visualize (visualisation), draw (drew, drawn) -- or asks for the rows "as bars",
"as a line" or "as a pie", and no "no", "not", "without" or "don't" right before that word denies
it ("list the parts by material, no chart"). Nothing else asks for one: "by", "per" and "for each"
also group questions for rows ("list parts sorted by name", "orders placed by Acme", "number of
purchase orders for each supplier"), and "over time", "trend" or "distribution" only shape a
chart that a picture word asked for.

**Which chart.** In a question that asks for one:

* the grouping is what follows "by", "per", "for each" or "of each" (:mod:`.grouping`): a field
  of the row manager, a to-one relation (``material.name``, ``supplier.country``) or the row
  manager itself; the first phrase that names one wins, and one that names nothing ("placed by
  Acme") stays a value to look up;
* the mark is the first the words name: ``histogram`` ("histogram"), ``arc`` ("pie", "donut",
  "share", "proportion"), ``point`` ("scatter", "against", "versus"), ``area``, ``bar`` ("bar",
  "column"), ``line`` ("line"); else ``histogram`` for the "distribution" of a named number that
  nothing groups, ``line`` for the over-time words ("over time", "trend", "timeline", "monthly",
  "per day/week/month/quarter/year") or a date grouping, and ``bar`` otherwise;
* x is the grouping, else the row's label; the over-time words (and a line or area) put the row
  manager's first date field on x instead (the dates themselves: nothing is binned by month),
  which the query then reads, and a category grouping then colours the marks; a histogram's x,
  and a scatter's x and y, are the numbers the question names;
* y is the first number column the question names other than x ("quantity", "unit price"); with
  none, rows are counted;
* the aggregate: "average"/"mean" -> ``mean``, "total"/"sum" -> ``sum``, "maximum"/"max" ->
  ``max``, "minimum"/"min" -> ``min``, "number of"/"how many"/"count" -> ``count`` (y left out);
  otherwise ``sum`` of the named number, or ``count``.

The classic loop declares a ``chart`` call of that intent after its final query, checked by
building it once on the rows (what cannot be built falls back to the chart the columns suggest);
the planned engine's offline planner names the query and the same intent in its plan
(:mod:`.chart_plan`), the columns' kinds read from the schema instead of the rows. Either way the
query of a chart asks for every row one call reads, not the answer's first fifty (unless the
question asks for some: "the top 5"), and the classic answer says when that was not all of them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from ...charts import ChartIntent, Table, build_chart, suggest_intent
from ...project.errors import ToolError
from ...project.names import split_words
from .conversation import Call
from .grouping import Group, is_key, name_forms
from .schemas import field_kind, schema_fields
from .words import Token

__all__ = [
    "ChartAsk",
    "asks_for_chart",
    "chart_args",
    "chart_fields",
    "chart_intent",
    "chart_sentence",
    "chart_words",
]

_PICTURE: Final = re.compile(
    r"\b(?:charts?|chart(?:ed|ing)|plots?|plott(?:ed|ing)|graphs?|graph(?:ed|ing)|diagrams?"
    r"|histograms?|pies?|donuts?|doughnuts?|visuali[sz](?:e|es|ed|ing|ations?)"
    r"|draws?|drawn|drew|drawing"
    r"|as\s+(?:an?\s+)?(?:bars?|lines?|pie|donut|histogram|scatter))\b",
    re.IGNORECASE,
)
_DENIED: Final = re.compile(
    r"\b(?:no|not|without|never|don'?t|do\s+not)\s+(?:(?:an?|any|the)\s+)?$", re.IGNORECASE
)
_QUOTED: Final = re.compile(r"\"[^\"]*\"|“[^”]*”")
# Marks, first match wins (module docstring); "distribution" is read apart (it needs a number).
_MARKS: Final = (
    ("histogram", re.compile(r"\bhistograms?\b", re.IGNORECASE)),
    ("arc", re.compile(r"\b(?:pies?|donuts?|doughnuts?|shares?|proportions?)\b", re.IGNORECASE)),
    ("point", re.compile(r"\b(?:scatter|against|versus|vs)\b", re.IGNORECASE)),
    ("area", re.compile(r"\barea\b", re.IGNORECASE)),
    ("bar", re.compile(r"\b(?:bars?|columns?)\b", re.IGNORECASE)),
    ("line", re.compile(r"\blines?\b", re.IGNORECASE)),
)
# Words that put dates on x: a line unless another mark is named ("bars over time").
_OVER_TIME: Final = re.compile(
    r"\b(?:over\s+time|trends?|timeline|per\s+(?:day|week|month|quarter|year)"
    r"|daily|weekly|monthly|quarterly|yearly)\b",
    re.IGNORECASE,
)
_DISTRIBUTION: Final = re.compile(r"\bdistribution\b", re.IGNORECASE)
_AGGREGATES: Final = (
    ("mean", re.compile(r"\b(?:average|mean|avg)\b", re.IGNORECASE)),
    ("sum", re.compile(r"\b(?:total|sum)\b", re.IGNORECASE)),
    ("max", re.compile(r"\b(?:maximum|max)\b", re.IGNORECASE)),
    ("min", re.compile(r"\b(?:minimum|min)\b", re.IGNORECASE)),
    ("count", re.compile(r"\bhow\s+many\b|\bnumber\s+of\b|\bcount\b", re.IGNORECASE)),
)
# Words of a chart request that name no value: the reading leaves them alone in such a question
# ("parts per material as a bar chart" looks for no part called "bar").
_VOCABULARY: Final = frozenset(
    """
    chart charts charted charting plot plots plotted plotting graph graphs graphed graphing
    diagram diagrams histogram histograms pie pies donut donuts doughnut doughnuts visualise
    visualize visualised visualized visualising visualizing visualisation visualization
    visualisations visualizations draw draws drawn drew drawing bar bars line lines area column
    columns scatter against versus vs share shares proportion proportions breakdown distribution
    trend trends timeline daily weekly monthly quarterly yearly day days week weeks month months
    quarter quarters year years average mean avg sum total maximum max minimum min count counts
    """.split()  # noqa: SIM905
)
_TEMPORAL_MARKS: Final = ("line", "area")


def asks_for_chart(question: str) -> bool:
    """Whether ``question`` asks for a picture (the rule in the module docstring)."""
    text = _QUOTED.sub(lambda match: " " * len(match.group()), question)
    return any(not _DENIED.search(text[: match.start()]) for match in _PICTURE.finditer(text))


@dataclass(frozen=True, slots=True)
class ChartAsk:
    """What the words of a chart question ask for, before any column is known."""

    mark: str | None
    aggregate: str | None
    distribution: bool
    over_time: bool  # dates on x: the query reads a date field

    @classmethod
    def read(cls, question: str) -> ChartAsk:
        """The mark and aggregate the words of ``question`` name (``None``: not named)."""
        mark = next((name for name, pattern in _MARKS if pattern.search(question)), None)
        over_time = bool(_OVER_TIME.search(question))
        if mark is None and over_time:
            mark = "line"
        aggregate = next((name for name, pattern in _AGGREGATES if pattern.search(question)), None)
        distribution = bool(_DISTRIBUTION.search(question))
        return cls(mark, aggregate, distribution, over_time or mark in _TEMPORAL_MARKS)


def chart_words(tokens: Sequence[Token]) -> set[int]:
    """The indices of the words of a chart request that are no value (``bar``, ``pie``, the
    "number" of "number of", ...)."""
    following = [token.lower for token in tokens[1:]] + [""]
    return {
        index
        for index, token in enumerate(tokens)
        if token.lower in _VOCABULARY or (token.lower == "number" and following[index] == "of")
    }


def chart_fields(ask: ChartAsk, schema: Mapping[str, Any], group: Group | None) -> list[Any]:
    """Fields a chart needs beyond those the question names: the grouping, and for a line or an
    area over time (no date grouping) the row manager's first date field."""
    extra: list[Any] = [group.field] if group is not None else []
    dates = [name for name, info in schema_fields(schema).items() if field_kind(info) == "date"]
    if ask.over_time and dates and (group is None or group.field not in dates):
        extra.append(dates[0])
    return extra


def _named(tokens: Sequence[Token], kinds: Mapping[str, str]) -> list[str]:
    """The number columns whose name the question uses, in the question's order (a measurement's
    ``unitPrice.value`` is named by "unit price" or "price")."""
    found: dict[str, int] = {}
    for column, kind in kinds.items():
        if kind != "quantitative" or is_key(column):
            continue
        name = column.removesuffix(".value").rsplit(".", 1)[-1]
        words = set(name_forms(name)) | set(split_words(name))
        hits = [index for index, token in enumerate(tokens) if {token.lower, token.base} & words]
        if hits:
            found[column] = hits[0]
    return sorted(found, key=found.__getitem__)


def chart_intent(
    ask: ChartAsk, tokens: Sequence[Token], kinds: Mapping[str, str], group: str | None
) -> dict[str, Any] | None:
    """The ``chart`` arguments for a result whose columns have ``kinds`` (``quantitative``,
    ``temporal``, ``nominal``), grouped by the column ``group``; ``None`` when these columns
    cannot show what the words ask for."""
    if group is not None and group not in kinds:
        group = None
    numbers = [name for name in _named(tokens, kinds) if name != group]
    dates = [name for name, kind in kinds.items() if kind == "temporal"]
    labels = [name for name, kind in kinds.items() if kind == "nominal" and not is_key(name)]
    mark = ask.mark
    if mark is None and ask.distribution and numbers and group is None:
        mark = "histogram"
    if mark == "histogram":
        return {"mark": mark, "x": numbers[0]} if numbers else None
    if mark == "point":
        return {"mark": mark, "x": numbers[0], "y": numbers[1]} if len(numbers) > 1 else None
    if mark is None:
        mark = "line" if group is not None and kinds[group] == "temporal" else "bar"
    color = None
    if mark in _TEMPORAL_MARKS or ask.over_time:
        x = group if group is not None and kinds[group] != "nominal" else next(iter(dates), None)
        if x != group and mark != "arc":
            color = group  # "quantity per supplier over time": a line a supplier
    else:
        x = group or next(iter(labels), None)
    if x is None:
        return None
    y = next((name for name in numbers if name != x), None)
    aggregate = ask.aggregate
    if aggregate == "count" or y is None:
        aggregate, y = "count", None
    elif aggregate is None:
        aggregate = "sum"
    intent = {"mark": mark, "x": x, "y": y, "color": color, "aggregate": aggregate}
    return {key: value for key, value in intent.items() if value is not None}


def chart_args(
    question: str, tokens: Sequence[Token], result: Mapping[str, Any], group: Group | None
) -> dict[str, Any] | None:
    """The ``chart`` call for a query result the question asked to chart, checked by building it
    on the rows (else the chart the columns suggest), or ``None``."""
    rows = result.get("data")
    if not isinstance(rows, list):
        return None
    table = Table(rows)
    suggested = suggest_intent(table)
    if suggested is None:
        return None
    kinds = {name: kind for name, kind in table.kinds.items() if kind != "list"}
    column = group.column if group is not None else None
    wanted = chart_intent(ChartAsk.read(question), tokens, kinds, column)
    for args in (wanted, replace(suggested, query=None).to_dict()):
        if args is None:
            continue
        try:
            build_chart(table.rows, ChartIntent.from_args(args))
        except ToolError:
            continue
        return args
    return None


def chart_sentence(call: Call, query: Call) -> str:
    """What the answer says of the chart ``call`` drew of the ``query``'s rows, and of rows the
    query could not read in one call (a question that asked for some rows asked for no more)."""
    if not call.ok:
        return f"I could not draw the chart: {call.error_message}"
    drawn = call.result if isinstance(call.result, Mapping) else {}
    described = drawn.get("chart")
    chart: Mapping[str, Any] = described if isinstance(described, Mapping) else {}
    title = str(chart.get("title") or "the result")
    sentence = f"The chart shows {title[:1].lower()}{title[1:]}."
    result = query.result if isinstance(query.result, Mapping) else {}
    rows = result.get("data")
    total = result.get("total_count")
    if "limit" not in query.args and result.get("has_more") and isinstance(rows, list):
        of = f" of {total:,}" if isinstance(total, int) else ""
        sentence += f" It is drawn from the first {len(rows):,}{of} rows only."
    return sentence

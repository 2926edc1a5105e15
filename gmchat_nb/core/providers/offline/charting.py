"""Charts for questions that ask for one ("plot…", "chart…", "show a histogram of…").

After its final query the offline provider declares a chart of that result, as a model would:
the mark the question's words ask for (else the one the columns suggest), the columns it names
(a number column for y, the column after "by" or "per" for x), checked by building it once
here; what cannot be built falls back to the suggested chart. The answer then says what the
chart shows, or why it could not be drawn.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Final

from ...charts import ChartIntent, Table, build_chart, suggest_intent
from ...project.errors import ToolError
from ...project.names import split_words
from .conversation import Call
from .schemas import field_kind, schema_fields
from .words import Token

__all__ = ["CHART_REQUEST", "chart_args", "chart_fields", "chart_sentence"]

CHART_REQUEST: Final = re.compile(
    r"\b(plot|chart|graph|visuali[sz]e|diagram|histogram|pie|draw)", re.IGNORECASE
)
_MARKS: Final = (
    (re.compile(r"\b(histogram|distribution)", re.IGNORECASE), "histogram"),
    (re.compile(r"\b(pie|share|donut)", re.IGNORECASE), "arc"),
    (re.compile(r"\b(scatter|against|versus|vs)\b", re.IGNORECASE), "point"),
    (re.compile(r"\b(line|trend|over time)\b", re.IGNORECASE), "line"),
    (re.compile(r"\barea\b", re.IGNORECASE), "area"),
    (re.compile(r"\bbars?\b", re.IGNORECASE), "bar"),
)
_GROUPING: Final = frozenset({"by", "per", "each"})
_OVER_TIME: Final = re.compile(
    r"\b(over time|trend|per (day|month|year)|timeline)\b", re.IGNORECASE
)


def _forms(token: Token) -> set[str]:
    return {token.lower, token.base}


def chart_fields(question: str, tokens: Sequence[Token], schema: Mapping[str, Any]) -> list[Any]:
    """Fields a chart of the question needs beyond those it names: what it groups by (a field,
    or a to-one relation's name) and, for a trend, the first date field."""
    fields = schema_fields(schema)
    listed = schema.get("relations")
    relations: Mapping[str, Any] = listed if isinstance(listed, dict) else {}
    extra: list[Any] = []
    for index, token in enumerate(tokens[:-1]):
        if token.lower not in _GROUPING:
            continue
        following = set().union(*(_forms(t) for t in tokens[index + 1 : index + 3]))
        for name in fields:
            if {w.lower() for w in split_words(name)} <= following:
                extra.append(name)
        for name, relation in relations.items():
            one = isinstance(relation, dict) and relation.get("kind") == "one"
            if one and {w.lower() for w in split_words(name)} <= following:
                extra.append({name: ["name"]})
    if _OVER_TIME.search(question):
        dates = [name for name, info in fields.items() if field_kind(info) == "date"]
        extra.extend(dates[:1])
    return extra


def chart_args(
    question: str, tokens: Sequence[Token], result: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The ``chart`` call for a result the question asked to chart, or ``None``."""
    rows = result.get("data")
    if not isinstance(rows, list):
        return None
    table = Table(rows)
    suggested = suggest_intent(table)
    if suggested is None:
        return None
    mark = next((mark for pattern, mark in _MARKS if pattern.search(question)), suggested.mark)
    named = _named_columns(tokens, table)
    numbers = [name for name in named if table.kinds[name] == "quantitative"]
    grouped = _grouping_column(tokens, table)
    wanted: dict[str, Any] = {"mark": mark, "x": grouped or suggested.x}
    if mark == "histogram":
        wanted["x"] = numbers[0] if numbers else suggested.x
    else:
        y = next((name for name in numbers if name != wanted["x"]), None) or suggested.y
        if y is not None:
            wanted["y"] = y
        if mark in ("line", "area", "point") and table.kinds.get(wanted["x"]) == "nominal":
            dates = [name for name, kind in table.kinds.items() if kind == "temporal"]
            wanted["x"] = dates[0] if dates else suggested.x
    for args in (wanted, _without_none(suggested)):
        try:
            build_chart(table.rows, ChartIntent.from_args(args))
        except ToolError:
            continue
        return args
    return None


def _without_none(intent: ChartIntent) -> dict[str, Any]:
    return replace(intent, query=None).to_dict()


def _words(column: str) -> set[str]:
    return {word.lower() for part in column.split(".") for word in split_words(part)}


def _named_columns(tokens: Sequence[Token], table: Table) -> list[str]:
    """The result's columns whose last name the question uses, in the question's order."""
    found: dict[str, int] = {}
    for index, token in enumerate(tokens):
        for column in table.columns:
            last = {word.lower() for word in split_words(column.rsplit(".", 1)[-1])}
            if last & _forms(token) and column not in found:
                found[column] = index
    return sorted(found, key=found.__getitem__)


def _grouping_column(tokens: Sequence[Token], table: Table) -> str | None:
    """The column the words after "by"/"per"/"each" name, the deepest first ("by material" is
    ``part.material.name`` rather than ``part.name``)."""
    for index, token in enumerate(tokens[:-1]):
        if token.lower not in _GROUPING:
            continue
        following = set().union(*(_forms(t) for t in tokens[index + 1 : index + 3]))
        matches = [
            column
            for column in table.columns
            if _words(column) & following
            and table.kinds[column] != "list"
            and any(row.get(column) is not None for row in table.rows)
        ]
        if matches:
            return max(
                matches, key=lambda c: (table.kinds[c] == "nominal", -len(_words(c) - following))
            )
    return None


def chart_sentence(call: Call) -> str:
    """What the answer says of the chart it asked for."""
    result = call.result if isinstance(call.result, dict) else {}
    if not call.ok:
        return f"I could not draw the chart: {call.error_message}"
    described = result.get("chart")
    chart: Mapping[str, Any] = described if isinstance(described, dict) else {}
    title = str(chart.get("title") or "the result")
    return f"The chart shows {title[:1].lower()}{title[1:]}."

"""What kind of values a result's column holds, read from the values themselves.

A chart needs to know whether a column is a number, a date or a category; GraphQL answers carry
no such type with the rows (a Decimal arrives as ``"12.50"``, a date as ``"2026-03-01"``), so the
kinds come from the values: every non-null value a number (or a numeric string) is quantitative,
every one an ISO date or date-time is temporal, a to-many relation's list is ``list`` (nothing a
chart can draw), anything else is a category.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from datetime import date, datetime
from decimal import Decimal, InvalidOperation
from typing import Any, Literal

from ..frames import flatten_row
from ..text import clean_text

__all__ = [
    "ColumnKind",
    "Table",
    "as_category",
    "as_number",
    "as_temporal",
    "column_kinds",
    "flat_table",
]

ColumnKind = Literal["quantitative", "temporal", "nominal", "list"]

_NUMBER = re.compile(r"\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*")
_TEMPORAL = re.compile(r"\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?)?")
MAX_LABEL = 200
"""A category's text is cut to this many characters in a chart (the table keeps it whole)."""


def as_number(value: Any) -> float | None:
    """The value as a finite float, or ``None`` (booleans and non-numeric text are not numbers)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float | Decimal):
        number = float(value)
    elif isinstance(value, str) and len(value) <= 64 and _NUMBER.fullmatch(value):
        try:
            number = float(Decimal(value.strip()))
        except (InvalidOperation, ValueError):
            return None
    else:
        return None
    return number if math.isfinite(number) else None


def as_temporal(value: Any) -> str | None:
    """An ISO date or date-time as text Vega reads, or ``None``."""
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, str) and len(value) <= 40 and _TEMPORAL.fullmatch(value):
        return value
    return None


def as_category(value: Any) -> str:
    """A category's label: text, lone surrogates replaced, cut to :data:`MAX_LABEL`."""
    if value is None:
        return "(none)"
    text = value if isinstance(value, str) else str(value)
    text = clean_text(text[: MAX_LABEL + 1])
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


class Table:
    """A query's rows flattened to dotted columns (as the widget's tables and the DataFrames
    show them), with each column's kind."""

    def __init__(self, rows: Iterable[Mapping[str, Any]]) -> None:
        self.rows: list[dict[str, Any]] = [
            flatten_row(dict(row)) for row in rows if isinstance(row, Mapping)
        ]
        names = dict.fromkeys(str(name) for row in self.rows for name in row)
        self.kinds: dict[str, ColumnKind] = column_kinds(self.rows, names)

    @property
    def columns(self) -> list[str]:
        """The column names, in the order the rows name them."""
        return list(self.kinds)


def flat_table(rows: Iterable[Mapping[str, Any]]) -> Table:
    """A :class:`Table` of ``rows``."""
    return Table(rows)


def column_kinds(rows: list[dict[str, Any]], names: Iterable[str]) -> dict[str, ColumnKind]:
    """Each column's kind (a column with no value at all is nominal)."""
    return {name: _kind(row.get(name) for row in rows) for name in names}


def _kind(values: Iterable[Any]) -> ColumnKind:
    numbers = dates = seen = 0
    for value in values:
        if value is None:
            continue
        if isinstance(value, list | dict):
            return "list"
        seen += 1
        if as_number(value) is not None:
            numbers += 1
        elif as_temporal(value) is not None:
            dates += 1
        else:
            return "nominal"
    if seen and numbers == seen:
        return "quantitative"
    if seen and dates == seen:
        return "temporal"
    return "nominal"

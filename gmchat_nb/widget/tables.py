"""A query result as the chat widget shows it: flat rows, pages and sorting in plain Python.

Rows already are JSON, so showing, paging and sorting them needs no pandas. The DataFrame (dotted
columns, dates parsed, the same one ``turn.frames`` gives) is built only when someone asks for it
with "→ DataFrame": importing pandas costs about a second in a fresh kernel, and a turn's first
query must not wait for it.
"""

from __future__ import annotations

import json
import math
import re
from typing import TYPE_CHECKING, Any

from ..core.frames import flatten_row

if TYPE_CHECKING:
    import pandas as pd

    from ..chat import Turn
    from ..core.project.project import QueryOutcome

__all__ = ["ResultTable"]

_DIGITS = re.compile(r"(\d+)")


class ResultTable:
    """One successful query's rows, flattened once (``{"material": {"name": ...}}`` becomes a
    ``material.name`` column, as in the DataFrame)."""

    def __init__(self, turn: Turn, outcome: QueryOutcome, call_id: str = "") -> None:
        self.turn = turn
        self.outcome = outcome
        self.call_id = call_id  # the query's tool call id (a chart of the table names it)
        self.rows = [flatten_row(row) for row in outcome.rows]
        self.columns = [str(name) for name in dict.fromkeys(c for row in self.rows for c in row)]
        self._sorted: dict[tuple[str, bool], list[dict[str, Any]]] = {}  # paging keeps a sort

    def page(
        self, offset: int, limit: int, sort: str | None = None, *, descending: bool = False
    ) -> list[dict[str, Any]]:
        """Rows ``offset`` to ``offset + limit`` as JSON records (every column, null when
        absent), sorted by the column ``sort`` when it is one of the table's."""
        rows = self.rows
        if sort is not None and sort in self.columns:
            order = (sort, descending)
            if order not in self._sorted:
                self._sorted[order] = sorted_rows(rows, sort, descending=descending)
            rows = self._sorted[order]
        return [
            {column: _json_cell(row.get(column)) for column in self.columns}
            for row in rows[offset : offset + limit]
        ]

    def frame(self) -> pd.DataFrame:
        """The result as a new pandas DataFrame (the first call in a kernel imports pandas)."""
        return self.turn._frame(self.outcome)


def sorted_rows(
    rows: list[dict[str, Any]], column: str, *, descending: bool = False
) -> list[dict[str, Any]]:
    """``rows`` ordered as the front end orders a page it holds whole: empty values (null,
    ``""``) last in both directions, numbers by value, text naturally (``Part 9`` before
    ``Part 10``, case ignored); equal values keep their order."""
    filled = [row for row in rows if not _empty(row.get(column))]
    empty = [row for row in rows if _empty(row.get(column))]
    filled.sort(key=lambda row: _sort_key(row[column]), reverse=descending)  # stable both ways
    return filled + empty


def _empty(value: Any) -> bool:
    return value is None or value == "" or (isinstance(value, float) and math.isnan(value))


def _sort_key(value: Any) -> tuple[int, Any]:
    if isinstance(value, bool | int | float):
        return (0, float(value))
    text = value if isinstance(value, str) else json.dumps(value, default=str, sort_keys=True)
    # Text and digit runs alternate, so the parts at each position are of one type.
    parts = _DIGITS.split(text.casefold())
    return (1, tuple(int(part) if index % 2 else part for index, part in enumerate(parts)))


def _json_cell(value: Any) -> Any:
    """NaN and infinities are not JSON: they travel as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

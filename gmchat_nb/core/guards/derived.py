"""Figures an analyst derives from rows, for the number gate (:mod:`.gates`): what an answer may
state although no single value of the data is that number.

What: :func:`row_figures` gives, for one list of rows, the products of two numbers of a row
(quantity times unit price) and their sum over the rows (a stock value), and per group of rows
sharing a text (the parts of one material, the orders of one supplier) each number's sum and mean,
each product's sum and the group's row count; :func:`stated_sum` says whether a number is a sum
of figures the answer itself states and the gate accepted (a total of its own line items).
:func:`as_number` reads a value as a number, as the gate does everywhere.

Why: these are the figures models are asked for and get right, and the gate sent them back as
invented ("56,394 EUR in stock", "titanium parts cost 413.48 EUR on average"): a false alarm
costs a model request and teaches nothing. Each derivation is tied to the rows' structure (two
numbers of one row, a column within a group), never any number times any other, and the gate
takes these figures as facts only, never combining two of them further (differences and
percentages of products would ground invented figures by chance).

Bounded: at most :data:`MAX_ROWS` rows of a list, :data:`MAX_COLUMNS` numbers of a row, groups
by a text column holding at most :data:`MAX_LABELS` distinct texts, :data:`MAX_STATED` of the
answer's figures -- a large result costs milliseconds.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from itertools import combinations
from typing import Any, Final

__all__ = ["MAX_COLUMNS", "MAX_LABELS", "MAX_ROWS", "MAX_STATED", "as_number", "row_figures"]
__all__ += ["stated_sum"]

MAX_ROWS: Final = 200  # rows of one list combined: a listing an answer sums up by hand
MAX_COLUMNS: Final = 6  # numbers of a row multiplied pairwise (15 products)
MAX_LABELS: Final = 50  # a text column with more distinct texts names rows, it does not group them
MAX_STATED: Final = 60  # the answer's own figures summed


def as_number(value: Any) -> float | None:
    """A number, or a short string that is one ("12.50"), as a finite float; else None."""
    if isinstance(value, bool) or not isinstance(value, int | float | Decimal | str):
        return None
    try:
        number = float(Decimal(value.strip() if isinstance(value, str) else value))
    except (InvalidOperation, ValueError):
        return None
    return number if math.isfinite(number) else None  # a NaN would break the sorted facts


def _fields(row: Mapping[Any, Any]) -> Iterator[tuple[str, Any]]:
    """(path, value) of a row's fields, a nested object's fields one level down
    (``unitPrice.value``, ``material.name``)."""
    for key, value in row.items():
        if isinstance(value, Mapping):
            for inner, item in value.items():
                if not isinstance(item, Mapping | list | tuple):
                    yield f"{key}.{inner}", item
        elif not isinstance(value, list | tuple):
            yield str(key), value


def row_figures(rows: Sequence[Mapping[Any, Any]]) -> set[float]:
    """The figures derived from ``rows``: products of two numbers of a row and their sums over
    the rows, and per group of rows sharing a text, each number's sum and mean, each product's
    sum and the group's row count."""
    found: set[float] = set()
    rows = rows[:MAX_ROWS]
    numbers: list[dict[str, float]] = []  # each row's numbers by path
    labels: dict[str, list[str | None]] = {}  # text columns, a value per row
    for index, row in enumerate(rows):
        numbers.append({})
        for path, value in _fields(row):
            if (number := as_number(value)) is not None:
                if len(numbers[-1]) < MAX_COLUMNS:
                    numbers[-1][path] = number
            elif isinstance(value, str) and len(value) <= 200:
                labels.setdefault(path, [None] * len(rows))[index] = value
    paths = sorted({path for row in numbers for path in row})
    columns = {path: [row.get(path) for row in numbers] for path in paths}
    for a, b in combinations(paths, 2):  # each row's product of two of its numbers
        columns[f"{a}×{b}"] = [
            row[a] * row[b] if a in row and b in row else None for row in numbers
        ]
        found.update(p for p in columns[f"{a}×{b}"] if p is not None)
    groupings: list[list[str | None]] = [["all"] * len(numbers)]  # every row, then by each text
    for grouping in labels.values():  # a text naming each row (a name, a date) groups nothing
        if 1 < len({*grouping} - {None}) <= min(MAX_LABELS, len(rows) - 1):
            groupings.append(grouping)
    for grouping in groupings:
        members: dict[str, list[int]] = {}
        for index, label in enumerate(grouping):
            if label is not None:
                members.setdefault(label, []).append(index)
        for indices in members.values():
            found.add(float(len(indices)))
            for name, column in columns.items():
                values = [value for i in indices if (value := column[i]) is not None]
                if values:
                    total = math.fsum(values)
                    found.update((total, total / len(values)) if "×" not in name else (total,))
    return found


def stated_sum(value: float, tol: float, stated: Sequence[tuple[float, float]]) -> bool:
    """Whether ``value`` (±``tol``) is the sum of two of the answer's accepted figures ``stated``
    (each a value and the half-width of its rounding, in the order the answer states them), or of
    a run of them one after another ("A 12,800, B 9,060 …: 56,394 in all"), the whole list
    included. Each figure's rounding widens the tolerance of a sum it is in."""
    figures = list(stated[:MAX_STATED])
    for (a, half_a), (b, half_b) in combinations(figures, 2):
        if abs(a + b - value) <= tol + half_a + half_b:
            return True
    sums, halves = [0.0], [0.0]  # running totals, so a run's sum is a difference of two
    for figure, half in figures:
        sums.append(sums[-1] + figure)
        halves.append(halves[-1] + half)
    return any(
        abs(sums[end] - sums[start] - value) <= tol + halves[end] - halves[start]
        for start, end in combinations(range(len(sums)), 2)
        if end - start >= 3  # one figure is a fact, two are the pairs above
    )

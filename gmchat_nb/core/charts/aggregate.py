"""The numbers a chart draws, computed before drawing: groups and their aggregates, histogram
bins, the order and the cut to ``limit``.

Vega-Lite could aggregate and bin itself, but a spec that carries every raw row grows with the
result (a 10,000-row query would ship 10,000 rows to every view and into the journal), and what
the chart shows should be what Python computed from the evidence, the same numbers the answer
and the evals see. So the spec's ``data.values`` hold one row per mark, at most
:data:`MAX_MARKS` of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Final

__all__ = ["MAX_BINS", "MAX_MARKS", "Point", "aggregate_points", "bin_values", "order_points"]

MAX_MARKS: Final = 5000
MAX_BINS: Final = 40


@dataclass(slots=True)
class Point:
    """One mark's values: ``x`` (a category, date text or number), ``y`` and a ``color`` group."""

    x: Any
    y: float | None
    color: str | None = None

    def to_json(self) -> dict[str, Any]:
        values: dict[str, Any] = {"x": self.x, "y": _plain(self.y)}
        if self.color is not None:
            values["color"] = self.color
        return values


def _plain(number: float | None) -> float | int | None:
    if number is None:
        return None
    number = float(number)
    return int(number) if number.is_integer() and abs(number) < 2**53 else number


_REDUCERS: Final[dict[str, Callable[[list[float]], float]]] = {
    "sum": math.fsum,
    "mean": lambda values: math.fsum(values) / len(values),
    "min": min,
    "max": max,
}


def aggregate_points(points: Iterable[Point], aggregate: str) -> list[Point]:
    """One point per (x, color), in first-seen order: ``count`` counts the points (those with a
    ``y``, when they carry one), the others reduce the ``y`` values (groups without any dropped)."""
    groups: dict[tuple[Any, str | None], list[float | None]] = {}
    for point in points:
        groups.setdefault((point.x, point.color), []).append(point.y)
    merged: list[Point] = []
    for (x, color), ys in groups.items():
        numbers = [y for y in ys if y is not None]
        if aggregate == "count":
            counted = len(numbers) if any(y is not None for y in ys) else len(ys)
            merged.append(Point(x, float(counted), color))
        elif numbers:
            merged.append(Point(x, _REDUCERS[aggregate](numbers), color))
    return merged


def has_repeats(points: list[Point]) -> bool:
    """Whether two points share their (x, color): drawing them needs an aggregate."""
    seen: set[tuple[Any, str | None]] = set()
    for point in points:
        key = (point.x, point.color)
        if key in seen:
            return True
        seen.add(key)
    return False


def order_points(points: list[Point], sort: str, limit: int | None) -> list[Point]:
    """The points ordered by ``sort`` (``x``, ``-x``, ``y``, ``-y``); with ``limit``, only the
    first ``limit`` x values (with every color of each)."""
    descending = sort.startswith("-")
    field = sort.lstrip("-")
    if field == "y":
        totals: dict[Any, float] = {}
        for point in points:
            totals[point.x] = totals.get(point.x, 0.0) + (point.y or 0.0)
        ranked = sorted(totals, key=lambda x: totals[x], reverse=descending)
    else:
        ranked = sorted(dict.fromkeys(p.x for p in points), key=_sort_key, reverse=descending)
    if limit is not None:
        ranked = ranked[:limit]
    rank = {x: index for index, x in enumerate(ranked)}
    kept = [point for point in points if point.x in rank]
    return sorted(kept, key=lambda point: rank[point.x])


def _sort_key(value: Any) -> tuple[int, Any]:
    return (0, value) if isinstance(value, int | float) else (1, str(value))


def bin_values(values: list[float]) -> list[dict[str, Any]]:
    """A histogram of ``values``: ``[{x: start, x2: end, y: count}]`` over equal, round-numbered
    bins (at most :data:`MAX_BINS`; the last bin holds its end)."""
    low, high = min(values), max(values)
    if low == high:
        return [{"x": _plain(low), "x2": _plain(low + 1.0), "y": len(values)}]
    wanted = min(MAX_BINS, max(5, math.ceil(math.sqrt(len(values)))))
    step = _nice_step((high - low) / wanted)
    start = math.floor(low / step) * step
    count = max(1, math.ceil((high - start) / step + 1e-9))
    if start + count * step <= high:
        count += 1
    counts = [0] * count
    for value in values:
        counts[min(count - 1, int((value - start) // step))] += 1
    return [
        {
            "x": _plain(round(start + index * step, 12)),
            "x2": _plain(round(start + (index + 1) * step, 12)),
            "y": counts[index],
        }
        for index in range(count)
    ]


def _nice_step(raw: float) -> float:
    power = 10.0 ** math.floor(math.log10(raw))
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power

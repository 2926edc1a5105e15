"""A chart intent: what to draw from a result the turn already holds, declared, never code.

The model (or a person choosing in a table's Chart picker) names a query result, a mark and
columns; :meth:`ChartIntent.from_args` checks the shape of that declaration (types, known marks
and aggregates) and :func:`~gmchat_nb.core.charts.spec.build_chart` checks it against the
result's columns. Every mistake is a :class:`ToolError` whose message says what would be valid.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from ..project.errors import ToolError
from ..project.names import MAX_NAME_LENGTH, clip, did_you_mean, quoted_or, suggestion_hint
from ..text import clean_text

__all__ = ["AGGREGATES", "MARKS", "MAX_LIMIT", "SORTS", "ChartIntent"]

MARKS: Final = ("bar", "line", "point", "area", "arc", "histogram")
AGGREGATES: Final = ("count", "sum", "mean", "min", "max")
SORTS: Final = ("x", "-x", "y", "-y")
MAX_LIMIT: Final = 1000
MAX_TITLE: Final = 200

_STRINGS: Final = ("query", "mark", "x", "y", "color", "aggregate", "sort", "title")


@dataclass(frozen=True, slots=True)
class ChartIntent:
    """Which columns of which result to draw, and how."""

    mark: str
    x: str
    y: str | None = None
    color: str | None = None
    aggregate: str | None = None
    sort: str | None = None
    limit: int | None = None
    title: str | None = None
    query: str | None = None
    """The query result to draw: its tool call id or planned evidence id (``None``: the turn's
    latest query)."""

    def to_dict(self) -> dict[str, Any]:
        """The intent's JSON, unset fields left out."""
        return {
            item.name: getattr(self, item.name)
            for item in dataclasses.fields(self)
            if getattr(self, item.name) is not None
        }

    @classmethod
    def from_args(cls, args: Mapping[str, Any]) -> ChartIntent:
        """An intent from a ``chart`` call's arguments (or a picker's choice)."""
        known = {item.name for item in dataclasses.fields(cls)}
        unknown = [str(key) for key in args if key not in known]
        if unknown:
            raise ToolError(
                "invalid_arguments",
                f"chart does not take {', '.join(repr(clip(k)) for k in unknown)}; it takes "
                f"{', '.join(repr(k) for k in _ORDER)}.",
            )
        values: dict[str, Any] = {}
        for name in _STRINGS:
            value = args.get(name)
            if value is None or value == "":
                continue
            if not isinstance(value, str):
                raise ToolError(
                    "invalid_arguments",
                    f"'{name}' of chart must be a string; got {type(value).__name__}.",
                )
            values[name] = _text(name, value)
        limit = args.get("limit")
        if limit is not None:
            if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
                raise ToolError(
                    "invalid_arguments",
                    f"'limit' of chart must be a whole number from 1 to {MAX_LIMIT}.",
                )
            values["limit"] = limit
        for name in ("mark", "x"):
            if name not in values:
                raise ToolError(
                    "invalid_arguments",
                    f'chart needs \'{name}\', e.g. {{"mark": "bar", "x": "material.name", '
                    '"y": "quantity", "aggregate": "sum"}.',
                )
        _choice("mark", values["mark"], MARKS)
        if "aggregate" in values:
            _choice("aggregate", values["aggregate"], AGGREGATES)
        if "sort" in values:
            _choice("sort", values["sort"], SORTS)
        return cls(**values)


_ORDER: Final = ("query", "mark", "x", "y", "color", "aggregate", "sort", "limit", "title")


def _text(name: str, value: str) -> str:
    value = clean_text(value)
    if name == "title":
        return value if len(value) <= MAX_TITLE else value[: MAX_TITLE - 1] + "…"
    if len(value) > MAX_NAME_LENGTH:  # no column, mark or id is that long
        raise ToolError("invalid_arguments", f"'{name}' of chart is too long to be a name.")
    return value.strip()


def _choice(name: str, value: str, allowed: tuple[str, ...]) -> None:
    if value in allowed:
        return
    hint = suggestion_hint(did_you_mean(value, allowed))
    raise ToolError(
        "invalid_arguments",
        f"Unknown {name} '{clip(value)}'.{hint} Use {quoted_or(allowed)}.",
    )

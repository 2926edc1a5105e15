"""Flatten query rows into table columns (no pandas here; the Chat API builds DataFrames on it).

``{"name": "Apollo", "partsList": [{"name": "Gear", "material": {"name": "Cobalt"}}]}`` becomes
``{"name": "Apollo", "partsList.name": ["Gear"], "partsList.material.name": ["Cobalt"]}``:
to-one relations become dotted columns; to-many relations become dotted columns holding lists.
"""

from __future__ import annotations

from typing import Any

__all__ = ["flatten_row", "frame_summary"]


def flatten_row(row: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """One row as flat ``column -> value`` pairs."""
    flat: dict[str, Any] = {}
    for key, value in row.items():
        column = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten_row(value, f"{column}."))
        elif isinstance(value, list) and any(isinstance(item, dict) for item in value):
            nested = [flatten_row(item) if isinstance(item, dict) else {"": item} for item in value]
            names = list(dict.fromkeys(name for item in nested for name in item))
            for name in names:
                flat[f"{column}.{name}" if name else column] = [item.get(name) for item in nested]
        else:
            flat[column] = value
    return flat


SAMPLE_ROWS = 20


def frame_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"rows": n, "columns": [...]}`` for a query result's tool_result event.

    Every row of a query has the same fields, so the first rows name the columns (more than
    one, because a nested list may be empty in one row and not in the next).
    """
    columns: dict[str, None] = {}
    for row in rows[:SAMPLE_ROWS]:
        columns.update(dict.fromkeys(flatten_row(row)))
    return {"rows": len(rows), "columns": list(columns)}

"""Normalise GraphQL page answers into the ``query`` tool result.

``{"data": rows, "total_count": int | None, "has_more": bool | None, "complete": bool}``:
rows are the requested window, with nested ``{items, pageInfo}`` pages unwrapped into plain lists;
``complete`` is true only when the rows are the whole result set — read from the start, as many
rows as the total, and every nested list complete too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .selection import Shape

__all__ = ["NormalizedRows", "normalize_pages"]


@dataclass(frozen=True, slots=True)
class NormalizedRows:
    """Rows of one query window and what is known about the rest."""

    rows: list[dict[str, Any]]
    total_count: int | None
    has_more: bool | None
    complete: bool
    truncated_lists: int  # nested lists that hold fewer items than their total


def normalize_pages(
    pages: list[dict[str, Any] | None],
    *,
    items_field: str,
    page_info_field: str,
    total_field: str,
    shape: dict[str, Shape],
    window_start: int,
    limit: int,
    offset: int,
) -> NormalizedRows:
    """Stitch the page answers, cut the window and unwrap nested pages."""
    items: list[dict[str, Any]] = []
    totals: set[int | None] = set()
    for page in pages:
        if page is None:
            totals.add(None)
            continue
        items.extend(page.get(items_field) or [])
        totals.add(_total(page.get(page_info_field), total_field))
    total = totals.pop() if len(totals) == 1 else None
    window = items[window_start : window_start + limit]
    counter = [0]
    rows = [_row(item, shape, counter) for item in window]
    has_more = None if total is None else total > offset + len(rows)
    complete = offset == 0 and total is not None and len(rows) == total and counter[0] == 0
    return NormalizedRows(rows, total, has_more, complete, counter[0])


def _total(page_info: Any, total_field: str) -> int | None:
    if not isinstance(page_info, dict):
        return None
    total = page_info.get(total_field)
    return total if isinstance(total, int) and not isinstance(total, bool) and total >= 0 else None


def _row(item: Any, shape: dict[str, Shape], truncated: list[int]) -> Any:
    if not isinstance(item, dict):
        return item
    row: dict[str, Any] = {}
    for key, value in item.items():
        node = shape.get(key)
        if node is None or node.kind == "leaf" or value is None:
            row[key] = value
        elif node.kind == "page":
            children = node.children or {}
            nested = value.get(node.items_field) or []
            total = _total(value.get(node.page_info_field), node.total_field)
            if total is None or total > len(nested):
                truncated[0] += 1
            row[key] = [_row(child, children, truncated) for child in nested]
        elif node.kind == "list":
            row[key] = [_row(child, node.children or {}, truncated) for child in value]
        else:
            row[key] = _row(value, node.children or {}, truncated)
    return row

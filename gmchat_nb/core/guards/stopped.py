"""A turn the loop guard stopped: the notice that says so, and the answer when the model would
not write one.

:func:`stop_notice` is the ``loop_guard`` notice both engines send when the guard stops a turn.

After a stop (stuck, or a budget spent) the loop makes one last request with the tools off. A
model that still answers with only tool calls, or with nothing, gets no more chances; the turn
ends ``done`` all the same, with this answer written from the turn's own evidence: why it
stopped, and what each query found (its manager, how many rows of how many, the first rows'
names). Deterministic, and never a number the results do not hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from ..events import Notice
from .loop_guard import STOP_REASONS

__all__ = ["stop_notice", "stopped_answer"]

NAMES_SHOWN = 5
_LABELS = ("name", "title", "number", "code", "id")


class _Found(Protocol):
    @property
    def manager(self) -> str: ...

    @property
    def rows(self) -> list[dict[str, Any]]: ...

    @property
    def total_count(self) -> int | None: ...


def stop_notice(reason: str) -> Notice:
    """The ``loop_guard`` notice of a turn stopped for ``reason``."""
    return Notice(
        kind="loop_guard",
        message="The assistant was going round in circles or reached its budget; "
        "it answers now from what it found.",
        details={"stopped_by": reason},
    )


def stopped_answer(reason: str, found: Iterable[_Found]) -> str:
    """The answer of a turn stopped for ``reason`` (a loop guard stop reason), from ``found``:
    the turn's query results in the order they came."""
    why = STOP_REASONS.get(reason, reason)
    lines = [f"I stopped before finishing because {why}, and the model gave no final answer."]
    results = list(found)
    if not results:
        lines.append("No data was read in this turn, so I have no answer to give from data.")
        return "\n".join(lines)
    lines.append("This is what the queries of this turn found:")
    for outcome in results:
        rows = outcome.rows
        count = f"{len(rows)} row{'s' if len(rows) != 1 else ''}"
        if outcome.total_count is not None and outcome.total_count != len(rows):
            count += f" of {outcome.total_count}"
        names = [label for row in rows[:NAMES_SHOWN] if (label := _label(row))]
        shown = f": {', '.join(names)}" + (", ..." if len(rows) > len(names) else "")
        lines.append(f"- {outcome.manager}: {count}{shown if names else ''}")
    lines.append("Ask again, more narrowly, for a full answer.")
    return "\n".join(lines)


def _label(row: Mapping[str, Any]) -> str | None:
    """A row's name for a list: its first label-like field that holds a short text."""
    for key in _LABELS:
        value = row.get(key)
        if isinstance(value, str | int) and not isinstance(value, bool):
            text = " ".join(str(value).split())
            if text:
                return text[:60]
    return None

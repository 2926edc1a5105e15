"""A finished turn's calls as a verified query's: what **Save as verified query** stores.

Only the calls that answered count: the ``query`` calls after the turn's last other tool call
(discovery -- search, schemas, paths -- and the probes among it lead up to the answer; the
queries that follow the last of it are the answer's), each whose result was not an error, and
each ``chart`` call that drew a chart (its intent without the call id it named, which is the
turn's own). Events are read through a table, one reader per event type, as every surface
reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from ..charts.tool import CHART
from ..project.tools import TOOLS
from .entries import MAX_CALLS, KnowledgeError

__all__ = ["turn_calls"]


@dataclass(slots=True)
class _Reading:
    calls: dict[str, dict[str, Any]] = field(default_factory=dict)  # by call id, in order
    answered: set[str] = field(default_factory=set)  # queries that came back with data
    charted: set[str] = field(default_factory=set)  # chart calls that drew a chart


def _call(reading: _Reading, event: Mapping[str, Any]) -> None:
    name = event.get("name")
    if name not in (TOOLS.query.name, CHART.name):
        reading.calls.clear()  # what came before the last discovery call led up to the answer
        reading.answered.clear()
        return
    arguments = dict(event.get("args") or {})
    if name == CHART.name:
        arguments.pop("query", None)  # the call id it drew is this turn's own
    reading.calls[str(event.get("id"))] = {"tool": name, "arguments": arguments}


def _result(reading: _Reading, event: Mapping[str, Any]) -> None:
    result = event.get("result")
    failed = isinstance(result, Mapping) and result.get("status") == "error"
    if event.get("name") == TOOLS.query.name and not failed:
        reading.answered.add(str(event.get("id")))


def _chart(reading: _Reading, event: Mapping[str, Any]) -> None:
    reading.charted.add(str(event.get("id")))


_READERS: Final[dict[str, Callable[[_Reading, Mapping[str, Any]], None]]] = {
    "tool_call": _call,
    "tool_result": _result,
    "chart": _chart,
}


def turn_calls(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``{"tool", "arguments"}`` calls of a turn's events worth keeping (see the module);
    ``KnowledgeError("invalid")`` when the turn ran no query that returned data."""
    reading = _Reading()
    for event in events:
        reader = _READERS.get(str(event.get("type")))
        if reader is not None:
            reader(reading, event)
    chosen = [
        call
        for call_id, call in reading.calls.items()
        if call_id in (reading.answered if call["tool"] == TOOLS.query.name else reading.charted)
    ]
    if not any(call["tool"] == TOOLS.query.name for call in chosen):
        raise KnowledgeError("invalid", "this turn ran no query that returned data to save")
    return chosen[:MAX_CALLS]

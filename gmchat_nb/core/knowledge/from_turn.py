"""A finished turn's calls as a verified query's: what **Save as verified query** stores.

Only what the turn ran and what came back as data counts: each ``query`` call whose result was
not an error, and each ``chart`` call that drew a chart (its intent without the call id it
named, which is the turn's own). The person saving names the entry and may edit its question;
the calls are checked against the project like any other verified query's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .entries import KnowledgeError

__all__ = ["turn_calls", "turn_question"]


def turn_calls(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``{"tool", "arguments"}`` calls of a turn's events worth keeping (see the module);
    ``KnowledgeError("invalid")`` when the turn ran no query that returned data."""
    calls: dict[str, dict[str, Any]] = {}
    kept: list[str] = []
    charted: set[str] = set()
    for event in events:
        kind = event.get("type")
        if kind == "tool_call" and event.get("name") in ("query", "chart"):
            calls[str(event.get("id"))] = {
                "tool": event["name"],
                "arguments": dict(event.get("args") or {}),
            }
        elif kind == "tool_result" and event.get("name") == "query":
            result = event.get("result")
            failed = isinstance(result, Mapping) and result.get("status") == "error"
            if not failed and str(event.get("id")) in calls:
                kept.append(str(event["id"]))
        elif kind == "chart":
            charted.add(str(event.get("id")))
    chosen: list[dict[str, Any]] = []
    for call_id, call in calls.items():
        if call["tool"] == "query" and call_id in kept:
            chosen.append(call)
        elif call["tool"] == "chart" and call_id in charted:
            arguments = {k: v for k, v in call["arguments"].items() if k != "query"}
            chosen.append({"tool": "chart", "arguments": arguments})
    if not any(call["tool"] == "query" for call in chosen):
        raise KnowledgeError("invalid", "this turn ran no query that returned data to save")
    return chosen[:8]


def turn_question(events: Iterable[Mapping[str, Any]], asked: str = "") -> str:
    """The question a turn answered: what was asked (the first user text of the turn)."""
    return asked.strip()

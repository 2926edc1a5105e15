"""A verified query's calls against the project's current schema.

Every ``query`` call is compiled by the project's own compiler (the one a live call takes), so
an unknown field, filter or manager -- and a hidden manager, which the compiler treats as unknown
-- is refused with the compiler's message and its did-you-mean. A ``chart`` call's intent is
checked for shape. Used at save and import time (an entry that does not compile is not stored)
and on connect and ``gmchat knowledge check`` (an entry that no longer compiles turns stale).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..charts.intent import ChartIntent
from ..charts.tool import CHART
from ..project.errors import ToolError
from ..project.project import Project
from ..project.tools import TOOLS

__all__ = ["call_problem", "calls_problem"]


def call_problem(project: Project, tool: str, arguments: Mapping[str, Any]) -> str | None:
    """Why the project refuses this call (the compiler's message), or ``None`` when it compiles."""
    try:
        if tool == TOOLS.query.name:
            project.compiler.compile(dict(arguments))
        elif tool == CHART.name:
            ChartIntent.from_args(arguments)
        else:
            return f"{tool} is not a call a verified query may hold"
    except ToolError as error:
        return error.message
    except (ValueError, TypeError) as error:
        return str(error)
    return None


def calls_problem(project: Project, calls: Iterable[Mapping[str, Any]]) -> str | None:
    """The first call's problem, as ``call N (tool): message``; ``None`` when all compile."""
    for position, call in enumerate(calls, 1):
        tool = str(call.get("tool"))
        problem = call_problem(project, tool, call.get("arguments") or {})
        if problem:
            return f"call {position} ({tool}): {problem}"
    return None

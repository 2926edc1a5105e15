"""The execute stage: the tool itself runs, here and nowhere else.

This module is the only caller of :func:`~gmchat_nb.core.project.tools.run_tool`
(tests/test_architecture.py holds every other module to that): reads run through the project's
tools (or the scope's own executor, a stubbed world's), a ``chart`` call draws from the scope's
query results, and a prepared change runs once with its idempotency key, after the caller
wrote what it has so far. A change already under way is never abandoned: a cancel that comes
meanwhile waits for it, and is handed to the caller on the record to raise once the result is
kept (cancelling must never pretend an effect did not happen).
"""

from __future__ import annotations

import asyncio
import time

from ..charts.tool import CHART
from ..project.errors import ToolError
from ..project.mutations import PreparedMutation
from ..project.project import Project
from ..project.tools import ToolRun, run_tool
from .record import ToolCallRecord
from .scope import CallScope

__all__ = ["execute"]

NAME = "execute"


async def execute(record: ToolCallRecord, scope: CallScope) -> None:
    """Run the call's tool and keep its result and duration on the record."""
    started = time.perf_counter()
    if record.prepared is not None:
        run = await _change(record, record.prepared, scope)
    elif record.name == CHART.name and scope.charts is not None:
        run = scope.charts.run(record.id, record.args)
    elif scope.execute is not None:
        run = await scope.execute(record.name, record.args)
    elif scope.project is not None:
        run = await run_tool(scope.project, record.name, record.args, checked=record.checked)
    else:
        run = ToolRun(ToolError("unknown_tool", f"No tools run here ({record.name}).").to_result())
    record.run = run
    record.duration_ms = float(f"{(time.perf_counter() - started) * 1000:.3g}")


async def _change(record: ToolCallRecord, prepared: PreparedMutation, scope: CallScope) -> ToolRun:
    """A prepared change, run once: written to the caller's record first, shielded from a cancel
    (which is kept on the record), its failure a result."""
    if scope.checkpoint is not None:
        await scope.checkpoint()
    key = scope.mutation_key(record.call, prepared) if scope.mutation_key is not None else None
    assert scope.project is not None
    effect = asyncio.ensure_future(_mutation(scope.project, prepared, key))
    try:
        return await asyncio.shield(effect)
    except asyncio.CancelledError as cancel:
        record.cancelled = cancel
        return await asyncio.shield(effect)  # a second cancel leaves it to recovery


async def _mutation(project: Project, prepared: PreparedMutation, key: str | None) -> ToolRun:
    try:
        return ToolRun(await project.execute_mutation(prepared, idempotency_key=key))
    except ToolError as error:
        return ToolRun(error.to_result())

"""The trace stage: each call's span, in the turn's trace and as an OpenTelemetry span.

The span (``execute_tool {tool}``) opens when the call enters the pipeline (:func:`open_span`)
and ends here, with the call's status (``ok``, ``error``, or the loop guard's ``repeat`` or
``refuse``), the stage that gave its result (``stage``: ``execute`` when the tool ran, else the
stage that answered in its place; ``gmchat.tool.stage`` in OpenTelemetry), its rows and its result (sanitized when the trace is read). A turn's trace is
exported once the turn ends (``core/session/driving.py``); a scope without a turn (an agent's
call, a terminal's) records each call in a trace of its own and exports it at once
(:func:`~gmchat_nb.core.telemetry.export_trace`: nothing without ``opentelemetry-api`` and a
configured SDK). A change's span names its mutation, never its input.
"""

from __future__ import annotations

from ..project.names import clip
from ..project.tools import TOOLS
from ..telemetry import export_trace
from ..trace import TurnTrace
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["TraceStage", "open_span"]


def open_span(record: ToolCallRecord, scope: CallScope) -> TurnTrace:
    """Open the call's span in the scope's trace, or in a trace of the call's own."""
    trace = scope.trace if scope.trace is not None else TurnTrace()
    arguments = record.args
    if record.name == TOOLS.mutate.name and isinstance(arguments, dict):
        arguments = {"mutation": arguments.get("mutation")}
    # an agent may send any name (a megabyte, a number): the span names it clipped, as errors do
    name = clip(record.name) if isinstance(record.name, str) else type(record.name).__name__
    record.span = trace.tool_call(call_id=record.id, tool=name, arguments=arguments)
    record.trace = trace
    return trace


class TraceStage(Stage):
    name = "trace"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        span, trace, run = record.span, record.trace, record.run
        if span is None or trace is None or run is None:
            return
        if record.answered_by == "loop_guard":
            status = "repeat" if record.verdict == "repeat" else "refuse"
        else:
            status = "error" if run.failed else "ok"
        rows = len(run.outcome.rows) if run.outcome is not None else None
        stage = record.answered_by or "execute"  # the stage that gave the result
        trace.end(span, status=status, stage=stage, rows=rows, result=run.result)
        if trace is not scope.trace:  # the call's own trace: exported now
            trace.finish(status=status)
            export_trace(trace, llm_spans="off")

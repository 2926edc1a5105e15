"""One tool call on its way through the pipeline: what each stage found, decided or added.

A :class:`ToolCallRecord` is made when a call enters :class:`~.pipeline.ToolCallPipeline` and is
handed from stage to stage. A stage that decides the call before the tool runs (bad arguments, a
hidden manager, a repeat the loop guard answers, a change nobody asked for) *answers* it with
:meth:`ToolCallRecord.answer`; the stages after it see who answered and act on that. A change
that waits for a person is *held* (``pending``) until its caller brings the decision back.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..events import Chart, ToolResult
from ..project.tools import ToolRun
from ..providers.base import ToolCallEvent

if TYPE_CHECKING:
    from ..guards.envelope import Envelope
    from ..project.mutations import PreparedMutation
    from ..trace import Span, TurnTrace

__all__ = ["ToolCallRecord"]


@dataclass(slots=True, eq=False)
class ToolCallRecord:
    """One call and everything the stages learned of it."""

    call: ToolCallEvent
    started: float = field(default_factory=time.perf_counter)
    run: ToolRun | None = None
    """The call's result, once a stage answered it or the tool ran."""
    answered_by: str | None = None
    """The stage that answered without running the tool (``None`` when the tool ran)."""
    verdict: str | None = None
    """Why it was answered so (an error code, or ``repeat`` for a loop guard's repeat)."""
    checked: bool = False
    """The arguments stage checked the call against the tool's declaration (not checked again)."""
    prepared: PreparedMutation | None = None
    """A ``mutate`` call validated completely (the access stage), ready to run or to show."""
    pending: bool = False
    """Held for a person's decision: the caller asks them, then calls ``decided``."""
    flags: list[dict[str, Any]] | None = None
    """Text in the result that looks written for the model (the scan stage)."""
    chart: Chart | None = None
    """The chart a ``chart`` call drew (the evidence stage), to report after its result."""
    frame: dict[str, Any] | None = None
    """A query's rows summarised for displays (``{"rows", "columns"}``)."""
    query: dict[str, Any] | None = None
    """The request a query sent (its document and variables), journaled with its result."""
    note: str | None = None
    """A word for the caller beside the result (an agent's repeated call, run again)."""
    reference: str | None = None
    """The reference call this executed call matches (the reference stage)."""
    span: Span | None = None
    trace: TurnTrace | None = None
    """The trace the span is in: the scope's, or the call's own (agents, terminals)."""
    duration_ms: float | None = None
    """How long the tool worked (ms); ``None`` when nothing ran."""
    cancelled: asyncio.CancelledError | None = None
    """A cancel that came while a change ran: the caller re-raises it once the result is kept."""
    envelope: Envelope | None = None
    """What the model reads for the result (the scan stage; its text is made when first read)."""

    @property
    def id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def args(self) -> dict[str, Any]:
        return self.call.args

    @property
    def ran(self) -> bool:
        """Whether the tool itself ran (no stage answered in its place)."""
        return self.run is not None and self.answered_by is None

    @property
    def failed(self) -> bool:
        return self.run is not None and self.run.failed

    @property
    def result(self) -> Any:
        return None if self.run is None else self.run.result

    def answer(self, stage: str, result: Any, verdict: str | None = None) -> None:
        """``stage`` answers the call with ``result``: the tool does not run."""
        self.run = ToolRun(result)
        self.answered_by = stage
        self.verdict = verdict if verdict is not None else _code(result)

    def refuse(self, stage: str, code: str, message: str) -> None:
        """``stage`` answers the call with the error ``code`` the model can act on."""
        self.answer(stage, {"status": "error", "code": code, "message": message}, code)

    def result_event(
        self, *, task_id: str | None = None, evidence_id: str | None = None
    ) -> ToolResult:
        """The call's ``tool_result`` event."""
        return ToolResult(
            id=self.call.id,
            name=self.call.name,
            result=self.result,
            frame=self.frame,
            duration_ms=self.duration_ms,
            task_id=task_id,
            evidence_id=evidence_id,
            flags=self.flags or None,
            query=self.query,
        )


def _code(result: Any) -> str | None:
    code = result.get("code") if isinstance(result, dict) else None
    return code if isinstance(code, str) else None

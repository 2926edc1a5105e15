"""A stage of the tool-call pipeline: a small step with a part before the tool runs and a part
after it; the pipeline (:mod:`.pipeline`) says in which order they run."""

from __future__ import annotations

from typing import ClassVar

from .record import ToolCallRecord
from .scope import CallScope

__all__ = ["Stage"]


class Stage:
    """One step of every tool call. :meth:`check` runs before the tool, in the pipeline's order,
    until a stage answers the call or holds it for a person; :meth:`after` runs for every call
    once it has a result, in the same order (each stage decides whether an answered call
    concerns it). Both are synchronous: only the tool itself is awaited."""

    name: ClassVar[str]

    def check(self, record: ToolCallRecord, scope: CallScope) -> None:
        """Before the tool runs: answer the call, hold it, or let it go on."""

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        """Once the call has its result (run or answered)."""

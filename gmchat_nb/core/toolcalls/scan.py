"""The scan stage: what the model reads of a result, and whether it looks written for the model.

* The scan: a read's result is walked once into its distinct texts, which are screened for text
  written for the model rather than for a person (instructions, chat-template tokens, tool
  names, markdown images, URLs with query strings, invisible characters:
  :mod:`~gmchat_nb.core.guards.scorer`). The read is not blocked; its flags go to the tool
  card, the trace and a change's confirmation card. The same texts feed the completion gates.
* The envelope: every result reaches a model as one JSON envelope, data kept as data
  (:class:`~gmchat_nb.core.guards.envelope.Envelope`; its text is written the first time a
  provider adapter reads it, then reused for every later request of the turn). Anything else
  that enters a model's context as data (recalled knowledge, next) is wrapped by
  :func:`envelope` the same way.
"""

from __future__ import annotations

from typing import Any

from ..guards.envelope import Envelope
from ..project.tools import is_read_tool
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["ScanStage", "envelope"]


_CHECKS = frozenset({"arguments", "access"})


def _scanned(record: ToolCallRecord) -> bool:
    """Whether the result is the tool's, or a check's standing in for it (an unknown manager's
    error echoes what the model asked for): not a loop guard's answer, nor a budget's."""
    if record.answered_by is None:
        return True
    return record.answered_by in _CHECKS and record.verdict != "rate_limited"


def envelope(tool: str, call_id: str, data: Any) -> Envelope:
    """What a model reads for ``data`` returned under ``tool`` and ``call_id``."""
    return Envelope(tool, call_id, data)


class ScanStage(Stage):
    name = "scan"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        run = record.run
        if run is None:
            return
        record.envelope = Envelope(record.name, record.id, run.result)
        if not _scanned(record) or not is_read_tool(record.name):
            return  # a change's result, or a repeat's (scanned when it first came), or a budget's
        flags = scope.guards.scan_result(record.name, run.result, failed=run.failed)
        if flags:
            record.flags = flags
            if scope.trace is not None and record.span is not None:
                scope.trace.event("injection_flag", record.span, flags=flags)

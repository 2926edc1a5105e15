"""The audit stage: the call in the audit log, and a change's ending in the caller's records.

``tool_call`` and ``tool_result`` audit events (secrets redacted by
:class:`~gmchat_nb.core.audit.AuditLog`) for every call the hooks hear of
(:func:`~.hooks.heard`); for a change, the caller's ``settle`` records how it ended (its
confirmation in the store: executed, rejected or failed).
"""

from __future__ import annotations

from ..project.tools import TOOLS
from .hooks import heard
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["AuditStage"]


class AuditStage(Stage):
    name = "audit"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        if not heard(record):
            return
        call, run = record.call, record.run
        assert run is not None
        if scope.audit is not None:
            scope.audit.emit(
                "tool_call",
                {"tool_name": call.name, "args": call.args, "session_key": scope.session_key},
            )
            scope.audit.emit(
                "tool_result",
                {
                    "tool_name": call.name,
                    "args": call.args,
                    "result": run.result,
                    "session_key": scope.session_key,
                },
            )
        if call.name == TOOLS.mutate.name and scope.settle is not None:
            scope.settle(call, run)

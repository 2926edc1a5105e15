"""The reference stage: an executed call that is one of the scope's reference calls.

A caller may give the scope reference calls (``CallScope.references``: the calls a verified
query is known to answer with). A call that ran with the same tool and arguments as one of them
(compared by the loop guard's canonical :func:`~gmchat_nb.core.guards.loop_guard.fingerprint`:
key order and spacing do not matter) is marked with the reference's id, on the record and in
``CallScope.matched``, for an answer's "trusted" mark. Without references it does nothing.
"""

from __future__ import annotations

from ..guards.loop_guard import fingerprint
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["ReferenceStage"]


class ReferenceStage(Stage):
    name = "reference"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        if not scope.references or not record.ran or record.failed:
            return
        key = fingerprint(record.name, record.args)
        for reference in scope.references:
            if reference.name == record.name and fingerprint(reference.name, reference.args) == key:
                record.reference = reference.id
                scope.matched[record.id] = reference.id
                return

"""The reference stage: an executed call that re-runs one of the scope's reference calls.

A caller may give the scope reference calls (``CallScope.references``: the query calls a
recalled verified query answers with). An executed call re-runs one when it has the same
*shape*: for ``query`` the same manager, fields, filter and exclude keys, grouping and order,
whatever the filter values (a verified "parts made of titanium" re-run for steel is the same
query); for any other tool the same arguments, compared by the loop guard's canonical
:func:`~gmchat_nb.core.guards.loop_guard.fingerprint`. The call is marked with the reference's
id, on the record and in ``CallScope.matched`` (every reference of that shape in
``matched_parts``, those it re-ran with the very same arguments in ``exact_parts`` too), for the
answer's "trusted" mark. Without references it does nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..guards.loop_guard import fingerprint
from ..project.tools import TOOLS
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["ReferenceStage", "call_shape"]

_VALUED = ("filters", "exclude")  # their keys are the shape, their values may change


def call_shape(name: str, args: Mapping[str, Any]) -> str:
    """What must be equal for one call to re-run another (see the module)."""
    if name != TOOLS.query.name or not isinstance(args, Mapping):
        return fingerprint(name, args)
    shape: dict[str, Any] = {}
    for key, value in args.items():
        keyed = key in _VALUED and isinstance(value, Mapping)
        if keyed or (key == "fields" and isinstance(value, list)):
            shape[key] = sorted(str(item) for item in value)
        elif key in ("page", "page_size", "limit"):
            continue  # how much of the answer is read, not which
        else:
            shape[key] = value
    return fingerprint(name, shape)


class ReferenceStage(Stage):
    name = "reference"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        if not scope.references or not record.ran or record.failed:
            return
        shape = call_shape(record.name, record.args)
        exact = fingerprint(record.name, record.args)
        for reference in scope.references:
            if reference.name != record.name:
                continue
            if call_shape(reference.name, reference.args) != shape:
                continue
            part = (reference.id, reference.part)
            scope.matched_parts.add(part)
            if fingerprint(reference.name, reference.args) == exact:
                scope.exact_parts.add(part)
                record.reference = reference.id  # the one it re-ran as it was saved
            elif record.reference is None:
                record.reference = reference.id
            scope.matched[record.id] = record.reference

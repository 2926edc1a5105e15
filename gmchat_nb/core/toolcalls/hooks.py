"""The hooks stage: the caller's ``tool_called`` hook for each call, and ``mutation_executed``
for each change that ran.

Its place in the chain is the one the turn sequence gives (after access, before the loop
guard), but ``tool_called`` carries the call's result (GeneralManager's payload: ``actor``,
``tool_name``, ``args``, ``result``), so it fires once the result is known. It fires for every
well-formed call of an offered tool (one past the arguments stage) with a result, except those
the loop guard answered in the tool's place (a repeat or a refusal: the tool did not run) and
those a budget refused. A hook never breaks a call
(:class:`~gmchat_nb.core.session.hooks.Hooks` logs what one raises).
"""

from __future__ import annotations

from ..project.tools import TOOLS
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["UNHEARD", "HooksStage"]

UNHEARD = frozenset({"arguments", "loop_guard"})
"""Stages whose answers are neither hooked nor audited: a malformed call is no tool call, and a
loop guard's answer comes from what the scope already knew (the tool did not run)."""


def heard(record: ToolCallRecord) -> bool:
    """Whether hooks and the audit log hear of the call (see :data:`UNHEARD`)."""
    if record.run is None or record.answered_by in UNHEARD:
        return False
    return not (record.answered_by == "access" and record.verdict == "rate_limited")


class HooksStage(Stage):
    name = "hooks"

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        hooks = scope.hooks
        if hooks is None or not heard(record):
            return
        call = record.call
        hooks.fire(
            "tool_called",
            actor=scope.actor,
            tool_name=call.name,
            args=call.args,
            result=record.result,
        )
        if call.name == TOOLS.mutate.name and record.ran:
            hooks.fire(
                "mutation_executed",
                actor=scope.actor,
                mutation=call.args.get("mutation"),
                input=call.args.get("input"),
                result=record.result,
            )

"""The loop guard stage: a call the turn already made is answered from before, then refused.

A call the arguments or access stage refused still counts, as a call that failed (the same
mistake twice is stuck, whichever stage catches it). Before a call it asks the scope's loop
guard (:class:`~gmchat_nb.core.guards.loop_guard.LoopGuard`
through :class:`~gmchat_nb.core.guards.turn.TurnGuards`): ``run``, ``repeat`` (a read made again:
its earlier result, marked as a repeat, without running; in an agent's scope, which outlives a
turn, it runs again, with a note) or ``refuse`` (a third identical read,
a read that failed twice, a change the user rejected in this turn). After a call that ran it
tells the guard the result (a read's success for its cache, a failure for the stuck patterns)
and how a change ended (one that ran makes every cached read stale). Counting every call is what
holds the scope's tool-call budget.
"""

from __future__ import annotations

from ..guards.turn import ENDED_AS
from ..project.tools import TOOLS
from .record import ToolCallRecord
from .scope import CallScope
from .stage import Stage

__all__ = ["REPEATED_AGAIN", "LoopGuardStage"]

REPEATED_AGAIN = (
    "You already made this call a moment ago; it ran again, in case the data changed. Use its "
    "result instead of asking again: the same call a third time is refused for a while."
)
_CHECKED_BEFORE = frozenset({"arguments", "access"})


class LoopGuardStage(Stage):
    name = "loop_guard"

    def check(self, record: ToolCallRecord, scope: CallScope) -> None:
        guards = scope.guards
        if guards.loop is None:
            return
        verdict = guards.before_call(record.name, record.args)
        if verdict.action == "run":
            return
        if verdict.action == "repeat" and scope.kind == "agent":
            # An agent's scope outlives a turn: others may have changed the data since, so
            # its repeat runs again, told that it repeated itself (a third time is refused).
            record.note = REPEATED_AGAIN
            return
        record.answer(
            self.name, verdict.result, verdict.action if verdict.action == "repeat" else None
        )
        if record.name == TOOLS.mutate.name:
            guards.note_refused_change(record.args)
        if scope.trace is not None and record.span is not None:
            scope.trace.event(
                "loop_guard", record.span, action=verdict.action, reason=verdict.reason
            )

    def after(self, record: ToolCallRecord, scope: CallScope) -> None:
        guards = scope.guards
        run = record.run
        if run is None:
            return
        if record.name == TOOLS.mutate.name:
            prepared = record.prepared
            if prepared is None:
                return
            status = ENDED_AS.get(record.verdict or "") if not record.ran else None
            if record.ran:
                status = "failed" if run.failed else "executed"
            if status is not None:
                guards.mutation_ended(prepared.mutation, record.args, status, prepared.input)
            return
        if record.ran:
            guards.record_call(record.name, record.args, run.result, failed=run.failed)
        elif record.answered_by in _CHECKED_BEFORE and record.verdict != "rate_limited":
            guards.refused_before_running(record.name, record.args)

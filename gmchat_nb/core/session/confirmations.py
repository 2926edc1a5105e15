"""Confirmations from the session's side: a confirmation waited on in this process
(:class:`ConfirmationWaiter`), the turn resumed after a persisted one was decided
(:func:`resumed_turn`), and what a confirm request is told when there is nothing to decide."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable

from ..events import ChatEvent, Done, Error
from ..loop import ToolLoop
from ..project.mutations import PreparedMutation
from ..project.tools import TOOLS, ToolRun
from ..providers.base import Message, ToolCallEvent
from ..store import ChatStore, ConfirmationRecord
from ..turn_state import Decision, TurnState

__all__ = [
    "AGENT_ORIGIN",
    "PERSON_DECIDES",
    "UNAVAILABLE",
    "ConfirmationWaiter",
    "expire",
    "pending_record",
    "person_must_decide",
    "resumed_turn",
    "settle",
]

AGENT_ORIGIN = "agent"
"""A confirmation an agent's call opened (over MCP, :mod:`gmchat_nb.core.agent`): its turn ends
with the mutation's result, as no model waits to go on from it."""

PERSON_DECIDES = (
    "An agent's change is decided by a person: in the gmchat side panel or widget (a browser "
    "session, or the notebook's kernel), never with a token. The person has been asked."
)


def person_must_decide(record: ConfirmationRecord | None) -> bool:
    """Whether only a person may decide ``record``: an agent proposed it (over MCP, with an
    agent token or a Jupyter token), so no token-authenticated request may answer it, or the
    agent would approve its own change."""
    return record is not None and record.turn_state.get("origin") == AGENT_ORIGIN


UNAVAILABLE = (
    "There is no pending confirmation with that id in this conversation: it is unknown, was "
    "already decided, or expired."
)


class ConfirmationWaiter:
    """One pending confirmation in this process: a future with a deadline.

    The human's answer becomes the loop's decision through ``claim`` (which claims the
    confirmation in the store); a deadline that passes first goes to ``expire``. Either way the
    waiter then leaves ``waiting``, the session's waiters by confirmation id.
    """

    def __init__(
        self,
        confirmation_id: str,
        timeout: float,
        *,
        claim: Callable[[str, bool], Decision],
        expire: Callable[[str], None],
        waiting: dict[str, ConfirmationWaiter],
    ) -> None:
        self.confirmation_id = confirmation_id
        self.timeout = timeout
        self.future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._claim = claim
        self._expire = expire
        self._waiting = waiting

    async def wait(self) -> Decision:
        """The decision: claimed as confirmed or rejected, ``unavailable``, or ``timed_out``."""
        try:
            confirmed = await asyncio.wait_for(asyncio.shield(self.future), self.timeout)
        except TimeoutError:
            self._expire(self.confirmation_id)
            return "timed_out"
        finally:
            self._waiting.pop(self.confirmation_id, None)
        return self._claim(self.confirmation_id, confirmed)


async def resumed_turn(
    loop: ToolLoop,
    messages: list[Message],
    state: TurnState,
    record: ConfirmationRecord,
    decision: Decision,
) -> AsyncIterator[ChatEvent]:
    """The rest of a turn suspended at ``record``: its mutation finished as ``decision`` says
    (or refused as a tool result when it can no longer be prepared), then the loop goes on (an
    agent's turn ends there: :data:`AGENT_ORIGIN`)."""
    call_data = record.turn_state.get("call", {})
    call = ToolCallEvent(
        str(call_data.get("id", record.id)), TOOLS.mutate.name, dict(call_data.get("args", {}))
    )
    async for event in loop.resume(messages, call, decision, state):
        yield event
        if isinstance(event, Error):
            return
    if record.turn_state.get("origin") == AGENT_ORIGIN:
        yield Done(usage=state.usage.to_dict())
        return
    async for event in loop.run(messages, state):
        yield event


def pending_record(
    conversation_id: str,
    actor_id: str,
    call: ToolCallEvent,
    prepared: PreparedMutation,
    state: TurnState,
    *,
    now: float,
    timeout: float,
    origin: str = "chat",
) -> ConfirmationRecord:
    """A new pending confirmation of ``call``, with what resuming its turn needs (``origin``:
    ``"chat"``, or :data:`AGENT_ORIGIN` for an agent's call)."""
    return ConfirmationRecord(
        conversation_id=conversation_id,
        id=call.id,
        actor_id=actor_id,
        mutation=prepared.mutation,
        input=dict(prepared.input),
        state="pending",
        created_at=now,
        expires_at=now + timeout,
        resolved_at=None,
        turn_state={
            "state": state.to_dict(),
            "call": {"id": call.id, "name": call.name, "args": call.args},
            "origin": origin,
        },
    )


def settle(
    store: ChatStore, conversation_id: str, confirmation_id: str, run: ToolRun, *, now: float
) -> None:
    """Record how a claimed confirmation ended, from its mutation's tool result."""
    record = store.confirmation(conversation_id, confirmation_id)
    if record is None or record.state != "claimed":
        return
    status = run.result.get("status") if isinstance(run.result, dict) else None
    final = {"executed": "executed", "cancelled": "rejected"}.get(str(status), "failed")
    store.finish_confirmation(conversation_id, confirmation_id, final, now=now)


def expire(store: ChatStore, conversation_id: str, confirmation_id: str, *, now: float) -> None:
    """A confirmation nobody decided in time: expired, if it is still pending."""
    record = store.confirmation(conversation_id, confirmation_id)
    if record is not None and record.state == "pending":
        store.finish_confirmation(conversation_id, confirmation_id, "expired", now=now)

"""An agent's data changes: each runs as a turn of the session, so it keeps the chat's rules.

``mutate`` over MCP is validated first (the allow-list, names and types: a mistake is a result
the agent corrects, and nothing is stored). A valid call becomes a turn in a new conversation of
the actor, whose "model" is :class:`~.relay.AgentCallRelay`: the loop runs it as it runs a
model's call, so an allowed mutation runs once with its idempotency key, and a confirm-listed one
stops at its confirmation, persisted in the store. Then a human decides:

* where the agent's host can ask its user (MCP elicitation), ``ask`` shows them the validated
  input and their answer resumes the turn here (accept: claimed once, run once; decline: not run);
* otherwise the call answers ``pending_confirmation`` with a ``confirmation_id`` (saying that a
  person has been asked, not how to answer: the agent is not the one to); the person decides in
  the widget, the side panel or ``POST {url}confirm/`` from their browser session (the
  conversation is theirs, the turn suspended like an SSE turn's; a token-authenticated request
  may not decide it), and the agent calls ``mutate`` with that id to learn the outcome.

Deny-by-default: a change runs only on an explicit yes. Never retried: the loop's rules.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..events import ChatEvent, ConfirmMutation, Error, ToolResult
from ..project.errors import ToolError
from ..project.project import Project
from ..project.tools import TOOLS
from ..providers.base import ToolCallEvent
from ..session.actor import Actor
from ..session.chat_session import ChatSession
from ..session.confirmations import AGENT_ORIGIN
from ..settings import ChatSettings
from ..store import ChatStore, ConfirmationRecord
from .relay import AgentCallRelay

__all__ = ["AgentChanges", "AskHuman", "PendingChange", "agent_settings", "error_result"]

log = logging.getLogger(__name__)

CONFIRMATION_ID = "confirmation_id"
UNKNOWN_CONFIRMATION = (
    "No change of yours waits or ended under that confirmation_id; call mutate with 'mutation' "
    "and 'input' to ask for one."
)


@dataclass(frozen=True, slots=True)
class PendingChange:
    """A validated change waiting for a human: what to show them, and until when."""

    confirmation_id: str
    conversation_id: str
    mutation: str
    input: dict[str, Any]
    expires_at: float

    def to_result(self, now: float) -> dict[str, Any]:
        """The ``mutate`` result while it waits."""
        return {
            "status": "pending_confirmation",
            CONFIRMATION_ID: self.confirmation_id,
            "conversation_id": self.conversation_id,
            "mutation": self.mutation,
            "input": self.input,
            "expires_in_seconds": max(0, round(self.expires_at - now)),
            "message": (
                "A person has been asked to confirm this change; only they can decide it. "
                "Nothing has run. Call mutate again with "
                f'{{"{CONFIRMATION_ID}": "{self.confirmation_id}"}} to learn the outcome.'
            ),
        }


AskHuman = Callable[[PendingChange], Awaitable[bool | None]]
"""Asks the agent's user about a change: True (accept), False (decline) or None (not asked or no
answer: the change stays pending for a human elsewhere)."""


def agent_settings(settings: ChatSettings) -> ChatSettings:
    """The settings of an agent's turns: no planned reads (the call is given) and neither the
    mutation intent gate nor the answer's gates, which read a person's question and a model's
    answer, and an agent's turn has neither; the human's confirmation is the gate."""
    return dataclasses.replace(
        settings,
        planned={},
        injection=dataclasses.replace(settings.injection, mutation_intent=False, question="log"),
        completion_gates=dataclasses.replace(
            settings.completion_gates, phantom_write=False, grounded_numbers=False, empty_data=False
        ),
    )


class AgentChanges:
    """``mutate`` for agents: changes as turns, their confirmations and their outcomes."""

    def __init__(
        self,
        project: Project,
        settings: ChatSettings,
        *,
        store: ChatStore,
        actor: Actor,
        session: Callable[[AgentCallRelay, str | None], ChatSession],
        mutations: tuple[str, ...],
        clock: Callable[[], float],
    ) -> None:
        self.project = project
        self.settings = settings
        self.store = store
        self.actor = actor
        self._session = session
        self.mutations = frozenset(mutations)
        self.clock = clock

    async def mutate(self, args: dict[str, Any], ask: AskHuman | None) -> dict[str, Any]:
        """A new change (``mutation``, ``input``) or the outcome of one (``confirmation_id``)."""
        if CONFIRMATION_ID in args:
            if set(args) != {CONFIRMATION_ID} or not isinstance(args[CONFIRMATION_ID], str):
                return _invalid(
                    f'To learn a change\'s outcome pass only {{"{CONFIRMATION_ID}": "..."}} '
                    "(a string), as the pending result gave it."
                )
            return await self.outcome(args[CONFIRMATION_ID], ask)
        if set(args) - {"mutation", "input"} or "mutation" not in args:
            return _invalid(
                f"{TOOLS.mutate.name} takes 'mutation' and 'input' (e.g. {{\"mutation\": "
                f'"createPart", "input": {{"name": "Bolt"}}}}), or \'{CONFIRMATION_ID}\'.'
            )
        if not self.actor.authenticated:
            return error_result(
                "authentication_required", "Mutations require an authenticated user."
            )
        try:
            prepared = self.project.mutation_compiler.prepare(
                args["mutation"], args.get("input"), self.mutations
            )
        except ToolError as error:
            return error.to_result()
        call = ToolCallEvent(f"mcp-{uuid.uuid4().hex}", TOOLS.mutate.name, dict(args))
        session = self._session(AgentCallRelay(call), None)
        text = f"An agent asked over MCP for the change {prepared.mutation}."
        try:
            admission = session.admit(text, new_conversation=True)
            events = [event async for event in session.drive(admission, text, transport="sse")]
        except Exception:  # the store failed: nothing ran
            log.exception("an agent's change could not start")
            return error_result("chat_error", "The change could not be started; nothing ran.")
        return await self._ended(session, call.id, events, ask)

    async def outcome(self, confirmation_id: str, ask: AskHuman | None) -> dict[str, Any]:
        """How the actor's change ``confirmation_id`` stands (asking its user again when it
        still waits and the host can ask)."""
        record = self.store.actor_confirmation(self.actor.id, confirmation_id)
        if record is None or record.turn_state.get("origin") != AGENT_ORIGIN:
            return error_result("unknown_confirmation", UNKNOWN_CONFIRMATION)
        now = self.clock()
        if record.state == "pending" and record.expires_at > now:
            session = self._session(AgentCallRelay(), record.conversation_id)
            return await self._decide(session, _pending(record), ask)
        if record.state == "pending":
            self.store.finish_confirmation(record.conversation_id, record.id, "expired", now=now)
            return _cancelled("confirmation_timed_out", record)
        if record.state == "claimed":
            return {
                "status": "running",
                CONFIRMATION_ID: record.id,
                "message": "A person confirmed the change and it is running; ask again shortly.",
            }
        if record.state in ("rejected", "expired"):
            reason = "user_rejected" if record.state == "rejected" else "confirmation_timed_out"
            return _cancelled(reason, record)
        return self._recorded_result(record)

    async def _ended(
        self, session: ChatSession, call_id: str, events: list[ChatEvent], ask: AskHuman | None
    ) -> dict[str, Any]:
        """The call's result from its turn's events (the pending change asked about first)."""
        for event in events:
            if isinstance(event, ToolResult) and event.id == call_id:
                return (
                    dict(event.result)
                    if isinstance(event.result, dict)
                    else {"result": event.result}
                )
            if isinstance(event, Error):
                return _turn_error(event)
            if isinstance(event, ConfirmMutation) and session.conversation_id is not None:
                pending = PendingChange(
                    call_id,
                    session.conversation_id,
                    event.mutation,
                    dict(event.input),
                    self.clock() + float(event.expires_in_seconds or 0),
                )
                return await self._decide(session, pending, ask)
        return error_result(
            "chat_error", "The change ended without a result; nothing is known to have run."
        )

    async def _decide(
        self, session: ChatSession, pending: PendingChange, ask: AskHuman | None
    ) -> dict[str, Any]:
        """Ask the agent's user when the host can; their answer resumes the turn here."""
        answer: bool | None = None
        if ask is not None:
            try:
                answer = await asyncio.wait_for(ask(pending), pending.expires_at - self.clock())
            except TimeoutError:
                answer = None
            except Exception:  # the host could not ask: a human decides elsewhere
                log.info("an agent's host could not ask its user", exc_info=True)
                answer = None
        if answer is None:
            return pending.to_result(self.clock())
        resumed = [
            event
            async for event in session.resume(
                pending.confirmation_id,
                answer,
                transport="sse",
                unavailable_code="bad_event",
                via="elicitation",
            )
        ]
        for event in resumed:
            if isinstance(event, ToolResult) and event.id == pending.confirmation_id:
                return (
                    dict(event.result)
                    if isinstance(event.result, dict)
                    else {"result": event.result}
                )
        # decided meanwhile elsewhere (or expired): the store says how
        return await self.outcome(pending.confirmation_id, None)

    def _recorded_result(self, record: ConfirmationRecord) -> dict[str, Any]:
        """The mutation's result as its turn recorded it."""
        for message in reversed(self.store.messages(record.conversation_id)):
            if message.role == "tool" and message.tool_call_id == record.id:
                result = message.tool_result
                return dict(result) if isinstance(result, dict) else {"result": result}
        return error_result(
            "unknown_outcome",
            f"The change was {record.state}, but its result was not recorded.",
        )


def _pending(record: ConfirmationRecord) -> PendingChange:
    return PendingChange(
        record.id, record.conversation_id, record.mutation, dict(record.input), record.expires_at
    )


def _cancelled(reason: str, record: ConfirmationRecord) -> dict[str, Any]:
    return {"status": "cancelled", "reason": reason, CONFIRMATION_ID: record.id}


def _turn_error(event: Error) -> dict[str, Any]:
    result = error_result(event.code, event.message)
    if event.retry_after_seconds is not None:
        result["retry_after_seconds"] = event.retry_after_seconds
    return result


def _invalid(message: str) -> dict[str, Any]:
    return error_result("invalid_arguments", message)


def error_result(code: str, message: str) -> dict[str, Any]:
    """A tool's error result (``status: error``, a code, a message to act on)."""
    return {"status": "error", "code": code, "message": message}

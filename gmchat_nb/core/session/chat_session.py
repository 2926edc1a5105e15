"""The conversation: :class:`ChatSession`, what the notebook API, the widget and the server
extension drive.

A session owns one conversation of one actor in the store, admits turns against the actor's
budgets, journals every event with its sequence number, runs the
:class:`~gmchat_nb.core.loop.ToolLoop` (serving it as its :class:`~gmchat_nb.core.loop.TurnIO`)
and ends every turn with exactly one terminal event. Confirmations are persisted and claimed
atomically, so a mutation can run at most once however many processes or requests try to confirm
it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..audit import AuditLog
from ..events import (
    ChatEvent,
    ConfirmMutation,
    Done,
    Error,
    TextChunk,
    error_event,
    event_from_dict,
)
from ..loop import Decision, LoopLimits, ToolLoop, Transport, TurnState
from ..planned.catalog import load_catalog
from ..planned.roles import RoleProviders
from ..planned.turn import PlannedTurn
from ..planned.work import TurnWork
from ..project.mutations import PreparedMutation
from ..project.project import Project, QueryOutcome
from ..project.tools import ToolRun, run_tool
from ..providers.base import BaseLLMProvider, Message, TokenUsage, ToolCallEvent, ToolDefinition
from ..ratelimit import RateLimiter
from ..recovery import OWNER, close_turn, driving, recover
from ..settings import ChatSettings
from ..store import ChatStore, ConfirmationRecord, StoredMessage, TurnRecord
from .actor import Actor
from .confirmations import UNAVAILABLE, ConfirmationWaiter, resumed_turn
from .context import bounded_context
from .hooks import Hooks
from .messages import conversation_title, message_row, text_refusal
from .offer import tools_and_prompt

__all__ = ["ChatSession"]

log = logging.getLogger(__package__)  # the session's logger, as before it became a package


class TurnCancelled(Exception):
    """An admitted turn's explicit cancel, found in the store between two steps (its command
    id is the message)."""


class ChatSession:
    """One conversation of one actor over one project and provider."""

    def __init__(
        self,
        project: Project,
        provider: BaseLLMProvider,
        settings: ChatSettings,
        *,
        store: ChatStore,
        actor: Actor,
        conversation_id: str | None = None,
        audit: AuditLog | None = None,
        limiter: RateLimiter | None = None,
        hooks: Hooks | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.project = project
        self.provider = provider
        self.settings = settings
        self.store = store
        self.actor = actor
        self.audit = audit or AuditLog.from_settings(settings.audit)
        self.limiter = limiter or RateLimiter.from_settings(store, settings.rate_limit, clock=clock)
        self.hooks = hooks or Hooks(settings.hooks)
        self.clock = clock
        untitled = False
        if conversation_id is not None:
            record = store.conversation(conversation_id)
            if record is None or record.actor_id != actor.id:
                raise KeyError(f"no conversation {conversation_id!r} for this user")
            untitled = not record.title  # its first question will name it
        self.conversation_id = conversation_id
        self.outcomes: dict[str, QueryOutcome] = {}  # the current turn's, by tool call id
        self._busy = False
        self._waiters: dict[str, ConfirmationWaiter] = {}
        self._turn: TurnState | None = None
        self._admitted = False
        self._untitled = untitled
        self._unsaved: list[dict[str, Any]] = []
        self._journal: list[tuple[int, dict[str, Any]]] = []
        allowed = [name for name in settings.allowed_mutations if name in project.index.mutations]
        self._mutations = tuple(allowed)
        tools, self._system_prompt = tools_and_prompt(project, settings, self._mutations)
        self._tools = list(tools)
        self._planned = settings.planned_settings
        # The catalog is checked against the schema when the session opens, not mid-turn.
        self._catalog = (
            load_catalog(self._planned.catalog, project) if self._planned.enabled else None
        )
        self._role_providers: dict[str, BaseLLMProvider] = {}

    # -- public --------------------------------------------------------------------------------

    @property
    def busy(self) -> bool:
        """True while a turn runs (or waits for a confirmation)."""
        return self._busy

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools the model is offered."""
        return list(self._tools)

    @property
    def system_prompt(self) -> str:
        """The system prompt every turn starts with."""
        return self._system_prompt

    def new_conversation(self, title: str = "") -> str:
        """Start a new conversation and make it current."""
        if self._busy:
            raise RuntimeError("a turn is running; wait for it to end")
        self.conversation_id = self.store.create_conversation(self.actor.id, title).id
        self._untitled = not title  # the first question will name it
        return self.conversation_id

    def history(self) -> list[StoredMessage]:
        """The stored messages of the current conversation."""
        if self.conversation_id is None:
            return []
        return self.store.messages(self.conversation_id)

    async def run_turn(
        self, text: Any, *, transport: Transport = "stream", turn_id: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """Answer one user message: an async iterator of events ending in Done or Error.

        ``turn_id`` is the id a client admitted the turn under (``POST turns/``): its events are
        journaled under it. Without one the turn gets a fresh id.

        Text that cannot be stored — not a string, blank, or holding a lone surrogate (half of
        a UTF-16 pair, which no UTF-8 store or socket can carry) — is refused with
        ``bad_message`` before anything is stored; nothing is silently changed.
        """
        refusal = text_refusal(text)
        if refusal is not None:
            yield error_event("bad_message", message=refusal)
            return
        if self._busy:
            yield error_event("turn_in_progress")
            return
        try:
            refused = self._admit(text)
        except Exception as error:  # the store failed before the turn began
            yield self._failed_to_start(error)
            return
        if refused is not None:
            yield refused
            return
        self._busy = True
        self._admitted = turn_id is not None  # a cancel command may come through the store
        try:
            state = TurnState() if turn_id is None else TurnState(turn_id=turn_id)
            await self.persist(Message("user", text), state)
            self.audit.emit("user_message", {"message": text, "session_key": self.conversation_id})
            self.hooks.fire(
                "message_received",
                actor=self.actor,
                message=text,
                conversation_id=self.conversation_id,
            )
            async for event in self._drive(state, transport, None):
                yield event
        finally:
            self._busy = False

    async def continue_turn(
        self, turn: TurnRecord, *, transport: Transport = "sse"
    ) -> AsyncIterator[ChatEvent]:
        """Run again an admitted turn a crash cut off before any data change (this process owns
        it now: :func:`~gmchat_nb.core.recovery.take_over_resumable`). One that never started
        runs from its text; one cut off mid-way goes on from its last committed step (its
        question and tool rounds are in the context, a round missing results as text) and its
        journal after its last sequence: still exactly one terminal event."""
        self.conversation_id = turn.conversation_id
        if not self.store.messages(turn.conversation_id, turn_id=turn.id):
            events = self.run_turn(turn.input, transport=transport, turn_id=turn.id)
        elif self._busy:
            events = _single(error_event("turn_in_progress"))
        else:
            self._admitted = True
            state = TurnState(turn_id=turn.id)
            events = self._exclusively(self._drive(state, transport, None, continued=True))
        async for event in events:
            yield event

    def _admit(self, text: str) -> Error | None:
        """Close what earlier turns left open, check budgets and confirmations, and make sure
        the conversation exists and is named; an error event when the turn may not start."""
        if self.conversation_id is not None:
            # A turn of this conversation left open by a process that died, or suspended at a
            # confirmation that expired, is closed first, so the context below is honest.
            recover(self.store, conversation_id=self.conversation_id, now=self.clock())
            if self.store.pending_confirmation(self.conversation_id, now=self.clock()):
                return error_event("confirmation_pending")
        decision = self.limiter.admit_request(self.actor.id)
        if not decision.allowed:
            return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)
        if self.conversation_id is None:
            self.conversation_id = self.store.create_conversation(
                self.actor.id, conversation_title(text)
            ).id
        elif self._untitled:
            self.store.rename_conversation(self.conversation_id, conversation_title(text))
        self._untitled = False
        return None

    def _failed_to_start(self, error: Exception) -> Error:
        """The one terminal event of a turn whose first step failed (logged server-side)."""
        log.exception("a chat turn could not start", exc_info=error)
        self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "admission"})
        return error_event("chat_error")

    def confirm(self, confirmation_id: str, confirmed: bool) -> bool:
        """Resolve a confirmation a running turn waits for; False when none waits under that id."""
        waiter = self._waiters.get(confirmation_id)
        if waiter is None or waiter.future.done():
            return False
        waiter.future.set_result(bool(confirmed))
        return True

    async def resume(
        self,
        confirmation_id: str,
        confirmed: bool,
        *,
        transport: Transport = "sse",
        unavailable_code: str = "bad_event",
    ) -> AsyncIterator[ChatEvent]:
        """Resolve a persisted confirmation (the SSE confirm request) and finish its turn.

        The claim is atomic: a second claim — another request, another process — gets
        ``unavailable_code`` and the mutation never runs twice.
        """
        if self.confirm(confirmation_id, confirmed):
            return  # the turn that waits for it goes on and streams the rest
        if self._busy:
            yield error_event("turn_in_progress")
            return
        record = None
        if self.conversation_id is not None and isinstance(confirmation_id, str):
            record = self.store.claim_confirmation(
                self.conversation_id,
                confirmation_id,
                self.actor.id,
                now=self.clock(),
                owner=OWNER,
            )
        if record is None:
            yield error_event(unavailable_code, message=UNAVAILABLE)
            return
        state = TurnState.from_dict(record.turn_state.get("state", {}))
        decision: Decision = "confirmed" if confirmed else "rejected"
        async for event in self._exclusively(self._drive(state, transport, (record, decision))):
            yield event

    async def _exclusively(self, events: AsyncIterator[ChatEvent]) -> AsyncIterator[ChatEvent]:
        """``events`` with the session busy while they run: one turn at a time."""
        self._busy = True
        try:
            async for event in events:
                yield event
        finally:
            self._busy = False

    # -- TurnIO --------------------------------------------------------------------------------

    async def persist(self, message: Message, state: TurnState) -> None:
        """Queue one message of the turn; it is written with the next flush."""
        self._turn = state
        self._unsaved.append(message_row(message))

    def checkpoint(self) -> None:
        """Write what the turn has so far now (before and after a data change)."""
        self._flush()

    def check_rate(self) -> Error | None:
        """Before each provider round: write what the turn has so far, stop if the turn was
        cancelled (by any process: the command is in the store), then check budgets."""
        self._flush()
        if self._admitted and self._turn is not None and self.conversation_id is not None:
            record = self.store.turn(self.conversation_id, self._turn.turn_id)
            if record is not None and record.cancel_command is not None:
                raise TurnCancelled(record.cancel_command)
        decision = self.limiter.check_tokens(self.actor.id)
        if decision.allowed:
            return None
        return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)

    def record_usage(self, usage: TokenUsage) -> None:
        """Count tokens against the actor's budgets."""
        self.limiter.record_usage(self.actor.id, usage)

    def tool_finished(self, call: ToolCallEvent, run: ToolRun) -> None:
        """Audit and hooks for one tool call."""
        session_key = self.conversation_id
        self.audit.emit(
            "tool_call", {"tool_name": call.name, "args": call.args, "session_key": session_key}
        )
        self.audit.emit(
            "tool_result",
            {
                "tool_name": call.name,
                "args": call.args,
                "result": run.result,
                "session_key": session_key,
            },
        )
        self.hooks.fire(
            "tool_called", actor=self.actor, tool_name=call.name, args=call.args, result=run.result
        )
        if call.name == "mutate":
            self._settle(call.id, run)
            self.hooks.fire(
                "mutation_executed",
                actor=self.actor,
                mutation=call.args.get("mutation"),
                input=call.args.get("input"),
                result=run.result,
            )

    def provider_failed(self, error: BaseException) -> None:
        """Provider details stay server-side: the log and the error hook."""
        reason = str(error) or "no message"
        log.warning(
            "provider %s failed: %s: %s",
            self.provider.__class__.__name__,
            type(error).__name__,
            reason,
        )
        self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "provider"})

    async def open_confirmation(
        self, call: ToolCallEvent, prepared: PreparedMutation, state: TurnState, *, wait: bool
    ) -> ConfirmationWaiter:
        """Persist the pending confirmation; the returned waiter resolves it."""
        assert self.conversation_id is not None
        now = self.clock()
        timeout = float(self.settings.confirm_timeout_seconds)
        self.store.add_confirmation(
            ConfirmationRecord(
                conversation_id=self.conversation_id,
                id=call.id,
                actor_id=self.actor.id,
                mutation=prepared.mutation,
                input=dict(prepared.input),
                state="pending",
                created_at=now,
                expires_at=now + timeout,
                resolved_at=None,
                turn_state={
                    "state": state.to_dict(),
                    "call": {"id": call.id, "name": call.name, "args": call.args},
                },
            )
        )
        waiter = ConfirmationWaiter(
            call.id, timeout, claim=self._claim, expire=self._expire, waiting=self._waiters
        )
        if wait:
            self._waiters[call.id] = waiter
        return waiter

    # -- internals -----------------------------------------------------------------------------

    async def _drive(
        self,
        state: TurnState,
        transport: Transport,
        resumed: tuple[ConfirmationRecord, Decision] | None,
        continued: bool = False,
    ) -> AsyncIterator[ChatEvent]:
        """Run (or resume) the loop, numbering, journaling and auditing every event.

        Every turn ends with exactly one terminal event (``done`` or ``error``), and that event is
        yielded only after it and everything before it are written, so what a client saw last is
        always in the store. A failing write ends the turn with ``chat_error`` instead (and is not
        retried by the next turn); a turn cancelled from outside (a client that went away) is
        closed as interrupted (:mod:`gmchat_nb.core.recovery`).
        """
        assert self.conversation_id is not None
        conversation_id = self.conversation_id
        # A resumed or continued turn goes on numbering where its journal stopped.
        sequence = (
            self.store.last_sequence(conversation_id, state.turn_id) if resumed or continued else 0
        )
        self.outcomes = {}  # this turn's query evidence, by tool call id
        answer: list[str] = []
        loop = self._loop(transport)
        self._turn = state
        ended = False
        with driving(conversation_id, state.turn_id):
            try:
                self._flush(turn_state="running")  # the context is read from the store
                messages = await bounded_context(
                    self.store,
                    self.provider,
                    self,
                    conversation_id,
                    state,
                    system_prompt=self._system_prompt,
                    summarize_after=self.settings.summarize_after,
                    max_recent=self.settings.max_recent_messages,
                    pending_tail=resumed is not None,
                )
                events: AsyncIterator[ChatEvent] = loop.run(messages, state)
                if self._catalog is not None and resumed is None:
                    events = self._planned_turn(state).events(
                        messages, lambda: loop.run(messages, state)
                    )
                if resumed is not None:
                    events = resumed_turn(loop, messages, state, *resumed)
                async for event in events:
                    sequence += 1
                    numbered = event.numbered(sequence)
                    self._journal.append((sequence, numbered.to_dict()))
                    if isinstance(event, TextChunk):
                        answer.append(event.content)
                    elif isinstance(numbered, Done | Error):
                        self._end(state, numbered)  # written before anyone sees it
                        ended = True
                    elif isinstance(event, ConfirmMutation):
                        # A confirm request may resume the turn in another process.
                        suspended = transport == "sse"
                        self._flush(turn_state="suspended" if suspended else None)
                        ended = suspended
                    yield numbered
            except TurnCancelled as cancelled:
                # an explicit cancel, seen between steps: closed like an interrupted turn, and
                # its terminal event told to whoever reads this stream
                self._interrupt(state, f"it was cancelled (command {cancelled})")
                closing = self.store.events(conversation_id, turn_id=state.turn_id)
                if closing and closing[-1].get("type") == "error":
                    yield event_from_dict(closing[-1])
            except Exception as error:  # a bug or a failed write: the generic public event
                if ended:
                    raise  # the turn already ended; this failure is the caller's to see
                log.exception("chat turn failed")
                self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "turn"})
                sequence += 1
                failure = error_event("chat_error").numbered(sequence)
                self._journal.append((sequence, failure.to_dict()))
                with contextlib.suppress(Exception):  # the store may be what failed
                    self._end(state, failure)
                ended = True
                yield failure
            except (asyncio.CancelledError, GeneratorExit):
                if not ended:
                    self._interrupt(state, "the client went away or the request was cancelled")
                raise
        if answer:
            self.audit.emit(
                "assistant_message",
                {"message": "".join(answer), "session_key": self.conversation_id},
            )

    def _planned_turn(self, state: TurnState) -> PlannedTurn:
        roles = RoleProviders(
            self._planned,
            legacy=self.provider,
            implicit=not self.settings.provider_profiles,
            on_usage=self.record_usage,
            built=self._role_providers,
        )
        self._role_providers = roles.providers  # built once per session, shared by its turns
        work = TurnWork(
            question="",
            settings=self._planned,
            roles=roles,
            run_tool=lambda name, args: run_tool(self.project, name, args),
            io=self,
            state=state,
            emit=lambda event: None,
            project=self.project,
            outcomes=self.outcomes,
        )
        assert self._catalog is not None
        return PlannedTurn(
            work, catalog=self._catalog, check_rate=self.check_rate, audit=self.audit.emit
        )

    def _loop(self, transport: Transport) -> ToolLoop:
        return ToolLoop(
            self.project,
            self.provider,
            self._tools,
            LoopLimits(
                max_rounds=self.settings.max_rounds,
                max_retries=self.settings.max_retries_per_message,
                max_mutations=self.settings.max_mutations_per_message,
                confirm_mutations=frozenset(self.settings.confirm_mutations),
                confirm_timeout_seconds=float(self.settings.confirm_timeout_seconds),
                allowed_mutations=frozenset(self._mutations),
                recover_missing_tool_calls=self.settings.recover_missing_tool_calls,
            ),
            self,
            authenticated=self.actor.authenticated,
            transport=transport,
            outcomes=self.outcomes,
        )

    def _end(self, state: TurnState, terminal: Done | Error) -> None:
        """Write the turn's last messages and journal with its terminal event, and its state."""
        if isinstance(terminal, Error) and terminal.code != "confirmation_required_transport":
            # Leave no dangling question: the next turn's context says this one failed.
            self._unsaved.append(
                message_row(
                    Message(
                        "assistant", f"(This request ended without an answer: {terminal.code}.)"
                    )
                )
            )
        self._flush(turn_state="done" if isinstance(terminal, Done) else "failed")

    def _interrupt(self, state: TurnState, reason: str) -> None:
        """Close a turn cancelled mid-way: what it did so far is written, then it is closed as
        interrupted like a turn whose process died (never raises: it runs while unwinding)."""
        if self.conversation_id is None:
            return
        try:
            self._flush(turn_state="running")
            turn = self.store.turn(self.conversation_id, state.turn_id)
            if turn is not None and turn.state == "running":
                close_turn(self.store, turn, reason, now=self.clock())
        except Exception:
            log.exception("could not record the interrupted turn %s", state.turn_id)

    def _flush(self, *, turn_state: str | None = None) -> None:
        """Write the turn's queued messages and events in one transaction (at round starts,
        before effects and confirmations, and at the end: a few writes per turn, not one per
        event). The queues are emptied first: a write that fails loses only this turn's rows
        and never poisons the next turn."""
        unsaved, journal = self._unsaved, self._journal
        self._unsaved, self._journal = [], []
        if self.conversation_id is None or self._turn is None:
            return
        if unsaved or journal or turn_state is not None:
            self.store.record_turn(
                self.conversation_id,
                self._turn.turn_id,
                unsaved,
                journal,
                state=turn_state,
                owner=OWNER,
            )

    def _claim(self, confirmation_id: str, confirmed: bool) -> Decision:
        assert self.conversation_id is not None
        record = self.store.claim_confirmation(
            self.conversation_id, confirmation_id, self.actor.id, now=self.clock(), owner=OWNER
        )
        if record is None:
            return "unavailable"
        return "confirmed" if confirmed else "rejected"

    def _settle(self, confirmation_id: str, run: ToolRun) -> None:
        """Record how a claimed confirmation ended, from its tool result."""
        if self.conversation_id is None:
            return
        record = self.store.confirmation(self.conversation_id, confirmation_id)
        if record is None or record.state != "claimed":
            return
        status = run.result.get("status") if isinstance(run.result, dict) else None
        final = {"executed": "executed", "cancelled": "rejected"}.get(str(status), "failed")
        self.store.finish_confirmation(
            self.conversation_id, confirmation_id, final, now=self.clock()
        )

    def _expire(self, confirmation_id: str) -> None:
        assert self.conversation_id is not None
        record = self.store.confirmation(self.conversation_id, confirmation_id)
        if record is not None and record.state == "pending":
            self.store.finish_confirmation(
                self.conversation_id, confirmation_id, "expired", now=self.clock()
            )


async def _single(event: ChatEvent) -> AsyncIterator[ChatEvent]:
    yield event

"""The conversation: :class:`ChatSession`, what the notebook API, the widget and the server
extension drive.

A session owns one conversation of one actor in the store, admits turns through the store's
:class:`~gmchat_nb.core.turns.TurnOwner` (against the actor's budgets), numbers every event and
journals it with a :class:`~gmchat_nb.core.turns.TurnWriter`, runs the
:class:`~gmchat_nb.core.loop.ToolLoop` (serving it as its :class:`~gmchat_nb.core.loop.TurnIO`)
and ends every turn with exactly one terminal event. Confirmations are persisted and claimed
atomically, so a mutation can run at most once however many processes or requests try to confirm
it.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import logging
import time
from collections.abc import AsyncIterator, Callable

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
from ..loop import Decision, Transport, TurnState
from ..planned.catalog import load_catalog
from ..project.mutations import PreparedMutation
from ..project.project import Project, QueryOutcome
from ..project.tools import ToolRun
from ..providers.base import BaseLLMProvider, Message, TokenUsage, ToolCallEvent, ToolDefinition
from ..ratelimit import RateLimiter
from ..settings import ChatSettings
from ..store import (
    Admission,
    ChatStore,
    ConfirmationRecord,
    StoredMessage,
    TurnBusy,
    TurnLost,
    TurnRecord,
    TurnStart,
)
from ..turns import STEP_RETRY_SECONDS, TRANSIENT, TurnOwner, TurnWriter
from .actor import Actor
from .confirmations import (
    UNAVAILABLE,
    ConfirmationWaiter,
    expire,
    pending_record,
    resumed_turn,
    settle,
)
from .context import bounded_context
from .ending import end_turn, end_turn_eventually, interrupt_turn
from .engines import planned_turn, tool_loop
from .hooks import Hooks
from .messages import conversation_title, message_row, text_refusal
from .offer import tools_and_prompt

__all__ = ["ChatSession"]

log = logging.getLogger(__package__)  # the session's logger, as before it became a package

TAKEN_OVER = "This request went on in another server after this one lost contact with the store."


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
        if conversation_id is not None:
            record = store.conversation(conversation_id)
            if record is None or record.actor_id != actor.id:
                raise KeyError(f"no conversation {conversation_id!r} for this user")
        self.conversation_id = conversation_id
        self.turns = TurnOwner.of(store)
        self.outcomes: dict[str, QueryOutcome] = {}  # the current turn's, by tool call id
        self.turn_id: str | None = None  # the latest turn admitted or driven here
        self.positions: dict[int, int] = {}  # its journal positions, by sequence
        self._busy = False
        self._waiters: dict[str, ConfirmationWaiter] = {}
        self._writer: TurnWriter | None = None
        self._admitted = False
        allowed = [name for name in settings.allowed_mutations if name in project.index.mutations]
        self._mutations = tuple(allowed)
        tools, self._system_prompt = tools_and_prompt(project, settings, self._mutations)
        self._tools = list(tools)
        planned = settings.planned_settings
        # The catalog is checked against the schema when the session opens, not mid-turn.
        self._catalog = load_catalog(planned.catalog, project) if planned.enabled else None
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
        return self.conversation_id

    def history(self) -> list[StoredMessage]:
        """The stored messages of the current conversation."""
        if self.conversation_id is None:
            return []
        return self.store.messages(self.conversation_id)

    async def run_turn(
        self, text: object, *, transport: Transport = "stream", turn_id: str | None = None
    ) -> AsyncIterator[ChatEvent]:
        """Answer one user message: an async iterator of events ending in Done or Error.

        ``turn_id`` is the client's idempotency key: the turn is admitted under it (see
        :meth:`admit`) and keeps its text; asked again it is the same turn (nothing runs twice:
        the events here are then those of a run in this process only). Without one the turn
        gets a fresh id.

        Text that cannot be stored — not a string, blank, or holding a lone surrogate (half of
        a UTF-16 pair, which no UTF-8 store or socket can carry) — is refused with
        ``bad_message`` before anything is stored; nothing is silently changed.
        """
        self.turn_id, self.positions = None, {}
        refusal = text_refusal(text)
        if refusal is not None or not isinstance(text, str):
            yield error_event("bad_message", message=refusal)
            return
        if self._busy:
            yield error_event("turn_in_progress")
            return
        try:
            admission = self.admit(text, turn_id=turn_id)
        except TurnBusy:
            yield error_event("turn_in_progress")
            return
        except Exception as error:  # the store failed before the turn began
            yield self._failed_to_start(error)
            return
        if admission.created:
            async for event in self.drive(admission, text, transport=transport):
                yield event

    def admit(
        self,
        text: str,
        *,
        turn_id: str | None = None,
        conversation_id: str | None = None,
        new_conversation: bool | None = None,
    ) -> Admission:
        """Admit (and start) a turn of this session's actor in one store write: in
        ``conversation_id``, else the session's conversation, else a new one (or, with
        ``new_conversation=False``, the actor's latest). The session moves to the turn's
        conversation. Raises ``TurnConflict``, ``TurnBusy`` and ``UnknownConversation``."""
        target = conversation_id or self.conversation_id
        admission = self.turns.admit(
            self.actor.id,
            text,
            turn_id=turn_id,
            conversation_id=target,
            new_conversation=target is None if new_conversation is None else new_conversation,
            start=self.turn_start(text),
        )
        self.conversation_id, self.turn_id = admission.conversation_id, admission.turn_id
        self.positions = {}
        return admission

    def turn_start(self, text: str) -> TurnStart:
        """What starting a turn with ``text`` takes: its title and the actor's budgets."""
        return TurnStart(
            text=text,
            title=conversation_title(text),
            limits=self.limiter.budgets,
            window_seconds=self.limiter.window_seconds,
        )

    async def drive(
        self, admission: Admission, text: str, *, transport: Transport = "sse"
    ) -> AsyncIterator[ChatEvent]:
        """Run a turn this process admitted (``admission.created``): its refusal, or its events
        to exactly one terminal event."""
        self.conversation_id = admission.conversation_id
        if admission.refusal is not None:
            yield event_from_dict(admission.refusal)
            return
        if self._busy:
            yield error_event("turn_in_progress")
            return
        self._busy = True
        self._admitted = admission.kept  # a client's turn id: a cancel may come by the store
        try:
            self.audit.emit("user_message", {"message": text, "session_key": self.conversation_id})
            self.hooks.fire(
                "message_received",
                actor=self.actor,
                message=text,
                conversation_id=self.conversation_id,
            )
            state = TurnState(turn_id=admission.turn_id)
            async for event in self._drive(state, transport, None):
                yield event
        finally:
            self._busy = False

    async def continue_turn(
        self, turn: TurnRecord, *, transport: Transport = "sse"
    ) -> AsyncIterator[ChatEvent]:
        """Run again a turn a crash cut off before any data change (this process owns it now:
        :meth:`TurnOwner.take_over`). One that never started runs from its text; one cut off
        mid-way goes on from its last committed step (its question and tool rounds are in the
        context, a round missing results as text) and its journal after its last sequence: still
        exactly one terminal event."""
        self.conversation_id = turn.conversation_id
        if turn.state == "accepted":  # admitted, never started
            text = turn.input or ""
            try:
                refusal = self.turns.start(turn, self.turn_start(text))
            except TurnLost:
                return
            admission = Admission(
                turn.conversation_id, turn.id, "running", 0, True, refusal, kept=True
            )
            events = self.drive(admission, text, transport=transport)
        elif self._busy:
            events = _single(error_event("turn_in_progress"))
        else:
            self._admitted = True
            state = TurnState(turn_id=turn.id)
            events = self._exclusively(self._drive(state, transport, None, continued=turn))
        async for event in events:
            yield event

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
        record = self._claimed(confirmation_id) if isinstance(confirmation_id, str) else None
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
        self._current().message(message_row(message))

    async def checkpoint(self) -> None:
        """Write what the turn has so far now (before and after a data change), waiting up to
        :data:`STEP_RETRY_SECONDS` for a store that is away."""
        writer = self._current()
        await writer.write_eventually(writer.flush, within=STEP_RETRY_SECONDS)

    async def check_rate(self) -> Error | None:
        """Before each provider round: write what the turn has so far (as :meth:`checkpoint`),
        stop if the turn was cancelled (by any process: the command is in the store) or taken
        over, then check budgets."""
        writer = self._current()
        await writer.write_eventually(writer.flush, within=STEP_RETRY_SECONDS)
        if self._admitted and self.conversation_id is not None:
            record = self.store.turn(self.conversation_id, writer.turn_id)
            if record is not None and record.cancel_command is not None:
                raise TurnCancelled(record.cancel_command)
            if record is not None and record.owner != self.turns.owner:
                writer.lost = True
                raise TurnLost(f"turn {writer.turn_id} was taken over by another process")
        decision = self.limiter.check_tokens(self.actor.id)
        if decision.allowed:
            return None
        return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)

    def record_usage(self, usage: TokenUsage) -> None:
        """Count tokens against the actor's budgets (with the turn's next write)."""
        if self._writer is not None:
            self._writer.usage(self.limiter.amounts(usage))
        else:
            self.limiter.record_usage(self.actor.id, usage)

    def _current(self) -> TurnWriter:  # the writer of the turn being driven
        if self._writer is None:
            raise RuntimeError("no turn is being driven")
        return self._writer

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
        if call.name == "mutate" and self.conversation_id is not None:
            settle(self.store, self.conversation_id, call.id, run, now=self.clock())
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
        timeout = float(self.settings.confirm_timeout_seconds)
        self.store.add_confirmation(
            pending_record(
                self.conversation_id,
                self.actor.id,
                call,
                prepared,
                state,
                now=self.clock(),
                timeout=timeout,
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
        continued: TurnRecord | None = None,
    ) -> AsyncIterator[ChatEvent]:
        """Run (or resume, or continue) the loop, numbering, journaling and auditing every
        event.

        Every turn ends with exactly one terminal event (``done`` or ``error``), and that event is
        yielded only after it and everything before it are written, so what a client saw last is
        always in the store. A store that cannot take a write ends the turn with ``chat_error``,
        written as soon as the store can take it (:mod:`.ending`); a turn cancelled from outside
        (a client that went away) is closed as interrupted.
        """
        assert self.conversation_id is not None
        conversation_id = self.conversation_id
        writer = self.turns.writer(conversation_id, state.turn_id, self.actor.id)
        self._writer, self.turn_id = writer, state.turn_id
        self.positions = writer.positions
        # A resumed or continued turn goes on numbering where its journal stopped; a continued
        # one tells readers which of its events the crash cut off (``continues_after``).
        sequence = (
            self.store.last_sequence(conversation_id, state.turn_id) if resumed or continued else 0
        )
        covered = continued.committed_sequence if continued is not None else None
        cut_off = covered if covered is not None and covered < sequence else None
        self.outcomes = {}  # this turn's query evidence, by tool call id
        answer: list[str] = []
        loop = tool_loop(
            self.project,
            self.provider,
            self._tools,
            self.settings,
            self._mutations,
            self,
            self.actor,
            transport,
            self.outcomes,
        )
        ended = ending = False
        handed_over = False
        try:
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
                planned = planned_turn(
                    self.project,
                    self.provider,
                    self.settings,
                    self._catalog,
                    self,
                    state,
                    self.outcomes,
                    built=self._role_providers,
                    on_usage=self.record_usage,
                    check_rate=self.check_rate,
                    audit=self.audit,
                )
                events = planned.events(messages, lambda: loop.run(messages, state))
            if resumed is not None:
                events = resumed_turn(loop, messages, state, *resumed)
            async for event in events:
                sequence += 1
                numbered = event.numbered(sequence)
                if cut_off is not None:
                    numbered = dataclasses.replace(numbered, continues_after=cut_off)
                    cut_off = None
                if isinstance(event, TextChunk):
                    answer.append(event.content)
                if isinstance(numbered, Done | Error):
                    ending = True  # written before anyone sees it:
                    end = functools.partial(end_turn, writer, numbered)
                    await writer.write_eventually(end, within=STEP_RETRY_SECONDS)
                    ended = True
                else:
                    writer.event(sequence, numbered.to_dict())
                if isinstance(event, ConfirmMutation):
                    # A confirm request may resume the turn in another process.
                    suspended = transport == "sse"
                    writer.flush("suspended" if suspended else None)
                    ended = suspended
                yield numbered
        except TurnCancelled as cancelled:
            # an explicit cancel, seen between steps: closed like an interrupted turn, and
            # its terminal event told to whoever reads this stream
            interrupt_turn(self.turns, writer, f"it was cancelled (command {cancelled})")
            handed_over = True
            closing = self.store.events(conversation_id, turn_id=state.turn_id)
            if closing and closing[-1].get("type") == "error":
                yield event_from_dict(closing[-1])
        except TurnLost:
            # another process took the turn over (this one's lease had lapsed): its end is
            # theirs to write; the client here is told the turn went on elsewhere
            log.warning("chat turn %s was taken over by another process", state.turn_id)
            ended = True
            yield error_event("interrupted", message=TAKEN_OVER).numbered(sequence + 1)
        except Exception as error:  # a bug or a failed write: the generic public event
            if ended:
                raise  # the turn already ended; this failure is the caller's to see
            if isinstance(error, TRANSIENT):
                log.warning("chat turn %s: its store failed (%s)", state.turn_id, error)
            else:
                log.exception("chat turn failed")
            self.hooks.fire("error", actor=self.actor, error=error, context={"stage": "turn"})
            # the failure takes the place of an end that could not be written
            failure = error_event("chat_error").numbered(sequence if ending else sequence + 1)
            ended = handed_over = True
            end_turn_eventually(self.turns, writer, failure)
            yield failure
        except (asyncio.CancelledError, GeneratorExit):
            if not ended:
                interrupt_turn(
                    self.turns, writer, "the client went away or the request was cancelled"
                )
                handed_over = True
            raise
        finally:
            self._writer = None
            if not handed_over:
                writer.close()
        if answer:
            self.audit.emit(
                "assistant_message",
                {"message": "".join(answer), "session_key": self.conversation_id},
            )

    def _claimed(self, confirmation_id: str) -> ConfirmationRecord | None:
        """The confirmation, claimed by this actor with its turn running here (None: taken)."""
        if self.conversation_id is None:
            return None
        return self.store.claim_confirmation(
            self.conversation_id,
            confirmation_id,
            self.actor.id,
            now=self.clock(),
            owner=self.turns.owner,
            lease_until=self.turns.lease_until(),
        )

    def _claim(self, confirmation_id: str, confirmed: bool) -> Decision:
        if self._claimed(confirmation_id) is None:
            return "unavailable"
        return "confirmed" if confirmed else "rejected"

    def _expire(self, confirmation_id: str) -> None:
        assert self.conversation_id is not None
        expire(self.store, self.conversation_id, confirmation_id, now=self.clock())


async def _single(event: ChatEvent) -> AsyncIterator[ChatEvent]:
    yield event

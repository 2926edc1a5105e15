"""The conversation: :class:`ChatSession`, what the notebook API, the widget and the server
extension drive.

A session owns one conversation of one actor in the store, admits turns through the store's
:class:`~gmchat_nb.core.turns.TurnOwner` (against the actor's budgets) and runs them. Driving a
turn — numbering every event, journaling it with a :class:`~gmchat_nb.core.turns.TurnWriter` and
ending the turn with exactly one terminal event — is :mod:`.driving`'s; what the session serves
the engines meanwhile (writes at each step, budgets, cancels, audit, confirmations claimed
atomically, so a mutation runs at most once however many processes try) is :mod:`.turn_io`'s.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable

from ..audit import AuditLog
from ..events import (
    ChatEvent,
    Error,
    error_event,
    event_from_dict,
)
from ..knowledge import KnowledgeBook, person_of, project_key
from ..knowledge.drift import check_on_connect
from ..planned.catalog import load_catalog
from ..project.project import Project, QueryOutcome
from ..providers.base import BaseLLMProvider, ToolDefinition
from ..ratelimit import RateLimiter, decide
from ..settings import ChatSettings
from ..store import (
    Admission,
    ChatStore,
    StoredMessage,
    TurnBusy,
    TurnLost,
    TurnRecord,
    TurnStart,
)
from ..trace import TurnTrace
from ..turn_state import Decision, Transport, TurnState
from ..turns import TurnOwner, TurnWriter
from .actor import Actor
from .confirmations import (
    PERSON_DECIDES,
    UNAVAILABLE,
    ConfirmationWaiter,
    person_must_decide,
)
from .driving import TurnDriving
from .hooks import Hooks
from .messages import conversation_title, text_refusal
from .offer import tools_and_prompt

__all__ = ["ChatSession", "turn_start"]

log = logging.getLogger(__package__)  # the session's logger, as before it became a package


def turn_start(text: str, limiter: RateLimiter, project: str = "") -> TurnStart:
    """What starting a turn with ``text`` takes: its title, the actor's budgets and the rate
    limiter's decision on them, which the store takes inside the turn's admission, and the
    identity of the project it asks about (kept on its conversation)."""
    return TurnStart(
        text=text,
        title=conversation_title(text),
        limits=limiter.budgets,
        window_seconds=limiter.window_seconds,
        decide=decide,
        project=project,
    )


class ChatSession(TurnDriving):
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
        self.trace: TurnTrace | None = None  # the last turn's trace, from its first step
        self.turn_id: str | None = None  # the latest turn admitted or driven here
        self.positions: dict[int, int] = {}  # its journal positions, by sequence
        self._busy = False
        self._waiters: dict[str, ConfirmationWaiter] = {}
        self._decided_via: dict[str, str] = {}  # confirmation id -> where it is being decided
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
        # what this person knows of the project, recalled before each turn (core/knowledge)
        self.knowledge = KnowledgeBook(
            store,
            project,
            project_key=project.identity or project_key(settings.project, settings.project_id),
            owner=person_of(actor.id),
        )
        check_on_connect(self.knowledge)  # verified queries against today's schema

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
        """What starting a turn with ``text`` takes: see :func:`turn_start`."""
        return turn_start(text, self.limiter, self.knowledge.project_key)

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

    def confirm(self, confirmation_id: str, confirmed: bool, *, via: str = "kernel") -> bool:
        """Resolve a confirmation a running turn waits for; False when none waits under that id.
        ``via``: where it was decided, as its change record keeps it (``DECIDED_VIA``)."""
        waiter = self._waiters.get(confirmation_id)
        if waiter is None or waiter.future.done():
            return False
        self._decided_via[confirmation_id] = via
        waiter.future.set_result(bool(confirmed))
        return True

    async def resume(
        self,
        confirmation_id: str,
        confirmed: bool,
        *,
        transport: Transport = "sse",
        unavailable_code: str = "bad_event",
        by_person: bool = True,
        via: str = "kernel",
    ) -> AsyncIterator[ChatEvent]:
        """Resolve a persisted confirmation (the SSE confirm request) and finish its turn.

        The claim is atomic: a second claim — another request, another process — gets
        ``unavailable_code`` and the mutation never runs twice. ``by_person``: whether a
        person decides (a browser session, the kernel) rather than a token-authenticated
        request, which may not decide an agent's change (:data:`PERSON_DECIDES`); ``via``:
        where it was decided, as the change record keeps it.
        """
        if not by_person and self.person_must_decide(confirmation_id):
            yield error_event(unavailable_code, message=PERSON_DECIDES)
            return
        if self.confirm(confirmation_id, confirmed, via=via):
            return  # the turn that waits for it goes on and streams the rest
        if self._busy:
            yield error_event("turn_in_progress")
            return
        if isinstance(confirmation_id, str):
            self._decided_via[confirmation_id] = via
        record = self._claimed(confirmation_id) if isinstance(confirmation_id, str) else None
        if record is None:
            yield error_event(unavailable_code, message=UNAVAILABLE)
            return
        state = TurnState.from_dict(record.turn_state.get("state", {}))
        turn = self.store.turn(record.conversation_id, state.turn_id) if state.turn_id else None
        # a client's turn id (POST turns/): an explicit cancel may come by the store
        self._admitted = turn is not None and turn.input_hash is not None
        decision: Decision = "confirmed" if confirmed else "rejected"
        async for event in self._exclusively(self._drive(state, transport, (record, decision))):
            yield event

    def person_must_decide(self, confirmation_id: str) -> bool:
        """Whether this conversation's confirmation ``confirmation_id`` is an agent's change,
        which only a person may decide (:func:`~.confirmations.person_must_decide`)."""
        if self.conversation_id is None or not isinstance(confirmation_id, str):
            return False
        return person_must_decide(self.store.confirmation(self.conversation_id, confirmation_id))

    async def _exclusively(self, events: AsyncIterator[ChatEvent]) -> AsyncIterator[ChatEvent]:
        """``events`` with the session busy while they run: one turn at a time."""
        self._busy = True
        try:
            async for event in events:
                yield event
        finally:
            self._busy = False


async def _single(event: ChatEvent) -> AsyncIterator[ChatEvent]:
    yield event

"""What a session serves the engines while it drives a turn (the loop's
:class:`~gmchat_nb.core.loop.TurnIO`): the turn's writes at each step, budgets, a cancel or a
take-over seen between steps, a change's ending settled, and confirmations opened and claimed
in the store. A mixin of :class:`~gmchat_nb.core.session.ChatSession` (as the store's tables
are mixins of its ``ChatStore``), which sets the attributes declared here.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from ..audit import AuditLog
from ..events import Error, error_event
from ..project.mutations import PreparedMutation
from ..project.tools import ToolRun
from ..providers.base import BaseLLMProvider, Message, TokenUsage, ToolCallEvent
from ..providers.pricing import (
    PriceOverride,
    ServedRequest,
    overrides_from,
    price_request,
    usage_record,
)
from ..ratelimit import RateLimiter
from ..settings import ChatSettings
from ..store import ChatStore, ConfirmationRecord, TurnLost
from ..turn_state import Decision, TurnState
from ..turns import STEP_RETRY_SECONDS, TurnOwner, TurnWriter
from .actor import Actor
from .confirmations import ConfirmationWaiter, expire, pending_record, settle
from .hooks import Hooks
from .messages import message_row

__all__ = ["SessionTurnIO", "TurnCancelled"]

log = logging.getLogger(__package__)


class TurnCancelled(Exception):
    """An admitted turn's explicit cancel, found in the store between two steps (its command
    id is the message)."""

    @property
    def command(self) -> str:
        """The cancel command's id."""
        return str(self)


class SessionTurnIO:
    """The session's side of a turn while it is driven."""

    store: ChatStore
    actor: Actor
    conversation_id: str | None
    settings: ChatSettings
    provider: BaseLLMProvider
    turns: TurnOwner
    limiter: RateLimiter
    audit: AuditLog
    hooks: Hooks
    clock: Callable[[], float]
    _writer: TurnWriter | None
    _admitted: bool
    _waiters: dict[str, ConfirmationWaiter]
    _decided_via: dict[str, str]  # confirmation id -> where its decision came from
    _price_overrides: dict[str, PriceOverride] | None = None
    _reserved_micro: int = 0  # what the last check reserved of the cost budget, until used
    origin: str = "chat"  # who asks for the turns' changes: "chat", or an agent (core/agent)

    async def persist(self, message: Message, state: TurnState) -> None:
        """Queue one message of the turn; it is written with the next flush."""
        self._current().message(message_row(message))

    async def checkpoint(self) -> None:
        """Write what the turn has so far now (before and after a data change), waiting up to
        :data:`STEP_RETRY_SECONDS` for a store that is away."""
        writer = self._current()
        await writer.write_eventually(writer.flush, within=STEP_RETRY_SECONDS)

    async def check_rate(self, estimate: Callable[[], ServedRequest] | None = None) -> Error | None:
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
        reserve = self._reservation(estimate)
        decision = self.limiter.check_tokens(self.actor.id, reserve_micro=reserve)
        if decision.allowed:
            self._reserved_micro = reserve
            return None
        return error_event("rate_limited", retry_after_seconds=decision.retry_after_seconds)

    def record_usage(self, usage: TokenUsage) -> None:
        """Count tokens against the actor's budgets (with the turn's next write)."""
        if self._writer is not None:
            self._writer.usage(self.limiter.amounts(usage))
        else:
            self.limiter.record_usage(self.actor.id, usage)

    def _reservation(self, estimate: Callable[[], ServedRequest] | None) -> int:
        """What a cost budget reserves for the request ``estimate`` gives: its estimated input
        cost (0 without a cost budget or a known price; without a budget nothing is estimated,
        so a turn pays for the estimate only when a budget needs it)."""
        if estimate is None or self.limiter.cost_budget_micro is None:
            return 0
        priced = price_request(estimate(), self.price_overrides())
        return self.limiter.cost_amounts(float(priced.usd) if priced.usd is not None else None).get(
            "cost_microusd", 0
        )

    def account(self, served: Sequence[ServedRequest], start: int) -> int:
        """Keep a usage record of each model request of ``served`` from ``start`` on (with the
        turn's next write), its cost counted against the cost budget less what its check
        reserved (a cost below the reservation keeps the reservation: a budget is never given
        back more than was spent); returns how many of ``served`` are accounted for now."""
        overrides = self.price_overrides()
        for request in served[start:]:
            priced = price_request(request, overrides)
            row = usage_record(request, priced)
            cost = self.limiter.cost_amounts(float(priced.usd) if priced.usd is not None else None)
            reserved, self._reserved_micro = self._reserved_micro, 0
            if cost and reserved:
                rest = cost["cost_microusd"] - reserved
                cost = {"cost_microusd": rest} if rest > 0 else {}
            if self._writer is not None:
                self._writer.record(row)
                self._writer.usage(cost)
            else:
                self.store.add_usage_records(
                    self.actor.id, [row], conversation_id=self.conversation_id
                )
                if cost:
                    self.store.record_usage(self.actor.id, "cost_microusd", cost["cost_microusd"])
        return len(served)

    def price_overrides(self) -> dict[str, PriceOverride]:
        """The ``prices`` setting as overrides (built once per session)."""
        built: dict[str, PriceOverride] | None = getattr(self, "_price_overrides", None)
        if built is None:
            built = overrides_from(self.settings.prices)
            self._price_overrides = built
        return built

    def _current(self) -> TurnWriter:  # the writer of the turn being driven
        if self._writer is None:
            raise RuntimeError("no turn is being driven")
        return self._writer

    def settle_change(self, call: ToolCallEvent, run: ToolRun) -> None:
        """Record how a change ended in its confirmation's row (the tool-call pipeline's audit
        stage calls it; the audit log and the hooks are the pipeline's own stages)."""
        if self.conversation_id is not None:
            settle(self.store, self.conversation_id, call.id, run, now=self.clock())

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
                origin=self.origin,
            )
        )
        waiter = ConfirmationWaiter(
            call.id, timeout, claim=self._claim, expire=self._expire, waiting=self._waiters
        )
        if wait:
            self._waiters[call.id] = waiter
        return waiter

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
            decided_by=self.actor.id,
            decided_via=self._decided_via.pop(confirmation_id, "unknown"),
        )

    def _claim(self, confirmation_id: str, confirmed: bool) -> Decision:
        if self._claimed(confirmation_id) is None:
            return "unavailable"
        return "confirmed" if confirmed else "rejected"

    def _expire(self, confirmation_id: str) -> None:
        assert self.conversation_id is not None
        expire(self.store, self.conversation_id, confirmation_id, now=self.clock())

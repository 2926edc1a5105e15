"""Per-actor budgets for requests, tokens and cost over a sliding window.

GeneralManager counts in fixed cache windows and always answers ``retry_after_seconds`` with the
full window. Here every request and every provider usage is a timestamped row in the store, a
budget covers exactly the last ``window_seconds``, and a refusal says how many seconds remain until
enough old usage has left the window for the budget to admit again.

A check costs the same after ten thousand turns as after one: the store keeps a running total per
counter and window, and reads only the rows that left the window since the last check (and, for a
refusal, the oldest rows until the budget would admit).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .providers.base import TokenUsage

__all__ = ["COUNTERS", "RateDecision", "RateLimiter", "UsageStore", "decide"]

COUNTERS: Final = ("requests", "tokens", "input_tokens", "output_tokens", "cost_microusd")
"""The counters a budget can be set for; ``tokens`` is input plus output; ``cost_microusd`` is
the priced cost of model requests in millionths of a USD (``rate_limit.cost`` in USD)."""
MICRO: Final = 1_000_000

_DEFAULTS: Final[dict[str, Any]] = {
    "requests": 60,
    "window_seconds": 3600,
    "tokens": None,
    "input_tokens": None,
    "output_tokens": None,
    "cost": None,
}


class UsageStore(Protocol):
    """What the limiter needs from a store (:class:`gmchat_nb.core.store.ChatStore` has it)."""

    def admit_usage(
        self,
        actor_id: str,
        amounts: Mapping[str, int],
        *,
        limits: Mapping[str, int],
        window_seconds: float,
        now: float,
    ) -> dict[str, float]:
        """Atomically: add ``amounts`` at ``now`` unless a counter of ``limits`` is at or over
        its limit in the window ``(now - window_seconds, ...]``; ``{}`` when added, else each
        exhausted counter with the time its usage in the window is below its limit again."""
        ...


@dataclass(frozen=True, slots=True)
class RateDecision:
    """Whether a request may go ahead. A refusal names the exhausted ``counter`` and how many
    whole seconds to wait (at least 1) before the limiter can admit again."""

    allowed: bool
    retry_after_seconds: int | None = None
    counter: str | None = None


def _budget(name: str, value: object) -> int | None:
    # The spec: positive integers are budgets; None, zero and negatives mean no budget.
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"rate_limit.{name} must be an integer or None, not {value!r}")
    return value if value > 0 else None


class RateLimiter:
    """Budgets per actor over a sliding window of ``window_seconds``, counted in ``store``.

    ``requests`` limits user messages (:meth:`admit_request`); ``tokens``, ``input_tokens`` and
    ``output_tokens`` limit provider usage (:meth:`record_usage`), ``cost`` (USD) its price
    (:meth:`cost_amounts`). A positive integer is a budget;
    ``None``, zero or a negative number means no budget for that counter. ``clock`` gives the
    current time in seconds (inject one in tests).

    Deciding and counting a request is one store transaction, so threads and processes sharing
    a store never both admit the last request of a budget.
    """

    def __init__(
        self,
        store: UsageStore,
        *,
        requests: int | None = 60,
        window_seconds: float = 3600,
        tokens: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if (
            isinstance(window_seconds, bool)
            or not isinstance(window_seconds, int | float)
            or not math.isfinite(window_seconds)
            or window_seconds <= 0
        ):
            raise ValueError(
                f"rate_limit.window_seconds must be a positive number, not {window_seconds!r}"
            )
        self.store = store
        self.window_seconds = float(window_seconds)
        self.clock = clock
        budgets = {
            "requests": _budget("requests", requests),
            "tokens": _budget("tokens", tokens),
            "input_tokens": _budget("input_tokens", input_tokens),
            "output_tokens": _budget("output_tokens", output_tokens),
            "cost_microusd": cost_micro(cost) if cost is not None and cost > 0 else None,
        }
        self._budgets: dict[str, int] = {
            name: limit for name, limit in budgets.items() if limit is not None
        }
        self._token_budgets = {
            name: limit for name, limit in self._budgets.items() if name != "requests"
        }

    @classmethod
    def from_settings(
        cls,
        store: UsageStore,
        rate_limit: object,
        clock: Callable[[], float] = time.time,
    ) -> RateLimiter:
        """From a settings object with ``requests``, ``window_seconds``, ``tokens``,
        ``input_tokens`` and ``output_tokens`` attributes (or a mapping with those keys; missing
        ones take the spec's defaults)."""
        values: dict[str, Any] = {}
        for name, default in _DEFAULTS.items():
            if isinstance(rate_limit, Mapping):
                values[name] = rate_limit.get(name, default)
            else:
                values[name] = getattr(rate_limit, name, default)
        return cls(store, clock=clock, **values)

    @property
    def budgets(self) -> dict[str, int]:
        """The counters that have a budget, with their limits."""
        return dict(self._budgets)

    def admit_request(self, actor_id: str) -> RateDecision:
        """Admit one user request and count it, or refuse without counting.

        Refuses when one more request would exceed the request budget or any token budget is
        already used up.
        """
        # For the request counter "one more would exceed" (used + 1 > limit) is the same test as
        # "at or over" (used >= limit), so admission and check share it.
        return self._admit(actor_id, {"requests": 1}, self._budgets)

    def check(self, actor_id: str) -> RateDecision:
        """Admission without counting (before a tool, a confirmed write, a summary or a provider
        round): refuses when any budget is at or over its limit."""
        return self._admit(actor_id, {}, self._budgets)

    def check_tokens(self, actor_id: str, *, reserve_micro: int = 0) -> RateDecision:
        """The check inside a turn (before each provider round, summary or tool): the turn's
        request was already admitted, so only an exhausted token budget refuses.

        ``reserve_micro`` (the next request's estimated input cost, millionths of a USD) is
        reserved against the cost budget in the same transaction: refused when the window's
        spend and reservations plus it would pass the budget, else counted, so requests racing
        for the last of a budget never all pass it."""
        limits = dict(self._token_budgets)
        budget = limits.get("cost_microusd")
        if budget is None or reserve_micro <= 0:
            return self._admit(actor_id, {}, limits)
        # the store refuses a counter at or over its limit before adding: lowering the limit by
        # the reservation refuses exactly when spent + reservation would pass the budget
        limits["cost_microusd"] = max(1, budget - reserve_micro + 1)
        return self._admit(actor_id, {"cost_microusd": reserve_micro}, limits)

    @property
    def cost_budget_micro(self) -> int | None:
        """The cost budget in millionths of a USD, or ``None``."""
        return self._budgets.get("cost_microusd")

    def record_usage(self, actor_id: str, usage: TokenUsage) -> None:
        """Count one provider response's tokens (``input_tokens``, ``output_tokens`` and their
        sum as ``tokens``)."""
        # Tokens already spent are counted even over budget: no limits, so always added.
        self._admit(actor_id, self.amounts(usage), {})

    @staticmethod
    def amounts(usage: TokenUsage) -> dict[str, int]:
        """What one provider response adds to the counters (``tokens`` is their sum)."""
        amounts = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "tokens": usage.input_tokens + usage.output_tokens,
        }
        return {name: n for name, n in amounts.items() if n > 0}

    @staticmethod
    def cost_amounts(usd: float | None) -> dict[str, int]:
        """What one priced request adds to the cost counter (nothing when its price is
        unknown or nothing)."""
        micro = cost_micro(usd) if usd is not None else 0
        return {"cost_microusd": micro} if micro > 0 else {}

    def _admit(
        self, actor_id: str, amounts: Mapping[str, int], limits: Mapping[str, int]
    ) -> RateDecision:
        """Add ``amounts`` now unless a budget of ``limits`` is exhausted; the decision."""
        now = self.clock()
        below_at = self.store.admit_usage(
            actor_id, amounts, limits=limits, window_seconds=self.window_seconds, now=now
        )
        return decide(below_at, now)


def cost_micro(usd: float) -> int:
    """USD as whole millionths (rounded up: a budget is never passed by rounding)."""
    return math.ceil(round(float(usd) * MICRO, 6))


def decide(below_at: Mapping[str, float], now: float) -> RateDecision:
    """The decision for an admission's exhausted counters (counter -> when its usage is below
    its limit again): allowed when there are none. A turn's start hands it to the store
    (``TurnStart.decide``), which takes it inside the turn's admission."""
    # Every exhausted budget must recover before a request can pass, so the longest wait is
    # the answer (the first budget's on a tie).
    worst: RateDecision | None = None
    for counter, at in below_at.items():
        # Rounded first so float noise (3599.0000000001) does not add a second.
        wait = max(1, math.ceil(round(at - now, 6)))
        if worst is None or wait > (worst.retry_after_seconds or 0):
            worst = RateDecision(False, wait, counter)
    return worst or RateDecision(True)

"""Per-actor budgets for requests and tokens over a sliding window.

GeneralManager counts in fixed cache windows and always answers ``retry_after_seconds`` with the
full window. Here every request and every provider usage is a timestamped row in the store, a
budget covers exactly the last ``window_seconds``, and a refusal says how many seconds remain until
enough old usage has left the window for the budget to admit again.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

from .providers.base import TokenUsage

__all__ = ["COUNTERS", "RateDecision", "RateLimiter", "UsageStore"]

COUNTERS: Final = ("requests", "tokens", "input_tokens", "output_tokens")
"""The counters a budget can be set for; ``tokens`` is input plus output."""

_DEFAULTS: Final[dict[str, Any]] = {
    "requests": 60,
    "window_seconds": 3600,
    "tokens": None,
    "input_tokens": None,
    "output_tokens": None,
}


class UsageStore(Protocol):
    """What the limiter needs from a store (:class:`gmchat_nb.core.store.ChatStore` has it)."""

    def record_usage(
        self, actor_id: str, counter: str, amount: int, *, at: float | None = None
    ) -> None:
        """Add ``amount`` to a counter at time ``at``."""

    def usage(self, actor_id: str, counter: str, *, since: float) -> list[tuple[float, int]]:
        """``(at, amount)`` rows at or after ``since``, in time order."""


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
    ``output_tokens`` limit provider usage (:meth:`record_usage`). A positive integer is a budget;
    ``None``, zero or a negative number means no budget for that counter. ``clock`` gives the
    current time in seconds (inject one in tests).

    Admission is atomic within one process; two processes sharing a store may each admit the
    last request of a budget at the same instant.
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
        }
        self._budgets: dict[str, int] = {
            name: limit for name, limit in budgets.items() if limit is not None
        }
        # Check-then-record must not interleave between two threads of one process.
        self._lock = threading.Lock()

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
        with self._lock:
            now = self.clock()
            decision = self._decide(actor_id, now)
            if decision.allowed:
                self.store.record_usage(actor_id, "requests", 1, at=now)
            return decision

    def check(self, actor_id: str) -> RateDecision:
        """Admission without counting (before a tool, a confirmed write, a summary or a provider
        round): refuses when any budget is at or over its limit."""
        with self._lock:
            return self._decide(actor_id, self.clock())

    def check_tokens(self, actor_id: str) -> RateDecision:
        """The check inside a turn (before each provider round, summary or tool): the turn's
        request was already admitted, so only an exhausted token budget refuses."""
        with self._lock:
            return self._decide(actor_id, self.clock(), exclude="requests")

    def record_usage(self, actor_id: str, usage: TokenUsage) -> None:
        """Count one provider response's tokens (``input_tokens``, ``output_tokens`` and their
        sum as ``tokens``)."""
        now = self.clock()
        amounts = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "tokens": usage.input_tokens + usage.output_tokens,
        }
        for counter, amount in amounts.items():
            if amount > 0:
                self.store.record_usage(actor_id, counter, amount, at=now)

    def _decide(self, actor_id: str, now: float, exclude: str | None = None) -> RateDecision:
        # For the request counter "one more would exceed" (used + 1 > limit) is the same test as
        # "at or over" (used >= limit), so admit and check share it. Every exhausted budget must
        # recover before a request can pass, so the longest wait is the answer.
        worst: RateDecision | None = None
        for counter, limit in self._budgets.items():
            if counter == exclude:
                continue
            wait = self._wait(actor_id, counter, limit, now)
            if wait is not None and (worst is None or wait > (worst.retry_after_seconds or 0)):
                worst = RateDecision(False, wait, counter)
        return worst or RateDecision(True)

    def _wait(self, actor_id: str, counter: str, limit: int, now: float) -> int | None:
        """Seconds until ``counter`` is below ``limit`` again, or ``None`` when it already is."""
        start = now - self.window_seconds
        # A row at time t counts while now < t + window, so rows exactly at the start are out.
        rows = [row for row in self.store.usage(actor_id, counter, since=start) if row[0] > start]
        used = sum(amount for _, amount in rows)
        if used < limit:
            return None
        for at, amount in rows:
            used -= amount
            if used < limit:
                # Rounded first so float noise (3599.0000000001) does not add a second.
                return max(1, math.ceil(round(at + self.window_seconds - now, 6)))
        raise AssertionError(
            "unreachable: the sum drops below a positive limit"
        )  # pragma: no cover

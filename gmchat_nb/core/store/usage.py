"""Usage counters: what each actor used, when, and admission against limits in a sliding window.

Admission keeps a running total per (actor, counter, window length) in ``usage_totals`` so its
cost does not grow with history: only the rows that crossed the window's start since the last
call are read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from contextlib import closing

from .database import Database, Statements, time_or_now

__all__ = ["UsageCounters", "add_usage", "admit_usage_in"]


class UsageCounters(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over usage counters."""

    def record_usage(
        self, actor_id: str, counter: str, amount: int, *, at: float | None = None
    ) -> None:
        """Add ``amount`` to the actor's ``counter`` at time ``at``."""
        with self._write() as connection:
            add_usage(connection, actor_id, {counter: amount}, time_or_now(at))

    def usage(self, actor_id: str, counter: str, *, since: float) -> list[tuple[float, int]]:
        """``(at, amount)`` of the actor's counter at or after ``since``, in time order."""
        rows = self._read(
            "SELECT at, amount FROM usage WHERE actor_id = ? AND counter = ? AND at >= ? "
            "ORDER BY at, id",
            (actor_id, counter, since),
        )
        return [(float(row[0]), int(row[1])) for row in rows]

    def admit_usage(
        self,
        actor_id: str,
        amounts: Mapping[str, int],
        *,
        limits: Mapping[str, int],
        window_seconds: float,
        now: float,
    ) -> dict[str, float]:
        """Add ``amounts`` (counter → amount) at ``now`` unless a counter of ``limits`` (counter
        → positive limit) is at or over its limit in the window ``(now - window_seconds, ...]``.

        Returns ``{}`` when nothing is exhausted and the amounts were added. Otherwise nothing is
        added, and each exhausted counter (in ``limits`` order) maps to the time its usage in the
        window is below its limit again: ``at + window_seconds`` of the oldest row whose leaving
        brings it there.

        Check and add are one write transaction, so two threads or two stores on one file never
        both admit the last unit of a budget. The cost does not grow with history: a running
        total per (actor, counter, window) is brought up to date by reading only the rows that
        crossed the window's start since the last call, and only a refusal reads in-window rows,
        oldest first, as many as it takes to get below the limit.
        """
        for counter, limit in limits.items():
            if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
                raise ValueError(f"the limit of {counter!r} must be a positive integer")
        if not limits and not amounts:
            return {}
        with self._write() as connection:
            return admit_usage_in(
                connection, actor_id, amounts, limits=limits, window_seconds=window_seconds, now=now
            )


def admit_usage_in(
    connection: Statements,
    actor_id: str,
    amounts: Mapping[str, int],
    *,
    limits: Mapping[str, int],
    window_seconds: float,
    now: float,
) -> dict[str, float]:
    """:meth:`UsageCounters.admit_usage` inside the caller's write transaction (a turn's start
    decides its request budget in the same transaction that stores its question)."""
    start = now - window_seconds
    exhausted: dict[str, float] = {}
    for counter, limit in limits.items():
        used = _window_total(connection, actor_id, counter, window_seconds, start)
        if used >= limit:
            exhausted[counter] = _below_limit_at(
                connection, actor_id, counter, window_seconds, start, used - limit
            )
    if not exhausted and amounts:
        add_usage(connection, actor_id, amounts, now)
    return exhausted


def add_usage(connection: Statements, actor_id: str, amounts: Mapping[str, int], at: float) -> None:
    """Insert a usage row per counter and count each in every running total whose window
    holds ``at`` (inside the caller's write transaction)."""
    rows = [(actor_id, counter, int(amount), at) for counter, amount in amounts.items()]
    connection.executemany(
        "INSERT INTO usage (actor_id, counter, amount, at) VALUES (?, ?, ?, ?)", rows
    )
    connection.executemany(
        "UPDATE usage_totals SET total = total + ? "
        "WHERE actor_id = ? AND counter = ? AND window_start < ?",
        [(amount, actor, counter, at) for actor, counter, amount, at in rows],
    )


def _usage_between(
    connection: Statements, actor_id: str, counter: str, low: float, high: float
) -> tuple[int, int]:
    """``(rows, summed amount)`` of the actor's counter with ``low < at <= high``: one range of
    the ``usage_by_actor`` index."""
    row = connection.execute(
        "SELECT COUNT(*), COALESCE(SUM(amount), 0) FROM usage "
        "WHERE actor_id = ? AND counter = ? AND at > ? AND at <= ?",
        (actor_id, counter, low, high),
    ).fetchone()
    return int(row[0]), int(row[1])


def _window_total(
    connection: Statements,
    actor_id: str,
    counter: str,
    window_seconds: float,
    start: float,
) -> int:
    """The actor's ``counter`` summed over the rows after ``start``, from the running total of
    this window length (created from the rows on first use).

    A total sums the rows after its stored ``window_start``. Moving that to ``start`` reads only
    the rows in between — those that left the window since the last call, or, when this caller's
    clock is behind the last one's, those that are back in it — so each row is read about once.
    """
    key = (actor_id, counter, window_seconds)
    row = connection.execute(
        "SELECT window_start, total FROM usage_totals "
        "WHERE actor_id = ? AND counter = ? AND window_seconds = ?",
        key,
    ).fetchone()
    if row is None:
        total = _usage_between(connection, actor_id, counter, start, math.inf)[1]
        connection.execute(
            "INSERT INTO usage_totals (actor_id, counter, window_seconds, window_start, total) "
            "VALUES (?, ?, ?, ?, ?)",
            (*key, start, total),
        )
        return total
    window_start, total = float(row[0]), int(row[1])
    if start >= window_start:
        crossed, amount = _usage_between(connection, actor_id, counter, window_start, start)
        total -= amount
    else:
        crossed, amount = _usage_between(connection, actor_id, counter, start, window_start)
        total += amount
    if crossed:
        # Untouched otherwise: with no row in between, both starts give the same total, and a
        # check that writes nothing commits without touching the file.
        connection.execute(
            "UPDATE usage_totals SET window_start = ?, total = ? "
            "WHERE actor_id = ? AND counter = ? AND window_seconds = ?",
            (start, total, *key),
        )
    return total


def _below_limit_at(
    connection: Statements,
    actor_id: str,
    counter: str,
    window_seconds: float,
    start: float,
    excess: int,
) -> float:
    """When the counter's usage after ``start``, ``excess`` (≥ 0) over its limit, is below the
    limit: ``at + window_seconds`` of the row whose leaving takes away more than ``excess``.
    Reads the oldest rows in order, only as many as that takes."""
    rows = connection.execute(
        "SELECT at, amount FROM usage WHERE actor_id = ? AND counter = ? AND at > ? "
        "ORDER BY at, id",
        (actor_id, counter, start),
    )
    with closing(rows):
        for row in rows:
            excess -= int(row[1])
            if excess < 0:
                # A row at time t counts while now < t + window.
                return float(row[0]) + window_seconds
    raise AssertionError(
        "unreachable: the running total is the sum of these rows"
    )  # pragma: no cover

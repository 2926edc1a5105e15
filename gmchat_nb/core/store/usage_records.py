"""Usage records: one row per model request (its provider, tokens of each kind, latency, cost and
where the price came from), written with the turn's step, rolled up per turn, conversation,
actor and day.

Costs are kept as decimal text (``"0.000512"``), summed as :class:`~decimal.Decimal`, and an
unknown cost stays ``NULL``: a roll-up with one unknown request has an unknown cost, never a
smaller one.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Final

from .database import Database, Statements

__all__ = ["COLUMNS", "UsageRecords", "insert_usage_records", "roll_up"]

COLUMNS: Final = (
    "provider",
    "input_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
    "output_tokens",
    "reasoning_tokens",
    "estimated",
    "latency_ms",
    "cost_usd",
    "price_source",
)
TOKENS: Final = COLUMNS[1:6]


def insert_usage_records(
    connection: Statements,
    actor_id: str,
    conversation_id: str | None,
    turn_id: str | None,
    records: Iterable[Mapping[str, Any]],
    at: float,
) -> None:
    """Insert usage records (:data:`COLUMNS` each, ``at`` optional) in the caller's transaction."""
    for record in records:
        cost = record.get("cost_usd")
        connection.execute(
            "INSERT INTO usage_records (actor_id, conversation_id, turn_id, provider, "
            "input_tokens, cache_read_tokens, cache_write_tokens, output_tokens, "
            "reasoning_tokens, estimated, latency_ms, cost_usd, price_source, at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                actor_id,
                conversation_id,
                turn_id,
                str(record["provider"]),
                *(int(record.get(name) or 0) for name in TOKENS),
                1 if record.get("estimated") else 0,
                float(record.get("latency_ms") or 0.0),
                None if cost is None else str(cost),
                str(record.get("price_source") or "unknown"),
                float(record.get("at") or at),
            ),
        )


def roll_up(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The sum of usage records: requests, tokens of each kind, latency, ``cost_usd`` (a
    float, ``None`` when a request's cost is unknown), ``unpriced`` requests and whether any
    count was estimated."""
    total: dict[str, Any] = {"requests": 0, **dict.fromkeys(TOKENS, 0), "latency_ms": 0.0}
    cost = Decimal(0)
    unpriced = 0
    estimated = False
    for row in rows:
        total["requests"] += 1
        for name in TOKENS:
            total[name] += int(row.get(name) or 0)
        total["latency_ms"] += float(row.get("latency_ms") or 0.0)
        if row.get("cost_usd") is None:
            unpriced += 1
        else:
            cost += Decimal(str(row["cost_usd"]))
        estimated = estimated or bool(row.get("estimated"))
    total["latency_ms"] = round(total["latency_ms"], 3)
    total["cost_usd"] = None if unpriced else float(cost)
    total["unpriced"] = unpriced
    total["estimated"] = estimated
    return total


class UsageRecords(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over usage records."""

    def add_usage_records(
        self,
        actor_id: str,
        records: Iterable[Mapping[str, Any]],
        *,
        conversation_id: str | None = None,
        turn_id: str | None = None,
    ) -> None:
        """Insert usage records outside a turn (an eval run's, a tool's)."""
        rows = list(records)
        if not rows:
            return
        with self._write() as connection:
            insert_usage_records(connection, actor_id, conversation_id, turn_id, rows, self.now())

    def usage_records(
        self,
        *,
        actor_id: str | None = None,
        conversation_id: str | None = None,
        turn_id: str | None = None,
        since: float | None = None,
    ) -> list[dict[str, Any]]:
        """The usage records that match every filter given, oldest first (``cost_usd`` as a
        decimal string or ``None``, ``estimated`` as a bool)."""
        clauses: list[str] = []
        values: list[Any] = []
        for column, value in (
            ("actor_id", actor_id),
            ("conversation_id", conversation_id),
            ("turn_id", turn_id),
        ):
            if value is not None:
                clauses.append(f"{column} = ?")
                values.append(value)
        if since is not None:
            clauses.append("at >= ?")
            values.append(since)
        where = f" WHERE {' AND '.join(clauses)}" if clauses else ""
        rows = self._read(
            "SELECT actor_id, conversation_id, turn_id, provider, input_tokens, "
            "cache_read_tokens, cache_write_tokens, output_tokens, reasoning_tokens, estimated, "
            f"latency_ms, cost_usd, price_source, at FROM usage_records{where} ORDER BY at, id",
            tuple(values),
        )
        names = ("actor_id", "conversation_id", "turn_id", *COLUMNS, "at")
        records = [dict(zip(names, row, strict=True)) for row in rows]
        for record in records:
            record["estimated"] = bool(record["estimated"])
        return records

    def usage_summary(self, actor_id: str, *, since: float | None = None) -> dict[str, Any]:
        """An actor's usage since ``since`` (default: 30 days): the total, and per UTC day and
        provider (``{"total", "by_day": [{"day", "provider", ...roll-up}]}``)."""
        start = since if since is not None else time.time() - 30 * 86400
        records = self.usage_records(actor_id=actor_id, since=start)
        groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for record in records:
            day = datetime.fromtimestamp(float(record["at"]), UTC).date().isoformat()
            groups.setdefault((day, str(record["provider"])), []).append(record)
        return {
            "since": start,
            "total": roll_up(records),
            "by_day": [
                {"day": day, "provider": provider, **roll_up(rows)}
                for (day, provider), rows in sorted(groups.items())
            ],
        }

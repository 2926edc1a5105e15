"""Retention: what is older than the configured time to live leaves the store."""

from __future__ import annotations

import math
from typing import Any, Final

from .database import Database, time_or_now

__all__ = ["Retention"]

_DAY_SECONDS: Final = 86400.0
_YEAR_SECONDS: Final = 366 * _DAY_SECONDS


class Retention(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` method that deletes what aged out."""

    def cleanup(self, ttl_hours: float, *, now: float | None = None) -> dict[str, int]:
        """Delete what is older than ``ttl_hours``; returns how many rows of each kind went.

        Conversations not updated within the ttl go with everything they own; resolved or expired
        confirmations resolved (or expired) before the ttl go too; usage rows go once older than
        both the ttl and one day; usage records (what each model request cost) once older than
        both the ttl and a year, so a year of spending can be summed. Keys: ``conversations``,
        ``messages``, ``events``, ``confirmations``, ``usage``, ``usage_records``.
        """
        if not math.isfinite(ttl_hours) or ttl_hours < 0:
            raise ValueError(f"ttl_hours must be a non-negative number, not {ttl_hours!r}")
        at = time_or_now(now)
        cutoff = at - ttl_hours * 3600.0
        usage_cutoff = at - max(ttl_hours * 3600.0, _DAY_SECONDS)
        records_cutoff = at - max(ttl_hours * 3600.0, _YEAR_SECONDS)
        stale = "SELECT id FROM conversations WHERE updated_at < ?"
        with self._write() as connection:

            def count(sql: str, *parameters: Any) -> int:
                return int(connection.execute(sql, parameters).fetchone()[0])

            messages = count(
                f"SELECT COUNT(*) FROM messages WHERE conversation_id IN ({stale})", cutoff
            )
            events = count(
                f"SELECT COUNT(*) FROM events WHERE conversation_id IN ({stale})", cutoff
            )
            owned_confirmations = count(
                f"SELECT COUNT(*) FROM confirmations WHERE conversation_id IN ({stale})", cutoff
            )
            conversations = connection.execute(
                "DELETE FROM conversations WHERE updated_at < ?", (cutoff,)
            ).rowcount
            # Pending rows whose expiry passed long ago were never marked expired (nobody
            # confirmed); they are as dead as expired ones. Claimed rows stay: their outcome is
            # unknown until the conversation itself ages out.
            confirmations = connection.execute(
                "DELETE FROM confirmations WHERE "
                "(state IN ('executed', 'rejected', 'expired', 'failed', 'unknown') "
                " AND COALESCE(resolved_at, expires_at) < ?) "
                "OR (state = 'pending' AND expires_at < ?)",
                (cutoff, cutoff),
            ).rowcount
            usage = connection.execute("DELETE FROM usage WHERE at < ?", (usage_cutoff,)).rowcount
            # A running total counts the rows after its window's start, so only one that starts
            # before the cutoff can hold deleted rows; it goes and is summed afresh on next use.
            connection.execute("DELETE FROM usage_totals WHERE window_start < ?", (usage_cutoff,))
            records = connection.execute(
                "DELETE FROM usage_records WHERE at < ?", (records_cutoff,)
            ).rowcount
        return {
            "conversations": conversations,
            "messages": messages,
            "events": events,
            "confirmations": owned_confirmations + confirmations,
            "usage": usage,
            "usage_records": records,
        }

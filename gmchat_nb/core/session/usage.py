"""Usage as the surfaces show it: a conversation's model requests summed (``Chat.usage()``) and
an actor's by day and provider (``GET {url}usage/``), from the store's usage records."""

from __future__ import annotations

from typing import Any

from ..store import ChatStore
from ..store.usage_records import roll_up

__all__ = ["actor_usage", "conversation_usage"]


def conversation_usage(store: ChatStore, conversation_id: str | None) -> dict[str, Any]:
    """``{conversation_id, total, by_provider}``: the conversation's requests summed, and per
    provider label (an empty total for no conversation yet)."""
    records = store.usage_records(conversation_id=conversation_id) if conversation_id else []
    providers: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        providers.setdefault(str(record["provider"]), []).append(record)
    return {
        "conversation_id": conversation_id,
        "total": roll_up(records),
        "by_provider": {name: roll_up(rows) for name, rows in providers.items()},
    }


def actor_usage(store: ChatStore, actor_id: str, *, since: float | None = None) -> dict[str, Any]:
    """The actor's own usage since ``since`` (default 30 days): total and per day and provider."""
    return store.usage_summary(actor_id, since=since)

"""What a conversation's followers in this process are told that the journal cannot hold.

The events route reads the journal, and a commit only wakes it. A turn whose store cannot take
its writes (a full disk, a read-only store, a database server that is down) can journal nothing —
not even that it waits — so the turn's owner hands a ``notice`` of kind ``store``
(:mod:`gmchat_nb.core.turns.outage`) to :class:`LiveFeed` instead, and every reader of that
conversation's events in this process gets it as a live-only frame: no position, never replayed.
Readers on another server learn nothing from here: their server's store works, or fails them
itself.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType
from typing import Any, Final, Self

__all__ = ["LiveFeed", "Subscription"]

QUEUE_LIMIT: Final = 64  # a reader that stopped reading keeps only the latest frames


class Subscription:
    """One reader's live-only frames of one conversation, in the order they were published."""

    def __init__(self, feed: LiveFeed, conversation_id: str) -> None:
        self._feed = feed
        self.conversation_id = conversation_id
        self._items: deque[dict[str, Any]] = deque(maxlen=QUEUE_LIMIT)
        self._lock = threading.Lock()

    def put(self, payload: dict[str, Any]) -> None:
        """Queue one frame (from any thread)."""
        with self._lock:
            self._items.append(payload)

    def drain(self) -> list[dict[str, Any]]:
        """The frames published since the last drain."""
        with self._lock:
            items = list(self._items)
            self._items.clear()
        return items

    def close(self) -> None:
        """Stop receiving frames."""
        self._feed.unsubscribe(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


class LiveFeed:
    """Live-only frames by conversation, for the readers subscribed to each (thread-safe)."""

    def __init__(self) -> None:
        self._subscribers: dict[str, set[Subscription]] = {}
        self._lock = threading.Lock()

    def subscribe(self, conversation_id: str) -> Subscription:
        """A reader's subscription to the conversation's live-only frames (close it when done)."""
        subscription = Subscription(self, conversation_id)
        with self._lock:
            self._subscribers.setdefault(conversation_id, set()).add(subscription)
        return subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        """Forget ``subscription`` (idempotent)."""
        with self._lock:
            subscribers = self._subscribers.get(subscription.conversation_id)
            if subscribers is not None:
                subscribers.discard(subscription)
                if not subscribers:
                    del self._subscribers[subscription.conversation_id]

    def publish(self, conversation_id: str, payload: dict[str, Any]) -> int:
        """Hand ``payload`` to every reader of the conversation; how many there were. The
        caller wakes them (they read the journal and their subscription when woken)."""
        with self._lock:
            subscribers = list(self._subscribers.get(conversation_id, ()))
        for subscription in subscribers:
            subscription.put(payload)
        return len(subscribers)

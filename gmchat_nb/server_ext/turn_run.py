"""A turn running on the extension's engine thread, its events handed to the request's loop.

The handlers (HTTP, SSE, WebSocket) start turns through :meth:`ChatRuntime.start
<gmchat_nb.server_ext.sessions.ChatRuntime.start>` and read them here, one :class:`Delivery`
(an event and its JSON) at a time.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import logging
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..core.events import ChatEvent
from .engine import Engine

__all__ = ["ConversationBusy", "Delivery", "TurnRun"]

log = logging.getLogger(__name__)


class ConversationBusy(Exception):
    """Another turn of the same conversation is running in this process (not the store's
    :class:`~gmchat_nb.core.turns.TurnBusy`, which an admission raises for any process)."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """One event of a turn and its JSON (encoded on the engine: results can be large)."""

    event: ChatEvent
    json: str

    @classmethod
    def of(cls, event: ChatEvent) -> Delivery:
        """Encode ``event``; ASCII JSON, so any text a model wrote can be written to a socket."""
        return cls(event, json.dumps(event.to_dict(), default=str))


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_DONE = object()
FINAL_EVENTS = frozenset({"done", "error"})


class TurnRun:
    """A turn running on the engine, its events delivered to a queue on the caller's loop.

    Running the turn as its own task is what lets a disconnect cancel the provider call even
    while the handler is blocked writing or waiting for the next event. The run is over for its
    client at its final event (``done``, ``error``, or ``confirm_mutation`` when it
    ``suspends``), not when the engine has unwound the task: a client that asks again the
    moment it saw ``done`` must not find the conversation busy.

    ``durable``: the turn was admitted under a client's turn id (``POST turns/``) and is only
    read here (a confirmation resumed it): it outlives the request that reads it, so a client
    that goes away does not stop it (:meth:`abandon`); its events are journaled either way.
    """

    def __init__(
        self,
        engine: Engine,
        events: AsyncIterator[ChatEvent],
        *,
        suspends: bool = False,
        streaming: bool = True,
        detached: bool = False,
        durable: bool = False,
        turn_id: str | None = None,
    ) -> None:
        self.turn_id = turn_id
        self.durable = durable
        self._detached = detached
        self._loop = asyncio.get_running_loop()  # the transport's loop
        self.queue: asyncio.Queue[Any] = asyncio.Queue()
        # Filled on the engine's thread, drained on the transport's loop: the first event at once
        # (time to first event is what a user feels), later ones one wake-up per burst — sent
        # when the turn next waits — not one per event (each wake-up is a GIL hand-over).
        self._inbox: deque[Any] = deque()
        self._inbox_lock = threading.Lock()
        self._wake_pending = False
        self._streaming = streaming
        self._final = FINAL_EVENTS | ({"confirm_mutation"} if suspends else set())
        self._ended = False
        self._engine_loop = engine.loop
        self._woken_once = False
        # After the first event the turn steps aside once (see _pump).
        self._step_aside = False
        self._future: concurrent.futures.Future[None] = engine.submit(self._pump(events))

    async def _pump(self, events: AsyncIterator[ChatEvent]) -> None:
        try:
            async for event in events:
                if self._ended:
                    log.error("a %s event after the end of a turn was dropped", event.type)
                    continue
                if self._detached:  # journaled by the session; nobody reads this queue
                    if event.type in self._final:
                        self._ended = True
                        self._deliver(_DONE)
                    continue
                delivery = Delivery.of(event)
                if event.type in self._final:
                    self._ended = True  # before the client can see it
                    self._deliver(delivery, wake=False)
                    self._deliver(_DONE)
                else:
                    self._deliver(delivery, wake=self._streaming)
                    if self._step_aside:
                        # One pass of the engine's loop polls its selector, which lets go of the
                        # GIL: the transport's thread, just woken, writes the first frame now
                        # instead of after the interpreter's 5 ms switch interval.
                        self._step_aside = False
                        await asyncio.sleep(0)
        except Exception as error:
            self._deliver(_Failed(error))
            raise
        finally:
            if not self._ended:
                self._ended = True
                self._deliver(_DONE)

    def _deliver(self, item: Any, *, wake: bool = True) -> None:
        with self._inbox_lock:
            self._inbox.append(item)
            if self._wake_pending or not wake:
                return
            self._wake_pending = True
            first = not self._woken_once
            if first:
                self._woken_once = self._step_aside = True
        if first:
            self._wake()
        else:
            self._engine_loop.call_soon(self._wake)  # after the turn's current step

    def _wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # the transport's loop has closed
            self._loop.call_soon_threadsafe(self._drain)

    def _drain(self) -> None:
        with self._inbox_lock:
            items = list(self._inbox)
            self._inbox.clear()
            self._wake_pending = False
        for item in items:
            self.queue.put_nowait(item)

    async def next(self, timeout: float | None = None) -> Delivery | None:
        """The next event, ``None`` at the end; TimeoutError after ``timeout`` of silence."""
        item = await asyncio.wait_for(self.queue.get(), timeout)
        if isinstance(item, _Failed):
            raise item.error
        return None if item is _DONE else item

    def done(self) -> bool:
        """True once the turn sent its final event, or its task finished or was cancelled."""
        return self._ended or self._future.done()

    def when_done(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (on the engine's thread) when the turn's task ends."""
        self._future.add_done_callback(lambda _: callback())

    async def finished(self) -> None:
        """Wait until the turn's task ended, however it ended (its outcome is not raised)."""
        await asyncio.wait({asyncio.wrap_future(self._future)})

    def cancel(self) -> None:
        """Stop the turn (its provider call is cancelled with it)."""
        self._future.cancel()

    def notify(self, event: ChatEvent) -> None:
        """Hand the reader an event that is not the turn's own and is never journaled (a
        ``notice`` that its store cannot take writes), from any thread: now, unless nobody
        reads this run live (a detached turn's readers follow the journal and the live feed;
        an HTTP answer is read at the end) or its final event was sent."""
        if self._detached or not self._streaming or self._ended:
            return
        self._deliver(Delivery.of(event))

    def abandon(self) -> None:
        """The client reading the turn went away: a durable turn runs on (its readers follow
        the journal, and an explicit cancel stops it), any other is cancelled."""
        if not self.durable:
            self.cancel()

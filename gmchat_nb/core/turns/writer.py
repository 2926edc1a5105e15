"""A turn's writes: what its session queues, written in few transactions, fenced by ownership.

The session queues the turn's messages, its numbered events and the tokens its provider rounds
used; :class:`TurnWriter` writes them together, in one transaction each time:

* at a round's start, before and after a data change, at a confirmation and at the end (the
  points where the turn's state must be in the store before it goes on), and
* while it streams, at most :data:`GROUP_SECONDS` after an event was queued — a group commit
  bounded by time, not by events: a follower reading the journal sees the answer as it is
  written, and a 1,000-chunk answer costs a handful of commits, not a thousand. A crash loses at
  most that window.

Every write is fenced: it applies only while this process owns the turn (:class:`TurnLost`
otherwise, nothing written), and renews the owner's lease. A write that fails keeps its rows
queued for the next one (nothing of the turn is dropped, and another turn never sees them);
:meth:`TurnWriter.write_eventually` retries with backoff while the store is away. The first
failure of a wait, and the first after writes went through again, is told to the owner's
store-wait listeners as a ``notice`` of kind ``store`` (:mod:`.outage`): the people following
the turn learn at once that it waits for its store.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sqlite3
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Final

from tenacity import (
    AsyncRetrying,
    retry_if_exception_type,
    stop_after_delay,
    wait_exponential,
    wait_random,
)
from tenacity.wait import wait_base

from ..store import StoreUnavailableError, TurnLost
from .outage import Waiting, store_notice, store_problem

if TYPE_CHECKING:
    from .owner import TurnOwner

__all__ = ["GROUP_SECONDS", "STEP_RETRY_SECONDS", "TRANSIENT", "TurnWriter", "backoff"]

log = logging.getLogger(__name__)

GROUP_SECONDS: Final = 0.05
"""The longest a queued event waits for its commit while a turn streams."""

STEP_RETRY_SECONDS: Final = 10.0
"""How long a turn waits at a step for a store that is away (a database server restarting) before
it gives up and ends with ``chat_error`` (written once the store is back)."""

TRANSIENT: Final = (StoreUnavailableError, sqlite3.OperationalError)
"""Store failures that pass (a database server restarting, a file locked past the timeout, a
full disk): writes are retried; anything else is a bug and is not."""


def backoff(*, first: float, longest: float) -> wait_base:
    """Exponential backoff from ``first`` seconds up to ``longest``, with up to ``first`` of
    jitter (so servers waiting for one database do not all ask again at once)."""
    return wait_exponential(multiplier=first, max=longest) + wait_random(0, first)


class TurnWriter:
    """The queued writes of one turn ``turn_id`` of ``conversation_id``, driven by ``owner``."""

    def __init__(self, owner: TurnOwner, conversation_id: str, turn_id: str, actor_id: str) -> None:
        self.owner = owner
        self.conversation_id = conversation_id
        self.turn_id = turn_id
        self.actor_id = actor_id
        self.positions: dict[int, int] = {}  # sequence -> journal position, once written
        self.lost = False  # another process took the turn over: nothing more is written
        self._messages: list[dict[str, Any]] = []
        self._events: list[tuple[int, dict[str, Any]]] = []
        self._usage: dict[str, int] = {}
        self._records: list[dict[str, Any]] = []
        self._last_sequence = 0  # the latest event queued
        self._timer: asyncio.TimerHandle | None = None
        self._told: tuple[str, Waiting] | None = None  # the store wait the followers were told

    # -- queueing ------------------------------------------------------------------------------

    def message(self, row: dict[str, Any]) -> None:
        """Queue one message of the turn."""
        self._messages.append(row)

    def event(self, sequence: int, payload: dict[str, Any]) -> None:
        """Queue one numbered event; it is committed within :data:`GROUP_SECONDS`."""
        self._events.append((sequence, payload))
        self._last_sequence = max(self._last_sequence, sequence)
        if self._timer is None:
            with contextlib.suppress(RuntimeError):  # no running loop: the next flush writes it
                loop = asyncio.get_running_loop()
                self._timer = loop.call_later(GROUP_SECONDS, self._grouped)

    def usage(self, amounts: Mapping[str, int]) -> None:
        """Queue tokens a provider round used (counted with the next write)."""
        for counter, amount in amounts.items():
            self._usage[counter] = self._usage.get(counter, 0) + int(amount)

    def record(self, row: Mapping[str, Any]) -> None:
        """Queue one model request's usage record (written with the next write)."""
        self._records.append(dict(row))

    @property
    def pending(self) -> bool:
        """Whether anything is queued."""
        return bool(self._messages or self._events or self._usage or self._records)

    @property
    def last_sequence(self) -> int:
        """The latest sequence queued or written."""
        return self._last_sequence

    # -- writing -------------------------------------------------------------------------------

    def flush(
        self,
        state: str | None = None,
        *,
        end: tuple[int, dict[str, Any]] | None = None,
        note: dict[str, Any] | None = None,
        step: bool = True,
    ) -> None:
        """Write everything queued now, with the turn's new ``state`` when given, in one fenced
        transaction; ``end`` (a terminal event) and ``note`` (a closing message) go with it but
        are never left queued. A ``step`` write is made at a step's boundary (a round's start,
        a data change, a confirmation, the end): every event so far belongs to a complete step,
        which a continuation after a crash starts from; a grouped write mid-step is not one.
        On failure the queued rows stay queued and the error is raised (:class:`TurnLost`
        marks the writer lost: it never writes again)."""
        self._cancel_timer()
        if self.lost:
            raise TurnLost(f"turn {self.turn_id} was taken over by another process")
        if state is None and end is None and note is None and not self.pending:
            return
        messages = self._messages + ([note] if note is not None else [])
        events = self._events + ([end] if end is not None else [])
        usage = self._usage
        records = self._records
        committed = max(self._last_sequence, end[0] if end else 0) if step else None
        try:
            positions = self.owner.store.record_turn(
                self.conversation_id,
                self.turn_id,
                messages,
                events,
                state=state,
                owner=self.owner.owner,
                lease_until=self.owner.lease_until(),
                committed_sequence=committed,
                usage=(self.actor_id, usage) if usage or records else None,
                records=records,
                fenced=True,
            )
        except TurnLost:
            self.lost = True
            raise
        self._told = None  # the store takes writes: a later failure is news again
        self._messages, self._events, self._usage, self._records = [], [], {}, []
        self.positions.update(positions)

    def store_waits(self, error: BaseException, waiting: Waiting) -> None:
        """Tell the followers (through the owner's store-wait listeners) that the turn cannot
        write: it ``waiting`` at its ``step``, or its ``end`` waits; once per wait and code."""
        told = (store_problem(error), waiting)
        if told == self._told:
            return
        self._told = told
        notice = store_notice(told[0], waiting, step_seconds=STEP_RETRY_SECONDS)
        self.owner.store_waits(self.conversation_id, self.turn_id, notice)

    async def write_eventually(self, write: Callable[[], None], *, within: float) -> None:
        """``write`` (a :meth:`flush`), retried with backoff while the store fails in passing,
        for up to ``within`` seconds; the last failure is raised (the rows stay queued)."""
        try:
            write()  # the common case, without a retry loop's cost
            return
        except TRANSIENT as error:
            log.warning("turn %s waits for its store: %s", self.turn_id, error)
            self.store_waits(error, "step")
        retrying = AsyncRetrying(
            stop=stop_after_delay(within),
            wait=backoff(first=0.05, longest=1.0),
            retry=retry_if_exception_type(TRANSIENT),
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                write()

    def _grouped(self) -> None:
        """The group commit: what streamed since the last write (a failure keeps it queued)."""
        self._timer = None
        if not self.pending or self.lost:
            return
        try:
            self.flush(step=False)
        except TurnLost:
            log.warning("turn %s was taken over by another process", self.turn_id)
        except TRANSIENT as error:  # kept queued: the turn's next step waits for the store
            log.debug("turn %s: a grouped write failed (%s)", self.turn_id, error)
            self.store_waits(error, "step")
        except Exception as error:  # the turn's next write says so and ends it
            log.debug("turn %s: a grouped write failed (%s)", self.turn_id, error)

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def close(self) -> None:
        """The turn is over here: no timer left, and this process no longer drives it."""
        self._cancel_timer()
        self.owner.let_go(self.conversation_id, self.turn_id)

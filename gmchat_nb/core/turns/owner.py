"""The one owner of a turn's life in a process: admission, driving under a lease, cancel, take-over,
closing and following.

Every surface — ``Chat`` and its widget, the server's routes, later the side panel and MCP —
admits turns here and drives them through a session that writes with a :class:`TurnWriter` from
here; none of them reaches into the store's turn rows or decides liveness itself.

* **Admission** is one store transaction (:meth:`ChatStore.admit_turn`) that decides who runs
  the turn: the caller whose admission ``created`` it. Every other caller with the same turn id
  and text gets that admission and follows the turn; the id is the actor's, whatever
  conversation a retry names. Its start carries the actor's budgets and the decision on them
  (:class:`~gmchat_nb.core.store.TurnStart`, built by the session from its rate limiter), which
  the store takes inside that transaction.
* **Leases.** The process driving a turn holds a lease on it in the store, renewed by a keeper
  thread (and by every write); a turn whose lease lapsed, or whose owner on this host is gone, is
  *abandoned*. A server *sweeps* the turns of its scope (:mod:`.identity`): an abandoned turn that
  only read and kept its text is taken over and run on (:meth:`TurnOwner.take_over`), any other
  is closed once (:mod:`.closing`). A process that finds it lost a turn stops writing it.
* **Every admitted turn ends once, under faults**: a turn's end that the store cannot take now
  is retried with backoff in the background until it can (:meth:`TurnOwner.finish_later`); a
  second end is impossible, because every write is fenced by ownership and every close is
  conditional.

Why the stores' own tools and not a durable-execution library (DBOS, Procrastinate): a turn is
one short async generator whose steps are already journaled by the session (the journal *is* the
checkpoint log), its take-over rule depends on what its journal says (reads run again, effects
never do), and it must run inside Jupyter's and the kernel's own event loops on SQLite or
PostgreSQL. One conditional write per decision and a lease column cost nothing extra; a
workflow engine would add its own tables, executor and event loop around the same journal.

Over 400 lines: admission, leases, take-over, closing, cancel, hand-over and following
all decide by one registry of held turns and their leases; what does not need it is in
``closing.py``, ``writer.py`` and ``identity.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
import weakref
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final

from tenacity import AsyncRetrying, retry_if_exception_type

from ..events import Notice
from ..store import (
    Admission,
    ChatStore,
    StoreClosedError,
    TurnBusy,
    TurnLost,
    TurnRecord,
    TurnStart,
    input_hash,
)
from ..store.records import DRIVEN_TURN_STATES, FINAL_TURN_STATES
from .closing import SERVER_STOPPED, close_turn, resumable, undecidable
from .identity import OWNER, kernel_scope, owner_alive, owner_on_this_host
from .writer import TRANSIENT, TurnWriter, backoff

__all__ = ["EXPIRED", "LEASE_SECONDS", "TurnOwner", "new_turn_id"]

log = logging.getLogger(__name__)

LEASE_SECONDS: Final = 15.0
"""How long a turn's owner's claim lasts without renewal (renewed every third of it)."""
FOLLOW_POLL_SECONDS: Final = 0.25  # a follower's wait when no write of this process wakes it
EXPIRED: Final = "its confirmation expired before anyone decided"


def new_turn_id() -> str:
    """A fresh turn id (for turns the client did not name)."""
    return uuid.uuid4().hex


@dataclass
class _Held:
    owner: TurnOwner
    conversation_id: str | None  # None while its admission is being decided


class _Pending:
    """A turn's end waiting for the store: tried by its retry task, and at once by an admission;
    done (and ``then`` called) once, whoever tries it last."""

    def __init__(
        self,
        owner: TurnOwner,
        action: Callable[[], None],
        what: str,
        then: Callable[[], None] | None,
    ) -> None:
        self.owner, self.action, self.what, self.then = owner, action, what, then
        self.done = False

    def attempt(self) -> None:
        """Try the write; a passing store failure is raised (try again later)."""
        if self.done:
            return
        try:
            self.action()
        except TRANSIENT:
            raise
        except (TurnLost, StoreClosedError):
            pass
        except Exception:
            log.exception("could not write %s", self.what)
        else:
            log.warning("wrote %s once the store was back", self.what)
        self.done = True
        self.owner._pending.discard(self)
        if self.then is not None:
            self.then()


# Turns this process drives, by (actor, turn id): process-wide, because several stores of one
# process may share a file (two Chat objects) and the owner identity is the process's.
_HELD: dict[tuple[str, str], _Held] = {}
_HELD_LOCK = threading.Lock()
_OWNERS: weakref.WeakKeyDictionary[ChatStore, TurnOwner] = weakref.WeakKeyDictionary()
_OWNERS_LOCK = threading.Lock()


class TurnOwner:
    """The turns of one store as this process sees them (see the module docstring).

    ``scope`` names the servers that may take over the turns admitted here (and the turns this
    owner sweeps); ``lease_seconds`` how long a claim lasts unrenewed."""

    def __init__(
        self, store: ChatStore, *, scope: str, lease_seconds: float = LEASE_SECONDS
    ) -> None:
        self.store = store
        self.scope = scope
        self.lease_seconds = float(lease_seconds)
        self.owner = OWNER
        self.stopping = False  # a server shutting down releases its resumable turns
        self._lost: list[Callable[[str, str], None]] = []
        self._store_waits: list[Callable[[str, str, Notice], None]] = []
        self._keeper: threading.Thread | None = None
        self._pause = threading.Event()  # never set: the keeper's sleep
        self._background: set[asyncio.Task[None]] = set()
        self._pending: set[_Pending] = set()  # turns' ends waiting for the store

    @classmethod
    def of(
        cls, store: ChatStore, *, scope: str | None = None, lease_seconds: float | None = None
    ) -> TurnOwner:
        """The owner of ``store``'s turns in this process (made on first use: a kernel's scope
        unless ``scope`` says otherwise; a later call may set the scope and lease)."""
        with _OWNERS_LOCK:
            owner = _OWNERS.get(store)
            if owner is None:
                owner = cls(store, scope=kernel_scope() if scope is None else scope)
                _OWNERS[store] = owner
            elif scope is not None:
                owner.scope = scope
            if lease_seconds is not None:
                owner.lease_seconds = float(lease_seconds)
        return owner

    # -- leases ------------------------------------------------------------------------------

    def lease_until(self) -> float:
        """The expiry of a lease taken or renewed now."""
        return self.store.now() + self.lease_seconds

    def live(self, turn: TurnRecord) -> bool:
        """Whether some process drives ``turn`` now: this one holds it, or its owner's lease
        runs and (on this host, where it can be told) its process exists."""
        if turn.owner == self.owner:
            with _HELD_LOCK:
                return (turn.actor_id or "", turn.id) in _HELD
        if turn.lease_expires_at is None or turn.lease_expires_at <= self.store.now():
            return False
        return owner_alive(turn.owner)

    def hold(self, actor_id: str, turn_id: str, conversation_id: str | None) -> bool:
        """Count the turn as driven here (its lease renewed) until :meth:`let_go`; False when it
        was held already."""
        with _HELD_LOCK:
            held = _HELD.get((actor_id, turn_id))
            if held is not None:
                held.conversation_id = held.conversation_id or conversation_id
                return False
            _HELD[(actor_id, turn_id)] = _Held(self, conversation_id)
        self._keep()
        return True

    def let_go(self, conversation_id: str, turn_id: str) -> None:
        """This process no longer drives the turn."""
        with _HELD_LOCK:
            for key, held in list(_HELD.items()):
                if key[1] == turn_id and held.conversation_id in (conversation_id, None):
                    del _HELD[key]

    def _keep(self) -> None:
        """Start the keeper thread that renews this owner's leases (once)."""
        if self._keeper is not None and self._keeper.is_alive():
            return
        self._keeper = threading.Thread(target=self._renew, name="gmchat-leases", daemon=True)
        self._keeper.start()

    def _renew(self) -> None:
        while not self.store.closed:
            self._pause.wait(self.lease_seconds / 3)
            with _HELD_LOCK:
                held = [
                    (item.conversation_id, key[1])
                    for key, item in _HELD.items()
                    if item.owner is self and item.conversation_id is not None
                ]
            if not held:
                continue
            try:
                lost = self.store.renew_leases(self.owner, held, lease_until=self.lease_until())
            except StoreClosedError:
                return
            except Exception as error:  # the store is away: the next round tries again
                log.warning("could not renew %d turn lease(s): %s", len(held), error)
                continue
            for conversation_id, turn_id in lost:
                log.warning("turn %s was taken over by another process", turn_id)
                self.let_go(conversation_id, turn_id)
                for listener in list(self._lost):
                    listener(conversation_id, turn_id)

    def on_lost(self, listener: Callable[[str, str], None]) -> None:
        """Call ``listener(conversation_id, turn_id)`` (from the keeper thread) when a turn this
        process drives turns out to be another's (it should stop running it)."""
        self._lost.append(listener)

    def on_store_wait(self, listener: Callable[[str, str, Notice], None]) -> None:
        """Call ``listener(conversation_id, turn_id, notice)`` (on the thread that writes the
        turn) when a turn driven here cannot write and waits for its store: ``notice`` is the
        ``notice`` of kind ``store`` for its live followers (it cannot be journaled)."""
        self._store_waits.append(listener)

    def store_waits(self, conversation_id: str, turn_id: str, notice: Notice) -> None:
        """Tell the store-wait listeners (a listener that fails is logged, never raised)."""
        for listener in list(self._store_waits):
            try:
                listener(conversation_id, turn_id, notice)
            except Exception:
                log.exception("a store-wait listener failed")

    # -- admission ---------------------------------------------------------------------------

    def admit(
        self,
        actor_id: str,
        text: str,
        *,
        turn_id: str | None = None,
        conversation_id: str | None = None,
        new_conversation: bool = False,
        start: TurnStart | None = None,
    ) -> Admission:
        """Admit a turn of ``actor_id`` (see :meth:`ChatStore.admit_turn`): under the client's
        ``turn_id`` it is idempotent and keeps its text (so it can run again after a crash);
        without one it gets a fresh id. Open turns of the conversation nobody drives any more are
        closed first; a driven one is :class:`TurnBusy`. When the admission ``created`` the turn
        (and did not refuse it), this process holds it: drive it with a :meth:`writer`."""
        durable = turn_id is not None
        turn_id = turn_id or new_turn_id()
        self._settle_pending()  # an earlier turn's end the store can take now: not busy
        fresh = self.hold(actor_id, turn_id, None)
        try:
            for _attempt in range(5):
                admission = self.store.admit_turn(
                    actor_id,
                    turn_id,
                    input_hash=input_hash(text) if durable else None,
                    owner=self.owner,
                    lease_until=self.lease_until(),
                    scope=self.scope,
                    conversation_id=conversation_id,
                    new_conversation=new_conversation,
                    text=text if durable else None,
                    start=start,
                    live=self.live,
                )
                if not admission.blocked_by:
                    break
                for turn in admission.blocked_by:
                    self.close(turn, EXPIRED if turn.state == "suspended" else SERVER_STOPPED)
            else:
                raise TurnBusy(f"the conversation's open turns could not be closed ({turn_id})")
        except BaseException:
            if fresh:
                self.let_go("", turn_id)
            raise
        if fresh and (not admission.created or admission.refusal is not None):
            self.let_go(admission.conversation_id, turn_id)
        elif fresh:
            self.hold(actor_id, turn_id, admission.conversation_id)
        return admission

    def start(self, turn: TurnRecord, start: TurnStart) -> dict[str, Any] | None:
        """Start a taken-over turn that never started; the refusal event, if refused (the turn
        then ended with it and is no longer held)."""
        refusal = self.store.start_turn(
            turn.conversation_id,
            turn.id,
            turn.actor_id or "",
            start,
            owner=self.owner,
            lease_until=self.lease_until(),
        )
        if refusal is not None:
            self.let_go(turn.conversation_id, turn.id)
        return refusal

    def writer(self, conversation_id: str, turn_id: str, actor_id: str) -> TurnWriter:
        """The writer of a turn this process drives (held until the writer is closed)."""
        self.hold(actor_id, turn_id, conversation_id)
        return TurnWriter(self, conversation_id, turn_id, actor_id)

    # -- take-over and closing ---------------------------------------------------------------

    def abandoned(self, turn: TurnRecord) -> bool:
        """A turn that should be driven (admitted or running) and is not."""
        return turn.state in DRIVEN_TURN_STATES and not self.live(turn)

    def take_over(self, turn: TurnRecord) -> TurnRecord | None:
        """The abandoned, :func:`~.closing.resumable` ``turn``, owned and held by this process
        now (no other process took it first), or None."""
        if not self.abandoned(turn) or not resumable(self.store, turn):
            return None
        fresh = self.hold(turn.actor_id or "", turn.id, turn.conversation_id)
        if not self.store.take_over_turn(turn, self.owner, lease_until=self.lease_until()):
            if fresh:
                self.let_go(turn.conversation_id, turn.id)
            return None
        return self.store.turn(turn.conversation_id, turn.id)

    def close(self, turn: TurnRecord, reason: str) -> bool:
        """Close ``turn`` as interrupted (:func:`~.closing.close_turn`) unless it moved on; an
        owner known gone here is closed at once, any other only while its lease is still out."""
        now = self.store.now()
        gone = turn.owner == self.owner or (
            owner_on_this_host(turn.owner) and not owner_alive(turn.owner)
        )
        expired_by = None if gone or turn.state == "suspended" else now
        return close_turn(self.store, turn, reason, now=now, lease_expired_by=expired_by)

    def sweep(self) -> list[TurnRecord]:
        """Settle this scope's turns nobody drives: the resumable ones are taken over (returned,
        for the caller to run on), the others closed; so are suspended turns whose
        confirmations can no longer be decided."""
        taken: list[TurnRecord] = []
        for state in DRIVEN_TURN_STATES:
            for turn in self.store.turns(state=state, scope=self.scope):
                if self.live(turn):
                    continue
                record = self.take_over(turn)
                if record is not None:
                    taken.append(record)
                elif self.close(turn, SERVER_STOPPED):
                    log.warning("closed the interrupted chat turn %s", turn.id)
        now = self.store.now()
        for turn in self.store.turns(state="suspended", scope=self.scope):
            if undecidable(self.store, turn, now) and self.close(turn, EXPIRED):
                log.warning("closed the chat turn %s: %s", turn.id, EXPIRED)
        return taken

    def cancel(self, conversation_id: str, turn_id: str, command_id: str) -> str | None:
        """Record an explicit cancel (see :meth:`ChatStore.request_cancel`). The process
        driving the turn stops it at once (it hears the command), at its next step or at its
        next write, and its end can only be ``interrupted`` from now on (the store refuses any
        other); a turn nobody drives any more — one of this scope, or one waiting for a
        person's decision — is closed here and now."""
        result = self.store.request_cancel(conversation_id, turn_id, command_id)
        if result == "cancelled":
            turn = self.store.turn(conversation_id, turn_id)
            ours = turn is not None and (turn.scope or "") == self.scope
            if turn is not None and (turn.state == "suspended" or (ours and self.abandoned(turn))):
                self.close(turn, f"it was cancelled (command {command_id})")
        return result

    def release(self, conversation_id: str, turn_id: str) -> bool:
        """Hand a turn this process drives to the next server that may run it (shutting down):
        its lease ends now and this process lets go of it."""
        released = self.store.release_turn(conversation_id, turn_id, self.owner)
        self.let_go(conversation_id, turn_id)
        return released

    def hand_over(self) -> int:
        """This process stops (a server shutting down, or interrupted): every turn it holds is
        handed to the next server that may run it — those that only read released at once,
        the others closed as interrupted. Returns how many it handed over."""
        with _HELD_LOCK:
            held = [
                (item.conversation_id, key[1])
                for key, item in _HELD.items()
                if item.owner is self and item.conversation_id is not None
            ]
        handed = 0
        for conversation_id, turn_id in held:
            turn = self.store.turn(conversation_id, turn_id)
            self.let_go(conversation_id, turn_id)
            if turn is None or turn.owner != self.owner or turn.state not in DRIVEN_TURN_STATES:
                continue
            if resumable(self.store, turn):
                handed += self.store.release_turn(conversation_id, turn_id, self.owner)
            else:
                handed += close_turn(self.store, turn, SERVER_STOPPED, now=self.store.now())
        return handed

    def finish_later(
        self, action: Callable[[], None], what: str, *, then: Callable[[], None] | None = None
    ) -> None:
        """Run ``action`` (a write that ends a turn) again and again, with backoff, on the
        running loop until the store takes it, another process took the turn, or the store
        was closed; then ``then``. An admission tries it first, at once, so a turn's end that
        waited for the store never keeps the next turn waiting once the store is back.
        (RuntimeError without a running loop.)"""
        pending = _Pending(self, action, what, then)

        async def retry() -> None:
            retrying = AsyncRetrying(
                wait=backoff(first=0.2, longest=5.0),
                retry=retry_if_exception_type(TRANSIENT),
                reraise=True,
            )
            async for attempt in retrying:
                with attempt:
                    pending.attempt()

        task = asyncio.get_running_loop().create_task(retry())
        self._pending.add(pending)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    def _settle_pending(self) -> None:
        """Try every turn's end that waits for the store once, now."""
        for pending in list(self._pending):
            with contextlib.suppress(*TRANSIENT):
                pending.attempt()

    # -- following ---------------------------------------------------------------------------

    async def follow(self, turn: TurnRecord, after: int = 0) -> AsyncIterator[dict[str, Any]]:
        """The journaled events of ``turn`` after its sequence ``after``, as they are written,
        until its terminal event. Returns early when nobody drives it any more or it waits for a
        human (suspended): the caller decides what then."""
        loop = asyncio.get_running_loop()
        woken = asyncio.Event()

        def wake(conversation_id: str) -> None:
            if conversation_id == turn.conversation_id:
                loop.call_soon_threadsafe(woken.set)

        stop_listening = self.store.on_journal(wake)
        try:
            while True:
                woken.clear()
                record = self.store.turn(turn.conversation_id, turn.id)
                for payload in self.store.events(
                    turn.conversation_id, turn_id=turn.id, after_sequence=after
                ):
                    after = int(payload.get("sequence") or after)
                    yield payload
                    if payload.get("type") in ("done", "error"):
                        return
                if (
                    record is None
                    or record.state in FINAL_TURN_STATES
                    or record.state == "suspended"
                    or not self.live(record)
                ):
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), FOLLOW_POLL_SECONDS)
        finally:
            stop_listening()

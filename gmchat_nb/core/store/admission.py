"""A turn's admission and start: one write transaction that decides who runs the turn.

Every write holds the store's single writer lock (SQLite's ``BEGIN IMMEDIATE``, a PostgreSQL
advisory lock), so what the transaction reads it decides on: of two servers admitting one turn id
at once, the second finds the first's row and follows it; of two turns of one conversation, the
second finds the first running. Admission (the turn id, its input hash, the conversation it
belongs to, the conversation's other open turns) and the start (budgets, a pending confirmation,
the title, the question stored, the turn running under its owner's lease) are one transaction:
the turn's first and only write before its first provider round.

The store counts a turn's request against the actor's budgets but does not decide what an
exhausted budget means: the caller hands that decision in with the start
(:attr:`TurnStart.decide`, the rate limiter's :func:`~gmchat_nb.core.ratelimit.decide`, passed
down by the session and the turn owner), and the store takes it inside the same write, so twenty
turns racing for the last of a budget never all pass it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from ..events import error_event
from .conversations import touch
from .database import Database, Statements
from .journal import insert_events, journal_rows
from .messages import insert_messages, message_row_of
from .records import TurnRecord
from .turns import TurnConflict, TurnLost, turn_record
from .usage import admit_usage_in

__all__ = [
    "Admission",
    "Admissions",
    "BudgetDecider",
    "BudgetVerdict",
    "TurnBusy",
    "TurnStart",
    "UnknownConversation",
]


class UnknownConversation(KeyError):
    """The conversation named does not exist or belongs to someone else (alike on purpose)."""


class TurnBusy(RuntimeError):
    """Another turn of the conversation is running (somewhere) and its owner is alive."""


class BudgetVerdict(Protocol):
    """A decision on a turn's budgets, as an admission reads it (the rate limiter's
    :class:`~gmchat_nb.core.ratelimit.RateDecision` is one): may the turn start, and if not, in
    how many seconds it may ask again."""

    @property
    def allowed(self) -> bool: ...

    @property
    def retry_after_seconds(self) -> int | None: ...


BudgetDecider: TypeAlias = Callable[[Mapping[str, float], float], BudgetVerdict]
"""The caller's policy on exhausted budgets: ``(exhausted counter -> when its usage is below its
limit again, now) -> verdict``, called inside the admission's write."""


@dataclass(frozen=True, slots=True)
class TurnStart:
    """What starting a turn needs: its question, the title its conversation takes if it has none,
    the actor's request budgets (counter -> limit over ``window_seconds``) and ``decide``, the
    decision on them the store takes inside the admission (required with budgets)."""

    text: str
    title: str = ""
    limits: Mapping[str, int] = field(default_factory=dict)
    window_seconds: float = 3600.0
    decide: BudgetDecider | None = None
    project: str = ""
    """The identity of the project the turn asks about, kept on a conversation that has none."""

    def __post_init__(self) -> None:
        if self.limits and self.decide is None:
            raise ValueError("a turn start with budgets needs the decision on them (decide)")


@dataclass(frozen=True, slots=True)
class Admission:
    """What an admission decided. ``created``: this call made the turn and its caller runs it
    (nobody else does); False: the turn id named an earlier turn (``record``), which its own
    runner runs. ``position`` is the conversation's journal position the turn's events come
    after. ``refusal`` is the error event a refused start ended the turn with (a budget, a
    pending confirmation: journaled for a kept turn, nothing stored for another). ``blocked_by``
    lists open turns of the conversation nobody drives any more, which must be closed before the
    turn may start (nothing was written). ``kept``: the turn keeps its text (a client's turn id:
    it may be cancelled by id, and run again after a crash)."""

    conversation_id: str
    turn_id: str
    state: str
    position: int
    created: bool
    refusal: dict[str, Any] | None = None
    record: TurnRecord | None = None
    blocked_by: tuple[TurnRecord, ...] = ()
    kept: bool = False


class Admissions(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods that admit and start turns."""

    def admit_turn(
        self,
        actor_id: str,
        turn_id: str,
        *,
        input_hash: str | None,
        owner: str,
        lease_until: float | None = None,
        scope: str = "",
        conversation_id: str | None = None,
        new_conversation: bool = False,
        text: str | None = None,
        start: TurnStart | None = None,
        live: Callable[[TurnRecord], bool] = lambda _turn: True,
    ) -> Admission:
        """Admit the actor's turn ``turn_id`` in one transaction (see the module docstring).

        The same id (of this actor, in any conversation) with the same ``input_hash`` and no
        other conversation is the earlier admission again (``created`` False); otherwise it is a
        :class:`TurnConflict`. The conversation is ``conversation_id`` (an
        :class:`UnknownConversation` unless it is the actor's), else a new one when
        ``new_conversation``, else the actor's latest or a new one. Another turn of it that
        ``live`` says is driven is a :class:`TurnBusy`. The new turn is owned by ``owner`` with a
        lease until ``lease_until``, may be taken over by servers of ``scope``, and keeps ``text``
        (so it can be run again after a crash); with ``start`` it starts in the same transaction.
        """
        with self._write() as connection:
            now = self.now()
            earlier = connection.execute(
                "SELECT * FROM turns WHERE actor_id = ? AND id = ?", (actor_id, turn_id)
            ).fetchone()
            if earlier is not None:
                record = turn_record(earlier)
                if record.input_hash != input_hash or conversation_id not in (
                    None,
                    record.conversation_id,
                ):
                    raise TurnConflict(
                        f"turn {turn_id} was admitted with another input; use a new turn id"
                    )
                return Admission(
                    record.conversation_id,
                    turn_id,
                    record.state,
                    int(record.admitted_position or 0),
                    created=False,
                    record=record,
                )
            cid = _conversation(connection, actor_id, conversation_id, new_conversation, now)
            blocked = _open_turns(connection, cid, turn_id, live, now)
            if blocked:
                return Admission(cid, turn_id, "blocked", 0, created=False, blocked_by=blocked)
            position = int(
                connection.execute(
                    "SELECT COALESCE(MAX(position), 0) FROM events WHERE conversation_id = ?",
                    (cid,),
                ).fetchone()[0]
            )
            refusal = _refusal(connection, cid, actor_id, start, now) if start else None
            kept = text is not None
            if refusal is not None and not kept:
                return Admission(cid, turn_id, "failed", position, created=True, refusal=refusal)
            touch(connection, cid, now)
            connection.execute(
                "INSERT INTO turns (conversation_id, id, state, owner, started_at, input_hash, "
                "admitted_position, input, actor_id, scope, lease_expires_at) "
                "VALUES (?, ?, 'accepted', ?, ?, ?, ?, ?, ?, ?, ?)",
                (cid, turn_id, owner, now, input_hash, position, text, actor_id, scope,
                 lease_until),
            )  # fmt: skip
            if start is None:
                return Admission(cid, turn_id, "accepted", position, created=True, kept=kept)
            state, refusal = _start(connection, cid, turn_id, start, refusal, now)
            return Admission(
                cid, turn_id, state, position, created=True, refusal=refusal, kept=kept
            )

    def start_turn(
        self,
        conversation_id: str,
        turn_id: str,
        actor_id: str,
        start: TurnStart,
        *,
        owner: str,
        lease_until: float | None = None,
    ) -> dict[str, Any] | None:
        """Start an admitted turn ``owner`` holds (one it took over before it ever started): as
        :meth:`admit_turn` with ``start`` does; returns the refusal event, if it was refused
        (journaled as the turn's end). :class:`TurnLost` when ``owner`` does not hold it."""
        with self._write() as connection:
            now = self.now()
            moved = connection.execute(
                "UPDATE turns SET lease_expires_at = COALESCE(?, lease_expires_at) "
                "WHERE conversation_id = ? AND id = ? AND owner = ? AND state = 'accepted'",
                (lease_until, conversation_id, turn_id, owner),
            )
            if moved.rowcount != 1:
                raise TurnLost(f"turn {turn_id} is not an admitted turn held by this process")
            refusal = _refusal(connection, conversation_id, actor_id, start, now)
            touch(connection, conversation_id, now)
            return _start(connection, conversation_id, turn_id, start, refusal, now)[1]


def _conversation(
    connection: Statements,
    actor_id: str,
    conversation_id: str | None,
    new_conversation: bool,
    now: float,
) -> str:
    """The conversation a turn joins (see :meth:`Admissions.admit_turn`)."""
    if conversation_id is not None:
        row = connection.execute(
            "SELECT actor_id FROM conversations WHERE id = ?", (conversation_id,)
        ).fetchone()
        if row is None or row[0] != actor_id:
            raise UnknownConversation(conversation_id)
        return conversation_id
    if not new_conversation:
        latest = connection.execute(
            "SELECT id FROM conversations WHERE actor_id = ? "
            "ORDER BY updated_at DESC, created_at DESC, rowid DESC LIMIT 1",
            (actor_id,),
        ).fetchone()
        if latest is not None:
            return str(latest[0])
    created = uuid.uuid4().hex
    connection.execute(
        "INSERT INTO conversations (id, actor_id, title, created_at, updated_at) "
        "VALUES (?, ?, '', ?, ?)",
        (created, actor_id, now, now),
    )
    return created


def _open_turns(
    connection: Statements,
    conversation_id: str,
    turn_id: str,
    live: Callable[[TurnRecord], bool],
    now: float,
) -> tuple[TurnRecord, ...]:
    """The conversation's other open turns that must be closed first; :class:`TurnBusy` when
    one of them is driven. A suspended turn waits for a human: only one whose confirmations
    can no longer be decided is in the way (another makes the start refuse instead)."""
    blocked: list[TurnRecord] = []
    rows = connection.execute(
        "SELECT * FROM turns WHERE conversation_id = ? AND id <> ? "
        "AND state IN ('accepted', 'running', 'suspended')",
        (conversation_id, turn_id),
    ).fetchall()
    for row in rows:
        record = turn_record(row)
        if record.state == "suspended":
            if _undecidable(connection, record, now):
                blocked.append(record)
        elif live(record):
            raise TurnBusy(f"turn {record.id} of conversation {conversation_id} is running")
        else:
            blocked.append(record)
    return tuple(blocked)


def _undecidable(connection: Statements, turn: TurnRecord, now: float) -> bool:
    """A suspended turn none of whose confirmations can still be confirmed."""
    rows = connection.execute(
        "SELECT state, expires_at, turn_state FROM confirmations WHERE conversation_id = ? "
        "AND (state = 'claimed' OR (state = 'pending' AND expires_at > ?))",
        (turn.conversation_id, now),
    ).fetchall()
    for row in rows:
        owner = json.loads(row[2]).get("state", {}).get("turn_id")
        if owner in (None, turn.id):
            return False
    return True


def _refusal(
    connection: Statements, conversation_id: str, actor_id: str, start: TurnStart, now: float
) -> dict[str, Any] | None:
    """Why the turn may not start (a pending confirmation, a spent budget), or None; a request
    that may start is counted against the actor's budgets here, and whether a spent budget
    refuses it is the caller's ``start.decide``, taken in this transaction."""
    pending = connection.execute(
        "SELECT 1 FROM confirmations WHERE conversation_id = ? AND state = 'pending' "
        "AND expires_at > ? LIMIT 1",
        (conversation_id, now),
    ).fetchone()
    if pending is not None:
        return error_event("confirmation_pending").to_dict()
    below_at = admit_usage_in(
        connection,
        actor_id,
        {"requests": 1},
        limits=start.limits,
        window_seconds=start.window_seconds,
        now=now,
    )
    if start.decide is None:  # no budgets (TurnStart holds to it): none can be exhausted
        return None
    verdict = start.decide(below_at, now)
    if verdict.allowed:
        return None
    return error_event("rate_limited", retry_after_seconds=verdict.retry_after_seconds).to_dict()


def _start(
    connection: Statements,
    conversation_id: str,
    turn_id: str,
    start: TurnStart,
    refusal: dict[str, Any] | None,
    now: float,
) -> tuple[str, dict[str, Any] | None]:
    """Inside the admission: the turn running with its question stored and its conversation
    named, or (refused) ended by its refusal as its one journaled event."""
    if refusal is not None:
        terminal = {**refusal, "sequence": 1}
        insert_events(connection, conversation_id, turn_id, journal_rows([(1, terminal)]), now)
        connection.execute(
            "UPDATE turns SET state = 'failed', ended_at = ? WHERE conversation_id = ? AND id = ?",
            (now, conversation_id, turn_id),
        )
        return "failed", terminal
    if start.title:
        connection.execute(
            "UPDATE conversations SET title = ? WHERE id = ? AND title = ''",
            (start.title, conversation_id),
        )
    if start.project:
        connection.execute(
            "UPDATE conversations SET project = ? WHERE id = ? AND project IS NULL",
            (start.project, conversation_id),
        )
    connection.execute(
        "UPDATE turns SET state = 'running' WHERE conversation_id = ? AND id = ?",
        (conversation_id, turn_id),
    )
    question = message_row_of({"role": "user", "content": start.text}, turn_id)
    insert_messages(connection, conversation_id, [question], now)
    return "running", None

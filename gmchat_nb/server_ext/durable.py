"""Durable turns: admit a turn under the client's id, follow the conversation's journal, cancel.

* ``POST {url}turns/`` ``{conversation_id?, turn_id, text}`` admits the turn (stored and started
  in one store write, before any project or provider work) and answers ``202 {conversation_id,
  turn_id, sequence, state}``; ``sequence`` is the journal position its events come after. The
  same ``turn_id`` with the same input is the same admission again — on any server sharing the
  store, whatever conversation it names — and only the server whose admission created the turn
  runs it; with another input (or another conversation), ``409``. The turn runs detached from
  the request: closing a stream never cancels it.
* ``GET {url}conversations/{id}/events`` streams the journal as server-sent events. Each frame
  carries the event's conversation position as the SSE ``id:`` and as ``sequence`` in its JSON
  (with its ``turn_id``). ``Last-Event-ID`` (or ``?after=N``) replays strictly after N, then the
  stream hands over to live events without a gap or a duplicate: it always reads the journal,
  and commits only wake it. A cursor ahead of the journal is ``409``; one older than what
  retention kept is ``410 {"error": "resync_required", ...}``. A turn this server runs that
  cannot write (its store is full, read-only or away) is said as it happens: a ``notice`` of
  kind ``store`` frame without ``id:`` (live only: the journal cannot take it, and it is never
  replayed); the stream itself waits for the store and goes on.
* ``POST {url}conversations/{id}/turns/{turn_id}/cancel`` ``{command_id}``: answers how the
  turn ended, with its state and the journal's last position. The command is recorded in the
  store (once the store took it, the turn can only end ``interrupted``: its end or suspension
  is refused to its driver), then the answer waits — on this server or any other sharing the
  store — up to :data:`CANCEL_WAIT_SECONDS` for the turn's terminal event: ``cancelled`` (the
  turn ended ``interrupted`` after a command was recorded), ``too_late`` (it had ended before,
  or ended otherwise), ``duplicate`` (this command id again, with the same wait), or, when the
  wait runs out, ``202 pending`` with the turn's state: the command stands and the turn's
  ``interrupted`` follows in the journal. Cooperative: the turn stops at once, at its next step
  or at its next write; an effect already under way is not claimed undone.
* ``GET {url}conversations/{id}/turns/``: ``{conversation_id, latest_sequence, turns}``, the
  conversation's turns in journal order, each ``{turn_id, text, state, started_at, ended_at,
  first_sequence, last_sequence}`` — its question as the store keeps it (an admitted turn's
  input, else its stored user message) and where its events are in the journal; and the
  journal's last position, which a client reads the journal up to before it shows the
  conversation.
* ``GET {url}conversations/{id}/turns/{turn_id}/evidence``: ``{conversation_id, turn_id,
  evidence}``, one row per query of the turn that returned rows so far (a running turn's
  finished ones), as the widget's evidence panel shows them: its GraphQL ``document`` and
  ``variables``, compiled again from the journaled call by the project's own compiler, and a
  ``code`` cell that re-runs it. Read from the store alone, so any server sharing it answers.

Over 400 lines: the durable routes share one envelope (:class:`DurableHandler`), the turn id
rule and the journal's frames; each route is a short class, and apart they would import each
other.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
from typing import Any

from tornado import web
from tornado.iostream import StreamClosedError

from ..core.session.evidence import JournaledQuery, stored_evidence
from ..core.session.messages import text_refusal
from ..core.turns import (
    FINAL_TURN_STATES,
    JournalEntry,
    TurnBusy,
    TurnConflict,
    TurnRecord,
    TurnSummary,
    UnknownConversation,
)
from .handlers import STORE_UNAVAILABLE, UNAVAILABLE, UNKNOWN_CONVERSATION, GMChatHandler, allow
from .requests import Refused, journal_cursor, optional_string, required_string
from .sessions import ChatRuntime
from .sse import KEEPALIVE

__all__ = [
    "CancelHandler",
    "ConversationEventsHandler",
    "ConversationTurnsHandler",
    "TurnEvidenceHandler",
    "TurnsHandler",
    "frame",
    "live_frame",
]

log = logging.getLogger(__name__)

TURN_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
UNKNOWN_TURN = "No turn with that id in this conversation."
CANCEL_WAIT_SECONDS = 5.0  # how long a cancel waits for the turn to journal its end
ENDED_POLL_SECONDS = 0.25  # the wait's look at the store when no journal write wakes it
STORE_RETRY_SECONDS = 1.0  # an events stream's next look at a store that was away


def _identifier(payload: dict[str, Any], key: str) -> str:
    value = required_string(payload, key, "bad_event", what=f"'{key}'")
    if not TURN_ID.match(value):
        raise Refused(
            400, "bad_event", f"'{key}' must be 1-128 letters, digits or . _ : - characters."
        )
    return value


def frame(entry: JournalEntry) -> bytes:
    """One journaled event as an SSE frame: ``id`` is its position (:meth:`JournalEntry.frame`)."""
    kind = str(entry.payload.get("type", "message"))
    return f"id: {entry.position}\nevent: {kind}\ndata: {json.dumps(entry.frame())}\n\n".encode()


def live_frame(payload: dict[str, Any]) -> bytes:
    """A live-only event (never journaled) as an SSE frame: no ``id``, so a reader's
    ``Last-Event-ID`` stays the journal's."""
    kind = str(payload.get("type", "message"))
    return f"event: {kind}\ndata: {json.dumps(payload)}\n\n".encode()


class DurableHandler(GMChatHandler):
    """JSON answers with a status; the conversation must be the actor's."""

    def answer(self, status: int, body: dict[str, Any]) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A path segment that is not UTF-8 (a percent-encoded lone surrogate) becomes U+FFFD
        rather than Tornado's bare 400, so it is judged like any other unknown id: a 404 in
        this route's envelope."""
        return value.decode("utf-8", "replace")

    def refuse(self, refused: Refused) -> None:
        """The durable routes' envelope: ``{"error": code, "message"}``."""
        self.answer(refused.status, {"error": refused.code, "message": refused.message})

    async def own_conversation(self, conversation_id: str) -> None:
        record = await self.runtime.on_engine(self.runtime.store.conversation, conversation_id)
        if record is None or record.actor_id != self.actor.id:
            raise Refused(404, "bad_event", UNKNOWN_CONVERSATION)


class TurnsHandler(DurableHandler):
    """``POST {url}turns/``: admit a turn (see the module docstring)."""

    @web.authenticated
    @allow("execute")
    async def post(self) -> None:
        self.check_permission()
        try:
            payload = self.json_body("bad_message")
            turn_id = _identifier(payload, "turn_id")
            text = required_string(payload, "text", "bad_message", what="Message text")
            refusal = text_refusal(text)
            if refusal is not None:
                raise Refused(400, "bad_message", refusal)
            conversation_id = optional_string(
                payload, "conversation_id", "bad_event", what="The conversation id"
            )
            admitted = await self.runtime.engine.run(self._admit(turn_id, text, conversation_id))
        except Refused as refused:
            return self.refuse(refused)
        self.answer(202, admitted)

    async def _admit(self, turn_id: str, text: str, conversation_id: str | None) -> dict[str, Any]:
        """On the engine: the admission (one store write decides it); the server whose
        admission created the turn runs it, detached, every other caller follows it."""
        runtime, actor = self.runtime, self.actor
        try:
            admission = runtime.admit(actor, text, turn_id=turn_id, conversation_id=conversation_id)
        except TurnConflict:
            raise Refused(409, "turn_conflict", TURN_CONFLICT) from None
        except UnknownConversation:
            raise Refused(404, "bad_event", UNKNOWN_CONVERSATION) from None
        except TurnBusy:
            raise Refused(409, "turn_in_progress", BUSY_MESSAGE) from None
        if admission.created:
            runtime.run_admitted(actor, admission, text)
        return {
            "conversation_id": admission.conversation_id,
            "turn_id": turn_id,
            "sequence": admission.position,
            "state": "accepted" if admission.created else admission.state,
        }


BUSY_MESSAGE = "A turn of this conversation is running."
TURN_CONFLICT = "This turn id was admitted with another message; use a new turn id."


class ConversationEventsHandler(DurableHandler):
    """``GET {url}conversations/{id}/events``: the journal, replayed and then live."""

    def initialize(
        self, runtime: ChatRuntime, max_body_bytes: int = 65536, keepalive_seconds: float = 15.0
    ) -> None:
        super().initialize(runtime, max_body_bytes, keepalive_seconds)
        self._closed = asyncio.Event()

    @web.authenticated
    @allow("read")
    async def get(self, conversation_id: str) -> None:
        self.check_permission()
        try:
            await self.own_conversation(conversation_id)
            cursor = self._cursor()
            store = self.runtime.store
            latest = await self.runtime.on_engine(store.last_position, conversation_id)
            earliest = await self.runtime.on_engine(store.first_position, conversation_id)
        except Refused as refused:
            return self.refuse(refused)
        if cursor > latest:
            return self.answer(
                409,
                {
                    "error": "cursor_ahead",
                    "message": "The cursor is past the conversation's last event.",
                    "requested_sequence": cursor,
                    "latest_sequence": latest,
                },
            )
        if earliest and cursor < earliest - 1:
            return self.answer(
                410,
                {
                    "error": "resync_required",
                    "requested_sequence": cursor,
                    "earliest_available_sequence": earliest,
                    "latest_sequence": latest,
                },
            )
        self.set_header("Content-Type", "text/event-stream")
        self.set_header("Cache-Control", "no-cache")
        self.set_header("X-Accel-Buffering", "no")
        try:
            await self.flush()
            await self._follow(conversation_id, cursor)
        except StreamClosedError:
            return

    def _cursor(self) -> int:
        raw = self.request.headers.get("Last-Event-ID")
        if raw is None:
            raw = self.get_query_argument("after", "0")
        cursor = journal_cursor(raw)
        if cursor is None:
            raise Refused(400, "bad_event", "The cursor (Last-Event-ID or after) must be a whole "
                          "number of 0 or more.")  # fmt: skip
        return cursor

    async def _follow(self, conversation_id: str, cursor: int) -> None:
        """Journal rows after ``cursor`` as they are committed, and the live feed's frames as
        they are published, until the client goes away. A store that is away for a while
        (a database server restarting) is waited for, not the end of the stream."""
        store = self.runtime.store
        with self.runtime.live.subscribe(conversation_id) as live:
            while not self._closed.is_set():
                woken = self.runtime.watch(conversation_id)  # before reading: nothing is missed
                try:
                    for payload in live.drain():
                        self.write(live_frame(payload))
                    wait = self.keepalive_seconds
                    try:
                        rows = await self.runtime.on_engine(
                            store.journal_after, conversation_id, cursor
                        )
                    except STORE_UNAVAILABLE as error:
                        log.debug("gmchat's events stream waits for its store: %s", error)
                        rows, wait = [], min(wait, STORE_RETRY_SECONDS)
                    if rows:
                        for row in rows:
                            self.write(frame(row))
                        await self.flush()
                        cursor = rows[-1].position
                        continue
                    await self.flush()
                    try:
                        await asyncio.wait_for(woken.wait(), wait)
                    except TimeoutError:
                        self.write(KEEPALIVE)
                        await self.flush()
                finally:
                    self.runtime.unwatch(conversation_id, woken)

    def on_connection_close(self) -> None:
        """A reader that goes away stops reading; the turn it watched runs on."""
        self._closed.set()
        super().on_connection_close()


def turn_json(turn: TurnSummary) -> dict[str, Any]:
    """A turn as ``GET {url}conversations/{id}/turns/`` lists it."""
    return {
        "turn_id": turn.turn_id,
        "text": turn.text,
        "state": turn.state,
        "started_at": turn.started_at,
        "ended_at": turn.ended_at,
        "first_sequence": turn.first_position,
        "last_sequence": turn.last_position,
    }


class ConversationTurnsHandler(DurableHandler):
    """``GET {url}conversations/{id}/turns/``: the conversation's turns and the journal's end."""

    @web.authenticated
    @allow("read")
    async def get(self, conversation_id: str) -> None:
        self.check_permission()
        try:
            await self.own_conversation(conversation_id)
        except Refused as refused:
            return self.refuse(refused)
        store = self.runtime.store
        # The end first: every turn with an event at or before it is in the list read after.
        latest = await self.runtime.on_engine(store.last_position, conversation_id)
        turns = await self.runtime.on_engine(store.conversation_turns, conversation_id)
        body = {
            "conversation_id": conversation_id,
            "latest_sequence": latest,
            "turns": [turn_json(turn) for turn in turns],
        }
        self.finish(json.dumps(body))


class CancelHandler(DurableHandler):
    """``POST {url}conversations/{id}/turns/{turn_id}/cancel``: an explicit, idempotent cancel."""

    @web.authenticated
    @allow("execute")
    async def post(self, conversation_id: str, turn_id: str) -> None:
        self.check_permission()
        try:
            await self.own_conversation(conversation_id)
            command_id = _identifier(self.json_body("bad_event"), "command_id")
            store = self.runtime.store
            result = await self.runtime.on_engine(
                self.runtime.turns.cancel, conversation_id, turn_id, command_id
            )
            if result is None:
                raise Refused(404, "bad_event", UNKNOWN_TURN)
        except Refused as refused:
            return self.refuse(refused)
        turn = await self.runtime.on_engine(store.turn, conversation_id, turn_id)
        ended_before = result == "too_late" and (turn is None or turn.state in FINAL_TURN_STATES)
        if not ended_before:
            # A command is recorded (this one, or another before it): the server running the
            # turn (this one or another sharing the store) stops it, and its end can only be
            # `interrupted`. The answer tells the end the store has, not the command's hope.
            turn = await self._ended(conversation_id, turn_id)
        latest = await self.runtime.on_engine(store.last_position, conversation_id)
        state = turn.state if turn is not None else "unknown"
        status, outcome = (200, "too_late") if ended_before else cancel_outcome(result, state)
        body = {"result": outcome, "turn_id": turn_id, "state": state, "sequence": latest}
        self.answer(status, body)

    async def _ended(self, conversation_id: str, turn_id: str) -> TurnRecord | None:
        """The turn once it is in a final state in the store (woken by journal writes, else
        looked at every :data:`ENDED_POLL_SECONDS`), or as it is after
        :data:`CANCEL_WAIT_SECONDS`."""
        store = self.runtime.store
        loop = asyncio.get_running_loop()
        deadline = loop.time() + CANCEL_WAIT_SECONDS
        woken = self.runtime.watch(conversation_id)
        try:
            while True:
                woken.clear()
                turn: TurnRecord | None = await self.runtime.on_engine(
                    store.turn, conversation_id, turn_id
                )
                left = deadline - loop.time()
                if turn is None or turn.state in FINAL_TURN_STATES or left <= 0:
                    return turn
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), min(left, ENDED_POLL_SECONDS))
        finally:
            self.runtime.unwatch(conversation_id, woken)


def cancel_outcome(recorded: str, state: str) -> tuple[int, str]:
    """The cancel route's status and ``result`` for a turn that was open when a command was
    recorded (``recorded``: the store's word on this command — ``cancelled``, ``duplicate``,
    or ``too_late`` for another command recorded first), from its ``state`` after the wait."""
    if state not in FINAL_TURN_STATES and state != "unknown":
        return 202, "pending"  # the command stands: the turn's `interrupted` follows
    if recorded == "duplicate":
        return 200, "duplicate"
    return 200, "cancelled" if state == "interrupted" else "too_late"


class TurnEvidenceHandler(DurableHandler):
    """``GET {url}conversations/{id}/turns/{turn_id}/evidence``: a turn's queries as evidence."""

    @web.authenticated
    @allow("read")
    async def get(self, conversation_id: str, turn_id: str) -> None:
        self.check_permission()
        try:
            await self.own_conversation(conversation_id)
            evidence = await self.runtime.engine.run(self._evidence(conversation_id, turn_id))
        except Refused as refused:
            return self.refuse(refused)
        body = {"conversation_id": conversation_id, "turn_id": turn_id, "evidence": evidence}
        self.finish(json.dumps(body, default=str))

    async def _evidence(self, conversation_id: str, turn_id: str) -> list[dict[str, Any]]:
        """On the engine: the turn's journaled events, its queries compiled again."""
        runtime = self.runtime
        store = runtime.store
        events = store.events(conversation_id, turn_id=turn_id)
        # (a turn stored before turns had rows of their own is known by its events alone)
        if not events and store.turn(conversation_id, turn_id) is None:
            raise Refused(404, "bad_event", UNKNOWN_TURN)
        queries = [e for e in events if e.get("type") == "tool_result" and e.get("frame")]
        if not queries:
            return []  # no query: nothing to compile, the project is not needed
        # queries that journaled their request are shown as they ran, even with the project away
        journaled = all(JournaledQuery.of_event(event) is not None for event in queries)
        try:
            project = await runtime.project()
        except STORE_UNAVAILABLE:
            raise
        except Exception:  # the project cannot be connected
            if not journaled:
                log.exception("gmchat could not connect the project for turn %s", turn_id[:200])
                raise Refused(503, "chat_error", UNAVAILABLE) from None
            project = None
        try:
            return await stored_evidence(project, runtime.settings, events)
        except STORE_UNAVAILABLE:
            raise
        except Exception:  # an id look-up of an older journal's query failed
            log.exception("gmchat could not compile the evidence of turn %s", turn_id[:200])
            raise Refused(503, "chat_error", UNAVAILABLE) from None

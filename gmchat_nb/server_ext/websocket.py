"""``{url}ws``: the spec's WebSocket protocol.

Client → server: ``{"type": "message", "text", "conversation_id"?}`` and
``{"type": "confirm", "confirmation_id", "confirmed"}``. Server → client: one JSON event per
message. One turn and one pending confirmation per socket: a message during a turn gets
``turn_in_progress`` (``confirmation_pending`` while a mutation waits), an unknown type or a
malformed confirm gets ``bad_event``, a stale confirmation ``confirmation_unavailable``. The turn
waits in place for the confirm (transport ``"stream"``) until ``confirm_timeout_seconds``.

Frames obey the HTTP routes' ``max_body_bytes``: a larger message gets ``bad_message`` and the
socket stays open; one over four times the limit is not even read — the socket closes with 1009
(message too big), so no client can make the server buffer megabytes.

Auth follows ``KernelWebsocketHandler``: Jupyter resolves the user, ``@ws_authenticated`` refuses
anonymous upgrades, the authorizer is asked about ``gmchat``, Origin is checked for cookie
sockets, and a ``permission`` denial closes the socket with 4403.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
from typing import Any
from urllib.parse import urlparse

from jupyter_core.utils import ensure_async
from jupyter_server.auth.decorator import ws_authenticated
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from tornado import web
from tornado.websocket import WebSocketClosedError, WebSocketHandler

from ..core.events import ChatEvent, error_event
from ..core.session import ChatSession
from .handlers import (
    AUTH_RESOURCE,
    NO_PENDING_CONFIRMATION,
    STORE_UNAVAILABLE,
    UNAVAILABLE,
    UNKNOWN_CONVERSATION,
    implemented,
    person_session,
    unavailable_message,
)
from .requests import (
    Refused,
    decode_object,
    journal_cursor,
    optional_string,
    required_string,
)
from .sessions import ChatRuntime
from .turn_run import ConversationBusy, Delivery, TurnRun

__all__ = ["ChatSocket"]

log = logging.getLogger(__name__)

CLOSE_FORBIDDEN = 4403
FOLLOW_SECONDS = 1.0  # a follower's longest wait without a wake-up (another process's SQLite)
CLOSE_STARTUP_FAILED = 1011
OVERSIZE_FACTOR = 4
FINAL = ("done", "error", "confirm_mutation")  # a turn's last event (or where it suspends)


class ChatSocket(WebSocketMixin, WebSocketHandler, JupyterHandler):
    """One chat socket: one session, at most one running turn."""

    auth_resource = AUTH_RESOURCE
    runtime: ChatRuntime

    def initialize(self, runtime: ChatRuntime, max_body_bytes: int = 65536, **_: Any) -> None:
        """Tornado passes the handler kwargs the app registered."""
        self.runtime = runtime
        self.max_body_bytes = max_body_bytes
        self._session: ChatSession | None = None
        self._run: TurnRun | None = None
        self._forwarder: asyncio.Task[None] | None = None
        self._pending: str | None = None  # the confirmation the running turn waits for
        self._follower: asyncio.Task[None] | None = None  # following a turn after a replay
        self._ended: set[str] = set()  # turns whose terminal event was sent

    @property
    def max_message_size(self) -> int:
        """Frames past this close the socket unread (1009); see the module docstring."""
        return OVERSIZE_FACTOR * self.max_body_bytes

    def set_default_headers(self) -> None:
        """JupyterHandler's CSP headers mean nothing on a WebSocket upgrade."""

    def check_origin(self, origin: str | None = None) -> bool:
        """``allowed_origins`` when set, else Jupyter's rules; token sockets skip the check.
        Tornado asks with the upgrade's ``Origin``; Jupyter's XSRF check of any other method asks
        without one, and then the request's own header counts -- none is a script's, as
        everywhere in Jupyter (a default of ``""`` read as a foreign origin made an
        unauthenticated POST here a 404 instead of the 403 it is)."""
        if origin is None:
            origin = self.request.headers.get("Origin")
        allowed = self.runtime.settings.allowed_origins
        if not allowed:
            return bool(super().check_origin(origin))
        if self.skip_check_origin() or origin is None:
            return True
        host = self.request.headers.get("Host")
        if origin and host and urlparse(origin).netloc == host:
            return True
        return origin.rstrip("/").lower() in {o.rstrip("/").lower() for o in allowed}

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """Jupyter's page; a 405 names the one method this route takes (RFC 9110)."""
        if status_code == 405:
            self.set_header("Allow", ", ".join(implemented(type(self))))
        super().write_error(status_code, **kwargs)

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Authorize the upgrade (403 before it when the authorizer says no)."""
        if not await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", AUTH_RESOURCE)
        ):
            raise web.HTTPError(403)
        await super().get(*args, **kwargs)

    async def open(self, *args: Any, **kwargs: Any) -> None:
        """Start pings; the permission hook decides after the upgrade (close 4403)."""
        super().open(*args, **kwargs)
        self.set_nodelay(True)  # small frames: Nagle + delayed ACK would add ~40 ms per event
        if not self.runtime.allowed(self.current_user, self.request):
            self.close(CLOSE_FORBIDDEN, "Forbidden.")
            return
        if self.get_query_argument("after", None) is not None:
            try:
                await self._replay()
            except STORE_UNAVAILABLE as error:
                log.debug("gmchat could not replay the journal: %s", error)
                self.send_error_event("chat_error", unavailable_message(error))

    async def _replay(self) -> None:
        """``?conversation_id=C&after=N``: first the conversation's journaled events after N,
        each with its position as ``sequence`` and its ``turn_id`` (as the events stream sends
        them), so a client that reconnects catches up before it asks again; a turn still running
        then (here or on another server sharing the store) is followed live to its end."""
        raw = self.get_query_argument("after", "")
        conversation_id = self.get_query_argument("conversation_id", None)
        store = self.runtime.store
        record = (
            await self.runtime.on_engine(store.conversation, conversation_id)
            if conversation_id
            else None
        )
        if record is None or record.actor_id != self._actor.id:
            return self.send_error_event(
                "bad_event", "No conversation with that id belongs to you."
            )
        cursor = journal_cursor(raw)
        if cursor is None:
            return self.send_error_event("bad_event", "'after' must be a whole number >= 0.")
        cursor = await self._send_journal(record.id, cursor)
        running = await self.runtime.on_engine(self._open_turns, record.id)
        if running:
            self._follower = asyncio.create_task(self._follow(record.id, cursor, running))

    async def _send_journal(
        self, conversation_id: str, cursor: int, *, patient: bool = False
    ) -> int:
        """Send the journal after ``cursor`` as it is now; the new cursor. ``patient``: a store
        that is away ends the sending with the cursor reached (a follower tries again)."""
        store = self.runtime.store
        while True:
            try:
                entries = await self.runtime.on_engine(store.journal_after, conversation_id, cursor)
            except STORE_UNAVAILABLE:
                if not patient:
                    raise
                return cursor
            if not entries:
                return cursor
            for entry in entries:
                if entry.payload.get("type") in ("done", "error"):
                    self._ended.add(entry.turn_id)
                await self.write_message(json.dumps(entry.frame()))
            cursor = entries[-1].position

    def _open_turns(self, conversation_id: str) -> set[str]:
        """On the engine: the conversation's turns that are admitted or running."""
        store = self.runtime.store
        return {
            turn.id
            for state in ("accepted", "running")
            for turn in store.turns(state=state, conversation_id=conversation_id)
        }

    async def _follow(self, conversation_id: str, cursor: int, running: set[str]) -> None:
        """Send the journal as it is committed until every turn of ``running`` has ended (a
        commit here or, on PostgreSQL, another server's wakes it; else every second), and what
        the journal cannot hold as it comes (a ``notice`` that a turn run here cannot write:
        :mod:`.live`). A store that is away is waited for, as the turn waits for it."""
        try:
            with self.runtime.live.subscribe(conversation_id) as live:
                while not running <= self._ended:
                    woken = self.runtime.watch(conversation_id)
                    try:
                        for payload in live.drain():
                            await self.write_message(json.dumps(payload))
                        cursor = await self._send_journal(conversation_id, cursor, patient=True)
                        if running <= self._ended:
                            return
                        with contextlib.suppress(TimeoutError):
                            await asyncio.wait_for(woken.wait(), FOLLOW_SECONDS)
                    finally:
                        self.runtime.unwatch(conversation_id, woken)
        except WebSocketClosedError:
            return

    # -- incoming ----------------------------------------------------------------------------

    async def on_message(self, message: str | bytes) -> None:
        """Dispatch one client event; a turn runs on the engine so this returns at once."""
        try:
            payload = decode_object(
                message,
                max_bytes=self.max_body_bytes,
                code="bad_event",
                size_code="bad_message",
                what="Message",
            )
            kind = payload.get("type")
            if kind == "message":
                await self._message(payload)
            elif kind == "confirm":
                await self._confirm(payload)
            else:
                raise Refused(400, "bad_event", f"Unknown event type {str(kind)[:40]!r}.")
        except Refused as refused:
            self.send_error_event(refused.code, refused.message)
        except STORE_UNAVAILABLE as error:  # the socket stays open: the client may ask again
            log.debug("gmchat's store is unavailable: %s", error)  # the store says why, once
            self.send_error_event("chat_error", unavailable_message(error))

    async def _message(self, payload: dict[str, Any]) -> None:
        if self._turn_running():
            return self.send_error_event(
                "confirmation_pending" if self._pending else "turn_in_progress"
            )
        text = required_string(payload, "text", "bad_message", what="Message text")
        session = await self._session_for(payload)
        self._start(session, session.run_turn(text, transport="stream"))

    async def _confirm(self, payload: dict[str, Any]) -> None:
        confirmation_id = required_string(
            payload, "confirmation_id", "bad_event", what="The confirmation id"
        )
        confirmed = payload.get("confirmed")
        if not isinstance(confirmed, bool):
            raise Refused(400, "bad_event", "'confirmed' must be true or false.")
        if self._turn_running():
            # The running turn waits for this id: hand it the decision, it streams the rest.
            if self._pending != confirmation_id or self._session is None:
                raise Refused(400, "bad_event", "The running turn waits for another confirmation.")
            decide = functools.partial(self._session.confirm, via="socket")
            if not await self.runtime.on_engine(decide, confirmation_id, confirmed):
                return self.send_error_event("confirmation_unavailable")
            self._pending = None
            return None
        # No turn waits here: a confirmation persisted by a stream (this socket's or an SSE's).
        if payload.get("conversation_id") is None and self._session is None:
            found = await self.runtime.on_engine(
                self.runtime.find_confirmation, self._actor, confirmation_id
            )
            payload = {**payload, "conversation_id": found}
        session = await self._session_for(payload)
        assert session.conversation_id is not None
        record = await self.runtime.on_engine(
            self.runtime.store.confirmation, session.conversation_id, confirmation_id
        )
        if record is None:  # never existed for this user
            raise Refused(404, "bad_event", NO_PENDING_CONFIRMATION)
        # A durable turn (admitted with POST turns/) outlives this socket: closing it does not
        # stop the resumed turn, an explicit cancel does.
        durable = await self.runtime.on_engine(
            self.runtime.durable_turn_of, session.conversation_id, confirmation_id
        )
        self._start(
            session,
            session.resume(
                confirmation_id,
                confirmed,
                transport="stream",
                unavailable_code="confirmation_unavailable",
                # an agent's change is a person's to decide: a socket opened with a token is not
                by_person=person_session(self),
                via="socket",
            ),
            durable=durable,
        )

    # -- turns -------------------------------------------------------------------------------

    @property
    def _actor(self) -> Any:
        return self.runtime.actor(self.current_user)

    async def _session_for(self, payload: dict[str, Any]) -> ChatSession:
        """The socket's session, switched when a message names another of the user's
        conversations; :class:`Refused` when the id is foreign, unknown or not a string."""
        conversation_id = optional_string(
            payload, "conversation_id", "bad_event", what="The conversation id"
        )
        if self._session is not None and conversation_id in (None, self._session.conversation_id):
            return self._session
        if conversation_id is None:
            try:
                conversation_id = self.get_query_argument("conversation_id", None)
            except web.HTTPError:  # not decodable as UTF-8
                raise Refused(400, "bad_event", UNKNOWN_CONVERSATION) from None
        try:
            self._session = await self.runtime.session(self._actor, conversation_id)
        except KeyError:
            raise Refused(404, "bad_event", UNKNOWN_CONVERSATION) from None
        except STORE_UNAVAILABLE:
            raise  # chat_error with what is wrong with the store; the socket stays open
        except Exception:  # the project cannot be connected or configured: the contract's 1011
            log.exception("gmchat could not open a chat session")
            self.close(CLOSE_STARTUP_FAILED, "The chat is not available right now.")
            raise Refused(503, "chat_error", UNAVAILABLE) from None
        return self._session

    def _turn_running(self) -> bool:
        # Over at its final event, even while its last frames are still being written.
        return self._run is not None and not self._run.done()

    def _start(self, session: ChatSession, events: Any, *, durable: str | None = None) -> None:
        """Run a turn for this socket; ``durable``: the id of the durable turn it resumes."""
        assert session.conversation_id is not None
        try:
            run = self.runtime.start(
                session.conversation_id, events, durable=durable is not None, turn_id=durable
            )
        except ConversationBusy:  # the same conversation is streaming over another connection
            return self.send_error_event("turn_in_progress")
        self._run = run
        self._forwarder = asyncio.create_task(self._forward(run, session.conversation_id))

    async def _forward(self, run: TurnRun, conversation_id: str) -> None:
        """Write the turn's events as they come; a closed socket cancels the turn (a durable
        one runs on)."""
        last: str | None = None
        try:
            while (delivery := await run.next()) is not None:
                self._track(delivery.event)
                last = delivery.event.type
                await self.write_message(delivery.json)
            if run.durable and run.turn_id is not None and last not in (None, *FINAL):
                # an explicit cancel stopped the resumed turn: its end is in the journal
                end = await self.runtime.on_engine(
                    self.runtime.journaled_end, conversation_id, run.turn_id
                )
                if end is not None:
                    await self.write_message(Delivery.of(end).json)
        except WebSocketClosedError:
            run.abandon()
        finally:
            if self._run is run:
                self._pending = None

    def _track(self, event: ChatEvent) -> None:
        if event.type == "confirm_mutation":
            self._pending = event.id  # type: ignore[union-attr]
        elif event.type == "tool_result" and event.id == self._pending:  # type: ignore[union-attr]
            self._pending = None  # decided, rejected or timed out

    def send_error_event(self, code: str, message: str | None = None) -> None:
        """One error event (a refusal: nothing is stored for it)."""
        with contextlib.suppress(WebSocketClosedError):
            self.write_message(json.dumps(error_event(code, message=message).to_dict()))

    def on_close(self) -> None:
        """A client that went away cancels its turn (and the provider call in it); a turn it
        followed, or a durable turn it resumed, runs on."""
        if self._run is not None:
            self._run.abandon()
        if self._forwarder is not None:
            self._forwarder.cancel()
        if self._follower is not None:
            self._follower.cancel()

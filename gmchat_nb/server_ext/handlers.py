"""The JSON routes: a turn, a confirmation, and the user's conversations.

Every handler is an :class:`APIHandler`, so Jupyter resolves the user, rejects anonymous
requests, checks XSRF on cookie-authenticated POSTs and the Origin of cookie-authenticated
requests before our code runs. ``@authorized`` then asks the deployment's authorizer about the
``gmchat`` resource, and the ``permission`` setting gets the last word.

Bodies are decoded by :mod:`.requests` (a refusal has the contract's code, the HTTP status and a
message that says what was wrong); everything else happens on the runtime's engine thread.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable
from typing import Any, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from tornado import web

from ..core.events import Error, answer_text, error_event
from ..core.session import Actor, ChatSession
from ..core.session.confirmations import PERSON_DECIDES
from ..core.turns import StoreUnavailableError
from .requests import Refused, decode_object, optional_string, required_string
from .sessions import ChatRuntime, conversation_json
from .turn_run import ConversationBusy, Delivery, TurnRun

__all__ = [
    "AUTH_RESOURCE",
    "ChatHandler",
    "ConfirmHandler",
    "ConversationsHandler",
    "GMChatHandler",
    "allow",
    "envelope",
    "implemented",
    "person_session",
    "unavailable_message",
]

AUTH_RESOURCE = "gmchat"
UNAVAILABLE = "The chat is not available right now; the server's log says why."
UNKNOWN_CONVERSATION = "No conversation with that id belongs to you."
BUSY = Refused(409, "turn_in_progress", "A turn of this conversation is already running.")
NO_PENDING_CONFIRMATION = (
    "None of your conversations has a pending confirmation with that id: it is unknown, was "
    "already decided, or expired."
)

log = logging.getLogger(__name__)

_Method = TypeVar("_Method", bound=Callable[..., Any])


def allow(action: str) -> Callable[[_Method], _Method]:
    """Jupyter's ``@authorized`` (untyped upstream) with its type kept for mypy."""
    return cast(Callable[[_Method], _Method], authorized(action=action))


def envelope(deliveries: list[Delivery], conversation_id: str | None) -> str:
    """``{"events", "answer", "conversation_id"}`` from events already encoded on the engine."""
    answer = answer_text(d.event for d in deliveries)
    return (
        '{"events": ['
        + ", ".join(d.json for d in deliveries)
        + '], "answer": '
        + json.dumps(answer)
        + ', "conversation_id": '
        + json.dumps(conversation_id)
        + "}"
    )


def ended(deliveries: list[Delivery]) -> bool:
    """Whether a turn's deliveries end it (or suspend it at a confirmation)."""
    return bool(deliveries) and deliveries[-1].event.type in ("done", "error", "confirm_mutation")


STORE_UNAVAILABLE = (StoreUnavailableError, sqlite3.OperationalError)
"""What a store raises when it cannot be used right now (its database server away, a SQLite
file locked past the timeout or full, a file it cannot open): the documented ``chat_error``,
never an unhandled error."""


def implemented(handler: type[web.RequestHandler]) -> list[str]:
    """The HTTP methods a handler class answers itself (Tornado's default for the others is
    405); OPTIONS, Jupyter's CORS preflight on every route, is no method of the resource."""
    methods = ("GET", "POST", "PUT", "PATCH", "DELETE")
    return [
        m
        for m in methods
        if getattr(handler, m.lower()) is not getattr(web.RequestHandler, m.lower())
    ]


def person_session(handler: JupyterHandler) -> bool:
    """Whether a person's browser session sent this request (or opened this socket): Jupyter's
    login cookie (whose POSTs Jupyter has checked for the XSRF token, whose sockets for their
    Origin), not a token in an ``Authorization`` header or a ``?token=`` argument. A token is
    what an agent or a script holds; only a person's session decides an agent's change or
    manages agent tokens."""
    if handler.current_user is None or handler.token_authenticated:
        return False
    request = handler.request
    return "Authorization" not in request.headers and not handler.get_argument("token", "")


def unavailable_message(error: BaseException) -> str:
    """What a client is told when the store cannot be used: the store's own words when it says
    which store and what is wrong with it (never a password), else the generic message."""
    return str(error) if isinstance(error, StoreUnavailableError) and str(error) else UNAVAILABLE


class GMChatHandler(APIHandler):
    """Shared plumbing: the runtime, the actor, body parsing, the permission hook."""

    auth_resource = AUTH_RESOURCE
    allowed_methods: tuple[str, ...] = ()  # what a 405's Allow names (default: implemented)
    runtime: ChatRuntime
    max_body_bytes: int
    keepalive_seconds: float  # the streaming routes' silence before a keep-alive comment

    def initialize(
        self, runtime: ChatRuntime, max_body_bytes: int = 65536, keepalive_seconds: float = 15.0
    ) -> None:
        """Tornado passes the handler kwargs the app registered."""
        self.runtime = runtime
        self.max_body_bytes = max_body_bytes
        self.keepalive_seconds = keepalive_seconds
        self._run: TurnRun | None = None

    @property
    def actor(self) -> Actor:
        """The Jupyter user as chat actor."""
        return self.runtime.actor(self.current_user)

    @property
    def person_session(self) -> bool:
        """:func:`person_session` of this request."""
        return person_session(self)

    def check_permission(self) -> None:
        """The ``permission`` setting: ``(user, request) -> bool``; False is 403."""
        if not self.runtime.allowed(self.current_user, self.request):
            raise web.HTTPError(403, "gmchat permission denied")

    def json_body(self, code: str) -> dict[str, Any]:
        """The body as a JSON object, or :class:`Refused` (413 oversized, 400 anything else)."""
        return decode_object(self.request.body or b"", max_bytes=self.max_body_bytes, code=code)

    def refuse(self, refused: Refused) -> None:
        """Answer with the envelope's shape and one error event."""
        self.set_status(refused.status)
        event = error_event(refused.code, message=refused.message)
        self.finish(json.dumps({"events": [event.to_dict()], "answer": ""}))

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A store that cannot be used right now (its database server restarting, a SQLite file
        locked past the timeout or full) is the documented 503 ``chat_error`` in this route's
        envelope, not an unhandled 500; Tornado has logged the reason."""
        error = kwargs["exc_info"][1] if "exc_info" in kwargs else None
        if isinstance(error, STORE_UNAVAILABLE):
            self.refuse(Refused(503, "chat_error", unavailable_message(error)))
            return
        if status_code == 405:  # RFC 9110: a 405 names the methods the route does take
            self.set_header("Allow", ", ".join(self.allowed_methods or implemented(type(self))))
        super().write_error(status_code, **kwargs)

    def log_exception(self, typ: Any, value: Any, tb: Any) -> None:
        """A store that cannot be used is logged by the store (once per reason), not as a
        traceback per request."""
        if isinstance(value, StoreUnavailableError):
            log.debug("gmchat request refused: %s", value)
            return
        super().log_exception(typ, value, tb)

    async def session_for(self, conversation_id: str | None) -> ChatSession:
        """A session for the request's conversation; a foreign or unknown id is a 404, a project
        that cannot be connected or configured a 503 (the reason goes to the server log)."""
        try:
            return await self.runtime.session(self.actor, conversation_id)
        except KeyError:
            raise Refused(404, "bad_event", UNKNOWN_CONVERSATION) from None
        except STORE_UNAVAILABLE as error:  # the store's own words: which store, what is wrong
            raise Refused(503, "chat_error", unavailable_message(error)) from None
        except Exception:
            log.exception("gmchat could not open a chat session")
            raise Refused(503, "chat_error", UNAVAILABLE) from None

    async def drain(self, run: TurnRun) -> list[Delivery]:
        """Every event of a turn (a disconnect meanwhile cancels it, unless it is durable)."""
        self._run = run
        deliveries: list[Delivery] = []
        while (delivery := await run.next()) is not None:
            deliveries.append(delivery)
        return deliveries

    async def collect(self, session: ChatSession, run: TurnRun) -> None:
        """Drain a turn into the ``{events, answer, conversation_id}`` envelope."""
        self.finish(envelope(await self.drain(run), session.conversation_id))

    async def begin_turn(self, transport: Any) -> tuple[ChatSession, TurnRun] | None:
        """Check a ``{"text", "conversation_id"?}`` request and start its turn; None when it was
        refused (the refusal is already answered)."""
        try:
            payload = self.json_body("bad_message")
            text = required_string(payload, "text", "bad_message", what="Message text")
            conversation_id = optional_string(
                payload, "conversation_id", "bad_event", what="The conversation id"
            )
            session = await self.session_for(conversation_id)
            events = session.run_turn(text, transport=transport)
            streaming = transport != "http"  # plain HTTP answers once, at the end
            return session, self.start(
                session, events, suspends=transport == "sse", streaming=streaming
            )
        except Refused as refused:
            self.refuse(refused)
        except ConversationBusy:
            self.refuse(BUSY)
        return None

    def start(
        self, session: ChatSession, events: Any, *, suspends: bool = False, streaming: bool = True
    ) -> TurnRun:
        """Start the turn on the engine; ConversationBusy when the conversation already runs one."""
        assert session.conversation_id is not None
        return self.runtime.start(
            session.conversation_id, events, suspends=suspends, streaming=streaming
        )

    def on_connection_close(self) -> None:
        """A client that went away cancels its turn (and the provider call in it); a durable
        turn it was reading (one a confirmation resumed) runs on (:meth:`TurnRun.abandon`)."""
        if self._run is not None:
            self._run.abandon()
        super().on_connection_close()


class ChatHandler(GMChatHandler):
    """``POST {url}``: one turn over plain HTTP (a confirm-listed mutation cannot wait here)."""

    @web.authenticated
    @allow("execute")
    async def post(self) -> None:
        """``{"text", "conversation_id"?}`` → ``{"events", "answer", "conversation_id"}``."""
        self.check_permission()
        started = await self.begin_turn("http")
        if started is not None:
            await self.collect(*started)


class ConfirmHandler(GMChatHandler):
    """``POST {url}confirm/``: resolve a confirmation an SSE stream stopped at, finish the turn.

    The answer comes when the resumed turn ends. A durable turn (admitted with ``POST turns/``)
    is not tied to this request: a client that goes away meanwhile (a page reloaded right after
    Confirm) does not stop it, and an explicit cancel of it does; any other turn is the
    request's, as its stream was."""

    @web.authenticated
    @allow("execute")
    async def post(self) -> None:
        """``{"confirmation_id", "confirmed", "conversation_id"?}`` → the POST envelope."""
        self.check_permission()
        try:
            session, run = await self._start_resume()
        except Refused as refused:
            return self.refuse(refused)
        except ConversationBusy:
            return self.refuse(BUSY)
        deliveries = await self.drain(run)
        if run.durable and run.turn_id is not None and deliveries and not ended(deliveries):
            # an explicit cancel stopped the turn: its end is journaled, not delivered
            end = await self.runtime.on_engine(
                self.runtime.journaled_end, session.conversation_id, run.turn_id
            )
            if end is not None:
                deliveries.append(Delivery.of(end))
        if not deliveries:  # resume yields nothing only when an in-process waiter took it
            return self.refuse(Refused(409, "bad_event", NO_PENDING_CONFIRMATION))
        only = deliveries[0].event
        if len(deliveries) == 1 and isinstance(only, Error) and only.code == "bad_event":
            return self.refuse(Refused(409, "bad_event", only.message))  # claimed, expired, unknown
        self.finish(envelope(deliveries, session.conversation_id))

    async def _start_resume(self) -> tuple[ChatSession, TurnRun]:
        payload = self.json_body("bad_event")
        confirmation_id = required_string(
            payload, "confirmation_id", "bad_event", what="The confirmation id"
        )
        confirmed = payload.get("confirmed")
        if not isinstance(confirmed, bool):
            raise Refused(400, "bad_event", "'confirmed' must be true or false.")
        conversation_id = optional_string(
            payload, "conversation_id", "bad_event", what="The conversation id"
        )
        if conversation_id is None:
            # Only the actor's own conversations are searched: another user's pending
            # confirmation is invisible here, and the store's claim checks the actor again.
            conversation_id = await self.runtime.on_engine(
                self.runtime.find_confirmation, self.actor, confirmation_id
            )
            if conversation_id is None:
                raise Refused(409, "bad_event", NO_PENDING_CONFIRMATION)
        expected = payload.get("expected_sequence")
        if expected is not None:
            await self._check_expected(conversation_id, expected)
        session = await self.session_for(conversation_id)
        by_person = self.person_session
        if not by_person and await self.runtime.on_engine(
            session.person_must_decide, confirmation_id
        ):
            raise Refused(403, "bad_event", PERSON_DECIDES)  # an agent's change: a person's call
        durable = await self.runtime.on_engine(
            self.runtime.durable_turn_of, conversation_id, confirmation_id
        )
        events = session.resume(
            confirmation_id,
            confirmed,
            transport="sse",
            unavailable_code="bad_event",
            by_person=by_person,
            via="browser" if by_person else "token",
        )
        run = self.runtime.start(
            conversation_id,
            events,
            suspends=True,
            streaming=False,
            durable=durable is not None,
            turn_id=durable,
        )
        return session, run

    async def _check_expected(self, conversation_id: str, expected: Any) -> None:
        """``expected_sequence``: the journal position of the ``confirm_mutation`` event the
        answer is for (durable clients read it from the events stream). A decision made on a
        stale view of the conversation fails before anything runs."""
        if isinstance(expected, float) and expected.is_integer():
            expected = int(expected)  # 1.0 is the integer 1 to JSON (and JSON Schema 2020-12)
        if isinstance(expected, bool) or not isinstance(expected, int) or expected < 0:
            raise Refused(400, "bad_event", "'expected_sequence' must be a whole number >= 0.")
        record = await self.runtime.on_engine(self.runtime.store.conversation, conversation_id)
        if record is None or record.actor_id != self.actor.id:
            raise Refused(404, "bad_event", UNKNOWN_CONVERSATION)
        latest = await self.runtime.on_engine(self.runtime.store.last_position, conversation_id)
        if expected != latest:
            raise Refused(
                409,
                "bad_event",
                f"'expected_sequence' is {expected}, but the conversation is at {latest}: the "
                "confirmation was answered on a stale view; read the events and decide again.",
            )


class ConversationsHandler(GMChatHandler):
    """``GET/POST {url}conversations/``: the user's conversations; create one."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        """``{"conversations": [{id, title, created_at, updated_at, messages}, ...], "project",
        "provider"}``: the project and provider a client's header shows (as the widget's)."""
        self.check_permission()
        records = await self.runtime.on_engine(self.runtime.store.conversations, self.actor.id)
        header = await self.runtime.on_engine(self.runtime.header)
        body = {"conversations": [conversation_json(r) for r in records], **header}
        self.finish(json.dumps(body))

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """``{"title"?}`` → 201 ``{"conversation": {...}}``."""
        self.check_permission()
        try:
            payload = self.json_body("bad_event") if self.request.body else {}
            title = optional_string(payload, "title", "bad_event", what="The title") or ""
        except Refused as refused:
            return self.refuse(refused)
        record = await self.runtime.on_engine(
            self.runtime.store.create_conversation, self.actor.id, title.strip()[:200]
        )
        self.set_status(201)
        self.finish(json.dumps({"conversation": conversation_json(record)}))

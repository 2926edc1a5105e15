"""The JSON routes: a turn, a confirmation, and the user's conversations.

Every handler is an :class:`APIHandler`, so Jupyter resolves the user, rejects anonymous
requests, checks XSRF on cookie-authenticated POSTs and the Origin of cookie-authenticated
requests before our code runs. ``@authorized`` then asks the deployment's authorizer about the
``gmchat`` resource, and the ``permission`` setting gets the last word.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar, cast

from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from tornado import web

from ..core.events import ChatEvent, error_event
from ..core.session import Actor, ChatSession
from .sessions import ChatRuntime, TurnBusy, TurnRun, conversation_json

__all__ = [
    "AUTH_RESOURCE",
    "BadRequest",
    "ChatHandler",
    "ConfirmHandler",
    "ConversationsHandler",
    "GMChatHandler",
    "allow",
]

AUTH_RESOURCE = "gmchat"

_Method = TypeVar("_Method", bound=Callable[..., Any])


def allow(action: str) -> Callable[[_Method], _Method]:
    """Jupyter's ``@authorized`` (untyped upstream) with its type kept for mypy."""
    return cast(Callable[[_Method], _Method], authorized(action=action))


class BadRequest(Exception):
    """A request refused before any turn starts: an HTTP status and a public error code."""

    def __init__(self, status: int, code: str) -> None:
        super().__init__(code)
        self.status = status
        self.code = code


class GMChatHandler(APIHandler):
    """Shared plumbing: the runtime, the actor, body parsing, the permission hook."""

    auth_resource = AUTH_RESOURCE
    runtime: ChatRuntime
    max_body_bytes: int

    def initialize(self, runtime: ChatRuntime, max_body_bytes: int = 65536) -> None:
        """Tornado passes the handler kwargs the app registered."""
        self.runtime = runtime
        self.max_body_bytes = max_body_bytes
        self._run: TurnRun | None = None

    @property
    def actor(self) -> Actor:
        """The Jupyter user as chat actor."""
        return self.runtime.actor(self.current_user)

    def check_permission(self) -> None:
        """The ``permission`` setting: ``(user, request) -> bool``; False is 403."""
        if not self.runtime.allowed(self.current_user, self.request):
            raise web.HTTPError(403, "gmchat permission denied")

    def json_body(self, invalid_code: str) -> dict[str, Any]:
        """The body as a JSON object, or BadRequest (413 oversized, 400 anything else)."""
        body = self.request.body or b""
        if len(body) > self.max_body_bytes:
            raise BadRequest(413, invalid_code)
        try:
            payload = json.loads(body or b"null")
        except (ValueError, UnicodeDecodeError):
            raise BadRequest(400, invalid_code) from None
        if not isinstance(payload, dict):
            raise BadRequest(400, invalid_code)
        return payload

    def refuse(self, status: int, code: str) -> None:
        """Answer with the envelope's shape and one error event."""
        self.set_status(status)
        self.finish(json.dumps({"events": [error_event(code).to_dict()], "answer": ""}))

    async def session_for(self, conversation_id: Any) -> ChatSession:
        """A session for the request's conversation; a foreign or unknown id is a 404."""
        if conversation_id is not None and not isinstance(conversation_id, str):
            raise BadRequest(400, "bad_event")
        try:
            return await self.runtime.session(self.actor, conversation_id)
        except KeyError:
            raise BadRequest(404, "bad_event") from None

    async def collect(self, session: ChatSession, run: TurnRun) -> None:
        """Drain a turn into the ``{events, answer, conversation_id}`` envelope."""
        self._run = run
        events: list[dict[str, Any]] = []
        while (event := await run.next()) is not None:
            events.append(event.to_dict())
        answer = "".join(e["content"] for e in events if e["type"] == "text_chunk")
        self.finish(
            json.dumps(
                {"events": events, "answer": answer, "conversation_id": session.conversation_id},
                default=str,
            )
        )

    async def begin_turn(self, transport: Any) -> tuple[ChatSession, TurnRun] | None:
        """Check a ``{"text", "conversation_id"?}`` request and start its turn; None when it was
        refused (the refusal is already answered)."""
        try:
            payload = self.json_body("bad_message")
            text = payload.get("text")
            if not isinstance(text, str) or not text.strip():
                raise BadRequest(400, "bad_message")
            session = await self.session_for(payload.get("conversation_id"))
            return session, self.start(session, session.run_turn(text, transport=transport))
        except BadRequest as refused:
            self.refuse(refused.status, refused.code)
        except TurnBusy:
            self.refuse(409, "turn_in_progress")
        return None

    def start(self, session: ChatSession, events: Any) -> TurnRun:
        """Start the turn as a task; TurnBusy when the conversation already runs one."""
        assert session.conversation_id is not None
        return self.runtime.start(session.conversation_id, events)

    def on_connection_close(self) -> None:
        """A client that went away cancels its turn (and the provider call in it)."""
        if self._run is not None:
            self._run.cancel()
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
    """``POST {url}confirm/``: resolve a confirmation an SSE stream stopped at, finish the turn."""

    @web.authenticated
    @allow("execute")
    async def post(self) -> None:
        """``{"confirmation_id", "confirmed", "conversation_id"?}`` → the POST envelope."""
        self.check_permission()
        try:
            payload = self.json_body("bad_event")
            confirmation_id = payload.get("confirmation_id")
            confirmed = payload.get("confirmed")
            if not isinstance(confirmation_id, str) or not confirmation_id:
                raise BadRequest(400, "bad_event")
            if not isinstance(confirmed, bool):
                raise BadRequest(400, "bad_event")
            conversation_id = payload.get("conversation_id")
            if conversation_id is None:
                # Only the actor's own conversations are searched: another user's pending
                # confirmation is invisible here, and the store's claim checks the actor again.
                conversation_id = self.runtime.find_confirmation(self.actor, confirmation_id)
                if conversation_id is None:
                    raise BadRequest(409, "bad_event")
            session = await self.session_for(conversation_id)
            run = self.start(
                session,
                session.resume(
                    confirmation_id, confirmed, transport="sse", unavailable_code="bad_event"
                ),
            )
        except BadRequest as refused:
            return self.refuse(refused.status, refused.code)
        except TurnBusy:
            return self.refuse(409, "turn_in_progress")
        first = await run.next()
        if first is None:  # resume yields nothing only when an in-process waiter took it
            return self.refuse(409, "bad_event")
        events = [first]
        while (event := await run.next()) is not None:
            events.append(event)
        if len(events) == 1 and _is_error(events[0], "bad_event"):
            return self.refuse(409, "bad_event")  # already claimed, expired or unknown
        dicts = [e.to_dict() for e in events]
        answer = "".join(e["content"] for e in dicts if e["type"] == "text_chunk")
        self.finish(
            json.dumps(
                {"events": dicts, "answer": answer, "conversation_id": session.conversation_id},
                default=str,
            )
        )


class ConversationsHandler(GMChatHandler):
    """``GET/POST {url}conversations/``: the user's conversations; create one."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        """``{"conversations": [{id, title, created_at, updated_at, messages}, ...]}``."""
        self.check_permission()
        records = self.runtime.store.conversations(self.actor.id)
        self.finish(json.dumps({"conversations": [conversation_json(r) for r in records]}))

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """``{"title"?}`` → 201 ``{"conversation": {...}}``."""
        self.check_permission()
        try:
            payload = self.json_body("bad_event") if self.request.body else {}
        except BadRequest as refused:
            return self.refuse(refused.status, refused.code)
        title = payload.get("title", "")
        if not isinstance(title, str):
            return self.refuse(400, "bad_event")
        record = self.runtime.store.create_conversation(self.actor.id, title.strip()[:200])
        self.set_status(201)
        self.finish(json.dumps({"conversation": conversation_json(record)}))


def _is_error(event: ChatEvent, code: str) -> bool:
    return event.type == "error" and getattr(event, "code", None) == code

"""The knowledge routes: a project's verified queries, definitions and notes over HTTP.

Under ``{url}knowledge/`` (``docs/api/openapi.yaml`` has every body and answer), this module's:
``GET`` lists the entries the caller may see (``?kind=&status=&search=``), ``POST`` adds one,
``DELETE ?mine=true`` forgets every entry the caller wrote and may write; ``{id}``: ``GET``,
``PATCH``, ``DELETE``; ``{id}/accept`` makes a suggestion active. :mod:`.knowledge_exchange`
has the rest: saving a turn, export, import, check, and recall switched per conversation.

Each request works on a :class:`~gmchat_nb.core.knowledge.KnowledgeBook` over the runtime's
store and project, owned by the person the Jupyter user is (``jupyter:alice`` is ``alice``, as
``local:alice`` is on the other surfaces), built and used on the runtime's engine thread like
every store call. Every read and write is scoped to that person in the store's SQL: another
user's personal entry answers 404 exactly as an id that never existed.

Who may write **shared** entries is the chat ``permission`` hook's call, asked on every knowledge
request that writes with ``action="knowledge_write_shared"`` (see
:meth:`~.sessions.ChatRuntime.allowed`); refused, the person still writes their personal entries,
and a shared write answers 403 ``forbidden``. Refusals are ``{"type": "error", "code",
"message"}`` (and ``existing`` for a duplicate) with the status :data:`STATUS` gives the code.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any, Final, TypeVar

from tornado import web

from ..core.knowledge import KnowledgeBook, KnowledgeError, entry_json, person_of, project_key
from ..core.knowledge.drift import check_on_connect
from ..core.project import Project
from .handlers import UNAVAILABLE, GMChatHandler, allow
from .knowledge_requests import (
    accept_request,
    create_draft,
    patch_changes,
    query_values,
    sentence,
    true_or_false,
)
from .requests import Refused, decode_object
from .sessions import ChatRuntime

__all__ = [
    "DEFAULT_IMPORT_BYTES",
    "ENTRY_ID",
    "STATUS",
    "WRITE_SHARED",
    "KnowledgeAcceptHandler",
    "KnowledgeEntryHandler",
    "KnowledgeHandler",
    "KnowledgeListHandler",
]

log = logging.getLogger(__name__)

T = TypeVar("T")

WRITE_SHARED: Final = "knowledge_write_shared"
"""The ``action`` the ``permission`` hook is asked about before a knowledge write."""

STATUS: Final = {
    "invalid": 400,
    "not_compiling": 400,
    "forbidden": 403,
    "not_found": 404,
    "duplicate": 409,
    "flagged": 409,
}
DEFAULT_IMPORT_BYTES: Final = 1024 * 1024
ENTRY_ID: Final = "(?!(?:from-turn|export|import|check)/?$)([^/]+)"
"""An entry id in a route: any path segment but the names of the other knowledge routes."""


class KnowledgeHandler(GMChatHandler):
    """What the knowledge routes share: the caller's book, the error body, JSON answers."""

    max_import_bytes: int

    def initialize(
        self,
        runtime: ChatRuntime,
        max_body_bytes: int = 65536,
        keepalive_seconds: float = 15.0,
        max_import_bytes: int = DEFAULT_IMPORT_BYTES,
    ) -> None:
        super().initialize(runtime, max_body_bytes, keepalive_seconds)
        self.max_import_bytes = max_import_bytes

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A path segment that is not UTF-8 (a percent-encoded lone surrogate) becomes U+FFFD
        rather than Tornado's bare 400: an id no entry has, so a 404 like any other."""
        return value.decode("utf-8", "replace")

    def answer(self, status: int, body: dict[str, Any]) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))

    def refuse(self, refused: Refused) -> None:
        """The knowledge error body (also a store that cannot be used: 503 ``chat_error``)."""
        body = {"type": "error", "code": refused.code, "message": refused.message}
        self.answer(refused.status, body)

    def fail(self, error: KnowledgeError) -> None:
        body: dict[str, Any] = {
            "type": "error",
            "code": error.code,
            "message": sentence(error.message),
        }
        if error.existing is not None:
            body["existing"] = error.existing
        self.answer(STATUS.get(error.code, 400), body)

    def body(self, *, optional: bool = False) -> dict[str, Any]:
        """The JSON object the request sent (``optional``: none at all is ``{}``)."""
        raw = self.request.body or b""
        if optional and not raw.strip():
            return {}
        return decode_object(raw, max_bytes=self.max_body_bytes, code="invalid")

    def parameters(self, *allowed: str) -> dict[str, str]:
        return query_values(self.request.query_arguments, allowed)

    async def in_book(self, work: Callable[[KnowledgeBook], T], *, writes: bool = False) -> T:
        """Run ``work`` with the caller's book on the engine. A request that writes asks the
        ``permission`` hook whether this person may write shared entries."""
        may_share = writes and self.runtime.allowed(
            self.current_user, self.request, action=WRITE_SHARED
        )
        owner = person_of(self.actor.id)
        try:
            project = await self.runtime.project()
        except Exception:
            log.exception("gmchat could not connect its project for a knowledge request")
            raise Refused(503, "chat_error", UNAVAILABLE) from None
        result: T = await self.runtime.on_engine(self._with_book, project, owner, may_share, work)
        return result

    def _with_book(
        self, project: Project, owner: str, may_share: bool, work: Callable[[KnowledgeBook], T]
    ) -> T:
        settings = self.runtime.settings
        book = KnowledgeBook(
            self.runtime.store,
            project,
            project_key=project.identity or project_key(settings.project, settings.project_id),
            owner=owner,
            may_share=may_share,
        )
        check_on_connect(book)  # as a session does: verified queries against today's schema
        return work(book)

    async def respond(
        self, work: Callable[[KnowledgeBook], dict[str, Any]], *, writes: bool, status: int = 200
    ) -> None:
        """Answer ``work``'s JSON, or its refusal."""
        try:
            body = await self.in_book(work, writes=writes)
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        self.answer(status, body)


class KnowledgeListHandler(KnowledgeHandler):
    """``{url}knowledge/``: list, add, forget all of mine."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        """``?kind=&status=&search=`` (kinds and statuses comma-separated) -> ``{"items"}``."""
        self.check_permission()
        try:
            values = self.parameters("kind", "status", "search")
        except KnowledgeError as error:
            return self.fail(error)
        kind = values["kind"].split(",") if values.get("kind") else None
        status = values["status"].split(",") if values.get("status") else None
        search = values.get("search") or None

        def work(book: KnowledgeBook) -> dict[str, Any]:
            records = book.list(kind=kind, status=status, search=search)
            return {"items": [entry_json(record) for record in records]}

        await self.respond(work, writes=False)

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """An entry: ``{"kind", ...}`` -> 201 the entry."""
        self.check_permission()
        try:
            draft, confirm = create_draft(self.body())
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        await self.respond(
            lambda book: entry_json(book.add(draft, confirm_flagged=confirm)),
            writes=True,
            status=201,
        )

    @web.authenticated
    @allow("write")
    async def delete(self) -> None:
        """``?mine=true`` -> ``{"removed": N}``: every entry this person wrote and may write."""
        self.check_permission()
        try:
            if not true_or_false(self.parameters("mine"), "mine"):
                raise KnowledgeError(
                    "invalid",
                    "deleting knowledge/ needs ?mine=true: it forgets every entry you wrote "
                    "(delete one entry at knowledge/{id})",
                )
        except KnowledgeError as error:
            return self.fail(error)
        await self.respond(lambda book: {"removed": book.remove_mine()}, writes=True)


class KnowledgeEntryHandler(KnowledgeHandler):
    """``{url}knowledge/{id}``: read, change, forget one entry."""

    @web.authenticated
    @allow("read")
    async def get(self, entry_id: str) -> None:
        self.check_permission()
        await self.respond(lambda book: entry_json(book.get(entry_id)), writes=False)

    @web.authenticated
    @allow("write")
    async def patch(self, entry_id: str) -> None:
        """Any of ``name``, ``question``, ``term``, ``text``, ``calls``, ``scope`` (as the
        entry's kind takes them) and ``confirm_flagged`` -> the entry."""
        self.check_permission()
        try:
            payload = self.body()
        except Refused as refused:
            return self.refuse(refused)

        def work(book: KnowledgeBook) -> dict[str, Any]:
            record = book.get(entry_id)
            changes, confirm = patch_changes(payload, record.kind)
            return entry_json(book.update(record.id, **changes, confirm_flagged=confirm))

        await self.respond(work, writes=True)

    @web.authenticated
    @allow("write")
    async def delete(self, entry_id: str) -> None:
        """Forget the entry: its row, its full-text entry and its vector. 204."""
        self.check_permission()
        try:
            await self.in_book(lambda book: book.remove(entry_id), writes=True)
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        self.set_status(204)
        self.finish()


class KnowledgeAcceptHandler(KnowledgeHandler):
    """``POST {url}knowledge/{id}/accept``: a person accepts a suggestion."""

    @web.authenticated
    @allow("write")
    async def post(self, entry_id: str) -> None:
        """``{"scope"?, "confirm_flagged"?}`` -> the entry, now active."""
        self.check_permission()
        try:
            scope, confirm = accept_request(self.body(optional=True))
        except Refused as refused:
            return self.refuse(refused)
        except KnowledgeError as error:
            return self.fail(error)
        await self.respond(
            lambda book: entry_json(book.accept(entry_id, scope=scope, confirm_flagged=confirm)),
            writes=True,
        )

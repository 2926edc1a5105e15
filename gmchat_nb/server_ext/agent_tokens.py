"""``{url}agent-tokens/``: a person's agent tokens, listed, made and revoked from their browser;
and how the MCP route recognises one (:func:`presented_agent_token`, :func:`verified_agent_token`).

Only a person's browser session reaches these routes (Jupyter's login cookie, whose POST and
DELETE Jupyter checks for the XSRF token: :attr:`~.handlers.GMChatHandler.person_session`): a
request that authenticates with a token (Jupyter's, a hub's) answers 403 ``forbidden``, so an
agent holding its person's Jupyter token cannot mint itself a credential; an agent token is not
Jupyter's and is refused by Jupyter before this code runs. The token's owner is the person the
Jupyter user is (``jupyter:alice`` is ``alice``), as ``gmchat agent-token --user alice`` writes.

``GET`` lists the caller's tokens (revoked and expired ones too), ``POST {"name", "scopes"?,
"expires_in_days"?}`` makes one and answers its secret (201, the only time it is shown),
``DELETE {id}`` revokes one. Refusals are ``{"type": "error", "code", "message"}``: 400
``invalid``, 403 ``forbidden``, 404 ``not_found`` (another person's token as one that never
existed), 503 ``chat_error`` when the store cannot be used.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable
from typing import Any, Final

from tornado import httputil, web

from ..core.agent.tokens import (
    DEFAULT_DAYS,
    READ,
    TOKEN_PREFIX,
    AgentTokenError,
    AgentTokenRecord,
    AgentTokens,
    token_json,
)
from ..core.knowledge import person_of
from .handlers import STORE_UNAVAILABLE, GMChatHandler, allow, unavailable_message
from .requests import Refused, decode_object
from .sessions import ChatRuntime

__all__ = [
    "AGENT_TOKEN_REFUSED",
    "READ_ONLY_TOKEN",
    "AgentTokenHandler",
    "AgentTokensHandler",
    "presented_agent_token",
    "verified_agent_token",
]

log = logging.getLogger(__name__)

STATUS: Final = {"invalid": 400, "forbidden": 403, "not_found": 404}
PERSON_ONLY: Final = (
    "Agent tokens are made, listed and revoked from a person's browser session (the gmchat "
    "side panel) or with `gmchat agent-token` on the server's machine, not with a token."
)


AGENT_TOKEN_REFUSED = (
    "The agent token is unknown, expired or revoked: its person can make a new one in the "
    "gmchat side panel or with `gmchat agent-token create`."
)
READ_ONLY_TOKEN = (
    "This agent token may only read: a change can be proposed with a token that has the "
    "'propose' scope, which its person can make."
)


def presented_agent_token(request: httputil.HTTPServerRequest) -> str | None:
    """The agent token a request authenticates with (``Authorization: Bearer gmat_…``, or
    ``token gmat_…`` as Jupyter's clients write it), else None: Jupyter's own credentials."""
    scheme, _, value = request.headers.get("Authorization", "").strip().partition(" ")
    value = value.strip()
    if scheme.lower() in ("bearer", "token") and value.startswith(TOKEN_PREFIX):
        return value
    return None


async def verified_agent_token(runtime: ChatRuntime, secret: str) -> AgentTokenRecord | None:
    """The active token ``secret`` is, on this server: None when it is unknown, expired,
    revoked, or another person's on a server that is one person's (a stock single-user server's
    ``owner``, a JupyterHub single-user server's ``JUPYTERHUB_USER``: servers of a hub share
    one store, and a token must not make bob's server act as alice). The log says which; the
    client is told one thing for all."""
    token: AgentTokenRecord | None = await runtime.on_engine(
        AgentTokens(runtime.store).verify, secret
    )
    if token is None:
        log.warning("gmchat refused agent token %s…: unknown, expired or revoked", secret[:12])
        return None
    server_person = runtime.owner or os.environ.get("JUPYTERHUB_USER") or token.owner
    if token.owner != server_person:
        log.warning("gmchat refused agent token %s… of another person", secret[:12])
        return None
    return token


class AgentTokensBase(GMChatHandler):
    """What the two routes share: a person's session only, the error body, JSON answers."""

    def decode_argument(self, value: bytes, name: str | None = None) -> str:
        """A path segment that is not UTF-8 is an id no token has (404), not Tornado's 400."""
        return value.decode("utf-8", "replace")

    def answer(self, status: int, body: dict[str, Any]) -> None:
        self.set_status(status)
        self.finish(json.dumps(body))

    def refuse(self, refused: Refused) -> None:
        self.answer(
            refused.status, {"type": "error", "code": refused.code, "message": refused.message}
        )

    def admitted(self) -> bool:
        """The ``permission`` hook (403 from Jupyter), then a person's session only (403
        ``forbidden``, answered): before any body is read."""
        self.check_permission()
        if self.person_session:
            return True
        self.refuse(Refused(403, "forbidden", PERSON_ONLY))
        return False

    async def respond(
        self, work: Callable[[AgentTokens, str], dict[str, Any]], *, status: int = 200
    ) -> None:
        """Run ``work`` with the store's tokens and the caller's name on the engine (after
        :meth:`admitted` said yes)."""
        owner = person_of(self.actor.id)
        tokens = AgentTokens(self.runtime.store)
        try:
            body = await self.runtime.on_engine(work, tokens, owner)
        except AgentTokenError as error:
            return self.refuse(Refused(STATUS.get(error.code, 400), error.code, error.message))
        except STORE_UNAVAILABLE as error:
            return self.refuse(Refused(503, "chat_error", unavailable_message(error)))
        self.answer(status, body)


class AgentTokensHandler(AgentTokensBase):
    """``GET/POST {url}agent-tokens/``."""

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        """``{"tokens": [Token, ...]}``, newest first."""
        if not self.admitted():
            return
        await self.respond(
            lambda tokens, owner: {
                "tokens": [token_json(record, time.time()) for record in tokens.list(owner)]
            }
        )

    @web.authenticated
    @allow("write")
    async def post(self) -> None:
        """``{"name", "scopes"?, "expires_in_days"?}`` -> 201 ``{"token", "secret"}``."""
        if not self.admitted():
            return
        try:
            payload = decode_object(
                self.request.body or b"", max_bytes=self.max_body_bytes, code="invalid"
            )
        except Refused as refused:
            return self.refuse(refused)
        unknown = sorted(set(payload) - {"name", "scopes", "expires_in_days"})
        if unknown:
            message = (
                f"Unknown field {unknown[0][:40]!r}: a token has name, scopes, expires_in_days."
            )
            return self.refuse(Refused(400, "invalid", message))

        def create(tokens: AgentTokens, owner: str) -> dict[str, Any]:
            made = tokens.create(
                owner,
                payload.get("name"),
                payload.get("scopes", [READ]),
                payload.get("expires_in_days", DEFAULT_DAYS),
            )
            return {"token": token_json(made.record, time.time()), "secret": made.secret}

        await self.respond(create, status=201)


class AgentTokenHandler(AgentTokensBase):
    """``DELETE {url}agent-tokens/{id}``: revoke."""

    @web.authenticated
    @allow("write")
    async def delete(self, token_id: str) -> None:
        """``{"token": Token}``, now revoked."""
        if not self.admitted():
            return
        await self.respond(
            lambda tokens, owner: {"token": token_json(tokens.revoke(owner, token_id), time.time())}
        )

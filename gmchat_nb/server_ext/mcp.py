"""``{base_url}gmchat/mcp``: the chat's tools for agents over MCP's Streamable HTTP transport, in
the Jupyter server (the ``[mcp]`` extra; :mod:`gmchat_nb.mcp_server` builds the MCP server).

**Stateless**: every POST is a whole exchange (JSON answers, no ``Mcp-Session-Id``), so servers
behind a proxy need no session affinity. No elicitation answer can come back: a confirm-listed
change answers ``pending_confirmation``, a person decides it in the side panel or the widget on
any server sharing the store, and ``mutate`` tells the agent the outcome. GET (a stream) and DELETE
(ending a session) have nothing to do without a session: ``405``, as the specification allows.

**Who may call**: an agent token (``Authorization: Bearer gmat_…``, :mod:`gmchat_nb.core.agent.tokens`)
is recognised here, before Jupyter's authentication, and nowhere else: the request runs as the
token's person with its scopes (``read``; ``propose`` to call ``mutate``). Any other request
takes Jupyter's authentication as on the chat routes. Then the authorizer (``read``; a
``mutate`` call also ``execute``) and the ``permission`` hook; the caller is the chat's actor
``jupyter:<user>``, so a change is proposed in that person's own conversations, where only the
person decides it (a browser session or the kernel, never a token). Before all of it, the
``Origin`` check the MCP specification asks for (:func:`origin_allowed`).

**The bridge** (:mod:`.mcp_bridge`): the request, as an ASGI scope, is answered on the runtime's
engine thread by the SDK's stateless session manager of the actor's server.
"""

from __future__ import annotations

import importlib.util
import json
import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from jupyter_core.utils import ensure_async
from jupyter_server.auth.identity import User
from tornado import httputil, web

from ..core.agent.tokens import PROPOSE
from ..core.project.tools import TOOLS
from .agent_tokens import (
    AGENT_TOKEN_REFUSED,
    READ_ONLY_TOKEN,
    presented_agent_token,
    verified_agent_token,
)
from .handlers import AUTH_RESOURCE, STORE_UNAVAILABLE, GMChatHandler, allow, unavailable_message
from .mcp_bridge import MISSING_EXTRA, Answer, MCPBridge, asgi_scope, rpc_error
from .sessions import ChatRuntime

if TYPE_CHECKING:
    from ..core.agent.tokens import AgentTokenRecord

__all__ = ["MCPBridge", "MCPHandler", "MCPMissingHandler", "mcp_installed", "origin_allowed"]

log = logging.getLogger(__name__)

STATELESS = "This MCP endpoint is stateless: every request is a POST of its own, no session."
NOT_COPIED = frozenset({"content-length", "content-type", "transfer-encoding", "connection"})


def mcp_installed() -> bool:
    """Whether the MCP SDK is installed (found, not imported: the server starts as fast)."""
    return importlib.util.find_spec("mcp") is not None


def origin_allowed(request: httputil.HTTPServerRequest, allowed: Iterable[str] | None) -> bool:
    """The MCP specification's ``Origin`` check: a request without one (an agent, a script) is
    not a browser's and passes; a browser's must come from this server's own origin (the
    ``Host`` it was asked for, over http or https: a TLS proxy in front makes the request plain
    HTTP here, so the scheme is not compared) or from one of the chat setting ``allowed_origins``.

    The ``Host`` header itself is not checked here as the SDK's DNS-rebinding protection would
    (an allow-list of host names): Jupyter already refuses a name that is not local unless the
    deployment allows remote access (``ServerApp.allow_remote_access``), in which case only the
    deployment knows its names (a hub's proxy); and every request needs Jupyter's credentials,
    which a page on a rebound name has none of (cookies belong to the name they were set for).
    """
    origin = request.headers.get("Origin")
    if origin is None:
        return True
    origin = origin.strip().rstrip("/").lower()
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    if parts.scheme in ("http", "https") and parts.netloc and parts.netloc == request.host.lower():
        return True
    return origin in {item.strip().rstrip("/").lower() for item in allowed or ()}


def calls_a_change(body: bytes) -> bool:
    """Whether a JSON-RPC body calls ``mutate`` (which needs ``execute``); a body that is not
    JSON is the SDK's to refuse."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return False
    messages = decoded if isinstance(decoded, list) else [decoded]
    return any(
        isinstance(message, dict)
        and message.get("method") == "tools/call"
        and isinstance(message.get("params"), dict)
        and message["params"].get("name") == TOOLS.mutate.name
        for message in messages
    )


class MCPHandler(GMChatHandler):
    """``POST {base_url}gmchat/mcp``: one MCP exchange; GET and DELETE: ``405`` (stateless)."""

    bridge: MCPBridge
    allowed_methods = ("POST",)  # GET and DELETE are answered, but only with 405 (stateless)
    agent_token: AgentTokenRecord | None = None  # the agent token this request came with

    def initialize(
        self,
        runtime: ChatRuntime,
        max_body_bytes: int = 65536,
        keepalive_seconds: float = 15.0,
        bridge: MCPBridge | None = None,
    ) -> None:
        """Tornado passes the handler kwargs the app registered (``bridge`` among them)."""
        super().initialize(runtime, max_body_bytes, keepalive_seconds)
        if bridge is None:
            raise TypeError("MCPHandler is registered with its MCPBridge")
        self.bridge = bridge

    def check_origin(self, origin_to_satisfy_tornado: str = "") -> bool:
        """Jupyter asks this of cookie requests too: the one Origin rule of this route."""
        return origin_allowed(self.request, self.runtime.settings.allowed_origins)

    async def prepare(self) -> None:  # type: ignore[override]  # APIHandler's own signature
        """A browser's request from another origin is 403 before anything runs, whatever its
        credentials (token requests skip Jupyter's own Origin check)."""
        if not self.check_origin():
            self.current_user = None  # not resolved: refused before authentication
            log.warning("gmchat refused an MCP request from %r", self.request.headers["Origin"])
            self._reply(Answer.refusal(403, "Forbidden: requests from this Origin are refused."))
            return
        secret = presented_agent_token(self.request)
        if secret is None:
            await super().prepare()
            return
        await self._prepare_agent(secret)

    async def _prepare_agent(self, secret: str) -> None:
        """Authenticate an agent token instead of Jupyter: the request is its person's, with
        its scopes. No cookie is read and none is needed (no XSRF: nothing a browser sends by
        itself); the Host check is Jupyter's own."""
        if not self.check_host():
            raise web.HTTPError(403)
        self.current_user = None
        try:
            token = await verified_agent_token(self.runtime, secret)
        except STORE_UNAVAILABLE as error:
            return self._reply(Answer.refusal(503, unavailable_message(error)))
        if token is None:
            answer = Answer.refusal(401, AGENT_TOKEN_REFUSED)
            answer.headers.append(("WWW-Authenticate", 'Bearer error="invalid_token"'))
            return self._reply(answer)
        self.agent_token = token
        self.current_user = self._jupyter_current_user = User(username=token.owner)
        self.set_cors_headers()

    @web.authenticated
    @allow("read")
    async def post(self) -> None:
        """One JSON-RPC message in, its answer out (``202`` for a notification)."""
        self.check_permission()
        body = self.request.body or b""
        if len(body) > self.max_body_bytes:
            message = f"The request body is larger than {self.max_body_bytes} bytes."
            return self._reply(Answer.refusal(413, message))
        from ..mcp_server.screen import screen_http  # the SDK's: the [mcp] extra's

        version = self.request.headers.get("MCP-Protocol-Version")
        body, (status, reply) = screen_http(body, version)
        if status:  # refused or answered before the SDK reads it (a bad id, a huge name...)
            return self._reply(Answer.json(status, reply))
        may_propose = self.agent_token is None or PROPOSE in self.agent_token.scopes
        if calls_a_change(body):
            if not may_propose:
                return self._reply(Answer.refusal(403, READ_ONLY_TOKEN))
            if not await ensure_async(
                self.authorizer.is_authorized(self, self.current_user, "execute", AUTH_RESOURCE)
            ):
                raise web.HTTPError(403, f"User is not authorized to execute on {AUTH_RESOURCE}.")
        scope = asgi_scope(self.request)
        self._reply(await self.bridge.answer(self.actor, scope, body, may_propose=may_propose))

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        """No stream of server-initiated messages: nothing could be sent on it (405)."""
        self._stateless()

    @web.authenticated
    @allow("read")
    async def delete(self) -> None:
        """No session to end (405)."""
        self._stateless()

    def _stateless(self) -> None:
        self.check_permission()
        answer = Answer.refusal(405, STATELESS)
        self._reply(Answer(405, [*answer.headers, ("Allow", "POST")], answer.body))

    def _reply(self, answer: Answer) -> None:
        """Write an answer: the SDK's headers and body; a refusal it made in plain text (a bad
        ``Content-Type``) as a JSON-RPC error, as every other refusal of this route is."""
        body = bytes(answer.body)
        content_type = next((v for k, v in answer.headers if k.lower() == "content-type"), "")
        if answer.status >= 400 and not content_type.startswith("application/json"):
            text = body.decode("utf-8", "replace").strip() or "The request was refused."
            body, content_type = rpc_error(text), "application/json"
        self.set_status(answer.status)
        for name, value in answer.headers:
            if name.lower() not in NOT_COPIED:
                self.set_header(name, value)
        self.finish(body, set_content_type=content_type or "application/json")


class MCPMissingHandler(GMChatHandler):
    """The MCP route of a server without the ``[mcp]`` extra: ``501`` saying what to install."""

    def _missing(self) -> None:
        self.check_permission()
        raise web.HTTPError(501, MISSING_EXTRA)

    @web.authenticated
    @allow("read")
    async def post(self) -> None:
        self._missing()

    @web.authenticated
    @allow("read")
    async def get(self) -> None:
        self._missing()

    @web.authenticated
    @allow("read")
    async def delete(self) -> None:
        self._missing()

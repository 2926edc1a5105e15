"""``{base_url}gmchat/mcp``: the chat's tools for agents over MCP's Streamable HTTP transport, in
the Jupyter server (the ``[mcp]`` extra; :mod:`gmchat_nb.mcp_server` builds the MCP server).

**Stateless**: every POST is a whole exchange (JSON answers, no ``Mcp-Session-Id``), so servers
behind a proxy need no session affinity. No elicitation answer can come back: a confirm-listed
change answers ``pending_confirmation``, a person decides it with ``POST {url}confirm/`` on any
server sharing the store, and ``mutate`` tells the agent the outcome. GET (a stream) and DELETE
(ending a session) have nothing to do without a session: ``405``, as the specification allows.

**Who may call**: as on the chat routes, Jupyter's authentication, the authorizer (``read``; a
``mutate`` call also ``execute``) and the ``permission`` hook; the caller is the chat's actor
``jupyter:<user>``, so the change they confirm is in their own conversations. Before all of it,
the ``Origin`` check the MCP specification asks for (:func:`origin_allowed`).

**The bridge**: the handler turns the Tornado request into an ASGI scope and hands it with its
body to the runtime's engine thread, where the project, the store and every turn live (the
toolbox writes the store synchronously, as turns do). There the SDK's stateless
``StreamableHTTPSessionManager`` of the actor's server answers it; the collected answer is
written back on Jupyter's loop. One server per actor, in a small LRU cache, its session manager
running on the engine while it is cached.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
from collections import OrderedDict
from collections.abc import Iterable, MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from jupyter_core.utils import ensure_async
from tornado import httputil, web

from ..core.project.tools import TOOLS
from ..core.session import Actor
from ..core.turns import StoreUnavailableError
from .handlers import AUTH_RESOURCE, GMChatHandler, allow, unavailable_message
from .sessions import ChatRuntime

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ..core.agent import AgentGuards

__all__ = ["MCPBridge", "MCPHandler", "MCPMissingHandler", "mcp_installed", "origin_allowed"]

log = logging.getLogger(__name__)

MISSING_EXTRA = (
    "The MCP route needs the [mcp] extra (the official MCP SDK): install gmchat_nb with it "
    "(pip install -e '.[mcp]' in a checkout), then restart the server."
)
SERVER_CACHE_SIZE = 64  # actors whose MCP server (toolbox, session manager) stays built
INVALID_REQUEST = -32600  # JSON-RPC's code for a request refused as a whole
STATELESS = "This MCP endpoint is stateless: every request is a POST of its own, no session."
NOT_FORWARDED = frozenset({"authorization", "cookie"})  # Jupyter's credentials stay in Jupyter
NOT_COPIED = frozenset({"content-length", "content-type", "transfer-encoding", "connection"})
# The SDK logs every stateless request's end ("Terminating session: None") at INFO.
CHATTY_SDK_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


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


def rpc_error(message: str) -> bytes:
    """A JSON-RPC error without an id: how this route refuses a request as a whole."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return json.dumps(body).encode()


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


def asgi_scope(request: httputil.HTTPServerRequest) -> dict[str, Any]:
    """The ASGI ``http`` scope of a Tornado request (without Jupyter's credentials)."""
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": request.version.removeprefix("HTTP/") or "1.1",
        "method": request.method or "POST",
        "scheme": request.protocol,
        "path": request.path,
        "raw_path": request.path.encode("latin-1", "replace"),
        "query_string": request.query.encode("latin-1", "replace"),
        "root_path": "",
        "headers": [
            (name.lower().encode("latin-1"), value.encode("latin-1", "replace"))
            for name, value in request.headers.get_all()
            if name.lower() not in NOT_FORWARDED
        ],
        "client": (request.remote_ip, 0),
        "server": None,
    }


@dataclass(slots=True)
class Answer:
    """An ASGI response, collected: its status, headers and body."""

    status: int = 500
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytearray = field(default_factory=bytearray)

    @classmethod
    def refusal(cls, status: int, message: str) -> Answer:
        """A JSON-RPC error answer."""
        return cls(status, [("content-type", "application/json")], bytearray(rpc_error(message)))

    async def send(self, message: MutableMapping[str, Any]) -> None:
        """ASGI's ``send``."""
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            self.headers = [
                (name.decode("latin-1"), value.decode("latin-1"))
                for name, value in message.get("headers", [])
            ]
        elif message["type"] == "http.response.body":
            self.body += message.get("body", b"")


@dataclass(slots=True)
class _Served:
    """One actor's MCP server: its session manager, running in ``task`` until ``stop``."""

    manager: StreamableHTTPSessionManager
    task: asyncio.Task[None]
    stop: asyncio.Event
    busy: int = 0  # requests in flight
    retired: bool = False  # evicted: stops once idle

    def release(self) -> None:
        self.busy -= 1
        if self.retired and not self.busy:
            self.stop.set()


class MCPBridge:
    """The actors' MCP servers on the runtime's engine, and the way requests reach them."""

    def __init__(
        self, runtime: ChatRuntime, *, max_body_bytes: int, cache_size: int = SERVER_CACHE_SIZE
    ) -> None:
        self.runtime = runtime
        self.max_body_bytes = max_body_bytes
        self.cache_size = cache_size
        self._served: OrderedDict[tuple[str, str], _Served] = OrderedDict()  # on the engine only
        self._lock: asyncio.Lock | None = None  # the engine loop's
        self._guards: AgentGuards | None = None  # an actor's, whichever server answers it

    async def answer(self, actor: Actor, scope: dict[str, Any], body: bytes) -> Answer:
        """From Jupyter's loop: the actor's server's answer to one request, run on the engine."""
        return await self.runtime.engine.run(self._answer(actor, scope, body))

    async def _answer(self, actor: Actor, scope: dict[str, Any], body: bytes) -> Answer:
        try:
            served = await self._served_for(actor)
        except ImportError as error:
            log.error("gmchat's MCP route cannot import the MCP SDK: %s", error)
            return Answer.refusal(501, MISSING_EXTRA)
        except Exception as error:  # the project cannot be connected, the store cannot be used
            if not isinstance(error, StoreUnavailableError):  # which says why itself, once
                log.exception("gmchat could not start the MCP server")
            return Answer.refusal(503, unavailable_message(error))
        answer = Answer()
        delivered = False

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            never: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            return await never  # the client stays: JSON answers never listen for it

        served.busy += 1
        try:
            await served.manager.handle_request(scope, receive, answer.send)
        finally:
            served.release()
        return answer

    async def _served_for(self, actor: Actor) -> _Served:
        key = (actor.id, actor.name)
        served = self._served.get(key)
        if served is None or served.task.done():
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                served = self._served.get(key)
                if served is None or served.task.done():
                    served = await self._start(actor)
                    self._served[key] = served
                    while len(self._served) > self.cache_size:
                        _, evicted = self._served.popitem(last=False)
                        evicted.retired = True
                        if not evicted.busy:
                            evicted.stop.set()
        self._served.move_to_end(key)
        return served

    async def _start(self, actor: Actor) -> _Served:
        """Build the actor's toolbox and server and start its stateless session manager."""
        from mcp.server.transport_security import TransportSecuritySettings

        from ..core.agent import AgentGuards, AgentToolbox
        from ..mcp_server import build_server

        for name in CHATTY_SDK_LOGGERS:  # unless the deployment configured them
            if logging.getLogger(name).level == logging.NOTSET:
                logging.getLogger(name).setLevel(logging.WARNING)
        project = await self.runtime.project()
        settings = self.runtime.settings
        self._guards = self._guards or AgentGuards(settings, float(settings.loop_guard.seconds))
        toolbox = AgentToolbox(
            project, settings, store=self.runtime.store, actor=actor, guards=self._guards
        )
        server = build_server(toolbox, elicit=False)
        server.streamable_http_app(
            stateless_http=True,
            json_response=True,
            max_request_body_size=self.max_body_bytes,
            # Origin is checked by the handler, before Jupyter's authentication (see
            # origin_allowed), and the Host by Jupyter: the SDK's allow-lists stay off.
            transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        manager = server.session_manager
        started, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with manager.run():
                started.set()
                await stop.wait()

        task = asyncio.create_task(run(), name=f"gmchat MCP server of {actor.id}")
        waiting = asyncio.create_task(started.wait())
        await asyncio.wait({task, waiting}, return_when=asyncio.FIRST_COMPLETED)
        if not started.is_set():
            waiting.cancel()
            task.result()  # raises why it could not start
            raise RuntimeError("the MCP session manager ended before it started")
        return _Served(manager, task, stop)

    async def aclose(self) -> None:
        """Stop every cached server's session manager (the extension stops)."""
        if self.runtime.engine.running:
            await self.runtime.engine.run(self._stop_all())

    async def _stop_all(self) -> None:
        served = list(self._served.values())
        self._served.clear()
        for item in served:
            item.stop.set()
        await asyncio.gather(*(item.task for item in served), return_exceptions=True)


class MCPHandler(GMChatHandler):
    """``POST {base_url}gmchat/mcp``: one MCP exchange; GET and DELETE: ``405`` (stateless)."""

    bridge: MCPBridge

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
        await super().prepare()

    @web.authenticated
    @allow("read")
    async def post(self) -> None:
        """One JSON-RPC message in, its answer out (``202`` for a notification)."""
        self.check_permission()
        body = self.request.body or b""
        if len(body) > self.max_body_bytes:
            message = f"The request body is larger than {self.max_body_bytes} bytes."
            return self._reply(Answer.refusal(413, message))
        if calls_a_change(body) and not await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "execute", AUTH_RESOURCE)
        ):
            raise web.HTTPError(403, f"User is not authorized to execute on {AUTH_RESOURCE}.")
        self._reply(await self.bridge.answer(self.actor, asgi_scope(self.request), body))

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

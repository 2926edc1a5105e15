"""The engine's side of ``{base_url}gmchat/mcp`` (:mod:`.mcp`): the actors' MCP servers, run on
the runtime's engine thread, and the way one request reaches them.

The handler turns the Tornado request into an ASGI scope (:func:`asgi_scope`, without Jupyter's
credentials) and hands it with its body to :class:`MCPBridge`, which answers it on the engine
thread, where the project, the store and every turn live (the toolbox writes the store
synchronously, as turns do). There the SDK's stateless ``StreamableHTTPSessionManager`` of the
actor's server answers it into an :class:`Answer`, written back on Jupyter's loop. One server per
actor and scope (a read-only agent token's offers no ``mutate``), in a small LRU cache, its session
manager running on the engine while it is cached.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import OrderedDict
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tornado import httputil

from ..core.session import Actor
from ..core.turns import StoreUnavailableError
from .handlers import unavailable_message
from .sessions import ChatRuntime

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    from ..core.agent import AgentGuards

__all__ = ["MISSING_EXTRA", "Answer", "MCPBridge", "asgi_scope", "rpc_error"]

log = logging.getLogger(__name__)

MISSING_EXTRA = (
    "The MCP route needs the [mcp] extra (the official MCP SDK): install gmchat_nb with it "
    "(pip install -e '.[mcp]' in a checkout), then restart the server."
)
SERVER_CACHE_SIZE = 64  # actors whose MCP server (toolbox, session manager) stays built
INVALID_REQUEST = -32600  # JSON-RPC's code for a request refused as a whole
NOT_FORWARDED = frozenset({"authorization", "cookie"})  # Jupyter's credentials stay in Jupyter
# The SDK logs every stateless request's end ("Terminating session: None") at INFO.
CHATTY_SDK_LOGGERS = ("mcp.server.streamable_http", "mcp.server.streamable_http_manager")


def rpc_error(message: str) -> bytes:
    """A JSON-RPC error without an id: how this route refuses a request as a whole."""
    body = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return json.dumps(body).encode()


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

    @classmethod
    def json(cls, status: int, body: dict[str, Any] | None) -> Answer:
        """A JSON-RPC message as the answer (None: no body)."""
        content = bytearray(json.dumps(body).encode()) if body is not None else bytearray()
        return cls(status, [("content-type", "application/json")], content)

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
        self._served: OrderedDict[tuple[str, str, bool], _Served] = OrderedDict()  # engine's
        self._lock: asyncio.Lock | None = None  # the engine loop's
        self._guards: AgentGuards | None = None  # an actor's, whichever server answers it

    async def answer(
        self, actor: Actor, scope: dict[str, Any], body: bytes, *, may_propose: bool = True
    ) -> Answer:
        """From Jupyter's loop: the actor's server's answer to one request, run on the engine
        (``may_propose``: whether ``mutate`` is offered, false for a read-only agent token)."""
        return await self.runtime.engine.run(self._answer(actor, scope, body, may_propose))

    async def _answer(
        self, actor: Actor, scope: dict[str, Any], body: bytes, may_propose: bool
    ) -> Answer:
        try:
            served = await self._served_for(actor, may_propose)
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

    async def _served_for(self, actor: Actor, may_propose: bool) -> _Served:
        key = (actor.id, actor.name, may_propose)
        served = self._served.get(key)
        if served is None or served.task.done():
            if self._lock is None:
                self._lock = asyncio.Lock()
            async with self._lock:
                served = self._served.get(key)
                if served is None or served.task.done():
                    served = await self._start(actor, may_propose)
                    self._served[key] = served
                    while len(self._served) > self.cache_size:
                        _, evicted = self._served.popitem(last=False)
                        evicted.retired = True
                        if not evicted.busy:
                            evicted.stop.set()
        self._served.move_to_end(key)
        return served

    async def _start(self, actor: Actor, may_propose: bool) -> _Served:
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
            project,
            settings,
            store=self.runtime.store,
            actor=actor,
            guards=self._guards,
            may_propose=may_propose,
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

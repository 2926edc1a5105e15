"""Serve a demo over HTTP like a GeneralManager deployment's ``/graphql/`` endpoint.

GraphQL errors come back with HTTP 200 in the ``errors`` list, as graphene-django does; only a
request that is not a GraphQL request at all (bad JSON, no ``query``) gets a 400. With a token,
a request must carry ``Authorization: Bearer <token>`` or the cookie ``gm_token=<token>``, which
lets tests prove that a client's headers and cookies arrive.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import signal
from collections.abc import Mapping
from typing import Any

from aiohttp import web
from graphql import graphql_sync

from .backend import DemoBackend, build_demo
from .specs import demo_spec

__all__ = ["serve_forever", "start_server"]

AUTH_REQUIRED = "Authentication required."
TOKEN_COOKIE = "gm_token"


def _error(status: int, message: str) -> web.Response:
    return web.json_response({"errors": [{"message": message}]}, status=status)


def _authorized(request: web.Request, token: str) -> bool:
    header = request.headers.get("Authorization", "")
    scheme, _, credential = header.partition(" ")
    candidates = [request.cookies.get(TOKEN_COOKIE, "")]
    if scheme.lower() == "bearer":
        candidates.append(credential.strip())
    return any(hmac.compare_digest(candidate, token) for candidate in candidates if candidate)


def _parse_body(body: object) -> tuple[str, dict[str, Any] | None, str | None] | str:
    """``(query, variables, operationName)`` or the reason the body is not a GraphQL request."""
    if not isinstance(body, Mapping):
        return "The request body must be a JSON object."
    query = body.get("query")
    variables = body.get("variables")
    operation = body.get("operationName")
    if not isinstance(query, str) or not query.strip():
        return 'The request body must contain a "query" string.'
    if variables is not None and not isinstance(variables, dict):
        return '"variables" must be a JSON object.'
    if operation is not None and not isinstance(operation, str):
        return '"operationName" must be a string.'
    return query, variables, operation


def _app(backend: DemoBackend, token: str | None) -> web.Application:
    async def graphql_view(request: web.Request) -> web.Response:
        if token is not None and not _authorized(request, token):
            return _error(401, AUTH_REQUIRED)
        try:
            body = await request.json(loads=json.loads)
        except ValueError:
            return _error(400, "The request body is not valid JSON.")
        parsed = _parse_body(body)
        if isinstance(parsed, str):
            return _error(400, parsed)
        query, variables, operation = parsed
        result = graphql_sync(
            backend.schema, query, variable_values=variables, operation_name=operation
        )
        return web.json_response(result.formatted)

    app = web.Application()
    app.router.add_post("/graphql/", graphql_view)
    app.router.add_post("/graphql", graphql_view)
    return app


async def start_server(
    backend: DemoBackend, *, host: str = "127.0.0.1", port: int = 0, token: str | None = None
) -> tuple[web.AppRunner, str]:
    """Serve ``backend`` on ``host:port`` (0 = a free port); returns the runner and the URL.

    Stop it with ``await runner.cleanup()``. The URL ends in ``/graphql/``.
    """
    runner = web.AppRunner(_app(backend, token), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, host, port)
    await site.start()
    bound_port = runner.addresses[0][1]
    netloc = f"[{host}]" if ":" in host else host
    return runner, f"http://{netloc}:{bound_port}/graphql/"


def serve_forever(
    name: str, *, port: int = 0, token: str | None = None, **spec_options: Any
) -> None:
    """Build the demo ``name``, serve it and block until SIGINT or SIGTERM.

    Prints exactly one line, ``GraphQL endpoint: <url>``, once the server accepts requests.
    """
    backend = build_demo(demo_spec(name, **spec_options))

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
        runner, url = await start_server(backend, port=port, token=token)
        try:
            print(f"GraphQL endpoint: {url}", flush=True)
            await stop.wait()
        finally:
            await runner.cleanup()

    try:
        asyncio.run(main())
    finally:
        backend.close()

"""A GeneralManager-shaped GraphQL server on 127.0.0.1 whose mutations tests can hold or follow
with an action (a kill -9 of the process that sent them): how to make "the server died after the
mutation ran but before its reply was recorded" happen for real.

It serves the inventory demo (real graphql-core schema over SQLite) in its own thread and loop,
so the test's loop, pytest-jupyter's server and subprocess servers can all talk to it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from graphql import graphql_sync

from gmchat_nb.core.project.demo.backend import DemoBackend, build_demo
from gmchat_nb.core.project.demo.specs import demo_spec


class GraphQLServer:
    """The demo over HTTP; ``hold_seconds`` delays each mutation's reply after it ran,
    ``introspection_seconds`` the schema's, and ``after_mutation`` (when set) is called once a
    mutation ran, before any reply."""

    def __init__(self) -> None:
        self.backend: DemoBackend = build_demo(demo_spec("inventory"))
        self.mutations = 0
        self.idempotency_keys: list[str | None] = []  # each mutation request's Idempotency-Key
        self.mutation_ran = threading.Event()
        self.hold_seconds = 0.0
        self.introspection_seconds = 0.0  # how long the schema takes to come (a slow server)
        self.after_mutation: Callable[[], None] | None = None
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()
        self._ready.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        app = web.Application()
        app.router.add_post("/graphql/", self._graphql)
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.url = f"http://127.0.0.1:{self._runner.addresses[0][1]}/graphql/"
        self._ready.set()
        self._loop.run_forever()

    async def _graphql(self, request: web.Request) -> web.Response:
        body: dict[str, Any] = json.loads(await request.read())
        query = str(body.get("query", ""))
        if "__schema" in query:
            await asyncio.sleep(self.introspection_seconds)
        result = graphql_sync(
            self.backend.schema,
            query,
            variable_values=body.get("variables"),
            operation_name=body.get("operationName"),
        )
        if query.lstrip().startswith("mutation"):
            self.mutations += 1
            self.idempotency_keys.append(request.headers.get("Idempotency-Key"))
            self.mutation_ran.set()
            if self.after_mutation is not None:
                self.after_mutation()
            await asyncio.sleep(self.hold_seconds)
        return web.json_response(result.formatted)

    def count(self, name: str) -> int:
        """How many parts with this name the server holds."""
        result = graphql_sync(
            self.backend.schema,
            "query($f: PartFilterTypeDepth1) { partList(filter: $f) { pageInfo { totalCount } } }",
            variable_values={"f": {"name": name}},
        )
        assert result.errors is None, result.errors
        assert result.data is not None
        return int(result.data["partList"]["pageInfo"]["totalCount"])

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        with contextlib.suppress(Exception):
            self.backend.close()


@contextlib.contextmanager
def graphql_server() -> Iterator[GraphQLServer]:
    """A running :class:`GraphQLServer`, stopped afterwards."""
    server = GraphQLServer()
    try:
        yield server
    finally:
        server.stop()

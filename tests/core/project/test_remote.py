"""Remote projects: credentials reaching the server, failures, timeouts and a smaller page cap."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import AsyncIterator

import pytest
from aiohttp import web
from graphql import graphql

import gmchat_nb
from gmchat_nb.core.project import ProjectConnectionError
from gmchat_nb.core.project.demo import build_demo, inventory_spec, start_server

from ...conftest import INVENTORY_EXPOSED, DemoServer

TOKEN = "s3cret-token"


async def test_headers_and_cookies_carry_the_users_credentials(token_server: DemoServer) -> None:
    with pytest.raises(ProjectConnectionError, match="Authentication required"):
        await gmchat_nb.connect(token_server.url, exposed=INVENTORY_EXPOSED)
    for credentials in (
        {"headers": {"Authorization": f"Bearer {TOKEN}"}},
        {"cookies": {"gm_token": TOKEN}},
    ):
        project = await gmchat_nb.connect(
            token_server.url, exposed=INVENTORY_EXPOSED, **credentials
        )
        try:
            result = await project.call_tool(
                "query", {"manager": "Material", "fields": ["name"], "limit": 1}
            )
            assert result["data"] == [{"name": "Steel"}]
        finally:
            await project.aclose()


async def test_an_unreachable_endpoint_is_a_connection_error() -> None:
    with pytest.raises(ProjectConnectionError, match=r"127\.0\.0\.1:9"):
        await gmchat_nb.connect("http://127.0.0.1:9/graphql/", timeout=5)


async def test_a_connection_error_never_shows_the_url_s_password(token_server: DemoServer) -> None:
    """The message reaches the server's log and the user: the URL with ``***`` for its password."""
    for url in (
        "http://ann:pa55word@127.0.0.1:9/graphql/",
        token_server.url.replace("//", "//ann:pa55word@", 1),
    ):
        with pytest.raises(ProjectConnectionError) as raised:
            await gmchat_nb.connect(url, exposed=INVENTORY_EXPOSED, timeout=5)
        assert "pa55word" not in str(raised.value)
        assert "ann:***@127.0.0.1" in str(raised.value)


@pytest.fixture
async def own_server() -> AsyncIterator[tuple[web.AppRunner, str]]:
    backend = build_demo(dataclasses.replace(inventory_spec(), max_page_size=20))
    runner, url = await start_server(backend)
    yield runner, url
    await runner.cleanup()
    backend.close()


async def test_a_server_with_a_smaller_page_cap_is_learned(
    own_server: tuple[web.AppRunner, str],
) -> None:
    _, url = own_server
    project = await gmchat_nb.connect(url, exposed=INVENTORY_EXPOSED)
    try:
        result = await project.call_tool(
            "query", {"manager": "Part", "fields": ["name"], "limit": 50}
        )
        assert len(result["data"]) == 20 and result["has_more"] is True
        assert any("at most 20 rows" in note for note in result["notes"])
        later = await project.call_tool(
            "query", {"manager": "Part", "fields": ["name"], "limit": 5, "offset": 20}
        )
        assert len(later["data"]) == 5
    finally:
        await project.aclose()


async def test_a_server_that_goes_away_gives_a_tool_error(
    own_server: tuple[web.AppRunner, str],
) -> None:
    runner, url = own_server
    project = await gmchat_nb.connect(url, exposed=INVENTORY_EXPOSED)
    try:
        await runner.cleanup()
        result = await project.call_tool("query", {"manager": "Part", "fields": ["name"]})
        assert result["status"] == "error" and result["code"] == "server_unreachable"
    finally:
        await project.aclose()


@pytest.fixture
async def slow_server() -> AsyncIterator[str]:
    """Answers introspection at once and every other query after two seconds."""
    backend = build_demo(inventory_spec())

    async def view(request: web.Request) -> web.Response:
        body = await request.json()
        if body.get("operationName") != "IntrospectionQuery":
            await asyncio.sleep(2)
        result = await graphql(backend.schema, body["query"], variable_values=body.get("variables"))
        return web.json_response(result.formatted, dumps=json.dumps)

    app = web.Application()
    app.router.add_post("/graphql/", view)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    yield f"http://127.0.0.1:{runner.addresses[0][1]}/graphql/"
    await runner.cleanup()
    backend.close()


async def test_a_slow_query_times_out_as_a_tool_error(slow_server: str) -> None:
    project = await gmchat_nb.connect(slow_server, exposed=INVENTORY_EXPOSED, query_timeout=0.3)
    try:
        result = await project.call_tool("query", {"manager": "Part", "fields": ["name"]})
        assert result["code"] == "query_timeout" and "0.3 s" in result["message"]
    finally:
        await project.aclose()

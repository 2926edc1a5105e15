"""The HTTP endpoint behaves like a GeneralManager ``/graphql/`` view, over a real socket."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from graphql import build_client_schema, get_introspection_query, print_schema

from gmchat_nb.core.project.demo import DemoBackend, start_server

TOKEN = "s3cret-token"


@pytest.fixture
async def server(inventory: DemoBackend) -> AsyncIterator[str]:
    runner, url = await start_server(inventory)
    try:
        yield url
    finally:
        await runner.cleanup()


@pytest.fixture
async def guarded(inventory: DemoBackend) -> AsyncIterator[str]:
    runner, url = await start_server(inventory, token=TOKEN)
    try:
        yield url
    finally:
        await runner.cleanup()


async def _post(
    url: str, payload: Any, *, raw: bytes | None = None, **options: Any
) -> tuple[int, dict[str, Any]]:
    async with aiohttp.ClientSession(**options.pop("session", {})) as session:
        body = raw if raw is not None else json.dumps(payload).encode()
        headers = {"Content-Type": "application/json", **options.pop("headers", {})}
        async with session.post(url, data=body, headers=headers) as response:
            return response.status, await response.json()


async def test_query_over_http(server: str) -> None:
    assert server.startswith("http://127.0.0.1:") and server.endswith("/graphql/")
    status, body = await _post(server, {"query": '{ part(id: "1") { name } }'})
    assert (status, body) == (200, {"data": {"part": {"name": "Bolt"}}})
    status, body = await _post(
        server.rstrip("/"),
        {
            "query": "query Q($n: String) { partList(filter: {name: $n}) { items { id } } } "
            "query Other { __typename }",
            "variables": {"n": "Gear"},
            "operationName": "Q",
        },
    )
    assert (status, body) == (200, {"data": {"partList": {"items": [{"id": "3"}]}}})


async def test_graphql_errors_keep_http_200_and_extensions(server: str) -> None:
    status, body = await _post(server, {"query": "{ partList(pageSize: 500) { items { id } } }"})
    assert status == 200
    assert body["data"] == {"partList": None}
    assert body["errors"][0]["message"] == "pageSize must not exceed 100"
    status, body = await _post(server, {"query": 'mutation { updatePart(id: "999") { success } }'})
    assert status == 200
    assert body["errors"][0]["extensions"] == {"code": "NOT_FOUND"}
    status, body = await _post(server, {"query": "{ nope }"})
    assert status == 200
    assert "nope" in body["errors"][0]["message"]


async def test_no_database_text_reaches_a_client(server: str) -> None:
    """Input SQLite cannot take gets GeneralManager-shaped answers, never SQLite's own words."""
    huge = str(10**30)
    order = ", ".join(["{field: quantity, direction: DESC}", *["{field: name}"] * 2000])
    requests = [
        f"{{ partList(pageSize: 1, orderBy: [{order}]) {{ items {{ name }} }} }}",
        f'{{ partList(filter: {{id: "{huge}"}}) {{ items {{ name }} pageInfo {{ totalCount }} }} }}',
        f'mutation {{ updatePart(id: "{huge}", quantity: 1) {{ success }} }}',
        f'mutation {{ createProject(name: "X", partsList: ["{huge}"]) {{ success }} }}',
    ]
    bodies = [(await _post(server, {"query": query}))[1] for query in requests]
    ids = list(range(1, 40_001))
    status, too_many = await _post(
        server,
        {
            "query": "query Q($ids: [ID]) { partList(filter: {id_In: $ids}) { items { id } } }",
            "variables": {"ids": ids},
        },
    )
    assert status == 200
    assert bodies[0] == {"data": {"partList": {"items": [{"name": "Nylon Washer"}]}}}
    assert bodies[1]["data"] == {"partList": {"items": [], "pageInfo": {"totalCount": 0}}}
    assert bodies[2]["errors"][0]["extensions"] == {"code": "NOT_FOUND"}
    assert bodies[3]["errors"][0]["extensions"] == {
        "code": "BAD_USER_INPUT",
        "fieldErrors": {"parts": [f"Part with id {huge} does not exist."]},
        "nonFieldErrors": [],
    }
    assert (
        too_many["errors"][0]["message"] == 'Filter "id_In" takes at most 1000 values, got 40000.'
    )
    assert too_many["errors"][0]["extensions"] == {"code": "BAD_USER_INPUT"}
    text = json.dumps([*bodies, too_many]).lower()
    assert "sqlite" not in text and "python int" not in text and "sql variables" not in text


async def test_introspection_round_trip(server: str, inventory: DemoBackend) -> None:
    status, body = await _post(server, {"query": get_introspection_query(descriptions=True)})
    assert status == 200 and "errors" not in body
    client_schema = build_client_schema(body["data"])
    assert print_schema(client_schema) == print_schema(inventory.schema)


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{not json", "not valid JSON"),
        (b"[1, 2]", "JSON object"),
        (b'{"variables": {}}', '"query"'),
        (b'{"query": "{ __typename }", "variables": [1]}', '"variables"'),
    ],
)
async def test_bad_requests(server: str, raw: bytes, reason: str) -> None:
    status, body = await _post(server, None, raw=raw)
    assert status == 400
    assert reason in body["errors"][0]["message"]


async def test_token_is_required(guarded: str) -> None:
    query = {"query": "{ __typename }"}
    assert await _post(guarded, query) == (
        401,
        {"errors": [{"message": "Authentication required."}]},
    )
    wrong = await _post(guarded, query, headers={"Authorization": "Bearer wrong"})
    assert wrong[0] == 401
    by_header = await _post(guarded, query, headers={"Authorization": f"Bearer {TOKEN}"})
    assert by_header == (200, {"data": {"__typename": "Query"}})
    by_cookie = await _post(guarded, query, session={"cookies": {"gm_token": TOKEN}})
    assert by_cookie == (200, {"data": {"__typename": "Query"}})


def test_serve_forever_prints_the_endpoint_and_stops_on_sigint() -> None:
    command = [sys.executable, "-m", "gmchat_nb.core.project.demo", "inventory", "--token", TOKEN]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            assert line.startswith("GraphQL endpoint: http://127.0.0.1:")
            url = line.removeprefix("GraphQL endpoint: ").strip()
            request = urllib.request.Request(
                url,
                data=json.dumps({"query": '{ material(id: "2") { name } }'}).encode(),
                headers={"Content-Type": "application/json", "Cookie": f"gm_token={TOKEN}"},
            )
            opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
            with opener.open(request, timeout=10) as response:
                assert json.load(response) == {"data": {"material": {"name": "Aluminum"}}}
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=10) == 0
            assert process.stdout.read() == ""
        finally:
            if process.poll() is None:
                process.kill()

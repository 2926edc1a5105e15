"""The chat's tools for agents over MCP's Streamable HTTP at ``{base_url}gmchat/mcp``, as an agent
meets them: real `jupyter server` processes (under a hub-like ``base_url``), the official SDK's
Streamable HTTP client with the server's token, httpx for the person who confirms a change and for
the requests that must be refused, and a real GraphQL server holding the data, so what ran is
counted where it happened. pytest-jupyter's in-process server covers what needs a server of its
own: no MCP SDK, a project nobody answers for, two users, an authorizer that only lets read.

A confirm-listed change waits for a person (a stateless server cannot ask the agent's user):
the agent gets ``pending_confirmation``, the conversation's events show the change, a person
confirms it with ``POST {url}confirm/`` from their browser session (a token may not: see
test_agent_tokens.py) and the agent learns that it ran; twenty answers at once
run it once; a second server on the same store decides a change the first made pending.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx
import httpx2
import pytest
from graphql import graphql_sync
from jupyter_server.auth.authorizer import Authorizer
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, TextResourceContents
from tornado.httpclient import HTTPClientError

from ..adversarial import EXPOSED, HIDDEN, leaked
from ..graphql_server import GraphQLServer, graphql_server
from .jupyter_process import AUTH, TOKEN, JupyterServer

BASE_URL = "/user/tester/"  # a hub's single-user server lives under such a prefix
ALLOWED_ORIGIN = "https://lab.example"
SETTINGS = {
    "allowed_mutations": ["createPart", "createProject"],
    "confirm_mutations": ["createPart"],
    "confirm_timeout_seconds": 300,
    "exposed_managers": EXPOSED,
    "allowed_origins": [ALLOWED_ORIGIN],
    "rate_limit": {"requests": None},
}
JSON_RPC = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


# -- servers and clients --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graphql() -> Iterator[GraphQLServer]:
    """The project's data, shared by every server here."""
    with graphql_server() as server:
        yield server


def start(home: Path, graphql: GraphQLServer, **options: Any) -> JupyterServer:
    return JupyterServer(
        home,
        [],
        provider="offline",
        project=graphql.url,
        base_url=BASE_URL,
        chat_settings=SETTINGS,
        **options,
    )


@pytest.fixture(scope="module")
def servers(
    tmp_path_factory: pytest.TempPathFactory, graphql: GraphQLServer
) -> Iterator[tuple[JupyterServer, Future[JupyterServer]]]:
    """The server, and another of the same user on the same store (no proxy, no session
    affinity), which starts while the first one's tests run."""
    home = tmp_path_factory.mktemp("mcp")
    first = start(home / "a", graphql)
    with ThreadPoolExecutor(1) as pool:
        later = pool.submit(start, home / "b", graphql, store=str(first.store_path))
        try:
            yield first, later
        finally:
            first.stop()
            later.result().stop()


@pytest.fixture(scope="module")
def server(servers: tuple[JupyterServer, Future[JupyterServer]]) -> JupyterServer:
    return servers[0]


@pytest.fixture(scope="module")
def second(servers: tuple[JupyterServer, Future[JupyterServer]]) -> JupyterServer:
    return servers[1].result()


def mcp_url(server: JupyterServer) -> str:
    return server.url + "gmchat/mcp"


@asynccontextmanager
async def agent(
    server: JupyterServer, headers: dict[str, str] = AUTH
) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session on the server's MCP endpoint, with its token (or the
    credentials ``headers`` give, as a host configures them)."""
    async with (
        httpx2.AsyncClient(headers=headers, timeout=60) as http,
        streamable_http_client(mcp_url(server), http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


def structured(result: CallToolResult) -> dict[str, Any]:
    assert result.structured_content is not None, result
    return dict(result.structured_content)


def text_content(result: CallToolResult) -> str:
    (only,) = result.content
    assert isinstance(only, TextContent)
    return only.text


def text_of(contents: list[Any]) -> str:
    (only,) = contents
    assert isinstance(only, TextResourceContents)
    return only.text


def rpc_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A whole ``tools/call`` exchange's request, as any HTTP client can send it (stateless)."""
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def projects_named(graphql: GraphQLServer, name: str) -> int:
    """How many projects with this name the data holds."""
    result = graphql_sync(
        graphql.backend.schema,
        "query($f: ProjectFilterTypeDepth1) { projectList(filter: $f) { pageInfo { totalCount } } }",
        variable_values={"f": {"name": name}},
    )
    assert result.errors is None and result.data is not None, result.errors
    return int(result.data["projectList"]["pageInfo"]["totalCount"])


async def confirm(server: JupyterServer, confirmation_id: str, confirmed: bool) -> httpx.Response:
    """A person's decision, on the chat's confirm route from their browser session (the login
    cookie and its XSRF token, as the side panel sends it): an agent's change is never decided
    with a token."""
    async with httpx.AsyncClient(timeout=60) as client:
        await client.get(server.url + "login")  # the _xsrf cookie
        await client.get(server.url + "api/me", params={"token": TOKEN})  # the login cookie
        return await client.post(
            server.url + "gmchat/chat/confirm/",
            json={"confirmation_id": confirmation_id, "confirmed": confirmed},
            headers={"X-XSRFToken": client.cookies["_xsrf"]},
        )


async def pending_change(session: ClientSession, name: str) -> dict[str, Any]:
    """Ask for a confirm-listed change; it waits for a person."""
    result = structured(
        await session.call_tool("mutate", {"mutation": "createPart", "input": {"name": name}})
    )
    assert result["status"] == "pending_confirmation", result
    assert re.fullmatch(r"mcp-[0-9a-f]+", result["confirmation_id"])
    assert result["input"] == {"name": name} and result["expires_in_seconds"] > 200
    return result


async def outcome(session: ClientSession, confirmation_id: str) -> dict[str, Any]:
    return structured(await session.call_tool("mutate", {"confirmation_id": confirmation_id}))


# -- what an agent is offered ---------------------------------------------------------------------


async def test_the_tools_their_hints_and_the_resources(server: JupyterServer) -> None:
    async with agent(server) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert list(tools) == [
            "search_managers",
            "get_manager_schema",
            "find_path",
            "query",
            "mutate",
        ]
        for name in ("search_managers", "get_manager_schema", "find_path"):
            hints = tools[name].annotations
            assert hints is not None and hints.read_only_hint and hints.open_world_hint is False
        query = tools["query"].annotations
        assert query is not None and query.read_only_hint and query.idempotent_hint
        mutate = tools["mutate"].annotations
        assert mutate is not None and mutate.read_only_hint is False and mutate.destructive_hint
        assert mutate.idempotent_hint is False
        assert "confirmation_id" in tools["mutate"].input_schema["properties"]
        assert tools["query"].output_schema is not None

        managers = json.loads(text_of((await session.read_resource("gmchat://managers")).contents))
        assert sorted(m["name"] for m in managers) == sorted(EXPOSED)
        listed = [str(r.uri) for r in (await session.list_resources()).resources]
        assert "gmchat://managers/Part/schema" in listed and not leaked(listed, "")
        schema = json.loads(
            text_of((await session.read_resource("gmchat://managers/Part/schema")).contents)
        )
        assert schema["manager"] == "Part" and "createPart" in schema["mutations"]


async def test_the_read_tools_answer_over_http(server: JupyterServer) -> None:
    async with agent(server) as session:
        found = structured(await session.call_tool("search_managers", {"query": "parts"}))
        assert found["result"][0]["manager"] == "Part"
        schema = structured(await session.call_tool("get_manager_schema", {"manager": "Part"}))
        assert "quantity" in schema["fields"]
        path = structured(
            await session.call_tool("find_path", {"from_manager": "Part", "to_manager": "Project"})
        )
        assert path["to"] == "Project" and path["hops"]
        args = {"manager": "Part", "fields": ["name", "quantity"], "limit": 3}
        rows = await session.call_tool("query", args)
        assert not rows.is_error
        assert len(structured(rows)["rows"]) == 3 and structured(rows)["has_more"] is True
        assert text_content(rows).startswith("3 rows of ")
        wrong = await session.call_tool("query", {"manager": "Part", "fields": "name"})
        assert wrong.is_error  # a mistake the agent can correct, not a protocol error


async def test_the_loop_guard_counts_an_actor_s_calls_across_stateless_requests(
    server: JupyterServer,
) -> None:
    # Each request is a new stateless MCP session (and a token's client another "Anonymous ..."
    # name each time); the loop guard's state is the actor's for a time window, so the same read
    # a second time is run again with a note, and a third time refused.
    args = {"manager": "Material", "fields": ["name", "id"], "limit": 2}  # read by no other test
    answers = []
    for _ in range(3):
        async with agent(server) as session:
            answers.append(await session.call_tool("query", args))
    first, again, third = answers
    assert not first.is_error and "notes" not in structured(first)
    assert not again.is_error and "ran again" in structured(again)["notes"][-1]
    assert third.is_error and structured(third)["code"] == "repeated_call"


async def test_a_hidden_manager_answers_exactly_like_one_that_does_not_exist(
    server: JupyterServer,
) -> None:
    async def answers(session: ClientSession, name: str) -> list[Any]:
        calls: list[tuple[str, dict[str, Any]]] = [
            ("get_manager_schema", {"manager": name}),
            ("query", {"manager": name, "fields": ["name"]}),
            ("find_path", {"from_manager": "Part", "to_manager": name}),
            ("find_path", {"from_manager": name, "to_manager": "Part"}),
        ]
        seen: list[Any] = []
        for tool, arguments in calls:
            result = await session.call_tool(tool, arguments)
            seen.append((result.is_error, result.structured_content, text_content(result)))
        try:
            await session.read_resource(f"gmchat://managers/{name}/schema")
        except MCPError as error:
            seen.append(("resource", str(error)))
        else:
            seen.append(("resource", "read"))
        return seen

    async with agent(server) as session:
        nowhere = await answers(session, "Nonexistent")
        assert all(item[0] is True for item in nowhere[:-1])  # every call an error result
        assert nowhere[-1][1] != "read" and "Nonexistent" in nowhere[-1][1]
        for hidden in HIDDEN:
            probed = await answers(session, hidden)
            assert json.loads(json.dumps(probed).replace(hidden, "Nonexistent")) == json.loads(
                json.dumps(nowhere)
            ), hidden


# -- who may call ---------------------------------------------------------------------------------


async def test_requests_without_credentials_or_from_another_origin_run_nothing(
    server: JupyterServer, graphql: GraphQLServer
) -> None:
    url = mcp_url(server)
    own = f"http://127.0.0.1:{server.port}"

    def create(name: str) -> dict[str, Any]:
        return rpc_call("mutate", {"mutation": "createProject", "input": {"name": name}})

    async with httpx.AsyncClient(timeout=60) as client:
        anonymous = await client.post(url, json=create("Anonymous probe"), headers=JSON_RPC)
        assert anonymous.status_code in (401, 403)
        wrong_token = {**JSON_RPC, "Authorization": "token not-the-token"}
        assert (
            await client.post(url, json=create("Anonymous probe"), headers=wrong_token)
        ).status_code in (401, 403)
        for method in ("GET", "DELETE"):
            assert (await client.request(method, url)).status_code in (401, 403)
        for origin in ("http://evil.example", f"http://127.0.0.1:{server.port + 1}", "null"):
            headers = {**JSON_RPC, **AUTH, "Origin": origin}
            refused = await client.post(url, json=create("Cross-site probe"), headers=headers)
            assert refused.status_code == 403, (origin, refused.text)
            body = refused.json()
            assert body["jsonrpc"] == "2.0" and body["id"] is None
            assert "Origin" in body["error"]["message"]
        assert projects_named(graphql, "Anonymous probe") == 0
        assert projects_named(graphql, "Cross-site probe") == 0

        # The same request with the token runs: from no browser, this server's own page, or an
        # origin the settings allow.
        probes: list[tuple[str, str | None]] = [
            ("Agent probe", None),
            ("Own page", own),
            ("Allowed", ALLOWED_ORIGIN),
        ]
        for name, page in probes:
            headers = {**JSON_RPC, **AUTH, **({"Origin": page} if page else {})}
            answer = await client.post(url, json=create(name), headers=headers)
            assert answer.status_code == 200, answer.text
            assert answer.json()["result"]["structuredContent"]["status"] == "executed"
            assert projects_named(graphql, name) == 1


async def test_a_browser_session_needs_its_xsrf_token_and_own_origin(server: JupyterServer) -> None:
    async with httpx.AsyncClient(timeout=60) as client:
        await client.get(server.url + "login")  # the _xsrf cookie
        await client.get(server.url + "api/me", params={"token": TOKEN})  # the login cookie
        body = rpc_call("search_managers", {"query": "parts"})
        without = await client.post(mcp_url(server), json=body, headers=JSON_RPC)
        assert without.status_code == 403 and "_xsrf" in without.json()["message"]
        xsrf = {**JSON_RPC, "X-XSRFToken": client.cookies["_xsrf"]}
        answer = await client.post(mcp_url(server), json=body, headers=xsrf)
        assert answer.status_code == 200, answer.text
        assert answer.json()["result"]["structuredContent"]["result"][0]["manager"] == "Part"
        cross = {**xsrf, "Origin": "http://evil.example"}
        refused = await client.post(mcp_url(server), json=body, headers=cross)
        assert refused.status_code == 403 and refused.json()["jsonrpc"] == "2.0"


async def test_stateless_get_and_delete_and_oversized_bodies(server: JupyterServer) -> None:
    async with httpx.AsyncClient(headers=AUTH, timeout=60) as client:
        for method in ("GET", "DELETE"):
            answer = await client.request(method, mcp_url(server), headers=JSON_RPC)
            assert answer.status_code == 405 and answer.headers["allow"] == "POST"
            assert "stateless" in answer.json()["error"]["message"]
        huge = rpc_call("search_managers", {"query": "x" * 70_000})
        assert (await client.post(mcp_url(server), json=huge, headers=JSON_RPC)).status_code == 413
        plain = await client.post(
            mcp_url(server), content=b"{}", headers={"Accept": "application/json"}
        )
        assert plain.status_code == 400 and plain.json()["error"]["message"]


@pytest.fixture
def without_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python without the MCP SDK (the ``[mcp]`` extra not installed)."""
    monkeypatch.setitem(sys.modules, "mcp", None)


async def test_without_the_extra_the_route_says_what_to_install(
    without_the_extra: None, jp_fetch: Any
) -> None:
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch("gmchat", "mcp", method="POST", body="{}")
    assert refused.value.code == 501
    assert refused.value.response is not None
    assert "[mcp]" in json.loads(refused.value.response.body)["message"]


@pytest.fixture
def unreachable_project(jp_server_config: dict[str, Any]) -> None:
    """The server's project is a GraphQL endpoint nobody listens on."""
    jp_server_config["GMChat"]["project"] = "http://127.0.0.1:9/graphql/"


async def test_a_project_that_cannot_be_reached_is_503(
    unreachable_project: None, jp_fetch: Any
) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"},
        },
    }
    response = await jp_fetch(
        "gmchat",
        "mcp",
        method="POST",
        body=json.dumps(initialize),
        headers=dict(JSON_RPC),  # jp_fetch adds its token to the dict it is given
        raise_error=False,
    )
    assert response.code == 503
    body = json.loads(response.body)
    assert body["jsonrpc"] == "2.0" and "not available" in body["error"]["message"]


async def jp_tool(jp_fetch: Any, token: str | None, name: str, arguments: dict[str, Any]) -> Any:
    """A ``tools/call`` on the pytest-jupyter server as the user of ``token`` (None: the
    server's own token): its result."""
    response = await jp_fetch(
        "gmchat",
        "mcp",
        method="POST",
        body=json.dumps(rpc_call(name, arguments)),
        headers={**JSON_RPC, **({"Authorization": f"token {token}"} if token else {})},
    )
    return json.loads(response.body)["result"]["structuredContent"]


@pytest.mark.gmchat(
    identity_provider_class="tests.server_ext.identity.TwoUsers",
    allowed_mutations=["createPart"],
    confirm_mutations=["createPart"],
)
async def test_an_agent_acts_as_its_own_user_only(jp_fetch: Any) -> None:
    """Two users of one server: each agent is its user, and another's change is not theirs."""
    change = {"mutation": "createPart", "input": {"name": "Alice Washer"}}
    pending = await jp_tool(jp_fetch, "alice-token", "mutate", change)
    asked = {"confirmation_id": pending["confirmation_id"]}
    assert (await jp_tool(jp_fetch, "bob-token", "mutate", asked))["code"] == (
        "unknown_confirmation"
    )
    decision = json.dumps({**asked, "confirmed": True})
    with pytest.raises(HTTPClientError) as refused:
        await jp_fetch(
            "gmchat/chat/confirm/",
            method="POST",
            body=decision,
            headers={"Authorization": "token bob-token"},
        )
    assert refused.value.code == 409
    with pytest.raises(HTTPClientError) as by_token:  # alice's own token is no person either
        await jp_fetch(
            "gmchat/chat/confirm/",
            method="POST",
            body=decision,
            headers={"Authorization": "token alice-token"},
        )
    assert by_token.value.code == 403
    assert (await jp_tool(jp_fetch, "alice-token", "mutate", asked))["status"] == (
        "pending_confirmation"
    )
    assert (await jp_tool(jp_fetch, "bob-token", "mutate", asked))["code"] == (
        "unknown_confirmation"
    )


class ReadOnly(Authorizer):
    """The deployment's authorizer: everyone may read gmchat, nobody may do more."""

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read"


@pytest.fixture
def read_only(jp_server_config: dict[str, Any]) -> None:
    jp_server_config["ServerApp"]["authorizer_class"] = ReadOnly


@pytest.mark.gmchat(allowed_mutations=["createPart"])
async def test_a_change_needs_the_authorizer_s_execute(read_only: None, jp_fetch: Any) -> None:
    found = await jp_tool(jp_fetch, None, "search_managers", {"query": "parts"})
    assert found["result"][0]["manager"] == "Part"
    change = {"mutation": "createPart", "input": {"name": "Unauthorized Washer"}}
    with pytest.raises(HTTPClientError) as refused:
        await jp_tool(jp_fetch, None, "mutate", change)
    assert refused.value.code == 403 and refused.value.response is not None
    assert "execute" in json.loads(refused.value.response.body)["message"]
    counted = await jp_tool(
        jp_fetch,
        None,
        "query",
        {"manager": "Part", "fields": ["name"], "filters": {"name": "Unauthorized Washer"}},
    )
    assert counted["total"] == 0


# -- changes keep their human ---------------------------------------------------------------------


async def test_a_person_confirms_a_pending_change_and_the_agent_learns_it_ran(
    server: JupyterServer, graphql: GraphQLServer
) -> None:
    async with agent(server) as session:
        pending = await pending_change(session, "Spring Washer")
        confirmation_id = pending["confirmation_id"]
        assert graphql.count("Spring Washer") == 0
        assert (await outcome(session, confirmation_id))["status"] == "pending_confirmation"

        # The side panel reads the conversation's events: the change waits there.
        shown = await confirm_mutation_event(server, pending["conversation_id"])
        assert shown["id"] == confirmation_id and shown["mutation"] == "createPart"
        assert shown["input"] == {"name": "Spring Washer"}

        decided = await confirm(server, confirmation_id, True)
        assert decided.status_code == 200, decided.text
        ran = decided.json()["events"][0]
        assert ran["type"] == "tool_result" and ran["result"]["status"] == "executed"
        assert graphql.count("Spring Washer") == 1

        learned = await outcome(session, confirmation_id)
        assert learned["status"] == "executed" and learned["mutation"] == "createPart"
        assert learned["data"]["Part"]["name"] == "Spring Washer"

        rejected = await pending_change(session, "Never Washer")
        assert (await confirm(server, rejected["confirmation_id"], False)).status_code == 200
        assert await outcome(session, rejected["confirmation_id"]) == {
            "status": "cancelled",
            "reason": "user_rejected",
            "confirmation_id": rejected["confirmation_id"],
        }
        assert graphql.count("Never Washer") == 0
        unknown = await outcome(session, "mcp-0000")
        assert unknown["code"] == "unknown_confirmation"


async def confirm_mutation_event(server: JupyterServer, conversation_id: str) -> dict[str, Any]:
    """The ``confirm_mutation`` event of a conversation, as the events route streams it."""
    url = server.url + f"gmchat/chat/conversations/{conversation_id}/events"
    async with (
        httpx.AsyncClient(headers=AUTH, timeout=60) as client,
        client.stream("GET", url, params={"after": "0"}) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                event: dict[str, Any] = json.loads(line[6:])
                if event["type"] == "confirm_mutation":
                    return event
    raise AssertionError("the events route ended without the confirm_mutation")


async def test_twenty_answers_at_once_run_the_change_once(
    server: JupyterServer, second: JupyterServer, graphql: GraphQLServer
) -> None:
    """Ten people confirm and ten agent calls ask at once, on two servers sharing the store."""
    async with agent(server) as on_a, agent(second) as on_b:
        pending = await pending_change(on_a, "Race Washer")
        confirmation_id = pending["confirmation_id"]
        before = graphql.mutations
        people = [confirm(s, confirmation_id, True) for s in (server, second) * 5]
        agents = [outcome(s, confirmation_id) for s in (on_a, on_b) * 5]
        decisions, learned = await asyncio.gather(asyncio.gather(*people), asyncio.gather(*agents))

        assert sorted(r.status_code for r in decisions) == [200] + [409] * 9
        codes = [r.json()["events"][0]["code"] for r in decisions if r.status_code == 409]
        # Decided already (the store's claim: always some, as two servers raced for it); or,
        # while the winning decision's turn still runs on the same server, busy.
        assert "bad_event" in codes and set(codes) <= {"bad_event", "turn_in_progress"}, codes
        assert {r["status"] for r in learned} <= {"pending_confirmation", "running", "executed"}
        assert graphql.mutations - before == 1 and graphql.count("Race Washer") == 1
        assert (await outcome(on_b, confirmation_id))["status"] == "executed"
        counted = structured(
            await on_a.call_tool(
                "query", {"manager": "Part", "fields": ["name"], "filters": {"name": "Race Washer"}}
            )
        )
        assert counted["total"] == 1


async def test_a_change_made_pending_on_one_server_is_decided_on_another(
    server: JupyterServer, second: JupyterServer, graphql: GraphQLServer
) -> None:
    async with agent(server) as on_a:
        pending = await pending_change(on_a, "Shared Washer")
    decided = await confirm(second, pending["confirmation_id"], True)
    assert decided.status_code == 200, decided.text
    assert graphql.count("Shared Washer") == 1
    async with agent(second) as on_b:
        assert (await outcome(on_b, pending["confirmation_id"]))["status"] == "executed"
    async with agent(server) as on_a:
        assert (await outcome(on_a, pending["confirmation_id"]))["status"] == "executed"

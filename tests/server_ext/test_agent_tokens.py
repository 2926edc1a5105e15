"""Agent tokens end to end, as a person and an agent meet them: a real `jupyter server` process
(under a hub-like ``base_url``), a real GraphQL server holding the data (so what ran is counted
where it happened), a person's browser session (Jupyter's login cookie and its XSRF token) on
the ``{url}agent-tokens/`` routes and the confirm route, and the official MCP SDK's client with
the agent token.

What a person relies on: a token is made only from their browser session (or the terminal), shown
once, stored hashed; it reaches the MCP route and nothing else; it may read, or propose a change
that only the person decides (never a token: neither the agent's nor the Jupyter token); revoked
or expired, it stops at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import httpx
import pytest
import websockets
from mcp import ClientSession

from gmchat_nb.core.agent.tokens import AgentTokens
from gmchat_nb.core.store import ChatStore

from ..graphql_server import GraphQLServer, graphql_server
from .jupyter_process import AUTH, TOKEN, JupyterServer
from .test_mcp_http import JSON_RPC, mcp_url, rpc_call, start, structured
from .test_mcp_http import agent as mcp_agent

TOKENS = "gmchat/chat/agent-tokens/"


@pytest.fixture(scope="module")
def graphql() -> Iterator[GraphQLServer]:
    with graphql_server() as server:
        yield server


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, graphql: GraphQLServer
) -> Iterator[JupyterServer]:
    running = start(tmp_path_factory.mktemp("agent-tokens"), graphql)
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def browser(server: JupyterServer) -> AsyncIterator[httpx.AsyncClient]:
    """A person's browser session: the login cookie (from opening the server's link with its
    token once, as JupyterLab's URL does) and the ``_xsrf`` cookie its pages send back."""
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as client:
        await client.get("login")
        await client.get("api/me", params={"token": TOKEN})
        client.headers["X-XSRFToken"] = client.cookies["_xsrf"]
        yield client


def agent(server: JupyterServer, secret: str) -> AbstractAsyncContextManager[ClientSession]:
    """An initialized MCP client session with an agent token, as a host configures it."""
    return mcp_agent(server, {"Authorization": f"Bearer {secret}"})


async def make_token(server: JupyterServer, **body: Any) -> dict[str, Any]:
    async with browser(server) as person:
        made = await person.post(TOKENS, json={"name": "claude", **body})
    assert made.status_code == 201, made.text
    return dict(made.json())


async def fetch(method: str, url: str, **options: Any) -> httpx.Response:
    """One request of a client with no cookies (an agent, a script)."""
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.request(method, url, **options)


async def raw_mcp(server: JupyterServer, secret: str, body: dict[str, Any]) -> httpx.Response:
    headers = {**JSON_RPC, "Authorization": f"Bearer {secret}"}
    return await fetch("POST", mcp_url(server), json=body, headers=headers)


def confirm_body(confirmation_id: str) -> dict[str, Any]:
    return {"confirmation_id": confirmation_id, "confirmed": True}


# -- the whole flow -------------------------------------------------------------------------------


async def test_an_agent_proposes_only_its_person_decides_and_revoked_it_stops(
    server: JupyterServer, graphql: GraphQLServer
) -> None:
    made = await make_token(server, scopes=["read", "propose"], expires_in_days=30)
    secret, token = made["secret"], made["token"]
    assert secret.startswith("gmat_") and token["prefix"] == secret[:12]
    assert token["scopes"] == ["read", "propose"] and token["state"] == "active"
    assert 29.9 * 86400 < token["expires_at"] - token["created_at"] <= 30 * 86400

    async with agent(server, secret) as session:
        offered = {tool.name for tool in (await session.list_tools()).tools}
        assert {"search_managers", "query", "mutate"} <= offered
        found = structured(await session.call_tool("search_managers", {"query": "parts"}))
        assert found["result"][0]["manager"] == "Part"
        pending = structured(
            await session.call_tool(
                "mutate", {"mutation": "createPart", "input": {"name": "AgentPart"}}
            )
        )
    assert pending["status"] == "pending_confirmation", pending
    assert "person has been asked" in pending["message"]
    assert "confirm/" not in pending["message"]  # the agent is not told how to decide it
    decision = confirm_body(pending["confirmation_id"])
    confirm_url = server.url + "gmchat/chat/confirm/"

    # the agent with its own token: not Jupyter's credential, refused before gmchat runs
    bearer = {"Authorization": f"Bearer {secret}"}
    assert (await fetch("POST", confirm_url, json=decision, headers=bearer)).status_code == 403
    # the agent (or a script) with the person's Jupyter token: a person decides, not a token
    with_token = await fetch("POST", confirm_url, json=decision, headers=AUTH)
    assert with_token.status_code == 403, with_token.text
    (refusal,) = with_token.json()["events"]
    assert refusal["code"] == "bad_event" and "person" in refusal["message"]
    assert graphql.count("AgentPart") == 0
    async with agent(server, secret) as session:
        still = structured(
            await session.call_tool("mutate", {"confirmation_id": pending["confirmation_id"]})
        )
    assert still["status"] == "pending_confirmation"

    # the person, in their browser session (the side panel's request)
    async with browser(server) as person:
        decided = await person.post("gmchat/chat/confirm/", json=decision)
    assert decided.status_code == 200, decided.text
    assert any(e["type"] == "tool_result" for e in decided.json()["events"])
    async with agent(server, secret) as session:
        learned = structured(
            await session.call_tool("mutate", {"confirmation_id": pending["confirmation_id"]})
        )
    assert learned["status"] == "executed", learned
    assert graphql.count("AgentPart") == 1

    async with browser(server) as person:
        listed = (await person.get(TOKENS)).json()["tokens"]
        assert [t["id"] for t in listed if t["id"] == token["id"]] == [token["id"]]
        assert "secret" not in json.dumps(listed) and secret not in json.dumps(listed)
        (mine,) = [t for t in listed if t["id"] == token["id"]]
        assert mine["last_used_at"] is not None
        revoked = await person.delete(TOKENS + token["id"])
    assert revoked.status_code == 200 and revoked.json()["token"]["state"] == "revoked"
    refused = await raw_mcp(server, secret, rpc_call("search_managers", {"query": "parts"}))
    assert refused.status_code == 401, refused.text
    assert refused.json()["error"]["code"] == -32600
    assert "revoked" in refused.json()["error"]["message"]
    assert refused.headers["WWW-Authenticate"].startswith("Bearer")


async def test_a_read_token_is_offered_no_change_and_cannot_make_one(
    server: JupyterServer,
) -> None:
    secret = (await make_token(server))["secret"]  # scopes default to read
    async with agent(server, secret) as session:
        offered = {tool.name for tool in (await session.list_tools()).tools}
    assert "query" in offered and "mutate" not in offered
    change = rpc_call("mutate", {"mutation": "createPart", "input": {"name": "Sneaky"}})
    answer = await raw_mcp(server, secret, change)
    assert answer.status_code == 403 and "propose" in answer.json()["error"]["message"]


async def test_an_agent_token_reaches_the_mcp_route_and_nothing_else(
    server: JupyterServer,
) -> None:
    secret = (await make_token(server, scopes=["read", "propose"]))["secret"]
    for scheme in ("Bearer", "token"):
        headers = {"Authorization": f"{scheme} {secret}"}
        for method, path in (
            ("GET", "gmchat/chat/conversations/"),
            ("POST", "gmchat/chat/"),
            ("GET", TOKENS),
            ("POST", TOKENS),
            ("GET", "api/kernels"),
            ("POST", "api/kernels"),
            ("GET", "api/contents"),
        ):
            answer = await fetch(
                method, server.url + path, headers=headers, json={"text": "hi"}, timeout=60
            )
            assert answer.status_code == 403, (scheme, method, path, answer.status_code)


async def test_only_a_person_s_browser_session_manages_tokens(server: JupyterServer) -> None:
    for headers in (AUTH, {"Authorization": f"Bearer {TOKEN}"}):
        listed = await fetch("GET", server.url + TOKENS, headers=headers)
        assert listed.status_code == 403 and listed.json()["code"] == "forbidden", listed.text
        made = await fetch("POST", server.url + TOKENS, json={"name": "x"}, headers=headers)
        assert made.status_code == 403 and made.json()["code"] == "forbidden"
    made = await fetch("GET", server.url + TOKENS, params={"token": TOKEN})
    assert made.status_code == 403
    async with browser(server) as person:
        del person.headers["X-XSRFToken"]  # a page of another site cannot read the cookie
        assert (await person.post(TOKENS, json={"name": "x"})).status_code == 403


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"name": "  "}, "name"),
        ({}, "name"),
        ({"name": 7}, "name"),
        ({"name": "x" * 101}, "100"),
        ({"name": "x", "scopes": ["read", "decide"]}, "decide"),
        ({"name": "x", "scopes": "read"}, "list"),
        ({"name": "x", "scopes": []}, "read"),
        ({"name": "x", "expires_in_days": 0}, "between"),
        ({"name": "x", "expires_in_days": 400}, "between"),
        ({"name": "x", "expires_in_days": True}, "number"),
        ({"name": "x", "expires_in_days": "90"}, "number"),
        ({"name": "x", "owner": "bob"}, "owner"),
    ],
)
async def test_a_bad_request_for_a_token_names_what_is_wrong(
    server: JupyterServer, body: dict[str, Any], says: str
) -> None:
    async with browser(server) as person:
        answer = await person.post(TOKENS, json=body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["code"] == "invalid" and says in answer.json()["message"]


async def test_hostile_bodies_and_ids_are_refused_plainly(server: JupyterServer) -> None:
    async with browser(server) as person:
        for raw in (b"[", b'"x"', b"[" * 5000 + b"]" * 5000, b'{"name": "\\ud800"}'):
            answer = await person.post(TOKENS, content=raw)
            assert answer.status_code == 400, (raw[:20], answer.status_code)
        huge = await person.post(TOKENS, content=b'{"name": "' + b"x" * 200_000 + b'"}')
        assert huge.status_code == 413
        for token_id in ("at_nope", "%F0%9F%98%80", "x" * 5000):
            answer = await person.delete(TOKENS + token_id)
            assert answer.status_code == 404 and answer.json()["code"] == "not_found"


async def test_an_expired_token_stops_and_another_person_s_is_refused(
    server: JupyterServer,
) -> None:
    with ChatStore(str(server.store_path)) as store:
        yesterday = AgentTokens(store, clock=lambda: time.time() - 2 * 86400)
        expired = yesterday.create("root", "old", ["read"], 1).secret
        other = AgentTokens(store).create("someone-else", "theirs", ["read"]).secret
    body = rpc_call("search_managers", {"query": "parts"})
    assert (await raw_mcp(server, expired, body)).status_code == 401
    # a server sharing the store is its own user's: another person's token is not for it
    assert (await raw_mcp(server, other, body)).status_code == 401
    assert (await raw_mcp(server, "gmat_" + "A" * 43, body)).status_code == 401
    assert (await raw_mcp(server, "gmat_short", body)).status_code == 401


def test_only_the_token_s_hash_is_stored(server: JupyterServer) -> None:
    with ChatStore(str(server.store_path)) as store:
        made = AgentTokens(store).create("root", "hashed", ["read"])
    raw = sqlite3.connect(server.store_path)
    try:
        rows = raw.execute("SELECT * FROM agent_tokens WHERE id = ?", (made.record.id,)).fetchall()
    finally:
        raw.close()
    assert made.secret not in repr(rows)
    assert hashlib.sha256(made.secret.encode()).hexdigest() in repr(rows)


async def gmchat(*arguments: str) -> subprocess.CompletedProcess[str]:
    """``gmchat ARGUMENTS`` in a process of its own (as a person types it on the server)."""
    command = [sys.executable, "-m", "gmchat_nb.cli", *arguments]
    return await asyncio.to_thread(
        subprocess.run, command, capture_output=True, text=True, timeout=120
    )


async def test_a_token_made_in_the_terminal_works_on_the_server(server: JupyterServer) -> None:
    store = str(server.store_path)
    made = await gmchat("agent-token", "create", "--name", "terminal", "--store", store)
    assert made.returncode == 0, made.stderr
    secret = made.stdout.strip()
    assert secret.startswith("gmat_") and "shown only now" in made.stderr
    answer = await raw_mcp(server, secret, rpc_call("search_managers", {"query": "parts"}))
    assert answer.status_code == 200, answer.text
    listed = await gmchat("agent-token", "list", "--json", "--store", store)
    (mine,) = [t for t in json.loads(listed.stdout)["tokens"] if t["name"] == "terminal"]
    revoked = await gmchat("agent-token", "revoke", mine["id"], "--store", store)
    assert revoked.returncode == 0, revoked.stderr
    answer = await raw_mcp(server, secret, rpc_call("search_managers", {"query": "parts"}))
    assert answer.status_code == 401
    unknown = await gmchat("agent-token", "revoke", mine["id"] + "0", "--store", store)
    assert unknown.returncode == 1 and "no agent token" in unknown.stderr


async def test_a_socket_opened_with_a_token_cannot_decide_an_agent_s_change(
    server: JupyterServer, graphql: GraphQLServer
) -> None:
    secret = (await make_token(server, scopes=["read", "propose"]))["secret"]
    async with agent(server, secret) as session:
        pending = structured(
            await session.call_tool(
                "mutate", {"mutation": "createPart", "input": {"name": "SocketPart"}}
            )
        )
    decision = {
        "type": "confirm",
        "confirmation_id": pending["confirmation_id"],
        "confirmed": True,
        "conversation_id": pending["conversation_id"],
    }
    async with websockets.connect(server.ws_url, additional_headers=AUTH) as socket:
        await socket.send(json.dumps(decision))
        refusal = json.loads(await asyncio.wait_for(socket.recv(), 30))
    assert refusal["type"] == "error" and "person" in refusal["message"], refusal
    assert graphql.count("SocketPart") == 0
    async with browser(server) as person:
        decided = await person.post(
            "gmchat/chat/confirm/", json=confirm_body(decision["confirmation_id"])
        )
    assert decided.status_code == 200, decided.text
    assert graphql.count("SocketPart") == 1

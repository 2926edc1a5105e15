"""A real `jupyter server` subprocess on 127.0.0.1 with a token, driven by independent clients:
httpx (JSON and streaming SSE) and the `websockets` library; cookies, XSRF and Origin."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import websockets

from .jupyter_process import AUTH, TOKEN
from .jupyter_process import JupyterServer as Server

# One conversation (a single-user server: every token request is the owner) serves them all.
ROUNDS = [{"chunks": ["Hello ", "from ", "Jupyter."]}] * 50


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("jupyter"), ROUNDS, base_url="/base/")
    yield running
    running.stop()


def chat(server: Server) -> str:
    return server.url + "gmchat/chat/"


def test_http_post_with_a_token(server: Server) -> None:
    response = httpx.post(chat(server), json={"text": "Hi"}, headers=AUTH)
    assert response.status_code == 200
    assert response.json()["answer"] == "Hello from Jupyter."


def test_no_token_is_403(server: Server) -> None:
    assert httpx.post(chat(server), json={"text": "Hi"}).status_code == 403
    assert httpx.get(chat(server) + "conversations/").status_code == 403


async def test_sse_with_httpx_streaming(server: Server) -> None:
    frames: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=10) as client,
        client.stream("POST", chat(server) + "stream/", json={"text": "Hi"}, headers=AUTH) as r,
    ):
        assert r.headers["content-type"] == "text/event-stream"
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
    assert [f["type"] for f in frames] == ["text_chunk"] * 3 + ["done"]


async def test_websocket_with_the_websockets_library(server: Server) -> None:
    url = chat(server).replace("http://", "ws://") + "ws"
    async with websockets.connect(url, additional_headers=AUTH) as ws:
        await ws.send(json.dumps({"type": "message", "text": "Hi"}))
        events = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(4)]
    assert [e["type"] for e in events] == ["text_chunk"] * 3 + ["done"]


@contextmanager
def logged_in(server: Server) -> Iterator[httpx.Client]:
    """A browser-like client: the login cookie (from ?token=) and the _xsrf cookie."""
    with httpx.Client(timeout=10) as client:
        yield _login(server, client)


def _login(server: Server, client: httpx.Client) -> httpx.Client:
    client.get(server.url + "login")  # sets _xsrf
    client.get(server.url + "api/me", params={"token": TOKEN})  # sets the login cookie
    assert any(name.startswith("username-") for name in client.cookies), client.cookies
    return client


def test_cookie_post_needs_xsrf(server: Server) -> None:
    with logged_in(server) as client:
        assert client.get(chat(server) + "conversations/").status_code == 200
        assert client.post(chat(server), json={"text": "Hi"}).status_code == 403
        xsrf = client.cookies["_xsrf"]
        ok = client.post(chat(server), json={"text": "Hi"}, headers={"X-XSRFToken": xsrf})
        assert ok.status_code == 200


async def test_cookie_websocket_checks_origin(server: Server) -> None:
    with logged_in(server) as client:
        cookie = "; ".join(f"{k}={v}" for k, v in client.cookies.items())
    url = chat(server).replace("http://", "ws://") + "ws"
    with pytest.raises(websockets.InvalidStatus) as refused:
        async with websockets.connect(
            url, additional_headers={"Cookie": cookie}, origin="http://evil.example"
        ):
            pass
    assert refused.value.response.status_code == 403
    same = f"http://127.0.0.1:{server.port}"
    async with websockets.connect(url, additional_headers={"Cookie": cookie}, origin=same) as ws:
        await ws.send(json.dumps({"type": "dance"}))
        assert json.loads(await asyncio.wait_for(ws.recv(), 5))["code"] == "bad_event"

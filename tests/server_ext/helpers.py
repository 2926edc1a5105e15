"""Small helpers for the server extension tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from gmchat_nb.server_ext import GMChat
from gmchat_nb.server_ext.sessions import ChatRuntime


async def call(
    jp_fetch: Any, route: str, payload: Any = None, *, method: str = "POST", **kwargs: Any
) -> tuple[int, Any]:
    """(status, JSON) of a request to ``gmchat/chat/<route>``; errors do not raise."""
    body = payload if isinstance(payload, str | bytes) else json.dumps(payload)
    response = await jp_fetch(
        "gmchat/chat/" + route,
        method=method,
        body=body if method == "POST" else None,
        raise_error=False,
        **kwargs,
    )
    return response.code, json.loads(response.body) if response.body else None


def runtime(serverapp: Any) -> ChatRuntime:
    """The extension's runtime inside a pytest-jupyter server."""
    for extension in serverapp.extension_manager.extensions.values():
        for point in extension.extension_points.values():
            if isinstance(point.app, GMChat) and point.app.runtime is not None:
                return point.app.runtime
    raise LookupError("gmchat is not loaded")


async def spring_count(rt: ChatRuntime) -> int:
    """How many parts named Spring the demo holds (did the mutation run, and how often)."""
    project = await rt.project()
    result = await project.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "filters": {"name": "Spring"}}
    )
    return int(result["total_count"])


def sse_events(chunks: list[bytes]) -> list[dict[str, Any]]:
    """The data frames of an SSE body."""
    body = b"".join(chunks).decode()
    return [
        json.loads(frame[len("data: ") :])
        for frame in body.split("\n\n")
        if frame.startswith("data: ")
    ]


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


# -- WebSocket (tornado's client, as pytest-jupyter's jp_ws_fetch gives it) --------------------


async def send(ws: Any, payload: Any) -> None:
    await ws.write_message(payload if isinstance(payload, str) else json.dumps(payload))


async def read(ws: Any) -> dict[str, Any]:
    message = await asyncio.wait_for(ws.read_message(), 5)
    assert message is not None, f"closed with {ws.close_code}"
    return json.loads(message)  # type: ignore[no-any-return]


async def read_turn(ws: Any, until: str = "done") -> list[dict[str, Any]]:
    events = []
    while True:
        event = await read(ws)
        events.append(event)
        if event["type"] in (until, "done", "error"):
            return events

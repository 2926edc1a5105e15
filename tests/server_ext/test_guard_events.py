"""A turn that defends itself, as a client of a real `jupyter server` sees it.

The loop guard's ``notice`` and ``done.guards`` reach the client on every transport (``POST
{url}``, ``POST {url}stream/``, the WebSocket); the completion gates' ``stream_reset`` withdraws a
draft answer from the HTTP envelope's ``answer``, and the journal (``GET
{url}conversations/{id}/events``) replays it in order. The models are scripted: each
conversation plays its server's script from the first round.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from websockets.sync.client import connect

from gmchat_nb.core.events import answer_text
from gmchat_nb.core.project.connect import demo_project

from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

PARTS = {"manager": "Part", "fields": ["name"]}
QUESTION = "How many parts are there?"
FINAL = "These are the parts I found."
# The same query four times: it runs, is answered from its first result, is refused, and is
# refused again -- ignoring a refusal twice stops the turn, which ends with one final answer.
LOOPING = [
    *({"tool_calls": [{"name": "query", "id": f"call-{n}", "args": PARTS}]} for n in range(1, 5)),
    {"text": FINAL},
]
DRAFT = "There are 4711 parts."


def part_count() -> int:
    """How many parts the inventory demo (the servers' ``project: demo``) holds, by a query."""

    async def count() -> int:
        async with demo_project() as project:
            result = await project.call_tool("query", PARTS)
        return int(result["total_count"])

    return asyncio.run(count())


def start(tmp_path_factory: pytest.TempPathFactory, name: str, rounds: Any) -> Server:
    # every completion gate on (grounded_numbers is off by default)
    return Server(
        tmp_path_factory.mktemp(name),
        rounds,
        keepalive_seconds=0.3,
        chat_settings={"completion_gates": True},
    )


@pytest.fixture(scope="module")
def looping(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory, "looping", LOOPING)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def parts() -> int:
    count = part_count()
    assert count > 10  # a number the grounded_numbers gate checks (0-10 are not checked)
    return count


@pytest.fixture(scope="module")
def gated(tmp_path_factory: pytest.TempPathFactory, parts: int) -> Iterator[Server]:
    """A query, then a draft answer with a number no result shows, then the corrected one."""
    rounds = [
        {"tool_calls": [{"name": "query", "id": "call-1", "args": PARTS}]},
        {"text": DRAFT},
        {"text": f"There are {parts} parts."},
    ]
    server = start(tmp_path_factory, "gated", rounds)
    yield server
    server.stop()


# -- the three transports ------------------------------------------------------------------------


def post(url: str, payload: Any) -> httpx.Response:
    return httpx.post(url, json=payload, headers=AUTH, timeout=30)


def new_conversation(server: Server) -> str:
    created = post(server.chat_url + "conversations/", {})
    assert created.status_code == 201, created.text
    return str(created.json()["conversation"]["id"])


def envelope(server: Server, text: str = QUESTION) -> dict[str, Any]:
    """``POST {url}``: the turn's envelope (in a new conversation)."""
    response = post(server.chat_url, {"text": text, "conversation_id": new_conversation(server)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def sse_data(raw: str) -> list[tuple[str | None, dict[str, Any]]]:
    """(``id``, decoded ``data``) of each complete frame of an SSE body."""
    frames = []
    for block in raw.split("\n\n")[:-1]:
        frame_id, data = None, None
        for line in block.split("\n"):
            if line.startswith("id: "):
                frame_id = line[4:]
            elif line.startswith("data: "):
                data = json.loads(line[6:])
        if data is not None:
            frames.append((frame_id, data))
    return frames


def read_sse(method: str, url: str, **options: Any) -> list[tuple[str | None, dict[str, Any]]]:
    """The frames of an SSE response until its first terminal event (or the server's end)."""
    raw = ""
    with httpx.stream(method, url, headers=AUTH, timeout=30, **options) as response:
        assert response.status_code == 200, response.read()
        assert response.headers["content-type"].startswith("text/event-stream")
        for chunk in response.iter_text():
            raw += chunk
            frames = sse_data(raw)
            if any(data["type"] in ("done", "error") for _, data in frames):
                return frames
    return sse_data(raw)


def streamed(server: Server, text: str = QUESTION) -> list[dict[str, Any]]:
    """``POST {url}stream/``: the turn's events (in a new conversation)."""
    body = {"text": text, "conversation_id": new_conversation(server)}
    return [data for _, data in read_sse("POST", server.chat_url + "stream/", json=body)]


def socketed(server: Server, text: str = QUESTION) -> list[dict[str, Any]]:
    """The WebSocket: the turn's events (in a new conversation)."""
    query = f"?conversation_id={new_conversation(server)}"
    events: list[dict[str, Any]] = []
    with connect(server.ws_url + query, additional_headers=AUTH, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "message", "text": text}))
        deadline = time.monotonic() + 30
        while not events or events[-1]["type"] not in ("done", "error"):
            events.append(json.loads(ws.recv(timeout=max(deadline - time.monotonic(), 0.1))))
    return events


TRANSPORTS = {"http": lambda s: envelope(s)["events"], "sse": streamed, "websocket": socketed}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


# -- the loop guard ------------------------------------------------------------------------------


@pytest.mark.parametrize("transport", list(TRANSPORTS))
def test_the_loop_guard_s_notice_and_counts_reach_the_client(
    looping: Server, transport: str
) -> None:
    events = TRANSPORTS[transport](looping)
    assert types(events) == [
        *["tool_call", "tool_result"] * 4,
        "notice",
        "text_chunk",
        "done",
    ]
    results = [event["result"] for event in events if event["type"] == "tool_result"]
    assert "repeat" not in results[0] and results[0]["total_count"] > 0
    assert results[1]["repeat"] is True and "already called query" in results[1]["note"]
    assert results[1]["total_count"] == results[0]["total_count"]  # the earlier result
    assert [result["code"] for result in results[2:]] == ["repeated_call", "repeated_call"]
    notice = events[-3]
    assert notice["kind"] == "loop_guard"
    assert notice["details"] == {"stopped_by": "repeated_call"}
    assert notice["message"]
    assert events[-2]["content"] == FINAL
    assert events[-1]["guards"] == {
        "repeats": 1,
        "refusals": 2,
        "requests": 5,
        "tool_calls": 4,
        "stopped_by": "repeated_call",
    }
    assert [event["sequence"] for event in events] == list(range(1, len(events) + 1))


# -- the completion gates ------------------------------------------------------------------------


def check_corrected(events: list[dict[str, Any]], parts: int) -> None:
    """The draft streamed, withdrawn by ``stream_reset``, a ``gate`` notice, the correction."""
    assert types(events) == [
        "tool_call",
        "tool_result",
        "text_chunk",
        "stream_reset",
        "notice",
        "text_chunk",
        "done",
    ]
    assert events[1]["result"]["total_count"] == parts  # the server's data: the count queried
    assert events[2]["content"] == DRAFT
    assert events[3]["reason"]
    assert (events[4]["kind"], events[4]["details"]) == ("gate", {"gates": ["grounded_numbers"]})
    assert events[5]["content"] == f"There are {parts} parts."
    assert all(gate["passed"] for gate in events[-1]["gates"])
    assert answer_text(events) == f"There are {parts} parts."


def test_the_envelope_s_answer_leaves_out_the_withdrawn_draft(gated: Server, parts: int) -> None:
    body = envelope(gated)
    check_corrected(body["events"], parts)
    assert body["answer"] == f"There are {parts} parts."
    assert DRAFT not in body["answer"]


@pytest.mark.parametrize("transport", ["sse", "websocket"])
def test_the_streams_withdraw_the_draft_too(gated: Server, parts: int, transport: str) -> None:
    check_corrected(TRANSPORTS[transport](gated), parts)


def test_the_journal_replays_the_stream_reset_in_order(gated: Server, parts: int) -> None:
    body = envelope(gated)
    conversation = body["conversation_id"]
    url = gated.chat_url + f"conversations/{conversation}/events"
    frames = read_sse("GET", url, params={"after": "0"})
    replayed = [data for _, data in frames]
    assert [frame_id for frame_id, _ in frames] == [str(n) for n in range(1, len(frames) + 1)]
    assert types(replayed) == types(body["events"])
    check_corrected(replayed, parts)
    for live, journaled in zip(body["events"], replayed, strict=True):
        same = {k: v for k, v in journaled.items() if k not in ("position", "turn_id")}
        assert same == live  # a fresh conversation: journal positions equal per-turn numbers
    # a reader that resumes after the draft still sees the reset that withdraws it
    after_draft = read_sse("GET", url, params={"after": "3"})
    assert types([data for _, data in after_draft]) == [
        "stream_reset",
        "notice",
        "text_chunk",
        "done",
    ]

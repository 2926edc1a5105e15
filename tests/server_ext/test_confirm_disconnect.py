"""Confirming a durable turn does not tie it to the confirming request, against real `jupyter
server` processes on a SQLite file and on PostgreSQL.

A turn admitted with ``POST turns/`` runs detached from any request. When it stops at a
mutation to confirm, ``POST {url}confirm/`` resumes it and answers when the resumed turn ends;
a client that confirms and then goes away (a page reloaded right after Confirm) must not stop
it: the turn still finishes ``done`` with the mutation executed exactly once, as its journal
says. The same holds for a confirmation sent over the WebSocket by a socket that then closes.
A client that stays gets the confirm route's envelope as before, and a turn that is not
durable (a stream's) is still stopped by its client going away.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from websockets.sync.client import connect

from .conftest import CREATE, StoreFor
from .jupyter_process import AUTH, TOKEN
from .jupyter_process import JupyterServer as Server

# Each conversation's model: the mutation to confirm, then (slowly: time enough for the client
# to go away mid-turn) the answer.
ROUNDS: list[dict[str, Any]] = [
    {"tool_calls": [CREATE]},
    {"chunks": ["Added ", "Spring."], "delay_seconds": 2.0},
] * 4
SETTINGS = {"allowed_mutations": ["createPart"], "confirm_mutations": ["createPart"]}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("confirm-disconnect")
    running = Server(
        home, ROUNDS, keepalive_seconds=0.3, store=store_for(home), chat_settings=SETTINGS
    )
    yield running
    running.stop()


def new_conversation(server: Server) -> str:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    assert created.status_code == 201
    return str(created.json()["conversation"]["id"])


def read_journal(
    server: Server, conversation_id: str, *, after: int = 0, until: tuple[str, ...] = ("done",)
) -> list[dict[str, Any]]:
    """The journal after ``after`` until an event of a type in ``until`` (or ``error``)."""
    url = server.chat_url + f"conversations/{conversation_id}/events?after={after}"
    frames: list[dict[str, Any]] = []
    with httpx.stream("GET", url, headers=AUTH, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
                if frames[-1]["type"] in (*until, "error"):
                    return frames
    raise AssertionError(frames)


def suspended_turn(server: Server) -> tuple[str, str, int]:
    """A durable turn stopped at its confirmation: (conversation, turn id, the position of its
    ``confirm_mutation``)."""
    conversation = new_conversation(server)
    turn_id = f"spring-{uuid.uuid4().hex}"
    body = {"conversation_id": conversation, "turn_id": turn_id, "text": "Add a part Spring"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    asked = read_journal(server, conversation, until=("confirm_mutation",))
    assert asked[-1]["type"] == "confirm_mutation" and asked[-1]["id"] == "call-1"
    return conversation, turn_id, asked[-1]["sequence"]


def confirm_and_hang_up(server: Server, body: dict[str, Any], *, hang_up_after: float) -> None:
    """``POST confirm/`` from a raw socket that closes ``hang_up_after`` seconds later, before the
    answer (which comes when the resumed turn ends)."""
    url = urlsplit(server.chat_url)
    content = json.dumps(body).encode()
    request = (
        f"POST {url.path}confirm/ HTTP/1.1\r\nHost: {url.netloc}\r\n"
        f"Authorization: token {TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(content)}\r\nConnection: close\r\n\r\n"
    ).encode() + content
    with socket.create_connection((url.hostname, url.port), timeout=10) as client:
        client.sendall(request)
        time.sleep(hang_up_after)
        client.settimeout(0.0)
        with contextlib.suppress(BlockingIOError):  # nothing yet: the turn runs
            early = client.recv(1)
            raise AssertionError(f"the server answered before the turn ended: {early!r}")
    # closed: the request's connection is gone


def check_finished_once(frames: list[dict[str, Any]], turn_id: str) -> None:
    """The resumed turn's journal: the mutation's one result (executed), then its answer and
    ``done``, all under the turn's id."""
    assert {frame["turn_id"] for frame in frames} == {turn_id}
    assert [frame["type"] for frame in frames] == ["tool_result", "text_chunk", "text_chunk",
                                                   "done"]  # fmt: skip
    [result] = [f for f in frames if f["type"] == "tool_result" and f["id"] == "call-1"]
    assert result["result"]["status"] == "executed"


def turn_state(server: Server, conversation_id: str, turn_id: str) -> str:
    listed = httpx.get(server.chat_url + f"conversations/{conversation_id}/turns/", headers=AUTH)
    [turn] = [turn for turn in listed.json()["turns"] if turn["turn_id"] == turn_id]
    return str(turn["state"])


def test_a_durable_turn_confirmed_by_a_client_that_goes_away_still_finishes(
    server: Server,
) -> None:
    conversation, turn_id, position = suspended_turn(server)
    decision = {
        "conversation_id": conversation,
        "confirmation_id": "call-1",
        "confirmed": True,
        "expected_sequence": position,
    }
    confirm_and_hang_up(server, decision, hang_up_after=0.7)  # mid-way through the 2 s answer
    frames = read_journal(server, conversation, after=position)
    check_finished_once(frames, turn_id)
    time.sleep(0.5)  # nothing more comes: no second result, no interruption
    listed = httpx.get(server.chat_url + f"conversations/{conversation}/turns/", headers=AUTH)
    assert listed.json()["latest_sequence"] == frames[-1]["sequence"]
    assert turn_state(server, conversation, turn_id) == "done"
    # the decision cannot be replayed: the confirmation was claimed once
    replay = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH, timeout=30)
    assert replay.status_code == 409


def test_a_client_that_stays_gets_the_confirm_envelope(server: Server) -> None:
    conversation, turn_id, position = suspended_turn(server)
    decision = {"conversation_id": conversation, "confirmation_id": "call-1", "confirmed": True}
    answer = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH, timeout=30)
    assert answer.status_code == 200
    body = answer.json()
    assert set(body) == {"events", "answer", "conversation_id"}
    assert body["answer"] == "Added Spring."
    assert [event["type"] for event in body["events"]] == ["tool_result", "text_chunk",
                                                           "text_chunk", "done"]  # fmt: skip
    assert body["events"][0]["result"]["status"] == "executed"
    check_finished_once(read_journal(server, conversation, after=position), turn_id)


def test_a_durable_turn_confirmed_over_a_socket_that_closes_still_finishes(
    server: Server,
) -> None:
    conversation, turn_id, position = suspended_turn(server)
    with connect(server.ws_url, additional_headers=AUTH, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "confirm", "confirmation_id": "call-1", "confirmed": True,
                            "conversation_id": conversation}))  # fmt: skip
        first = json.loads(ws.recv(timeout=30))
        assert first["type"] == "tool_result" and first["result"]["status"] == "executed"
    # the socket is closed mid-way through the answer
    frames = read_journal(server, conversation, after=position)
    check_finished_once(frames, turn_id)
    assert turn_state(server, conversation, turn_id) == "done"


async def test_a_durable_turn_resumed_by_confirm_can_still_be_cancelled(server: Server) -> None:
    """The confirming request reads the resumed turn; an explicit cancel still stops it."""
    conversation, turn_id, position = suspended_turn(server)
    decision = {"conversation_id": conversation, "confirmation_id": "call-1", "confirmed": True}
    async with httpx.AsyncClient(timeout=30) as client:
        confirming = asyncio.create_task(
            client.post(server.chat_url + "confirm/", json=decision, headers=AUTH)
        )
        await asyncio.to_thread(read_journal, server, conversation, after=position,
                                until=("tool_result",))  # fmt: skip
        url = server.chat_url + f"conversations/{conversation}/turns/{turn_id}/cancel"
        cancelled = await client.post(url, json={"command_id": "stop"}, headers=AUTH)
        assert cancelled.json()["result"] == "cancelled"
        assert cancelled.json()["state"] == "interrupted"
        answer = await confirming
    assert answer.status_code == 200
    assert answer.json()["events"][-1]["code"] == "interrupted"
    frames = read_journal(server, conversation, after=position)
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == "interrupted"
    assert [f["type"] for f in frames].count("tool_result") == 1


def test_a_stream_s_turn_is_still_stopped_by_its_client_going_away(server: Server) -> None:
    """A turn that is not durable (an SSE stream's, suspended at its confirmation) is the
    request's: a confirming client that goes away interrupts it, as before."""
    conversation = new_conversation(server)
    body = {"text": "Add a part Spring", "conversation_id": conversation}
    streamed = httpx.post(server.chat_url + "stream/", json=body, headers=AUTH, timeout=30)
    assert '"confirm_mutation"' in streamed.text
    asked = read_journal(server, conversation, until=("confirm_mutation",))
    decision = {"conversation_id": conversation, "confirmation_id": "call-1", "confirmed": True}
    confirm_and_hang_up(server, decision, hang_up_after=0.7)
    frames = read_journal(server, conversation, after=asked[-1]["sequence"])
    assert frames[-1]["type"] == "error" and frames[-1]["code"] == "interrupted"

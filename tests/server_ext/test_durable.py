"""Durable turns against a real `jupyter server`, with httpx as the client: admission under the
client's turn id, the conversation's journal replayed after a cursor and followed live, 409 and
410 cursors, and explicit cancel. Every test runs on both stores (a SQLite file, a PostgreSQL
schema); two servers sharing one PostgreSQL store serve one user's conversation."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import psycopg
import pytest
import websockets

from gmchat_nb.core.store import ChatStore

from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

# Every conversation's scripted model: a search, then (after a pause) the answer in chunks.
ROUNDS = [
    {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]},
    {"chunks": ["Parts ", "are ", "listed."], "delay_seconds": 1.5},
] * 10


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("durable")
    running = Server(home, ROUNDS, keepalive_seconds=0.3, store=store_for(home))
    yield running
    running.stop()


def prune_events(store: str, conversation_id: str, through: int) -> None:
    """What retention does to a journal's start, straight in the store's database."""
    sql = "DELETE FROM events WHERE conversation_id = ? AND position <= ?"
    if store.startswith("postgresql://"):
        with psycopg.connect(store, autocommit=True) as raw:
            raw.execute(sql.replace("?", "%s"), (conversation_id, through))
        return
    with sqlite3.connect(store) as raw:
        raw.execute(sql, (conversation_id, through))


def chat(server: Server) -> str:
    return server.url + "gmchat/chat/"


def new_conversation(server: Server) -> str:
    created = httpx.post(chat(server) + "conversations/", json={}, headers=AUTH)
    assert created.status_code == 201
    return str(created.json()["conversation"]["id"])


def admit(server: Server, conversation_id: str, turn_id: str, text: str = "List parts") -> Any:
    return httpx.post(
        chat(server) + "turns/",
        json={"conversation_id": conversation_id, "turn_id": turn_id, "text": text},
        headers=AUTH,
    )


async def http(method: str, url: str, **options: Any) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.request(method, url, **options)


async def read_frames(
    server: Server,
    conversation_id: str,
    *,
    headers: dict[str, str] | None = None,
    after: int | None = None,
    stop_after: int | None = None,
    until_terminal: bool = True,
    idle_seconds: float = 10.0,
) -> list[tuple[int, dict[str, Any]]]:
    """(SSE id, JSON) of each frame until a terminal event, ``stop_after`` frames, or
    ``idle_seconds`` without a frame (keep-alive comments do not count)."""
    url = chat(server) + f"conversations/{conversation_id}/events"
    params = {} if after is None else {"after": str(after)}
    frames: list[tuple[int, dict[str, Any]]] = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("GET", url, params=params, headers={**AUTH, **(headers or {})}) as response,
    ):
        assert response.status_code == 200, await response.aread()
        assert response.headers["content-type"] == "text/event-stream"
        lines = response.aiter_lines()
        frame_id: int | None = None
        loop = asyncio.get_running_loop()
        quiet_until = loop.time() + idle_seconds  # keep-alive lines do not extend it
        while True:
            try:
                line = await asyncio.wait_for(anext(lines), quiet_until - loop.time())
            except (TimeoutError, StopAsyncIteration):
                return frames
            if line.startswith("id: "):
                frame_id = int(line[4:])
            elif line.startswith("data: "):
                assert frame_id is not None
                event = json.loads(line[6:])
                frames.append((frame_id, event))
                quiet_until = loop.time() + idle_seconds
                if stop_after is not None and len(frames) >= stop_after:
                    return frames
                if until_terminal and event["type"] in ("done", "error"):
                    return frames


async def test_an_admitted_turn_runs_and_its_journal_streams(server: Server) -> None:
    conversation = new_conversation(server)
    turn_id = f"turn-{uuid.uuid4().hex}"
    admitted = admit(server, conversation, turn_id)
    assert admitted.status_code == 202
    assert admitted.json() == {
        "conversation_id": conversation,
        "turn_id": turn_id,
        "sequence": 0,
        "state": "accepted",
    }
    frames = await read_frames(server, conversation, after=0)
    types = [event["type"] for _, event in frames]
    assert types == ["tool_call", "tool_result", "text_chunk", "text_chunk", "text_chunk", "done"]
    assert [frame_id for frame_id, _ in frames] == list(range(1, 7))
    assert all(event["sequence"] == frame_id for frame_id, event in frames)
    assert {event["turn_id"] for _, event in frames} == {turn_id}


async def test_a_retried_admission_is_the_same_turn(server: Server) -> None:
    conversation = new_conversation(server)
    turn_id = f"retry-{uuid.uuid4().hex}"
    first = admit(server, conversation, turn_id)
    again = admit(server, conversation, turn_id)
    assert first.status_code == again.status_code == 202
    assert again.json()["sequence"] == first.json()["sequence"] == 0
    frames = await read_frames(server, conversation, after=0)
    assert [event["type"] for _, event in frames].count("done") == 1
    # after the end, the same admission says how it ended; it never starts a second turn
    late = admit(server, conversation, turn_id)
    assert late.status_code == 202 and late.json()["state"] == "done"
    tail = await read_frames(server, conversation, after=frames[-1][0], idle_seconds=1.0)
    assert tail == []
    conflict = admit(server, conversation, turn_id, text="Something else")
    assert conflict.status_code == 409 and conflict.json()["error"] == "turn_conflict"


async def test_a_disconnected_reader_resumes_without_gap_or_duplicate(server: Server) -> None:
    conversation = new_conversation(server)
    assert admit(server, conversation, f"gap-{uuid.uuid4().hex}").status_code == 202
    early = await read_frames(server, conversation, after=0, stop_after=2)
    assert [event["type"] for _, event in early] == ["tool_call", "tool_result"]
    # the reader went away; the turn did not: the rest is read with Last-Event-ID
    rest = await read_frames(server, conversation, headers={"Last-Event-ID": str(early[-1][0])})
    ids = [frame_id for frame_id, _ in early + rest]
    assert ids == list(range(1, len(ids) + 1))
    assert rest[-1][1]["type"] == "done"
    again = await read_frames(
        server, conversation, headers={"Last-Event-ID": str(ids[-1])}, idle_seconds=1.0
    )
    assert again == []  # reconnecting at the terminal sequence sends no second done


async def test_cursors_ahead_pruned_or_malformed_are_refused(server: Server) -> None:
    conversation = new_conversation(server)
    assert admit(server, conversation, f"cursor-{uuid.uuid4().hex}").status_code == 202
    frames = await read_frames(server, conversation, after=0)
    url = chat(server) + f"conversations/{conversation}/events"
    ahead = await http("GET", url, params={"after": "999"}, headers=AUTH)
    assert ahead.status_code == 409
    assert ahead.json() == {
        "error": "cursor_ahead",
        "message": "The cursor is past the conversation's last event.",
        "requested_sequence": 999,
        "latest_sequence": len(frames),
    }
    for bad in ("-1", "x", "1.5", "1_0", "+1", "9" * 19):
        refused = await http("GET", url, headers={**AUTH, "Last-Event-ID": bad})
        assert refused.status_code == 400 and refused.json()["error"] == "bad_event"
    for bad in ("\u00b2", "\u0661"):  # digits to str.isdigit or int(), not to a cursor
        refused = await http("GET", url, params={"after": bad}, headers=AUTH)
        assert refused.status_code == 400 and refused.json()["error"] == "bad_event"
    prune_events(server.store, conversation, 2)  # retention pruned the first two events
    gone = await http("GET", url, params={"after": "1"}, headers=AUTH)
    assert gone.status_code == 410
    assert gone.json() == {
        "error": "resync_required",
        "requested_sequence": 1,
        "earliest_available_sequence": 3,
        "latest_sequence": len(frames),
    }
    kept = await read_frames(server, conversation, after=2)
    assert [frame_id for frame_id, _ in kept] == list(range(3, len(frames) + 1))
    foreign = await http("GET", chat(server) + "conversations/nope/events", headers=AUTH)
    assert foreign.status_code == 404


async def test_an_explicit_cancel_is_idempotent(server: Server) -> None:
    conversation = new_conversation(server)
    turn_id = f"cancel-{uuid.uuid4().hex}"
    assert admit(server, conversation, turn_id).status_code == 202
    await read_frames(server, conversation, after=0, stop_after=2)  # it is in its pause now
    url = chat(server) + f"conversations/{conversation}/turns/{turn_id}/cancel"
    cancelled = await http("POST", url, json={"command_id": "c1"}, headers=AUTH)
    assert cancelled.status_code == 200
    body = cancelled.json()
    assert body["result"] == "cancelled" and body["state"] == "interrupted"
    frames = await read_frames(server, conversation, after=0)
    assert frames[-1][1]["type"] == "error" and frames[-1][1]["code"] == "interrupted"
    assert body["sequence"] == frames[-1][0]
    assert "text_chunk" not in [event["type"] for _, event in frames]  # stopped before answering
    duplicate = (await http("POST", url, json={"command_id": "c1"}, headers=AUTH)).json()
    assert duplicate["result"] == "duplicate" and duplicate["state"] == "interrupted"
    again = await http("POST", url, json={"command_id": "c2"}, headers=AUTH)
    assert again.json()["result"] == "too_late"
    done_turn = f"finished-{uuid.uuid4().hex}"
    other = new_conversation(server)
    assert admit(server, other, done_turn).status_code == 202
    await read_frames(server, other, after=0)
    late = await http(
        "POST",
        chat(server) + f"conversations/{other}/turns/{done_turn}/cancel",
        json={"command_id": "c3"},
        headers=AUTH,
    )
    assert late.json()["result"] == "too_late" and late.json()["state"] == "done"
    unknown = await http(
        "POST",
        chat(server) + f"conversations/{other}/turns/nope/cancel",
        json={"command_id": "c4"},
        headers=AUTH,
    )
    assert unknown.status_code == 404


def test_bad_admissions_name_what_is_wrong(server: Server) -> None:
    conversation = new_conversation(server)
    url = chat(server) + "turns/"
    cases = [
        ({"text": "Hi"}, 400, "bad_event"),
        ({"turn_id": "has space", "text": "Hi"}, 400, "bad_event"),
        ({"turn_id": "x" * 129, "text": "Hi"}, 400, "bad_event"),
        ({"turn_id": "ok-1", "text": "   "}, 400, "bad_message"),
        ({"turn_id": "ok-2", "text": "\ud800"}, 400, "bad_message"),
        ({"turn_id": "ok-3", "text": "Hi", "conversation_id": "nope"}, 404, "bad_event"),
    ]
    for body, status, code in cases:
        body = {"conversation_id": conversation, **body}
        response = httpx.post(
            url, content=json.dumps(body), headers={**AUTH, "Content-Type": "application/json"}
        )
        assert response.status_code == status, (body, response.text)
        assert response.json()["error"] == code


async def test_a_reading_turn_cut_by_kill_9_goes_on_after_restart_and_ends_once(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """Killed in its pause after a search (a read: it may run again), the admitted turn is
    taken up by the restarted server from its last committed step; its journal goes on after
    the last event the first server wrote and ends in one ``done``; a retry is that turn."""
    home = tmp_path_factory.mktemp("durable-kill")
    store = store_for(home)
    first = Server(home, ROUNDS, store=store)
    try:
        conversation = new_conversation(first)
        assert admit(first, conversation, "killed-turn").status_code == 202
        early = await read_frames(first, conversation, after=0, stop_after=2)
        assert [event["type"] for _, event in early] == ["tool_call", "tool_result"]
        first.kill()  # in its pause before the answer
    finally:
        first.stop()
    second = Server(home, ROUNDS, store=store)
    try:
        rest = await read_frames(second, conversation, after=early[-1][0])
        # the restarted server's script begins again: another search, then the answer
        types = [event["type"] for _, event in rest]
        assert types == ["tool_call", "tool_result", "text_chunk", "text_chunk", "text_chunk",
                         "done"]  # fmt: skip
        ids = [frame_id for frame_id, _ in early + rest]
        assert ids == list(range(1, len(ids) + 1))  # no gap, no duplicate across the restart
        assert {event["turn_id"] for _, event in early + rest} == {"killed-turn"}
        sequences = [event["sequence"] for _, event in rest]
        assert sequences == ids[2:]
        retried = admit(second, conversation, "killed-turn")  # the client retries its POST
        assert retried.status_code == 202 and retried.json()["state"] == "done"
        again = await read_frames(second, conversation, after=ids[-1], idle_seconds=1.0)
        assert again == []  # one terminal event, and no second turn
        with ChatStore(store) as stored:
            messages = stored.messages(conversation, turn_id="killed-turn")
        assert [m.content for m in messages if m.role == "user"] == ["List parts"]  # once
        assert messages[-1].role == "assistant" and messages[-1].content == "Parts are listed."
    finally:
        second.stop()


CREATE = {
    "name": "mutate",
    "id": "call-1",
    "args": {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}},
}


async def test_an_approval_names_the_journal_position_it_answers(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """A durable client confirms with ``expected_sequence`` = the ``confirm_mutation`` frame's
    id; a stale one fails before anything runs, and the turn continues in the journal."""
    home = tmp_path_factory.mktemp("durable-approval")
    mutating = Server(
        home,
        [{"tool_calls": [CREATE]}, {"text": "Added Spring."}],
        store=store_for(home),
        chat_settings={"allowed_mutations": ["createPart"], "confirm_mutations": ["createPart"]},
    )
    try:
        conversation = new_conversation(mutating)
        assert admit(mutating, conversation, "add-spring", "Add Spring").status_code == 202
        asked = await read_frames(mutating, conversation, after=0, until_terminal=False,
                                  idle_seconds=3.0)  # fmt: skip
        position, ask = asked[-1]
        assert ask["type"] == "confirm_mutation" and ask["id"] == "call-1"
        confirm = chat(mutating) + "confirm/"
        answer = {"conversation_id": conversation, "confirmation_id": "call-1", "confirmed": True}
        stale = await http("POST", confirm, json={**answer, "expected_sequence": position - 1},
                           headers=AUTH)  # fmt: skip
        assert stale.status_code == 409 and "stale view" in stale.text
        bad = await http("POST", confirm, json={**answer, "expected_sequence": "x"}, headers=AUTH)
        assert bad.status_code == 400
        done = await http("POST", confirm, json={**answer, "expected_sequence": position},
                          headers=AUTH)  # fmt: skip
        assert done.status_code == 200
        assert done.json()["events"][0]["result"]["status"] == "executed"
        rest = await read_frames(mutating, conversation, after=position)
        assert [event["type"] for _, event in rest] == ["tool_result", "text_chunk", "done"]
        assert {event["turn_id"] for _, event in rest} == {"add-spring"}
    finally:
        mutating.stop()


async def test_a_websocket_replays_the_journal_after_its_cursor(server: Server) -> None:
    conversation = new_conversation(server)
    assert admit(server, conversation, f"ws-{uuid.uuid4().hex}").status_code == 202
    frames = await read_frames(server, conversation, after=0)
    url = server.ws_url + f"?conversation_id={conversation}&after=2"
    async with websockets.connect(url, additional_headers=AUTH) as ws:
        replayed = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in frames[2:]]
    assert [(e["sequence"], e["type"]) for e in replayed] == [
        (frame_id, event["type"]) for frame_id, event in frames[2:]
    ]
    async with websockets.connect(
        server.ws_url + "?conversation_id=nope&after=0", additional_headers=AUTH
    ) as ws:
        assert json.loads(await asyncio.wait_for(ws.recv(), 5))["code"] == "bad_event"
    for bad in ("%C2%B2", "9" * 40):  # "²" is a digit to str.isdigit but not to int()
        url = server.ws_url + f"?conversation_id={conversation}&after={bad}"
        async with websockets.connect(url, additional_headers=AUTH) as ws:
            refused = json.loads(await asyncio.wait_for(ws.recv(), 5))
            assert refused["code"] == "bad_event" and "'after'" in refused["message"]


async def test_a_websocket_that_replays_follows_a_running_turn_to_its_end(server: Server) -> None:
    """A socket that connects with a cursor while a turn runs gets what is journaled, then the
    rest as it is written (the answer after the model's 1.5 s pause), to the turn's end."""
    conversation = new_conversation(server)
    assert admit(server, conversation, f"ws-follow-{uuid.uuid4().hex}").status_code == 202
    loop = asyncio.get_running_loop()
    arrivals: list[tuple[float, dict[str, Any]]] = []
    url = server.ws_url + f"?conversation_id={conversation}&after=0"
    async with websockets.connect(url, additional_headers=AUTH) as ws:
        while not arrivals or arrivals[-1][1]["type"] not in ("done", "error"):
            arrivals.append((loop.time(), json.loads(await asyncio.wait_for(ws.recv(), 10))))
    events = [event for _, event in arrivals]
    assert [event["type"] for event in events] == [
        "tool_call", "tool_result", "text_chunk", "text_chunk", "text_chunk", "done",
    ]  # fmt: skip
    assert [event["sequence"] for event in events] == list(range(1, 7))
    assert arrivals[-1][0] - arrivals[0][0] > 1.0  # followed while it ran, not replayed after


async def test_two_servers_on_one_postgresql_store_serve_one_user_s_conversation(
    tmp_path_factory: pytest.TempPathFactory, postgresql_store: str
) -> None:
    """A hub's two servers (same user, one PostgreSQL store): a turn admitted on one is read on
    the other, woken by NOTIFY (its keep-alive is too long to find the events by polling), a
    retry on the other is the same turn, and a cancel on one stops a turn the other runs."""
    servers = [
        Server(
            tmp_path_factory.mktemp(f"hub-{name}"),
            ROUNDS,
            store=postgresql_store,
            keepalive_seconds=keepalive,
        )
        for name, keepalive in (("a", 0.3), ("b", 60.0))
    ]
    first, second = servers
    try:
        conversation = new_conversation(first)
        listed = (await http("GET", chat(second) + "conversations/", headers=AUTH)).json()
        assert conversation in [item["id"] for item in listed["conversations"]]
        admitted = admit(first, conversation, "hub-turn")
        assert admitted.status_code == 202
        frames = await read_frames(second, conversation, after=0, idle_seconds=10.0)
        assert [event["type"] for _, event in frames] == [
            "tool_call", "tool_result", "text_chunk", "text_chunk", "text_chunk", "done",
        ]  # fmt: skip
        assert [frame_id for frame_id, _ in frames] == list(range(1, 7))
        retried = admit(second, conversation, "hub-turn")  # the client's retry hit the other
        assert retried.status_code == 202 and retried.json()["state"] == "done"
        assert await read_frames(first, conversation, after=6, idle_seconds=1.0) == []

        assert admit(second, conversation, "hub-cancelled").status_code == 202
        early = await read_frames(first, conversation, after=6, stop_after=2)
        assert [event["type"] for _, event in early] == ["tool_call", "tool_result"]
        url = chat(first) + f"conversations/{conversation}/turns/hub-cancelled/cancel"
        cancelled = await http("POST", url, json={"command_id": "c1"}, headers=AUTH)
        assert cancelled.status_code == 200 and cancelled.json()["result"] == "cancelled"
        assert cancelled.json()["state"] == "interrupted"  # it waited for the other to stop it
        rest = await read_frames(second, conversation, after=8)
        assert [(event["type"], event.get("code")) for _, event in rest] == [
            ("error", "interrupted")
        ]
        assert rest[0][0] == 9 and rest[0][1]["turn_id"] == "hub-cancelled"
    finally:
        for server in servers:
            server.stop()


async def test_connections_the_database_dropped_are_replaced_before_anything_fails(
    tmp_path_factory: pytest.TempPathFactory, postgresql_store: str
) -> None:
    """The database dropped the server's idle connections (a restart, a failover): the next
    read, admission or socket replay finds out and asks again on a new connection — nothing
    was done on the old one — so no client sees the restart (a database that is really away is
    the documented 503, test_faults.py)."""
    hub = Server(tmp_path_factory.mktemp("hub-down"), ROUNDS, store=postgresql_store)

    def cut() -> None:
        with psycopg.connect(postgresql_store, autocommit=True) as admin:
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE application_name = 'gmchat_nb' AND pid <> pg_backend_pid()"
            )

    try:
        conversation = new_conversation(hub)
        cut()
        listed = await http("GET", chat(hub) + "conversations/", headers=AUTH)
        assert listed.status_code == 200
        assert conversation in [item["id"] for item in listed.json()["conversations"]]
        cut()
        assert admit(hub, conversation, "after-cut").status_code == 202
        frames = await read_frames(hub, conversation, after=0)
        assert frames[-1][1]["type"] == "done"
        cut()
        url = hub.ws_url + f"?conversation_id={conversation}&after=0"
        async with websockets.connect(url, additional_headers=AUTH) as ws:
            replayed = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in frames]
            assert [event["type"] for event in replayed] == [e["type"] for _, e in frames]
            ask = {"type": "message", "text": "List parts", "conversation_id": conversation}
            await ws.send(json.dumps(ask))
            while (event := json.loads(await asyncio.wait_for(ws.recv(), 10)))["type"] not in (
                "done",
                "error",
            ):
                pass
            assert event["type"] == "done"
    finally:
        hub.stop()


async def test_every_journal_reader_names_an_event_s_position(server: Server) -> None:
    """``position`` is an event's place in the conversation's journal wherever the journal is
    read (SSE, the WebSocket's replay); ``sequence`` there carries the same number (the durable
    contract's cursor), while a live stream numbers one turn's events from 1."""
    conversation = new_conversation(server)
    for number in range(2):  # two turns: positions keep growing, per-turn numbers start again
        assert admit(server, conversation, f"pos-{number}-{uuid.uuid4().hex}").status_code == 202
        await read_frames(server, conversation, after=0, idle_seconds=2.0, until_terminal=False)
    frames = await read_frames(server, conversation, after=0, until_terminal=False, idle_seconds=1)
    assert [event["position"] for _, event in frames] == [frame_id for frame_id, _ in frames]
    assert [event["position"] for _, event in frames] == list(range(1, 13))
    assert all(event["sequence"] == event["position"] for _, event in frames)
    url = server.ws_url + f"?conversation_id={conversation}&after=6"
    async with websockets.connect(url, additional_headers=AUTH) as ws:
        replayed = [json.loads(await asyncio.wait_for(ws.recv(), 5)) for _ in range(6)]
    assert [event["position"] for event in replayed] == list(range(7, 13))
    async with websockets.connect(server.ws_url, additional_headers=AUTH) as ws:
        await ws.send(json.dumps({"type": "message", "text": "List parts"}))
        live = []
        while not live or live[-1]["type"] not in ("done", "error"):
            live.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    assert [event["sequence"] for event in live] == list(range(1, len(live) + 1))
    assert not any("position" in event for event in live)

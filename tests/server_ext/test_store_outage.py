"""A turn that cannot write says so (issue 38): a real `jupyter server` whose store stops taking
writes while a turn streams — a SQLite file on a disk that fills up, a PostgreSQL database made
read-only, a PostgreSQL server stopped — and a reader of the conversation's events (httpx, SSE)
or of a WebSocket turn. The reader gets a ``notice`` of kind ``store`` naming the problem
(``store_full``, ``store_read_only``, ``store_unreachable``) while the turn waits, the turn ends
with exactly one terminal event once the store takes writes again, and the conversation takes
its next turn at once.

Before, the readers got nothing at all until the store was back: a stuck turn looked like a slow
one."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
import websockets

from gmchat_nb.core.store import ChatStore

from ..filesystems import fill, small_disk
from ..postgresql import Cluster, fresh_schema
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server
from .test_durable import chat, new_conversation

SEARCH = {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]}
# A model that streams slowly (4 s): the store fails while the turn writes its answer.
SLOW = {"chunks": [f"w{i} " for i in range(40)], "chunk_delay_seconds": 0.1}
NEXT = {"text": "Back again."}
ROUNDS = [SEARCH, SLOW, NEXT] * 5
STEP_WAIT = 10.0  # core/turns/writer.py's STEP_RETRY_SECONDS: a turn's wait at a step


@dataclass
class Frame:
    at: float  # time.monotonic() of its arrival
    id: int | None  # the SSE id (its journal position); None: a live-only frame
    event: dict[str, Any]


@dataclass
class Follower:
    """A reader of a conversation's events route, in the background, from position 0."""

    server: Server
    conversation_id: str
    frames: list[Frame] = field(default_factory=list)
    task: asyncio.Task[None] | None = None
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self) -> None:
        self.task = asyncio.create_task(self._read())

    async def _read(self) -> None:
        url = chat(self.server) + f"conversations/{self.conversation_id}/events"
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(30, read=120)) as client,
            client.stream("GET", url, params={"after": "0"}, headers=AUTH) as response,
        ):
            assert response.status_code == 200
            frame_id: int | None = None
            async for line in response.aiter_lines():
                if line.startswith("id: "):
                    frame_id = int(line[4:])
                elif line.startswith("data: "):
                    self.frames.append(Frame(time.monotonic(), frame_id, json.loads(line[6:])))
                    frame_id = None
                    self.changed.set()

    async def until(self, found: Callable[[list[Frame]], bool], seconds: float) -> None:
        """Wait until ``found(frames)`` holds (AssertionError after ``seconds``)."""
        deadline = time.monotonic() + seconds
        while not found(self.frames):
            left = deadline - time.monotonic()
            if left <= 0:
                seen = [(f.id, f.event["type"], f.event.get("turn_id")) for f in self.frames]
                raise AssertionError(f"not seen within {seconds} s; frames: {seen}")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), left)

    def notices(self) -> list[Frame]:
        return [
            f for f in self.frames if f.event["type"] == "notice" and f.event["kind"] == "store"
        ]

    def ends(self, turn_id: str) -> list[dict[str, Any]]:
        return [
            f.event
            for f in self.frames
            if f.event.get("turn_id") == turn_id and f.event["type"] in ("done", "error")
        ]

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task


def has(kind: str) -> Callable[[list[Frame]], bool]:
    return lambda frames: any(f.event["type"] == kind for f in frames)


async def admit(server: Server, conversation_id: str, turn_id: str) -> None:
    body = {"conversation_id": conversation_id, "turn_id": turn_id, "text": "List parts"}
    async with httpx.AsyncClient(timeout=30) as client:
        admitted = await client.post(chat(server) + "turns/", json=body, headers=AUTH)
    assert admitted.status_code == 202, admitted.text


async def busy(server: Server, conversation_id: str) -> httpx.Response:
    """Another turn asked in the conversation while its turn waits for the store."""
    body = {"conversation_id": conversation_id, "turn_id": "meanwhile", "text": "Hello?"}
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(chat(server) + "turns/", json=body, headers=AUTH)


async def next_turn_runs(server: Server, conversation_id: str, follower: Follower) -> None:
    """The conversation takes its next turn at once, and it answers."""
    await admit(server, conversation_id, "after")
    await follower.until(lambda _: bool(follower.ends("after")), 30)
    assert [end["type"] for end in follower.ends("after")] == ["done"]


def check_notice(frame: Frame, code: str, turn_id: str, waiting: str) -> None:
    assert frame.id is None  # live only: not a journal position
    assert frame.event["details"] == {"code": code, "waiting": waiting}
    assert frame.event["turn_id"] == turn_id and frame.event["message"]
    assert "sequence" not in frame.event


async def test_a_turn_on_a_full_disk_says_so_and_ends_once_there_is_space(tmp_path: Path) -> None:
    """The disk under the SQLite store fills while the turn streams: the reader is told
    ``store_full`` while the turn waits at its step, then that it stopped waiting; once space is
    freed the turn's ``chat_error`` is written, once, and the next turn runs."""
    with small_disk(tmp_path / "disk") as disk:
        server = Server(tmp_path / "home", ROUNDS, store=str(disk / "chat.sqlite3"),
                        keepalive_seconds=0.3)  # fmt: skip
        follower: Follower | None = None
        try:
            conversation = new_conversation(server)
            follower = Follower(server, conversation)
            follower.start()
            await admit(server, conversation, "full")
            await follower.until(has("text_chunk"), 30)
            filler = fill(disk)
            filled_at = time.monotonic()
            await follower.until(lambda _: bool(follower.notices()), STEP_WAIT)
            first = follower.notices()[0]
            check_notice(first, "store_full", "full", "step")
            latency = first.at - filled_at
            meanwhile = await busy(server, conversation)
            assert (meanwhile.status_code, meanwhile.json()["error"]) == (409, "turn_in_progress")
            await follower.until(lambda _: len(follower.notices()) == 2, STEP_WAIT + 10)
            check_notice(follower.notices()[1], "store_full", "full", "end")
            assert follower.ends("full") == []  # its end cannot be written yet
            filler.unlink()
            await follower.until(lambda _: bool(follower.ends("full")), 30)
            assert [(e["type"], e["code"]) for e in follower.ends("full")] == [
                ("error", "chat_error")
            ]
            await next_turn_runs(server, conversation, follower)
            with ChatStore(disk / "chat.sqlite3") as stored:
                journal = stored.events(conversation, turn_id="full")
                assert [e["type"] for e in journal if e["type"] in ("done", "error")] == ["error"]
                assert stored.turn(conversation, "full").state == "failed"  # type: ignore[union-attr]
            print(f"store_full notice {latency * 1000:.0f} ms after the disk filled")
        finally:
            if follower is not None:
                await follower.stop()
            server.stop()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    """A PostgreSQL server of this test's own (it is stopped and made read-only)."""
    running = Cluster()
    try:
        yield running
    finally:
        running.remove()


def read_only(url: str, on: bool) -> None:
    """Make every session of the server read-only (``default_transaction_read_only``), or
    writable again, as a failover to a standby would."""
    with psycopg.connect(url, autocommit=True,
                         options="-c default_transaction_read_only=off") as admin:  # fmt: skip
        if on:
            admin.execute("ALTER SYSTEM SET default_transaction_read_only = on")
        else:
            admin.execute("ALTER SYSTEM RESET default_transaction_read_only")
        admin.execute("SELECT pg_reload_conf()")


async def test_a_turn_on_a_read_only_database_says_so_and_goes_on(
    tmp_path: Path, cluster: Cluster
) -> None:
    """The PostgreSQL database turns read-only while the turn streams: the reader is told
    ``store_read_only``; writable again within the turn's wait, the turn goes on to one
    ``done`` and the next turn runs. A WebSocket's own turn is told the same."""
    with fresh_schema(cluster.url) as store:
        server = Server(tmp_path, ROUNDS, store=store, keepalive_seconds=0.3)
        follower: Follower | None = None
        try:
            conversation = new_conversation(server)
            follower = Follower(server, conversation)
            follower.start()
            await admit(server, conversation, "ro")
            await follower.until(has("text_chunk"), 30)
            read_only(cluster.url, True)
            try:
                await follower.until(lambda _: bool(follower.notices()), STEP_WAIT)
            finally:
                read_only(cluster.url, False)
            check_notice(follower.notices()[0], "store_read_only", "ro", "step")
            await follower.until(lambda _: bool(follower.ends("ro")), 30)
            assert [e["type"] for e in follower.ends("ro")] == ["done"]
            texts = [f.event["content"] for f in follower.frames if f.event.get("turn_id") == "ro"
                     and f.event["type"] == "text_chunk"]  # fmt: skip
            assert "".join(texts) == "".join(SLOW["chunks"])  # nothing lost while it waited
            await next_turn_runs(server, conversation, follower)
            await a_socket_turn_is_told(server, cluster.url)
        finally:
            if follower is not None:
                await follower.stop()
            server.stop()


async def a_socket_turn_is_told(server: Server, url: str) -> None:
    """A turn asked over the WebSocket (not admitted: the socket reads it, not the journal)
    gets the notice on its socket while it waits, then its end."""
    async with websockets.connect(server.ws_url, additional_headers=AUTH) as socket:
        await socket.send(json.dumps({"type": "message", "text": "List parts"}))
        seen: list[dict[str, Any]] = []
        state = "writable"  # then "read-only" at its first chunk, "restored" once told
        try:
            while not seen or seen[-1]["type"] not in ("done", "error"):
                seen.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
                if seen[-1]["type"] == "text_chunk" and state == "writable":
                    read_only(url, True)
                    state = "read-only"
                elif seen[-1]["type"] == "notice" and state == "read-only":
                    read_only(url, False)
                    state = "restored"
        finally:
            if state == "read-only":
                read_only(url, False)
    notices = [event for event in seen if event["type"] == "notice"]
    assert [notice["details"] for notice in notices] == [
        {"code": "store_read_only", "waiting": "step"}
    ]
    assert seen[-1]["type"] == "done", seen[-1]


async def socket_follower(
    server: Server, conversation_id: str, turn_id: str, seen: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """A WebSocket that replays the conversation and follows its running turn to its end: the
    messages it got (in ``seen`` as they come)."""
    url = f"{server.ws_url}?conversation_id={conversation_id}&after=0"
    async with websockets.connect(url, additional_headers=AUTH) as socket:
        while not (seen and seen[-1].get("turn_id") == turn_id
                   and seen[-1]["type"] in ("done", "error")):  # fmt: skip
            seen.append(json.loads(await asyncio.wait_for(socket.recv(), 60)))
    return seen


async def test_a_turn_whose_database_stopped_says_so_and_ends_once_it_is_back(
    tmp_path: Path, cluster: Cluster
) -> None:
    """The PostgreSQL server stops (as by a crash) while the turn streams: the readers — the
    events route and a WebSocket following the turn — whose streams stay open, are told
    ``store_unreachable``; once the server is back the turn ends with one terminal event and the
    next turn runs."""
    with fresh_schema(cluster.url) as store:
        server = Server(tmp_path, ROUNDS, store=store, keepalive_seconds=0.3)
        follower: Follower | None = None
        try:
            conversation = new_conversation(server)
            follower = Follower(server, conversation)
            follower.start()
            await admit(server, conversation, "away")
            await follower.until(has("text_chunk"), 30)
            replayed: list[dict[str, Any]] = []
            socket = asyncio.create_task(socket_follower(server, conversation, "away", replayed))
            deadline = time.monotonic() + 30
            while not replayed:  # until the socket has replayed the journal and follows it
                assert time.monotonic() < deadline and not socket.done()
                await asyncio.sleep(0.05)
            cluster.stop("immediate")
            try:
                await follower.until(lambda _: bool(follower.notices()), STEP_WAIT)
            finally:
                cluster.start()
            check_notice(follower.notices()[0], "store_unreachable", "away", "step")
            await follower.until(lambda _: bool(follower.ends("away")), 40)
            assert len(follower.ends("away")) == 1
            told = await asyncio.wait_for(socket, 30)
            notices = [message for message in told if message["type"] == "notice"]
            assert notices[0]["details"] == {"code": "store_unreachable", "waiting": "step"}
            assert [m["type"] for m in told if m["type"] in ("done", "error")] == [
                follower.ends("away")[0]["type"]
            ]
            await next_turn_runs(server, conversation, follower)
            with ChatStore(store) as stored:
                journal = stored.events(conversation, turn_id="away")
                assert len([e for e in journal if e["type"] in ("done", "error")]) == 1
        finally:
            if follower is not None:
                await follower.stop()
            server.stop()

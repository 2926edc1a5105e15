"""A real `jupyter server` under faults an outside tester found (issue 22): retries while its
project still connects, a PostgreSQL server stopped mid-turn, a full disk under a SQLite store,
and a store file that cannot be opened at all. Every admitted turn ends with exactly one
terminal event as soon as the store can take it; a store that cannot be used is the documented
``503 chat_error`` naming it, never Tornado's pages."""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from gmchat_nb.core.store import ChatStore

from ..filesystems import fill, make_read_only, small_disk
from ..graphql_server import graphql_server
from ..postgresql import Cluster, fresh_schema
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server
from .test_durable import chat, http, new_conversation, read_frames
from .test_hub import admit_many, turns_url

SEARCH = {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]}


def ends(frames: list[tuple[int, dict[str, Any]]]) -> list[dict[str, Any]]:
    return [event for _, event in frames if event["type"] in ("done", "error")]


async def test_retries_while_the_project_connects_are_all_the_same_admission(
    tmp_path: Path,
) -> None:
    """The project's schema takes 3 s to come: 50 identical retries sent meanwhile all get the
    same 202 (the admission needs no project), and the turn runs once, when it has one."""
    with graphql_server() as graphql:
        graphql.introspection_seconds = 3.0
        server = Server(tmp_path, [SEARCH, {"text": "Parts."}], project=graphql.url)
        try:
            body = {"turn_id": "early-bird", "text": "List parts"}
            answers = await admit_many([server], [body], 50)
            assert {response.status_code for response in answers} == {202}
            assert len({response.json()["conversation_id"] for response in answers}) == 1
            conversation = answers[0].json()["conversation_id"]
            frames = await read_frames(server, conversation, after=0, idle_seconds=15)
            assert [event["type"] for _, event in frames] == [
                "tool_call", "tool_result", "text_chunk", "done",
            ]  # fmt: skip
        finally:
            server.stop()


async def test_turns_the_database_stopped_under_end_once_it_is_back(tmp_path: Path) -> None:
    """PostgreSQL stopped for ~4 s (as a crash: ``pg_ctl stop -m immediate``) while three turns
    wait for their model: routes answer 503 meanwhile; each turn waits at its next step for the
    store and then goes on, ending with exactly one terminal event; no row is left running."""
    cluster = Cluster()
    try:
        with fresh_schema(cluster.url) as store:
            rounds = [SEARCH, {"chunks": ["Parts ", "listed."], "delay_seconds": 2.0}]
            server = Server(tmp_path, rounds, store=store, keepalive_seconds=0.3)
            try:
                conversations = [new_conversation(server) for _ in range(3)]
                for number, conversation in enumerate(conversations):
                    body = {"conversation_id": conversation, "turn_id": f"t{number}",
                            "text": "List parts"}  # fmt: skip
                    assert (await http("POST", turns_url(server), json=body,
                                       headers=AUTH)).status_code == 202  # fmt: skip
                for conversation in conversations:  # each waits for its model now
                    await read_frames(server, conversation, after=0, stop_after=2)
                cluster.stop("immediate")
                down = await http("GET", chat(server) + "conversations/", headers=AUTH)
                assert down.status_code == 503
                assert down.json()["events"][0]["code"] == "chat_error"
                await asyncio.sleep(4.0)
                cluster.start()
                for conversation in conversations:
                    frames = await read_frames(server, conversation, after=2, idle_seconds=20)
                    assert [event["type"] for event in ends(frames)] == ["done"]
                with ChatStore(store) as stored:
                    assert stored.turns(state="running") == []
                    for conversation in conversations:
                        journal = stored.events(conversation)
                        assert [e["type"] for e in journal].count("done") == 1
                        assert [e["sequence"] for e in journal] == list(range(1, len(journal) + 1))
            finally:
                server.stop()
    finally:
        cluster.remove()


async def test_a_full_disk_ends_the_turn_once_the_space_is_back(tmp_path: Path) -> None:
    """The disk under a SQLite store fills while a turn waits for its model: its next write
    fails ("database or disk is full"), it waits, ends with ``chat_error`` — and that end is
    written, once, as soon as space is freed, not never."""
    with small_disk(tmp_path / "disk") as disk:
        rounds = [SEARCH, {"text": "Parts.", "delay_seconds": 1.0}]
        server = Server(tmp_path / "home", rounds, store=str(disk / "chat.sqlite3"),
                        keepalive_seconds=0.3)  # fmt: skip
        try:
            conversation = new_conversation(server)
            body = {"conversation_id": conversation, "turn_id": "full", "text": "List parts"}
            assert (await http("POST", turns_url(server), json=body,
                               headers=AUTH)).status_code == 202  # fmt: skip
            for _ in range(100):  # the turn is past its admission, in its model's pause
                if read(disk, "SELECT COUNT(*) FROM events")[0][0]:
                    break
                await asyncio.sleep(0.05)
            filler = fill(disk)
            await asyncio.sleep(14.0)  # past the turn's wait at its step: it has given up
            assert read(disk, "SELECT state FROM turns WHERE id = 'full'") == [("running",)]
            filler.unlink()
            frames = await read_frames(server, conversation, after=0, idle_seconds=15)
            assert [(event["type"], event.get("code")) for event in ends(frames)] == [
                ("error", "chat_error")
            ]
            with ChatStore(disk / "chat.sqlite3") as stored:
                assert stored.turn(conversation, "full").state == "failed"  # type: ignore[union-attr]
            log = server.log.read_text()
            assert "database or disk is full" in log and "once the store was back" in log
        finally:
            server.stop()


def read(disk: Path, sql: str) -> list[tuple[Any, ...]]:
    """A query on the store's file, read-only (opening a store writes its schema: no room)."""
    with contextlib.closing(
        sqlite3.connect(f"file:{disk / 'chat.sqlite3'}?mode=ro", uri=True)
    ) as raw:
        return raw.execute(sql).fetchall()


def good_store(path: Path) -> None:
    with ChatStore(path) as store:
        store.create_conversation("someone")


def truncated(path: Path) -> str:
    good_store(path)
    path.write_bytes(path.read_bytes()[:3000])
    return "is damaged"


def not_a_database(path: Path) -> str:
    path.write_text("just some notes, not a database\n" * 20)
    return "is not a SQLite database"


@pytest.mark.parametrize("damage", [truncated, not_a_database, None], ids=["truncated",
                         "not a database", "read-only"])  # fmt: skip
async def test_a_store_that_cannot_be_opened_keeps_the_routes_answering_503(
    tmp_path: Path, damage: Any
) -> None:
    with small_disk(tmp_path / "disk", 4) as disk:
        path = disk / "chat.sqlite3"
        if damage is None:
            good_store(path)
            for extra in disk.glob("chat.sqlite3-*"):
                extra.unlink()
            make_read_only(disk)
            problem = "is read-only"
        else:
            problem = damage(path)
        server = Server(tmp_path / "home", [SEARCH], store=str(path))
        try:
            named = f"the chat store {path} {problem}"
            listed = await http("GET", chat(server) + "conversations/", headers=AUTH)
            assert listed.status_code == 503
            [event] = listed.json()["events"]
            assert event["code"] == "chat_error" and event["message"].startswith(named)
            body = {"turn_id": "t1", "text": "List parts"}
            admitted = await http("POST", turns_url(server), json=body, headers=AUTH)
            assert admitted.status_code == 503
            assert admitted.json()["error"] == "chat_error"
            assert admitted.json()["message"].startswith(named)
            posted = await http("POST", chat(server), json={"text": "Hi"}, headers=AUTH)
            assert posted.status_code == 503
            async with websockets.connect(server.ws_url, additional_headers=AUTH) as ws:
                await ws.send(json.dumps({"type": "message", "text": "Hi"}))
                refused = json.loads(await asyncio.wait_for(ws.recv(), 10))
                assert refused["code"] == "chat_error" and refused["message"].startswith(named)
            status = await http("GET", server.url + "api/status", headers=AUTH)
            assert status.status_code == 200  # the server itself is fine
            assert server.log.read_text().count(named) == 1  # said once, not per request
        finally:
            server.stop()


def test_a_store_fixed_while_the_server_runs_is_used_at_once(tmp_path: Path) -> None:
    """The file is moved away and a good one put there: the next request works."""
    path = tmp_path / "chat.sqlite3"
    not_a_database(path)
    server = Server(tmp_path / "home", [{"text": "Back."}], store=str(path))
    try:
        assert httpx.get(chat(server) + "conversations/", headers=AUTH).status_code == 503
        shutil.move(path, tmp_path / "notes.txt")
        answered = httpx.post(chat(server), json={"text": "Hi"}, headers=AUTH, timeout=30)
        assert answered.status_code == 200 and answered.json()["answer"] == "Back."
    finally:
        server.stop()

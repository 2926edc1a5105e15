"""kill -9 mid-turn, then a restart on the same store: the turn a dead server left open is closed
as interrupted at start-up, and a mutation whose reply was lost has an *unknown outcome* — shown
to the model and the user, its confirmation final, never retried. Real `jupyter server`
processes, real httpx and `websockets` clients, a real GraphQL server for the mutation; each on
a SQLite file and on a PostgreSQL schema."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from gmchat_nb.core.store import ChatStore

from ..graphql_server import graphql_server
from .jupyter_process import AUTH, JupyterServer

QUERY_PARTS = {"name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 2}}
CREATE = {
    "name": "mutate",
    "id": "call-1",
    "args": {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}},
}


def only_conversation(store: ChatStore) -> str:
    actors = {row[0] for row in store._read("SELECT actor_id FROM conversations")}
    (actor,) = actors
    (conversation,) = store.conversations(actor)
    return conversation.id


async def post(url: str, body: dict[str, Any]) -> httpx.Response:
    async with httpx.AsyncClient(timeout=30) as client:
        return await client.post(url, json=body, headers=AUTH)


async def sse_until(
    url: str, body: dict[str, Any], wanted: str, *, then: Any = None
) -> list[dict[str, Any]]:
    """POST a streamed turn and read frames until one of type ``wanted`` arrived; ``then`` runs
    while the stream is still open (closing it would cancel the turn)."""
    frames: list[dict[str, Any]] = []
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", url + "stream/", json=body, headers=AUTH) as response,
    ):
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
                if frames[-1]["type"] == wanted:
                    if then is not None:
                        await then()
                    return frames
    raise AssertionError(f"no {wanted} in {frames}")


async def test_a_turn_killed_mid_way_is_closed_at_start_up(
    tmp_path: Path, store_location: str
) -> None:
    first = JupyterServer(
        tmp_path, [{"tool_calls": [QUERY_PARTS]}, {"delay_seconds": 60}], store=store_location
    )
    try:

        async def kill() -> None:
            await asyncio.sleep(0.2)  # the second provider round has begun (and waits)
            first.kill()

        frames = await sse_until(first.chat_url, {"text": "Which parts?"}, "tool_result", then=kill)
    finally:
        first.stop()
    with ChatStore(store_location) as store:
        cid = only_conversation(store)
        assert [t.state for t in store.turns(state="running")] == ["running"]

    second = JupyterServer(tmp_path, [{"text": "Back again."}], store=store_location)
    try:
        with ChatStore(store_location) as store:  # closed at start-up, before any request
            assert store.turns(state="running") == []
            journal = store.events(cid)
            assert [e["type"] for e in journal] == [f["type"] for f in frames] + ["error"]
            assert journal[-1]["code"] == "interrupted"
            assert "process running it stopped" in journal[-1]["message"]
            note = store.messages(cid)[-1]
            assert note.role == "assistant" and note.content.startswith("(This request was")
        answer = await post(second.chat_url, {"text": "Hello?"})
        assert answer.json()["answer"] == "Back again."
    finally:
        second.stop()


@pytest.mark.parametrize("transport", ["websocket", "sse"])
async def test_a_mutation_whose_reply_was_lost_has_an_unknown_outcome(
    tmp_path: Path, transport: str, store_location: str
) -> None:
    with graphql_server() as graphql:
        settings = {
            "project": graphql.url,
            "store": store_location,
            "chat_settings": {
                "allowed_mutations": ["createPart"],
                "confirm_mutations": ["createPart"],
            },
        }
        first = JupyterServer(tmp_path, [{"tool_calls": [CREATE]}, {"text": "Added."}], **settings)
        # The server dies after the mutation ran and before its reply reached the chat.
        graphql.after_mutation = lambda: os.kill(first.process.pid, signal.SIGKILL)
        try:
            if transport == "websocket":
                async with websockets.connect(first.ws_url, additional_headers=AUTH) as ws:
                    await ws.send(json.dumps({"type": "message", "text": "Add Spring"}))
                    while json.loads(await asyncio.wait_for(ws.recv(), 10))["type"] != (
                        "confirm_mutation"
                    ):
                        pass
                    await ws.send(
                        json.dumps(
                            {"type": "confirm", "confirmation_id": "call-1", "confirmed": True}
                        )
                    )
                    with pytest.raises(websockets.ConnectionClosed):
                        await asyncio.wait_for(ws.recv(), 10)
            else:
                await sse_until(first.chat_url, {"text": "Add Spring"}, "confirm_mutation")
                with pytest.raises(httpx.TransportError):
                    await post(
                        first.chat_url + "confirm/",
                        {"confirmation_id": "call-1", "confirmed": True},
                    )
            first.process.wait(timeout=10)
        finally:
            first.stop()
        assert graphql.count("Spring") == 1
        graphql.after_mutation = None

        second = JupyterServer(tmp_path, [{"text": "I will check first."}], **settings)
        try:
            with ChatStore(store_location) as store:
                cid = only_conversation(store)
                confirmation = store.confirmation(cid, "call-1")
                assert confirmation is not None and confirmation.state == "unknown"
                result = store.messages(cid)[-2].tool_result
                assert result["status"] == "unknown" and result["code"] == "unknown_outcome"
                assert result["mutation"] == "createPart"
                # the attempt carried an opaque key derived from the call; the user is shown it
                (sent,) = graphql.idempotency_keys
                assert sent is not None and sent.startswith("gmchat-") and len(sent) == 39
                assert result["idempotency_key"] == sent and sent in result["message"]
                note = store.messages(cid)[-1].content
                assert "Whether createPart changed the data is unknown" in note
                journal = store.events(cid)
                assert [e["type"] for e in journal][-2:] == ["tool_result", "error"]
                assert journal[-1]["code"] == "interrupted"
            # Confirming it again never runs it twice.
            again = await post(
                second.chat_url + "confirm/", {"confirmation_id": "call-1", "confirmed": True}
            )
            assert (again.status_code, again.json()["events"][0]["code"]) == (409, "bad_event")
            answer = await post(second.chat_url, {"text": "Did it work?"})
            assert answer.json()["answer"] == "I will check first."
            assert graphql.count("Spring") == 1
        finally:
            second.stop()


async def test_an_admitted_turn_killed_after_its_mutation_is_closed_never_run_again(
    tmp_path: Path, store_location: str
) -> None:
    """A durable turn whose data change may have happened is not continued after the restart
    (as reading turns are): it is closed with the mutation's outcome unknown, and it ran once."""
    with graphql_server() as graphql:
        settings = {
            "project": graphql.url,
            "store": store_location,
            "chat_settings": {"allowed_mutations": ["createPart"]},
        }
        first = JupyterServer(tmp_path, [{"tool_calls": [CREATE]}, {"text": "Added."}], **settings)
        graphql.after_mutation = lambda: os.kill(first.process.pid, signal.SIGKILL)
        try:
            admitted = await post(
                first.chat_url + "turns/", {"turn_id": "add-spring", "text": "Add Spring"}
            )
            assert admitted.status_code == 202
            first.process.wait(timeout=10)
        finally:
            first.stop()
        graphql.after_mutation = None
        assert graphql.count("Spring") == 1

        second = JupyterServer(tmp_path, [{"text": "Added again."}], **settings)
        try:
            cid = admitted.json()["conversation_id"]
            with ChatStore(store_location) as store:
                turn = store.turn(cid, "add-spring")
                assert turn is not None and turn.state == "interrupted"
                journal = store.events(cid, turn_id="add-spring")
                assert [e["type"] for e in journal][-2:] == ["tool_result", "error"]
                assert journal[-2]["result"]["code"] == "unknown_outcome"
            retried = await post(
                second.chat_url + "turns/", {"turn_id": "add-spring", "text": "Add Spring"}
            )
            assert retried.json()["state"] == "interrupted"
            await asyncio.sleep(1.0)  # a continued turn would have run by now
            assert graphql.count("Spring") == 1
        finally:
            second.stop()

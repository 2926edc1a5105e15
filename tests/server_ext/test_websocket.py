"""The WebSocket protocol at {url}ws: messages, confirmations, refusals, auth, disconnects."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from .conftest import CREATE, WRITES
from .helpers import read, read_turn, runtime, send, spring_count, types

CONFIRMING = {"allowed_mutations": WRITES, "confirm_mutations": ["createPart"]}


async def test_a_message_streams_a_turn(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, {"type": "message", "text": "Hi"})
    assert types(await read_turn(ws)) == ["text_chunk", "text_chunk", "done"]
    ws.close()


@pytest.mark.parametrize(
    ("payload", "code"),
    [
        ("{nope", "bad_event"),
        ({"type": "dance"}, "bad_event"),
        ([1, 2], "bad_event"),
        ({"type": "message"}, "bad_message"),
        ({"type": "message", "text": 5}, "bad_message"),
        ({"type": "confirm", "confirmation_id": "c"}, "bad_event"),
        ({"type": "confirm", "confirmation_id": 1, "confirmed": True}, "bad_event"),
        ({"type": "confirm", "confirmation_id": "nope", "confirmed": True}, "bad_event"),
    ],
)
async def test_bad_events(jp_ws_fetch: Any, payload: Any, code: str) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, payload)
    assert (await read(ws))["code"] == code
    # The socket stays usable and nothing was lost.
    await send(ws, {"type": "message", "text": "Hi"})
    assert (await read_turn(ws))[-1]["type"] == "done"
    ws.close()


@pytest.mark.gmchat(rounds=[{"text": "slow", "delay_seconds": 0.5}, {"text": "b"}])
async def test_overlapping_message_is_turn_in_progress(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, {"type": "message", "text": "one"})
    await send(ws, {"type": "message", "text": "two"})
    assert (await read(ws))["code"] == "turn_in_progress"
    assert types(await read_turn(ws)) == ["text_chunk", "done"]
    ws.close()


@pytest.mark.parametrize(
    ("decision", "status", "springs"),
    [(True, "executed", 1), (False, "cancelled", 0), (None, "cancelled", 0)],
)
@pytest.mark.gmchat(
    rounds=[{"tool_calls": [CREATE]}, {"text": "Finished."}],
    confirm_timeout_seconds=0.3,
    **CONFIRMING,
)
async def test_confirm_reject_and_timeout(
    jp_ws_fetch: Any, jp_serverapp: Any, decision: bool | None, status: str, springs: int
) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, {"type": "message", "text": "Add Spring"})
    first = await read_turn(ws, until="confirm_mutation")
    assert types(first) == ["tool_call", "confirm_mutation"]
    pending = first[-1]["id"]
    await send(ws, {"type": "message", "text": "meanwhile"})
    assert (await read(ws))["code"] == "confirmation_pending"
    if decision is not None:
        await send(ws, {"type": "confirm", "confirmation_id": "other", "confirmed": True})
        assert (await read(ws))["code"] == "bad_event"
        await send(ws, {"type": "confirm", "confirmation_id": pending, "confirmed": decision})
    rest = await read_turn(ws)
    assert types(rest) == ["tool_result", "text_chunk", "done"]
    assert rest[0]["result"]["status"] == status
    if decision is None:
        assert rest[0]["result"]["reason"] == "confirmation_timed_out"
        await send(ws, {"type": "confirm", "confirmation_id": pending, "confirmed": True})
        assert (await read(ws))["code"] == "confirmation_unavailable"
    assert await spring_count(runtime(jp_serverapp)) == springs
    ws.close()


@pytest.mark.gmchat(rounds=[{"text": "slow", "delay_seconds": 30}, {"text": "next"}])
async def test_closing_the_socket_cancels_the_turn(jp_ws_fetch: Any, jp_serverapp: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, {"type": "message", "text": "slow question"})
    rt = runtime(jp_serverapp)
    for _ in range(50):
        if rt.running_conversations():
            break
        await asyncio.sleep(0.01)
    assert rt.running_conversations()
    ws.close()
    for _ in range(100):
        if not rt.running_conversations():
            break
        await asyncio.sleep(0.02)
    assert not rt.running_conversations()
    again = await jp_ws_fetch("gmchat/chat/ws")
    await send(again, {"type": "message", "text": "next question"})
    events = await read_turn(again)
    assert events[0]["content"] == "next"  # not turn_in_progress; the slow round never answered
    cid = rt.store.conversations(rt.actor(None).id)[0].id
    assert "slow" not in [m.content for m in rt.store.messages(cid)]
    again.close()


async def test_socket_needs_a_token(jp_ws_fetch: Any) -> None:
    with pytest.raises(HTTPClientError) as error:
        await jp_ws_fetch("gmchat/chat/ws", headers={"Authorization": ""})
    assert error.value.code == 403


async def test_token_socket_skips_the_origin_check(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws", headers={"Origin": "http://evil.example"})
    await send(ws, {"type": "message", "text": "Hi"})
    assert (await read_turn(ws))[-1]["type"] == "done"
    ws.close()


@pytest.mark.gmchat(permission="tests.server_ext.identity.deny")
async def test_permission_hook_closes_4403(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    assert await asyncio.wait_for(ws.read_message(), 5) is None
    assert ws.close_code == 4403

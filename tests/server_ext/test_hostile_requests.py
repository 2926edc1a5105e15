"""What an attacker or a broken client sends: deep JSON, lone surrogates, oversized frames, wrong
types. Every answer is the contract's code with a message that says what was wrong, never a 5xx;
the socket stays usable; nothing is stored for a refusal; the server keeps answering others while
a turn works. pytest-jupyter's real server, its HTTP and WebSocket clients."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from . import hooks
from .conftest import CREATE, WRITES
from .helpers import call, read, read_turn, runtime, send, sse_events, types

DEEP = "[" * 20_000 + "]" * 20_000  # 40,000 bytes: under the size limit, past any recursion
SHALLOW_BUT_TOO_DEEP = '{"text": "hi", "x": ' + "[" * 40 + "]" * 40 + "}"
ROUTES = [("", "bad_message"), ("stream/", "bad_message"), ("confirm/", "bad_event")]


def nothing_stored(jp_serverapp: Any) -> bool:
    rt = runtime(jp_serverapp)
    return rt.store.conversations(rt.actor(None).id) == []


# -- deep nesting --------------------------------------------------------------------------------


@pytest.mark.parametrize("body", [DEEP, SHALLOW_BUT_TOO_DEEP])
@pytest.mark.parametrize(("route", "code"), [*ROUTES, ("conversations/", "bad_event")])
async def test_deeply_nested_json_is_400_never_500(
    jp_fetch: Any, jp_serverapp: Any, route: str, code: str, body: str
) -> None:
    status, answer = await call(jp_fetch, route, body)
    assert (status, answer["events"][0]["code"]) == (400, code)
    assert "nests JSON more than 32 levels deep" in answer["events"][0]["message"]
    assert nothing_stored(jp_serverapp)


async def test_deeply_nested_frames_get_bad_event_and_the_socket_stays_open(
    jp_ws_fetch: Any,
) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    for frame in (DEEP, SHALLOW_BUT_TOO_DEEP.replace('{"text"', '{"type": "message", "text"')):
        await send(ws, frame)
        refusal = await read(ws)
        assert refusal["code"] == "bad_event" and "nests JSON" in refusal["message"]
    await send(ws, {"type": "message", "text": "Hi"})
    assert types(await read_turn(ws)) == ["text_chunk", "text_chunk", "done"]
    ws.close()


# -- lone surrogates -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("route", "body", "code"),
    [
        ("", '{"text": "steel \\ud800 parts"}', "bad_message"),
        ("stream/", '{"text": "\\udfff"}', "bad_message"),
        ("", '{"text": "hi", "conversation_id": "\\ud800"}', "bad_event"),
        ("confirm/", '{"confirmation_id": "\\ud800", "confirmed": true}', "bad_event"),
        ("conversations/", '{"title": "Steel \\ud800"}', "bad_event"),
    ],
)
async def test_input_with_a_lone_surrogate_is_refused_and_nothing_is_stored(
    jp_fetch: Any, jp_serverapp: Any, route: str, body: str, code: str
) -> None:
    status, answer = await call(jp_fetch, route, body)
    assert (status, answer["events"][0]["code"]) == (400, code)
    assert "lone surrogate" in answer["events"][0]["message"]
    assert nothing_stored(jp_serverapp)
    status, after = await call(jp_fetch, "", {"text": "Hi"})  # the server is fine
    assert status == 200 and after["answer"] == "Hello there."


async def test_a_lone_surrogate_on_the_socket_is_bad_message_and_the_socket_goes_on(
    jp_ws_fetch: Any,
) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, '{"type": "message", "text": "tea \\ud800"}')
    assert (await read(ws))["code"] == "bad_message"
    await send(ws, {"type": "message", "text": "Hi"})
    assert (await read_turn(ws))[-1]["type"] == "done"
    ws.close()


@pytest.mark.gmchat(rounds=[{"text": "answer \ud83d"}, {"text": "and on"}])
async def test_model_text_with_a_lone_surrogate_streams_and_ends_once(jp_fetch: Any) -> None:
    response = await jp_fetch("gmchat/chat/stream/", method="POST", body=json.dumps({"text": "Hi"}))
    events = sse_events([response.body])
    assert types(events) == ["text_chunk", "done"]
    assert events[0]["content"] == "answer \ufffd"
    status, after = await call(jp_fetch, "", {"text": "More?"})
    assert status == 200 and after["answer"] == "and on"


# -- sizes ---------------------------------------------------------------------------------------


@pytest.mark.gmchat(max_body_bytes=1024)
async def test_socket_messages_obey_the_body_limit(jp_ws_fetch: Any) -> None:
    ws = await jp_ws_fetch("gmchat/chat/ws")
    await send(ws, {"type": "message", "text": "x" * 2000})  # over the limit: refused
    refusal = await read(ws)
    assert refusal["code"] == "bad_message" and "the limit is 1024" in refusal["message"]
    await send(ws, {"type": "message", "text": "Hi"})
    assert (await read_turn(ws))[-1]["type"] == "done"
    await send(ws, {"type": "message", "text": "x" * 5000})  # far over: not even read
    assert await asyncio.wait_for(ws.read_message(), 5) is None
    assert ws.close_code == 1009


# -- precise messages ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("{nope", "Request body is not valid JSON"),
        (b"\xff\xfe{}", "Request body is not valid UTF-8"),
        ("[1]", "Request body must be a JSON object, not an array."),
        ('{"text": 5}', "Message text ('text') must be a string, not a number."),
        ('{"text": "  "}', "Message text is required ('text' is blank)."),
        ('{"text": "hi", "conversation_id": 7}', "must be a string, not a number"),
    ],
)
async def test_refusals_say_what_was_wrong(jp_fetch: Any, body: Any, message: str) -> None:
    status, answer = await call(jp_fetch, "", body)
    assert status == 400
    assert message in answer["events"][0]["message"]


async def test_an_unknown_or_finished_confirmation_says_so(jp_fetch: Any) -> None:
    status, answer = await call(jp_fetch, "confirm/", {"confirmation_id": "x", "confirmed": True})
    assert (status, answer["events"][0]["code"]) == (409, "bad_event")
    assert "has a pending confirmation with that id" in answer["events"][0]["message"]


@pytest.mark.gmchat(
    rounds=[{"tool_calls": [CREATE]}, {"text": "Done."}],
    allowed_mutations=WRITES,
    confirm_mutations=["createPart"],
)
async def test_a_confirmation_already_decided_says_so(jp_fetch: Any) -> None:
    response = await jp_fetch(
        "gmchat/chat/stream/", method="POST", body=json.dumps({"text": "Add Spring"})
    )
    cid = response.headers["X-GMChat-Conversation"]
    decision = {"confirmation_id": "call-1", "confirmed": True, "conversation_id": cid}
    assert (await call(jp_fetch, "confirm/", decision))[0] == 200
    status, again = await call(jp_fetch, "confirm/", decision)
    assert (status, again["events"][0]["code"]) == (409, "bad_event")
    assert "already decided" in again["events"][0]["message"]


# -- the server stays responsive -----------------------------------------------------------------


@pytest.mark.gmchat(hooks={"message_received": "tests.server_ext.hooks.block_until_released"})
async def test_the_server_answers_others_while_a_turn_is_busy(jp_fetch: Any) -> None:
    """A turn that does blocking work (here a hook that blocks; in life a big question or a big
    result) runs on the engine thread: the server's own loop answers /api/status meanwhile."""
    hooks.reset()
    turn = asyncio.create_task(call(jp_fetch, "", {"text": "Hi"}))
    for _ in range(500):
        if hooks.ENTERED.is_set():
            break
        await asyncio.sleep(0.01)
    status = await jp_fetch("api/status")
    hooks.RELEASE.set()  # only now may the turn go on
    code, body = await turn
    assert status.code == 200 and code == 200 and body["answer"] == "Hello there."
    assert hooks.RELEASED == [True], "the status request had to wait for the turn"
    assert hooks.THREADS == ["gmchat-engine"]

"""Two Jupyter users on one server: neither can read, use or confirm the other's conversations."""

from __future__ import annotations

import json
from typing import Any

import pytest

from .conftest import CREATE, WRITES
from .helpers import call, runtime, spring_count, sse_events

ALICE = {"Authorization": "token alice-token"}
BOB = {"Authorization": "token bob-token"}


@pytest.mark.gmchat(
    rounds=[{"tool_calls": [CREATE]}, {"text": "Created."}],
    identity_provider_class="tests.server_ext.identity.TwoUsers",
    allowed_mutations=WRITES,
    confirm_mutations=["createPart"],
)
async def test_users_are_isolated(jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any) -> None:
    chunks: list[bytes] = []
    response = await jp_fetch(
        "gmchat/chat/stream/",
        method="POST",
        body=json.dumps({"text": "Add Spring"}),
        headers=ALICE,
        streaming_callback=chunks.append,
    )
    alice_cid = response.headers["X-GMChat-Conversation"]
    pending = sse_events(chunks)[-1]["id"]
    # Bob sees none of Alice's conversations and cannot address one.
    status, listed = await call(jp_fetch, "conversations/", method="GET", headers=BOB)
    assert (status, listed["conversations"]) == (200, [])
    status, body = await call(
        jp_fetch, "", {"text": "peek", "conversation_id": alice_cid}, headers=BOB
    )
    assert (status, body["events"][0]["code"]) == (404, "bad_event")
    # Bob cannot claim Alice's confirmation, by id alone or naming her conversation.
    claim = {"confirmation_id": pending, "confirmed": True}
    assert (await call(jp_fetch, "confirm/", claim, headers=BOB))[0] == 409
    status, _ = await call(
        jp_fetch, "confirm/", {**claim, "conversation_id": alice_cid}, headers=BOB
    )
    assert status == 404
    ws = await jp_ws_fetch("gmchat/chat/ws", headers=BOB)
    await ws.write_message(json.dumps({"type": "confirm", **claim}))
    assert json.loads(await ws.read_message())["code"] == "bad_event"
    await ws.write_message(
        json.dumps({"type": "message", "text": "x", "conversation_id": alice_cid})
    )
    assert json.loads(await ws.read_message())["code"] == "bad_event"
    ws.close()
    assert await spring_count(runtime(jp_serverapp)) == 0
    # Alice still can.
    status, done = await call(jp_fetch, "confirm/", claim, headers=ALICE)
    assert status == 200 and done["answer"] == "Created."
    assert await spring_count(runtime(jp_serverapp)) == 1
    rt = runtime(jp_serverapp)
    assert {c.actor_id for c in rt.store.conversations("jupyter:alice")} == {"jupyter:alice"}

"""POST {url}, POST {url}stream/, POST {url}confirm/ and {url}conversations/ under pytest-jupyter."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from tornado.httpclient import HTTPClientError

from .conftest import CREATE, WRITES
from .helpers import call, runtime, spring_count, sse_events, types

CONFIRMING = {"allowed_mutations": WRITES, "confirm_mutations": ["createPart"]}


async def test_post_returns_the_envelope(jp_fetch: Any) -> None:
    status, body = await call(jp_fetch, "", {"text": "Hi"})
    assert status == 200
    assert types(body["events"]) == ["text_chunk", "text_chunk", "done"]
    assert body["answer"] == "Hello there."
    assert isinstance(body["conversation_id"], str)


@pytest.mark.parametrize("route", ["", "stream/"])
@pytest.mark.parametrize(
    "payload",
    ["{not json", "[1]", {}, {"text": 3}, {"text": "   "}, {"text": None}],
)
@pytest.mark.gmchat(max_body_bytes=256)
async def test_bad_messages_are_400_and_store_nothing(
    jp_fetch: Any, jp_serverapp: Any, route: str, payload: Any
) -> None:
    status, body = await call(jp_fetch, route, payload)
    assert (status, body["events"][0]["code"]) == (400, "bad_message")
    assert runtime(jp_serverapp).store.conversations(runtime(jp_serverapp).actor(None).id) == []


@pytest.mark.gmchat(max_body_bytes=256)
async def test_oversized_bodies_are_413(jp_fetch: Any) -> None:
    for route, code in (("", "bad_message"), ("stream/", "bad_message"), ("confirm/", "bad_event")):
        status, body = await call(jp_fetch, route, {"text": "x" * 1000})
        assert (status, body["events"][0]["code"]) == (413, code)


@pytest.mark.parametrize(
    "payload",
    [
        "{",
        {},
        {"confirmation_id": 1, "confirmed": True},
        {"confirmation_id": "c", "confirmed": "y"},
    ],
)
async def test_malformed_confirms_are_400_bad_event(jp_fetch: Any, payload: Any) -> None:
    status, body = await call(jp_fetch, "confirm/", payload)
    assert (status, body["events"][0]["code"]) == (400, "bad_event")


async def test_unknown_confirmation_is_409_bad_event(jp_fetch: Any) -> None:
    status, body = await call(jp_fetch, "confirm/", {"confirmation_id": "nope", "confirmed": True})
    assert (status, body["events"][0]["code"]) == (409, "bad_event")


async def test_routes_need_a_token(jp_fetch: Any) -> None:
    for route, method in (
        ("", "POST"),
        ("stream/", "POST"),
        ("confirm/", "POST"),
        ("conversations/", "GET"),
        ("conversations/", "POST"),
    ):
        response = await jp_fetch(
            "gmchat/chat/" + route,
            method=method,
            body="{}" if method == "POST" else None,
            headers={"Authorization": ""},
            raise_error=False,
        )
        assert response.code == 403, route


async def test_get_on_post_routes_is_405(jp_fetch: Any) -> None:
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("gmchat/chat/")
    assert error.value.code == 405


@pytest.mark.gmchat(permission="tests.server_ext.identity.deny")
async def test_permission_hook_denies_with_403(jp_fetch: Any) -> None:
    for route, method in (("", "POST"), ("stream/", "POST"), ("conversations/", "GET")):
        response = await jp_fetch(
            "gmchat/chat/" + route,
            method=method,
            body=json.dumps({"text": "hi"}) if method == "POST" else None,
            raise_error=False,
        )
        assert response.code == 403, route


@pytest.mark.gmchat(permission="tests.server_ext.identity.allow")
async def test_permission_hook_allows(jp_fetch: Any) -> None:
    assert (await call(jp_fetch, "", {"text": "hi"}))[0] == 200


@pytest.mark.gmchat(rounds=[{"text": "one"}, {"text": "two"}])
async def test_conversations_list_create_and_select(jp_fetch: Any) -> None:
    status, body = await call(jp_fetch, "conversations/", method="GET")
    # (with what the panel's header shows, as the widget's: the project and the provider)
    assert (status, body) == (
        200,
        {"conversations": [], "project": "demo:inventory", "provider": "scripted"},
    )
    status, created = await call(jp_fetch, "conversations/", {"title": "Parts"})
    assert status == 201 and created["conversation"]["title"] == "Parts"
    cid = created["conversation"]["id"]
    _, first = await call(jp_fetch, "", {"text": "q1", "conversation_id": cid})
    assert first["conversation_id"] == cid and first["answer"] == "one"
    _, second = await call(jp_fetch, "", {"text": "q2"})  # the most recent: the same one
    assert second["conversation_id"] == cid and second["answer"] == "two"
    _, listed = await call(jp_fetch, "conversations/", method="GET")
    assert [c["id"] for c in listed["conversations"]] == [cid]
    assert listed["conversations"][0]["messages"] == 4
    status, missing = await call(jp_fetch, "", {"text": "q", "conversation_id": "nope"})
    assert (status, missing["events"][0]["code"]) == (404, "bad_event")
    status, wrong = await call(jp_fetch, "", {"text": "q", "conversation_id": 7})
    assert (status, wrong["events"][0]["code"]) == (400, "bad_event")


@pytest.mark.gmchat(rounds=[{"tool_calls": [CREATE]}], **CONFIRMING)
async def test_plain_post_cannot_confirm(jp_fetch: Any) -> None:
    _, body = await call(jp_fetch, "", {"text": "Add Spring"})
    assert body["events"][-1]["code"] == "confirmation_required_transport"


# -- SSE -----------------------------------------------------------------------------------------


async def stream(jp_fetch: Any, payload: dict[str, Any], **kwargs: Any) -> tuple[Any, list[bytes]]:
    chunks: list[bytes] = []
    response = await jp_fetch(
        "gmchat/chat/stream/",
        method="POST",
        body=json.dumps(payload),
        streaming_callback=chunks.append,
        **kwargs,
    )
    return response, chunks


@pytest.mark.gmchat(rounds=[{"chunks": ["a", "b", "c"]}])
async def test_sse_one_frame_per_event(jp_fetch: Any) -> None:
    response, chunks = await stream(jp_fetch, {"text": "Hi"})
    assert response.headers["Content-Type"] == "text/event-stream"
    assert response.headers["X-GMChat-Conversation"]
    events = sse_events(chunks)
    assert types(events) == ["text_chunk"] * 3 + ["done"]
    assert len(chunks) >= len(events)  # flushed one by one, not as one body


@pytest.mark.gmchat(rounds=[{"text": "late", "delay_seconds": 0.35}], keepalive_seconds=0.1)
async def test_sse_keepalive_during_silence(jp_fetch: Any) -> None:
    _, chunks = await stream(jp_fetch, {"text": "Hi"})
    body = b"".join(chunks)
    assert body.startswith(b": keepalive\n\n") and body.count(b": keepalive\n\n") >= 2
    assert types(sse_events(chunks)) == ["text_chunk", "done"]


@pytest.mark.gmchat(rounds=[{"tool_calls": [CREATE]}, {"text": "Created Spring."}], **CONFIRMING)
async def test_sse_confirm_flow_runs_the_mutation_once(jp_fetch: Any, jp_serverapp: Any) -> None:
    response, chunks = await stream(jp_fetch, {"text": "Add a part Spring"})
    events = sse_events(chunks)
    assert types(events) == ["tool_call", "confirm_mutation"]
    pending = events[-1]["id"]
    # A message while the confirmation is pending is refused.
    _, refused = await call(jp_fetch, "", {"text": "more"})
    assert refused["events"][-1]["code"] == "confirmation_pending"
    payload = {"confirmation_id": pending, "confirmed": True}
    status, body = await call(jp_fetch, "confirm/", payload)
    assert status == 200
    assert types(body["events"]) == ["tool_result", "text_chunk", "done"]
    assert body["events"][0]["result"]["status"] == "executed"
    assert body["answer"] == "Created Spring."
    assert body["conversation_id"] == response.headers["X-GMChat-Conversation"]
    status, again = await call(
        jp_fetch, "confirm/", {**payload, "conversation_id": body["conversation_id"]}
    )
    assert (status, again["events"][0]["code"]) == (409, "bad_event")
    assert await spring_count(runtime(jp_serverapp)) == 1


@pytest.mark.gmchat(rounds=[{"tool_calls": [CREATE]}, {"text": "Not created."}], **CONFIRMING)
async def test_sse_reject_does_not_mutate(jp_fetch: Any, jp_serverapp: Any) -> None:
    _, chunks = await stream(jp_fetch, {"text": "Add a part Spring"})
    pending = sse_events(chunks)[-1]["id"]
    _, body = await call(jp_fetch, "confirm/", {"confirmation_id": pending, "confirmed": False})
    assert body["events"][0]["result"]["status"] == "cancelled"
    assert await spring_count(runtime(jp_serverapp)) == 0


@pytest.mark.gmchat(rounds=[{"text": "slow", "delay_seconds": 30}, {"text": "next"}])
async def test_sse_disconnect_cancels_the_turn(jp_fetch: Any, jp_serverapp: Any) -> None:
    with pytest.raises(HTTPClientError):  # the client gives up: a disconnect
        await stream(jp_fetch, {"text": "slow question"}, request_timeout=0.3)
    rt = runtime(jp_serverapp)
    for _ in range(50):  # the server notices the closed connection at once; allow a few ticks
        if not rt.running_conversations():
            break
        await asyncio.sleep(0.02)
    assert not rt.running_conversations()
    status, body = await call(jp_fetch, "", {"text": "next question"})
    assert status == 200 and body["answer"] == "next"  # not turn_in_progress
    contents = [m.content for m in rt.store.messages(body["conversation_id"])]
    assert "slow" not in contents and contents[0] == "slow question"
    # The cancelled turn was closed, not left dangling: a note for the model and the user, and
    # a terminal event in the journal.
    assert contents[1].startswith("(This request was interrupted before it finished")
    first_turn = rt.store.events(body["conversation_id"])[0]
    assert (first_turn["type"], first_turn["code"]) == ("error", "interrupted")


@pytest.mark.gmchat(rounds=[{"text": "first round"}, {"text": "second round"}])
async def test_a_scripted_provider_plays_its_script_per_conversation(jp_fetch: Any) -> None:
    """Each conversation starts the script from its first round (the README says so)."""
    answers = []
    for title in ("one", "two"):
        _, created = await call(jp_fetch, "conversations/", {"title": title})
        cid = created["conversation"]["id"]
        _, first = await call(jp_fetch, "", {"text": "q", "conversation_id": cid})
        answers.append(first["answer"])
    _, again = await call(jp_fetch, "", {"text": "q2", "conversation_id": cid})
    assert answers == ["first round", "first round"] and again["answer"] == "second round"

"""``provider_fallbacks`` (core/providers/attempts.py): a turn whose provider still fails after its
retries goes on with the next provider, history and all, and stays there for the rest of the
turn; through ``Chat`` with the real SDKs against the vendor wire servers."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from gmchat_nb import Chat

from ...vendor_server import Reply, ToolCallSpec, Vendor, VendorServer
from .test_retries import FIRST_TEXT_AFTER, QUERY, vendor_config

RETRIES = {"attempts": 2, "max_wait_seconds": 0.05}
MORE: dict[str, Any] = {**QUERY, "limit": 3}


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [str(e.get("kind") or e.get("code") or e["type"]) for e in events]


def fallback_to(server: VendorServer, vendor: Vendor) -> dict[str, Any]:
    return {"provider": f"{vendor}:test-model", "provider_config": vendor_config(server, vendor)}


def open_chat(
    server: VendorServer,
    primary: Vendor = "openai",
    fallbacks: list[Any] | None = None,
    **settings: Any,
) -> Chat:
    settings.setdefault("provider_retries", RETRIES)
    return Chat(
        provider=f"{primary}:test-model",
        provider_config=vendor_config(server, primary),
        provider_fallbacks=fallbacks,
        store=":memory:",
        **settings,
    )


def tool_ids(vendor: Vendor, body: dict[str, Any]) -> tuple[list[str], list[str]]:
    """The ids of the tool calls and of the tool results in a request body, in order."""
    calls: list[str] = []
    results: list[str] = []
    for message in body["messages"]:
        if vendor == "anthropic":
            blocks = message["content"] if isinstance(message["content"], list) else []
            calls += [b["id"] for b in blocks if b.get("type") == "tool_use"]
            results += [b["tool_use_id"] for b in blocks if b.get("type") == "tool_result"]
        else:
            calls += [c["id"] for c in message.get("tool_calls") or []]
            if message["role"] == "tool":
                results.append(message["tool_call_id"])
    return calls, results


@pytest.mark.parametrize(
    ("primary", "fallback"), [("openai", "anthropic"), ("anthropic", "openai")]
)
async def test_a_turn_goes_on_with_the_fallback_its_history_whole_and_stays_there(
    server: VendorServer, primary: Vendor, fallback: Vendor
) -> None:
    ran: list[str] = []
    server.script(
        primary,
        [Reply(tool_calls=[ToolCallSpec("query", QUERY)]), Reply(status=503), Reply(status=503)],
    )
    server.script(
        fallback,
        [Reply(tool_calls=[ToolCallSpec("query", MORE)]), Reply(text="Steel, Aluminum, Cobalt.")],
    )
    chat = open_chat(
        server,
        primary,
        [fallback_to(server, fallback)],
        hooks={"tool_called": lambda **p: ran.append(p["tool_name"])},
    )
    try:
        turn = await chat.ask("Three materials?")
        assert kinds(turn.events) == [
            "tool_call",
            "tool_result",
            "retry",
            "fallback",
            "tool_call",
            "tool_result",
            "text_chunk",
            "done",
        ]
        assert turn.answer == "Steel, Aluminum, Cobalt."
        assert ran == ["query", "query"]  # the primary's call ran once, before it failed
        switch = {
            "from": f"{primary}:test-model",
            "to": f"{fallback}:test-model",
            "reason": "HTTP 503",
        }
        assert turn.events[3]["details"] == switch
        done = turn.events[-1]
        assert done["fallbacks"] == [switch]
        assert done["attempts"]["requests"] == 3 and done["attempts"]["retried"] == 1
        # the fallback's first request carries the whole history: the call and its result
        first_call = turn.events[0]["id"]
        continued = server.requests[fallback][0]
        assert tool_ids(fallback, continued) == ([first_call], [first_call])
        assert "Three materials?" in json.dumps(continued["messages"])
        # sticky: the next round went to the fallback directly, the primary was not asked again
        assert len(server.requests[primary]) == 3 and len(server.requests[fallback]) == 2
        second_call = turn.events[4]["id"]
        answered = server.requests[fallback][1]
        assert tool_ids(fallback, answered) == ([first_call, second_call],) * 2
        # a new turn starts on the primary again
        server.script(primary, [Reply(text="Back on the primary.")])
        again = await chat.ask("And now?")
        assert again.answer == "Back on the primary." and "fallbacks" not in again.events[-1]
        assert len(server.requests[fallback]) == 2
    finally:
        await chat.aclose()


async def test_a_context_too_long_falls_back_at_once_without_retrying(
    server: VendorServer,
) -> None:
    too_long = Reply(status=400, error_message="maximum context length exceeded")
    server.script("openai", [too_long, Reply(text="never asked")])
    server.script("anthropic", [Reply(text="A shorter answer.")])
    chat = open_chat(
        server,
        fallbacks=[fallback_to(server, "anthropic")],
        provider_retries={"attempts": 3, "max_wait_seconds": 0.05},
    )
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    assert kinds(turn.events) == ["fallback", "text_chunk", "done"]
    assert len(server.requests["openai"]) == 1  # not retried
    reason = turn.events[0]["details"]["reason"]
    assert reason == "context too long"
    assert turn.events[-1]["fallbacks"] == [
        {"from": "openai:test-model", "to": "anthropic:test-model", "reason": reason}
    ]
    assert turn.answer == "A shorter answer."


async def test_an_answer_cut_off_on_the_primary_is_withdrawn_before_the_fallback_answers(
    server: VendorServer,
) -> None:
    cut = Reply(text=["shown ", "then cut"], cut_after=FIRST_TEXT_AFTER["openai"])
    server.script("openai", [cut])
    server.script("anthropic", [Reply(text="Steel and Aluminum.")])
    chat = open_chat(
        server,
        fallbacks=[fallback_to(server, "anthropic")],
        provider_retries={"attempts": 1},
    )
    try:
        turn = await chat.ask("Two materials?")
        assert kinds(turn.events) == [
            "text_chunk",
            "stream_reset",
            "fallback",
            "text_chunk",
            "done",
        ]
        assert turn.events[0]["content"] == "shown "
        assert turn.answer == "Steel and Aluminum." and "shown" not in turn.answer
        session = await chat.session()
        stored = [m.content for m in session.history()]
        assert "Steel and Aluminum." in stored and not any("shown" in m for m in stored)
        assert len(server.requests["openai"]) == 1  # one attempt: the cut was not retried
        assert turn.events[-1]["fallbacks"][0]["to"] == "anthropic:test-model"
    finally:
        await chat.aclose()


@pytest.mark.parametrize(
    ("reply", "config"),
    [
        (Reply(text="too late", delay=3), {"timeout_seconds": 0.3}),
        (Reply(text=["a ", "b ", "c"], stall_after=2), {"stream_timeout_seconds": 0.3}),
    ],
    ids=["no_first_event", "stalled"],
)
async def test_a_deadline_on_the_primary_falls_back(
    server: VendorServer, reply: Reply, config: dict[str, Any]
) -> None:
    server.script("openai", [reply])
    server.script("anthropic", [Reply(text="On time.")])
    chat = Chat(
        provider="openai:test-model",
        provider_config={**vendor_config(server, "openai"), **config},
        provider_fallbacks=[fallback_to(server, "anthropic")],
        provider_retries=RETRIES,
        store=":memory:",
    )
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    assert turn.answer == "On time." and turn.events[-1]["type"] == "done"
    assert turn.events[-1]["fallbacks"][0]["reason"] == "no answer in time"
    assert len(server.requests["openai"]) == 1  # our own deadline is not retried


async def test_a_server_error_that_mentions_a_refused_connection_still_falls_back(
    server: VendorServer,
) -> None:
    envoy = "upstream connect error or disconnect/reset before headers. reset reason: connection refused"
    server.script("openai", [Reply(status=503, error_message=envoy)] * 2)
    server.script("anthropic", [Reply(text="From the fallback.")])
    chat = open_chat(server, fallbacks=[fallback_to(server, "anthropic")])
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    assert kinds(turn.events) == ["retry", "fallback", "text_chunk", "done"]


@pytest.mark.parametrize("first", ["unavailable", "too_long"])
async def test_done_attempts_count_every_request_the_vendors_saw(
    server: VendorServer, first: str
) -> None:
    failed = (
        [Reply(status=503)] * 2
        if first == "unavailable"
        else [Reply(status=400, error_message="maximum context length exceeded")]
    )
    server.script("openai", failed)
    server.script("anthropic", [Reply(text="Steel and Aluminum.")])
    chat = open_chat(server, fallbacks=[fallback_to(server, "anthropic")])
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    seen = len(server.requests["openai"]) + len(server.requests["anthropic"])
    attempts = turn.events[-1].get("attempts") or {"requests": 1, "retries": 0}
    assert attempts["requests"] + attempts["retries"] == seen


async def test_without_fallbacks_a_failure_ends_the_turn_as_before(server: VendorServer) -> None:
    server.script("openai", [Reply(status=503), Reply(status=503), Reply(text="never asked")])
    chat = open_chat(server)
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    assert kinds(turn.events) == ["retry", "provider_failed"]
    assert len(server.requests["openai"]) == 2 and server.requests["anthropic"] == []


async def test_a_fallback_that_fails_too_ends_the_turn_with_provider_failed(
    server: VendorServer,
) -> None:
    server.script("openai", [Reply(status=503), Reply(status=503)])
    server.script("anthropic", [Reply(status=529), Reply(status=529), Reply(text="never")])
    chat = open_chat(server, fallbacks=[fallback_to(server, "anthropic")])
    try:
        turn = await chat.ask("Two materials?")
    finally:
        await chat.aclose()
    assert kinds(turn.events) == ["retry", "fallback", "retry", "provider_failed"]
    assert len(server.requests["anthropic"]) == 2


async def test_a_fallback_that_cannot_be_built_is_skipped_with_a_warning(
    server: VendorServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script("openai", [Reply(status=503), Reply(status=503)])
    server.script("anthropic", [Reply(text="Steel and Aluminum.")])
    broken = {"provider": "nonexistent:model"}
    chat = open_chat(server, fallbacks=[broken, fallback_to(server, "anthropic")])
    with caplog.at_level(logging.WARNING, logger="gmchat_nb.core.providers.attempts"):
        try:
            turn = await chat.ask("Two materials?")
        finally:
            await chat.aclose()
    assert turn.answer == "Steel and Aluminum."
    assert turn.events[-1]["fallbacks"] == [
        {"from": "openai:test-model", "to": "anthropic:test-model", "reason": "HTTP 503"}
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        "provider_fallbacks[0] cannot be used" in w and "nonexistent" in w for w in warnings
    ), warnings


async def test_only_unbuildable_fallbacks_leave_the_failure_standing(
    server: VendorServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.script("openai", [Reply(status=503), Reply(status=503)])
    chat = open_chat(server, fallbacks=[{"provider": "nonexistent:model"}])
    with caplog.at_level(logging.WARNING, logger="gmchat_nb.core.providers.attempts"):
        try:
            turn = await chat.ask("Two materials?")
        finally:
            await chat.aclose()
    assert kinds(turn.events) == ["retry", "provider_failed"]
    assert any("cannot be used" in r.getMessage() for r in caplog.records)

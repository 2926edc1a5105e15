"""A model request that breaks after its answer began (core/providers/attempts.py): asked again as
a whole, what it had streamed withdrawn (``stream_reset``) and never in history; against the
vendor wire servers with the real SDKs, and through ``Chat`` and the store's journal."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.events import answer_text
from gmchat_nb.core.providers.attempts import NoticeEvent, ProviderRetries, StreamResetEvent
from gmchat_nb.core.providers.base import DoneEvent, Message, TextChunkEvent

from ...vendor_server import Reply, ToolCallSpec, VendorServer
from .test_adapters import TOOLS, VENDORS, provider
from .test_retries import FAST, FIRST_TEXT_AFTER, QUERY, vendor_config

ASK = [Message("user", "hi")]


def broken_midway(vendor: str, how: str) -> Reply:
    """A reply that streams "shown " and then fails: an in-band overload (or, for Ollama, an
    error line saying so), or the connection dropped without the end of the body."""
    if how == "cut":
        return Reply(text=["shown ", "then cut"], cut_after=FIRST_TEXT_AFTER[vendor])
    return Reply(
        text=["shown ", "then cut"],
        error_after=FIRST_TEXT_AFTER[vendor],
        error_message="server overloaded, please try again",
    )


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("how", ["in_band", "cut"])
async def test_a_stream_that_breaks_after_output_is_asked_again_with_a_reset(
    server: VendorServer, vendor: str, how: str
) -> None:
    server.script(vendor, [broken_midway(vendor, how), Reply(text="whole answer")])  # type: ignore[arg-type]
    retries = ProviderRetries(FAST)
    events = [event async for event in retries.events(provider(server, vendor), ASK, TOOLS)]
    kinds = [type(event).__name__ for event in events]
    reset = kinds.index("StreamResetEvent")
    assert "".join(e.content for e in events[:reset] if isinstance(e, TextChunkEvent)) == "shown "
    assert isinstance(events[reset + 1], NoticeEvent) and events[reset + 1].kind == "retry"
    after = "".join(e.content for e in events[reset:] if isinstance(e, TextChunkEvent))
    assert after == "whole answer" and isinstance(events[-1], DoneEvent)
    assert retries.summary() == {"requests": 1, "retried": 1, "retries": 1}
    assert len(server.requests[vendor]) == 2  # type: ignore[index]
    assert server.requests[vendor][0] == server.requests[vendor][1]  # type: ignore[index]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_stream_that_keeps_breaking_fails_after_its_attempts(
    server: VendorServer, vendor: str
) -> None:
    server.script(vendor, [broken_midway(vendor, "cut")] * 3 + [Reply(text="never")])  # type: ignore[arg-type]
    retries = ProviderRetries(FAST)
    seen: list[Any] = []

    async def read() -> None:
        async for event in retries.events(provider(server, vendor), ASK, TOOLS):
            seen.append(event)

    with pytest.raises(Exception):  # noqa: B017, PT011 -- the last failure, whatever its class
        await read()
    assert sum(isinstance(event, StreamResetEvent) for event in seen) == 2
    assert len(server.requests[vendor]) == 3  # type: ignore[index]


async def chat_turn(
    server: VendorServer, vendor: str, replies: list[Reply], **settings: Any
) -> tuple[Any, Chat]:
    server.script(vendor, replies)  # type: ignore[arg-type]
    chat = Chat(
        provider=f"{vendor}:test-model",
        provider_config=vendor_config(server, vendor),
        store=":memory:",
        provider_retries={"max_wait_seconds": 0.05},
        **settings,
    )
    return await chat.ask("Two materials?"), chat


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_turn_withdraws_the_broken_answer_and_keeps_only_the_whole_one(
    server: VendorServer, vendor: str
) -> None:
    calls: list[str] = []

    def tool_called(tool_name: str, **_: Any) -> None:
        calls.append(tool_name)

    turn, chat = await chat_turn(
        server,
        vendor,
        [
            Reply(tool_calls=[ToolCallSpec("query", QUERY)]),
            broken_midway(vendor, "cut"),
            Reply(text="Steel and Aluminum."),
        ],
        hooks={"tool_called": tool_called},
    )
    try:
        kinds = [e["type"] for e in turn.events]
        assert kinds == [
            "tool_call",
            "tool_result",
            "text_chunk",
            "stream_reset",
            "notice",
            "text_chunk",
            "done",
        ]
        assert turn.events[2]["content"] == "shown "
        assert turn.answer == "Steel and Aluminum."
        assert calls == ["query"]  # the tool before the broken request ran once
        # the history holds the whole answer only: the next request shows it
        session = await chat.session()
        stored = [m.content for m in session.store.messages(session.conversation_id)]
        assert "Steel and Aluminum." in stored and not any("shown" in m for m in stored if m)
        # the journal keeps the reset, and its readers drop what it withdrew
        journal = list(session.store.events(session.conversation_id))
        assert [e["type"] for e in journal] == kinds
        assert answer_text(journal) == "Steel and Aluminum."
        assert turn.events[-1]["attempts"] == {"requests": 2, "retried": 1, "retries": 1}
    finally:
        await chat.aclose()


def test_answer_text_drops_only_the_chunks_a_reset_withdrew() -> None:
    events = [
        {"type": "text_chunk", "content": "Thinking "},
        {"type": "tool_call", "id": "1", "name": "x", "args": {}},
        {"type": "text_chunk", "content": "half "},
        {"type": "text_chunk", "content": "an answer"},
        {"type": "stream_reset", "reason": "connection error"},
        {"type": "notice", "kind": "retry", "message": "asking again"},
        {"type": "text_chunk", "content": "The answer."},
        {"type": "done", "usage": {}},
    ]
    assert answer_text(events) == "Thinking The answer."
    assert answer_text(events[:4]) == "Thinking half an answer"

"""The Chat API's durable side: a turn id makes ``ask`` idempotent, ``events(after=N)`` replays
the conversation's journal as a second view or a reconnecting client needs it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore

ROUNDS = [
    {
        "tool_calls": [
            {"name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 2}}
        ]
    },
    {"text": "Two parts."},
    {"text": "Another answer."},
]


async def test_asking_again_under_the_same_turn_id_replays_and_never_reruns(
    tmp_path: Path,
) -> None:
    provider = ScriptedProvider({"rounds": ROUNDS})
    chat = Chat(project="demo", provider=provider, store=str(tmp_path / "chat.sqlite3"))
    try:
        first = await chat.ask("List two parts", turn_id="q-1")
        again = await chat.ask("List two parts", turn_id="q-1")
        assert again.answer == first.answer == "Two parts."
        assert [e["type"] for e in again.events] == [e["type"] for e in first.events]
        assert len(provider.requests) == 2  # the retry made no provider request
        with pytest.raises(ValueError, match="another question"):
            await chat.ask("Something else", turn_id="q-1")
        journal = await chat.events()
        assert [e["sequence"] for e in journal] == list(range(1, len(first.events) + 1))
        assert {e["turn_id"] for e in journal} == {"q-1"}
        assert await chat.events(after=journal[-2]["sequence"]) == journal[-1:]
        second = await chat.ask("And again?")
        assert second.answer == "Another answer."
        later = await chat.events(after=journal[-1]["sequence"])
        assert [e["type"] for e in later] == ["text_chunk", "done"]
        assert later[0]["turn_id"] != "q-1"
    finally:
        await chat.aclose()


async def test_a_cancel_recorded_by_another_process_stops_the_turn_between_steps(
    tmp_path: Path,
) -> None:
    """The cancel command is in the store (another server wrote it): the turn notices it at its
    next step, ends with one interrupted event, and makes no further provider request."""
    slow = [
        {"tool_calls": ROUNDS[0]["tool_calls"], "delay_seconds": 0.5},
        {"text": "Never said."},
    ]
    provider = ScriptedProvider({"rounds": slow})
    store_path = tmp_path / "chat.sqlite3"
    chat = Chat(project="demo", provider=provider, store=str(store_path))
    elsewhere = ChatStore(store_path)
    try:
        asking = asyncio.create_task(chat.ask("List two parts", turn_id="q-cancel"))
        for _ in range(500):  # the other process sees the admission once it is committed
            turn = elsewhere.admitted_turn(chat.actor.id, "q-cancel")
            if turn is not None:
                break
            await asyncio.sleep(0.01)
        assert turn is not None
        assert elsewhere.request_cancel(turn.conversation_id, "q-cancel", "stop-1") == "cancelled"
        asked = await asyncio.wait_for(asking, 10)
        assert asked.events[-1]["type"] == "error" and asked.events[-1]["code"] == "interrupted"
        assert "cancelled (command stop-1)" in asked.events[-1]["message"]
        assert len(provider.requests) == 1  # the answer round was never requested
        record = elsewhere.turn(turn.conversation_id, "q-cancel")
        assert record is not None and record.state == "interrupted"
        terminal = [e for e in await chat.events() if e["type"] in ("done", "error")]
        assert len(terminal) == 1
    finally:
        elsewhere.close()
        await chat.aclose()


async def test_chat_events_name_each_event_s_journal_position(tmp_path: Path) -> None:
    """``Chat.events`` gives each event its ``position`` in the conversation's journal (growing
    across turns), while the events of a live turn number that turn from 1."""
    provider = ScriptedProvider({"rounds": ROUNDS})
    chat = Chat(project="demo", provider=provider, store=str(tmp_path / "chat.sqlite3"))
    try:
        first = await chat.ask("List two parts")
        second = await chat.ask("And again?")
        assert [e["sequence"] for e in second.events] == [1, 2]
        journal = await chat.events()
        count = len(first.events) + len(second.events)
        assert [e["position"] for e in journal] == list(range(1, count + 1))
        assert all(e["sequence"] == e["position"] for e in journal)
        assert await chat.events(after=journal[-2]["position"]) == journal[-1:]
    finally:
        await chat.aclose()

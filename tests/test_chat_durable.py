"""The Chat API's durable side: a turn id makes ``ask`` idempotent, ``events(after=N)`` replays
the conversation's journal as a second view or a reconnecting client needs it."""

from __future__ import annotations

from pathlib import Path

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

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

"""Shared by the turn tests: a Chat playing a script, and chats closed after each test."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider


def chat_with(rounds: list[dict[str, Any]], **settings: Any) -> tuple[Chat, ScriptedProvider]:
    """A Chat on the demo whose model plays ``rounds``; the store in memory unless given."""
    provider = ScriptedProvider({"rounds": rounds, **settings.pop("provider_config", {})})
    settings.setdefault("store", ":memory:")
    return Chat(provider=provider, **settings), provider


@pytest.fixture
async def closing() -> AsyncIterator[list[Chat]]:
    """Chats to close when the test ends."""
    chats: list[Chat] = []
    yield chats
    for chat in chats:
        await chat.aclose()

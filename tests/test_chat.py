"""The Chat API an analyst holds: turns, DataFrames, evidence, conversations, settings."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from graphql import parse

import gmchat_nb
from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.settings import ChatConfigurationError

ORDERS = {
    "manager": "PurchaseOrder",
    "filters": {"urgent": True},
    "fields": ["number", "orderDate", "quantity", {"part": ["name", {"material": ["name"]}]}],
    "order_by": ["orderDate"],
}


def scripted(*rounds: dict[str, Any]) -> ScriptedProvider:
    return ScriptedProvider({"rounds": list(rounds)})


async def test_a_turn_gives_dataframes_and_evidence() -> None:
    chat = Chat(
        provider=scripted(
            {"tool_calls": [{"name": "query", "args": ORDERS}]}, {"text": "Urgent orders listed."}
        ),
        store=":memory:",
    )
    try:
        turn = await chat.ask("Which orders are urgent?")
        [frame] = turn.frames
        assert list(frame.columns) == [
            "number",
            "orderDate",
            "quantity",
            "part.name",
            "part.material.name",
        ]
        assert pd.api.types.is_datetime64_any_dtype(frame["orderDate"])
        assert pd.api.types.is_integer_dtype(frame["quantity"])
        assert frame["orderDate"].is_monotonic_increasing
        assert chat.frames[-1].equals(frame)
        evidence = turn.evidence
        assert list(evidence["manager"]) == ["PurchaseOrder"]
        assert evidence.loc[0, "rows"] == len(frame) == evidence.loc[0, "total_count"]
        assert bool(evidence.loc[0, "complete"]) is True
        # The evidence re-runs: the same document and variables give the same rows.
        session = await chat.session()
        variables = json.loads(evidence.loc[0, "variables"])[0]
        outcome = await session.project.executor.execute(
            parse(evidence.loc[0, "document"]), variables, None
        )
        numbers = [item["number"] for item in outcome.data["purchaseOrderList"]["items"]]  # type: ignore[index]
        assert numbers == list(frame["number"])
    finally:
        await chat.aclose()


async def test_conversations_are_listed_and_new_ones_start_empty(tmp_path: Path) -> None:
    store = str(tmp_path / "chat.sqlite3")
    chat = Chat(provider=scripted({"text": "One."}, {"text": "Two."}), store=store)
    try:
        await chat.ask("First question")
        first = chat.conversation_id
        await chat.new_conversation()
        await chat.ask("Second question")
        listed = await chat.conversations()
        assert [c["title"] for c in listed] == ["Second question", "First question"]
        assert listed[1]["id"] == first and listed[1]["messages"] == 2
        assert len(chat.turns) == 1  # the new conversation's turns
    finally:
        await chat.aclose()


def test_ask_sync_for_scripts() -> None:
    chat = Chat(provider=scripted({"text": "Hello."}), store=":memory:")
    turn = chat.ask_sync("Hi")
    assert turn.answer == "Hello." and repr(turn) == "<Turn 'Hi': 0 queries>"


async def test_ask_sync_inside_a_loop_says_to_await() -> None:
    chat = Chat(provider=scripted(), store=":memory:")
    with pytest.raises(RuntimeError, match=r"await chat\.ask"):
        chat.ask_sync("Hi")


async def test_settings_from_a_yaml_file(tmp_path: Path) -> None:
    config = tmp_path / "chat.yaml"
    config.write_text(
        "CHAT:\n  project: demo\n  exposed_managers: [Part, Material]\n  store: ':memory:'\n"
        "  query_limits: {max_results: 5}\n"
    )
    chat = Chat(
        settings=config,
        provider=scripted(
            {
                "tool_calls": [
                    {"name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 50}}
                ]
            },
            {"text": "Some parts."},
        ),
    )
    try:
        turn = await chat.ask("Parts?")
        result = turn.events[1]["result"]
        assert len(result["data"]) == 5 and any("capped" in note for note in result["notes"])
        session = await chat.session()
        assert session.project.managers == ("Material", "Part")
        assert "Supplier" not in session.system_prompt
    finally:
        await chat.aclose()


async def test_an_allow_listed_mutation_the_schema_lacks_is_a_configuration_error() -> None:
    chat = Chat(provider=scripted(), store=":memory:", allowed_mutations=["createPrat"])
    with pytest.raises(ChatConfigurationError, match="createPart") as error:
        await chat.session()
    assert error.value.key == "allowed_mutations"


def test_the_public_api_is_small() -> None:
    assert gmchat_nb.__all__ == ["Chat", "Turn", "connect", "demo_project", "load_settings"]


FIRST_TURN_THEN_FRAMES = """
import sys
from gmchat_nb import Chat

chat = Chat(provider="offline", store=":memory:")
turn = chat.ask_sync("Which projects use parts made of cobalt?")
assert turn.outcomes and turn.answer, turn
print("pandas after the turn:", "pandas" in sys.modules)
frames = chat.frames
print("pandas after chat.frames:", "pandas" in sys.modules, len(frames) == len(turn.outcomes))
"""


def test_pandas_is_imported_only_when_a_frame_is_asked_for() -> None:
    """Importing pandas takes about a second in a fresh kernel: a first turn must not wait."""
    done = subprocess.run(
        [sys.executable, "-c", FIRST_TURN_THEN_FRAMES],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines() == [
        "pandas after the turn: False",
        "pandas after chat.frames: True True",
    ]

"""The offline provider follows a recalled verified query: a real Chat on the inventory demo,
knowledge saved through ``session.knowledge`` and recalled by the session before the turn.

What a user relies on: with a matching verified query a simple read runs that query straight
away (no search, schema or path calls; two model requests), answers from its rows, and says the
answer is trusted; a question asking about another value of its filter re-runs it with that
value; a question that asks for more, or for less, than the verified query holds takes the
discovery road instead of getting the verified query's rows; with knowledge off the same
question takes the discovery road.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.guards.recalled import recall_text
from gmchat_nb.core.project import Project
from gmchat_nb.core.providers.base import Message
from gmchat_nb.core.providers.offline import OfflineProvider
from gmchat_nb.core.providers.offline.recalled import recalled_plan

from .test_offline import converse, named_in, rows

DISCOVERY = {"search_managers", "get_manager_schema", "find_path"}
TITANIUM = [
    {
        "tool": "query",
        "arguments": {
            "manager": "Part",
            "fields": ["name", "quantity"],
            "filters": {"material__name": "Titanium"},
        },
    }
]
URGENT = [
    {
        "tool": "query",
        "arguments": {
            "manager": "PurchaseOrder",
            "fields": ["number", "orderDate"],
            "filters": {"urgent": True},
        },
    }
]
ACTIVE = [
    {
        "tool": "query",
        "arguments": {
            "manager": "Project",
            "fields": ["name", "status"],
            "filters": {"status__in": ["active", "planned"]},
        },
    }
]
PER_MATERIAL = [
    {"tool": "query", "arguments": {"manager": "Part", "fields": ["name", {"material": ["name"]}]}},
    {"tool": "chart", "arguments": {"mark": "bar", "x": "material.name", "aggregate": "count"}},
]


@pytest.fixture
async def chat() -> AsyncIterator[Chat]:
    chat = Chat(store=":memory:", settings={"knowledge": "keyword"})
    yield chat
    await chat.aclose()


async def saved(chat: Chat, name: str, question: str, calls: list[dict[str, Any]]) -> str:
    session = await chat.session()
    return session.knowledge.add_verified_query(name, question, calls).id


def calls_of(turn: Any) -> list[tuple[str, dict[str, Any]]]:
    return [(e["name"], e["args"]) for e in turn.events if e["type"] == "tool_call"]


def requests_of(turn: Any) -> int:
    done = next(e for e in turn.events if e["type"] == "done")
    return int(done["cost"]["requests"])


async def test_a_matching_verified_query_is_run_at_once_and_the_answer_is_trusted(
    chat: Chat, inventory: Project
) -> None:
    entry = await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
    turn = await chat.ask("What parts use titanium?")
    assert [item["id"] for item in turn.recalled] == [entry]
    assert calls_of(turn) == [("query", TITANIUM[0]["arguments"])]
    assert requests_of(turn) == 2
    expected = await rows(inventory, "Part", filters={"material__name": "Titanium"})
    assert named_in(turn.answer, await rows(inventory, "Part")) == set(expected)
    assert len(expected) == 5
    assert turn.trusted == {"id": entry, "name": "titanium parts"}


async def test_a_paraphrase_recalled_by_meaning_is_answered_by_the_verified_query() -> None:
    # hybrid recall (wordllama, a dev dependency): no word of the question but "titanium" is
    # the saved question's, and the provider alone finds no "components" in the project
    chat = Chat(store=":memory:", settings={"knowledge": "hybrid"})
    try:
        assert (await chat.session()).knowledge.vectors is not None
        entry = await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
        turn = await chat.ask("List the components built from titanium")
    finally:
        await chat.aclose()
    assert calls_of(turn) == [("query", TITANIUM[0]["arguments"])]
    assert turn.trusted == {"id": entry, "name": "titanium parts"}


async def test_with_knowledge_off_the_same_question_takes_the_discovery_road(
    inventory: Project,
) -> None:
    chat = Chat(store=":memory:", settings={"knowledge": "off"})
    try:
        await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
        turn = await chat.ask("Which parts are made of titanium?")
    finally:
        await chat.aclose()
    names = [name for name, _ in calls_of(turn)]
    assert names[0] == "search_managers" and "get_manager_schema" in names
    assert requests_of(turn) > 2
    assert turn.recalled == [] and turn.trusted is None
    expected = await rows(inventory, "Part", filters={"material__name": "Titanium"})
    assert named_in(turn.answer, await rows(inventory, "Part")) == set(expected)


async def test_a_conversation_switched_off_takes_the_discovery_road(chat: Chat) -> None:
    await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
    await chat.knowledge.recall_in_conversation("off")
    turn = await chat.ask("Which parts are made of titanium?")
    assert DISCOVERY & {name for name, _ in calls_of(turn)}
    assert turn.trusted is None


async def test_another_value_of_the_filter_reruns_the_verified_query_with_it(
    chat: Chat, inventory: Project
) -> None:
    entry = await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
    turn = await chat.ask("Which parts are made of copper?")
    arguments = {**TITANIUM[0]["arguments"], "filters": {"material__name": "Copper"}}
    assert calls_of(turn) == [("query", arguments)]
    expected = await rows(inventory, "Part", filters={"material__name": "Copper"})
    assert named_in(turn.answer, await rows(inventory, "Part")) == set(expected)
    assert turn.trusted == {"id": entry, "name": "titanium parts"}


@pytest.mark.parametrize(
    "question",
    [
        "Which parts made of titanium does Acme supply?",  # a name it does not hold
        "Which parts are made of titanium or steel?",  # a second value
        "Which parts are not made of titanium?",  # a negation
        "Which titanium part is the cheapest?",  # a superlative
        "Which parts made of titanium have more than 50 in stock?",  # a comparison
    ],
)
async def test_a_question_asking_for_more_takes_the_discovery_road(
    chat: Chat, question: str
) -> None:
    await saved(chat, "titanium parts", "Which parts are made of titanium?", TITANIUM)
    turn = await chat.ask(question)
    assert turn.recalled, "recall found the entry; the provider must still not follow it"
    assert "search_managers" in {name for name, _ in calls_of(turn)}
    assert turn.trusted is None


async def test_a_question_asking_for_less_does_not_get_the_narrower_rows(
    chat: Chat, inventory: Project
) -> None:
    await saved(chat, "urgent purchase orders", "Which purchase orders are urgent?", URGENT)
    turn = await chat.ask("How many purchase orders are there?")
    assert turn.recalled
    assert "search_managers" in {name for name, _ in calls_of(turn)}
    assert str(len(await rows(inventory, "PurchaseOrder", "number"))) in turn.answer
    assert turn.trusted is None
    # said in other words, the urgent ones are the verified query's
    turn = await chat.ask("Show the rush orders")
    assert calls_of(turn) == [("query", URGENT[0]["arguments"])]
    assert turn.trusted is not None


async def test_a_definition_names_the_values_a_paraphrase_leaves_out(
    chat: Chat, inventory: Project
) -> None:
    entry = await saved(chat, "active projects", "Which projects are active or planned?", ACTIVE)
    turn = await chat.ask("List our active projects")
    assert DISCOVERY & {name for name, _ in calls_of(turn)}, "planned is not named yet"
    session = await chat.session()
    session.knowledge.add_definition(
        "active project", "a project whose status is active or planned"
    )
    turn = await chat.ask("List our active projects")
    assert calls_of(turn) == [("query", ACTIVE[0]["arguments"])]
    expected = await rows(inventory, "Project", filters={"status__in": ["active", "planned"]})
    assert named_in(turn.answer, await rows(inventory, "Project")) == set(expected)
    assert len(expected) == 6
    assert turn.trusted == {"id": entry, "name": "active projects"}


async def test_a_verified_chart_is_drawn_in_the_same_round(chat: Chat) -> None:
    entry = await saved(
        chat, "parts per material", "Chart the number of parts per material", PER_MATERIAL
    )
    turn = await chat.ask("Plot the number of parts for each material")
    assert [name for name, _ in calls_of(turn)] == ["query", "chart"]
    assert requests_of(turn) == 2
    charts = [e for e in turn.events if e["type"] == "chart"]
    assert len(charts) == 1 and charts[0]["intent"]["x"] == "material.name"
    assert "The chart shows" in turn.answer
    assert turn.trusted == {"id": entry, "name": "parts per material"}


async def test_the_planned_engine_plans_the_verified_query(inventory: Project) -> None:
    chat = Chat(store=":memory:", settings={"knowledge": "keyword", "planned": {"enabled": True}})
    try:
        entry = await saved(
            chat, "urgent purchase orders", "Which purchase orders are urgent?", URGENT
        )
        turn = await chat.ask("Show the rush orders")
    finally:
        await chat.aclose()
    assert calls_of(turn) == [("query", URGENT[0]["arguments"])]
    assert requests_of(turn) == 2  # the plan and the answer
    expected = await rows(inventory, "PurchaseOrder", "number", filters={"urgent": True})
    assert named_in(turn.answer, await rows(inventory, "PurchaseOrder", "number")) == set(expected)
    assert turn.trusted == {"id": entry, "name": "urgent purchase orders"}


async def test_a_verified_query_that_fails_hands_the_turn_to_the_discovery_road(
    inventory: Project,
) -> None:
    # A query the project refuses (saved before a field was renamed, say): its round is left
    # out and the question is answered as if it had not been made, with fresh call ids.
    broken = [{"tool": "query", "arguments": {"manager": "Part", "fields": ["title"]}}]
    data = {
        "verified_queries": [
            {"id": "k-1", "name": "parts", "question": "List all parts", "calls": broken}
        ]
    }
    history = [Message("system", recall_text(data))]
    run = await converse(inventory, "List all parts", history, provider=OfflineProvider())
    assert run.calls[0].name == "query" and run.calls[0].args == broken[0]["arguments"]
    assert run.calls[1].name == "search_managers"
    assert len({call.id for call in run.calls}) == len(run.calls)
    assert "28" in run.answer


def test_the_plan_is_the_same_for_the_same_question_and_recall() -> None:
    data = {
        "verified_queries": [
            {
                "id": "k-1",
                "name": "titanium parts",
                "question": "Which parts are made of titanium?",
                "calls": TITANIUM,
            }
        ]
    }
    messages = [
        Message("system", recall_text(data)),
        Message("user", "Which parts are made of brass?"),
    ]
    first = recalled_plan("Which parts are made of brass?", messages, charts=True)
    again = recalled_plan("Which parts are made of brass?", list(messages), charts=True)
    assert first is not None and first == again
    assert first[1] == [
        ("query", {**TITANIUM[0]["arguments"], "filters": {"material__name": "Brass"}})
    ]
    assert recalled_plan("Update the titanium parts", messages, charts=True) is None

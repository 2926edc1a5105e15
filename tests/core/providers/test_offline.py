"""The offline provider, driven through a small tool loop against the in-process inventory demo.

There is no tool loop in the package yet, so :func:`converse` plays it: it calls
``provider.complete``, runs every tool call on the demo project and feeds the results back until a
response holds only text. Expected rows come from hand-written queries on the same project, so the
tests check the provider's answer against the data, not against its own plan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pytest

from gmchat_nb.core.project import Project
from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.offline import OfflineProvider

MAX_ROUNDS = 8


class ToolRunner:
    """Runs tool calls on a project; subclasses change some results to test error handling."""

    def __init__(self, project: Project) -> None:
        self.project = project

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        return await self.project.call_tool(name, args)


@dataclass
class Conversation:
    """One question's worth of rounds: the answer, each response's events and the tool calls."""

    answer: str = ""
    rounds: int = 0
    responses: list[list[ProviderEvent]] = field(default_factory=list)
    calls: list[ToolCallEvent] = field(default_factory=list)

    @property
    def final_query(self) -> dict[str, Any] | None:
        """The arguments of the query the answer was built from (probes ask for one row)."""
        queries = [c.args for c in self.calls if c.name == "query" and c.args.get("limit") != 1]
        return queries[-1] if queries else None


async def converse(
    project: Project | ToolRunner,
    question: str,
    history: list[Message] | None = None,
    *,
    provider: BaseLLMProvider | None = None,
    tools: list[ToolDefinition] | None = None,
) -> Conversation:
    """Ask ``question`` (after ``history``, which is extended in place) until a text answer."""
    runner = project if isinstance(project, ToolRunner) else ToolRunner(project)
    provider = provider or OfflineProvider()
    if tools is None:
        tools = [ToolDefinition.from_dict(t) for t in runner.project.tool_definitions()]
    messages = history if history is not None else []
    messages.append(Message(role="user", content=question))
    conversation = Conversation()
    for _ in range(MAX_ROUNDS):
        events = [event async for event in provider.complete(list(messages), tools)]
        conversation.rounds += 1
        conversation.responses.append(events)
        done = [event for event in events if isinstance(event, DoneEvent)]
        assert len(done) == 1 and events[-1] is done[0], events
        assert done[0].usage == TokenUsage(0, 0)
        calls = [event for event in events if isinstance(event, ToolCallEvent)]
        text = "".join(event.content for event in events if isinstance(event, TextChunkEvent))
        if not calls:
            assert done[0].finish_reason == "stop"
            assert text.strip()
            messages.append(Message(role="assistant", content=text))
            conversation.answer = text
            return conversation
        assert not text and done[0].finish_reason == "tool_calls"
        assert all(call.name != "mutate" for call in calls)
        conversation.calls.extend(calls)
        messages.append(Message(role="assistant", tool_calls=tuple(calls)))
        for call in calls:
            result = await runner.call_tool(call.name, call.args)
            messages.append(
                Message(role="tool", tool_call_id=call.id, tool_name=call.name, tool_result=result)
            )
    pytest.fail(f"no answer to {question!r} after {MAX_ROUNDS} rounds")


async def rows(project: Project, manager: str, label: str = "name", **args: Any) -> list[str]:
    """The labels of the rows a hand-written query returns (the expected answer)."""
    result = await project.call_tool(
        "query", {"manager": manager, "fields": [label], "limit": 200, **args}
    )
    assert isinstance(result, dict) and "data" in result, result
    return [str(row[label]) for row in result["data"]]


def named_in(answer: str, candidates: list[str]) -> set[str]:
    """The candidates an answer names (whole words, so "Gear" is not found in "Gears")."""
    return {name for name in candidates if re.search(rf"(?<!\w){re.escape(name)}(?!\w)", answer)}


# -- the questions of the brief --------------------------------------------------------------------


async def test_projects_using_cobalt_parts_are_found_through_the_relation_path(
    inventory: Project,
) -> None:
    run = await converse(inventory, "Which projects use parts made of cobalt?")
    projects = await rows(inventory, "Project")
    assert named_in(run.answer, projects) == {"Apollo"}
    assert run.rounds <= 5
    assert run.final_query is not None
    assert run.final_query["manager"] == "Project"
    assert run.final_query["filters"] == {"partsList__material__name": "Cobalt"}
    names = [call.name for call in run.calls]
    assert names[0] == "search_managers" and "find_path" in names
    assert sum(1 for c in run.calls if c.name == "query" and c.args.get("limit") == 1) <= 8


async def test_listing_all_parts_names_them_and_gives_the_total(inventory: Project) -> None:
    run = await converse(inventory, "List all parts")
    assert {"Bolt", "Bearing", "Gear"} <= named_in(run.answer, await rows(inventory, "Part"))
    assert "28" in run.answer
    assert run.rounds == 4  # search, schema, query, answer: nothing to locate


async def test_parts_made_of_steel_filter_on_the_material(inventory: Project) -> None:
    run = await converse(inventory, "Which parts are made of steel?")
    assert named_in(run.answer, await rows(inventory, "Part")) == {"Bolt"}
    assert run.final_query is not None
    assert run.final_query["filters"] == {"material__name": "Steel"}
    assert run.rounds == 5


async def test_denser_than_becomes_a_density_filter(inventory: Project) -> None:
    run = await converse(inventory, "Which materials are denser than 5?")
    expected = await rows(inventory, "Material", filters={"density__gt": 5})
    assert set(expected) == {"Steel", "Cobalt", "Copper", "Brass", "Lead"}  # not Titanium (4.5)
    assert named_in(run.answer, await rows(inventory, "Material")) == set(expected)
    assert "Steel (density 7.8)" in run.answer
    assert run.final_query is not None
    assert run.final_query["filters"] == {"density__gt": 5}
    assert run.rounds == 4


async def test_how_many_is_answered_from_the_total(inventory: Project) -> None:
    run = await converse(inventory, "How many suppliers are there?")
    assert "There are 6 suppliers" in run.answer
    assert run.rounds == 4


async def test_a_status_word_is_located_in_the_status_field(inventory: Project) -> None:
    run = await converse(inventory, "Which projects are active?")
    expected = await rows(inventory, "Project", filters={"status": "active"})
    assert named_in(run.answer, await rows(inventory, "Project")) == set(expected)
    assert set(expected) == {"Apollo", "Gemini", "Voyager"}
    assert run.rounds == 5


async def test_a_country_is_located_in_the_country_field(inventory: Project) -> None:
    run = await converse(inventory, "Which suppliers are in Germany?")
    expected = await rows(inventory, "Supplier", filters={"country": "Germany"})
    assert named_in(run.answer, await rows(inventory, "Supplier")) == set(expected)
    assert expected == ["Acme Metals GmbH"]
    assert run.final_query is not None and run.final_query["filters"] == {"country": "Germany"}


async def test_a_boolean_field_word_becomes_a_true_filter(inventory: Project) -> None:
    run = await converse(inventory, "Show purchase orders that are urgent")
    expected = await rows(inventory, "PurchaseOrder", "number", filters={"urgent": True})
    assert set(re.findall(r"PO-\d+", run.answer)) == set(expected)
    assert len(expected) == 10
    assert run.final_query is not None and run.final_query["filters"] == {"urgent": True}
    assert run.rounds == 4


@pytest.mark.parametrize(
    "question",
    [
        "Delete all parts",
        "Create a new part called Spring",
        "Please add a project named Zeus",
        "Update the status of Apollo to completed",
        "Remove supplier Acme Metals GmbH",
        "Set the quantity of Bolt to 5",
        "Can you change the density of steel?",
    ],
)
async def test_write_requests_are_refused_without_any_tool_call(
    inventory: Project, question: str
) -> None:
    run = await converse(inventory, question)
    assert run.rounds == 1 and run.calls == []
    assert "never changes" in run.answer
    assert "model-backed provider" in run.answer and "allow-listed" in run.answer


@pytest.mark.parametrize(
    ("question", "refused"),
    [
        ("Update the Apollo record.", "I can't update the Apollo record: "),
        (
            "Please remove supplier Acme Metals GmbH! Thanks",
            "I can't remove supplier Acme Metals GmbH: ",
        ),
        ("Set\x00 the\u202e name\tof Bolt to 5", "I can't set the name of Bolt to 5: "),
        ("Delete " + "every " * 40 + "part", "I can't delete " + "every " * 11 + "every…: "),
    ],
)
async def test_a_write_refusal_names_the_change_it_understood(
    inventory: Project, question: str, refused: str
) -> None:
    run = await converse(inventory, question)
    assert run.answer.startswith(refused)


async def test_a_question_with_no_matching_data_type_gets_an_honest_answer(
    inventory: Project,
) -> None:
    run = await converse(inventory, "What is the meaning of life?")
    assert [call.name for call in run.calls] == ["search_managers"]
    assert "could not find a data type" in run.answer
    assert '"meaning"' in run.answer and '"life"' in run.answer


async def test_why_and_opinion_questions_are_declined_plainly(inventory: Project) -> None:
    for question in ("Why are there so many parts?", "Which supplier is the best?"):
        run = await converse(inventory, question)
        assert run.calls == []
        assert "cannot explain reasons or give opinions" in run.answer


async def test_the_same_question_gives_the_same_events(inventory: Project) -> None:
    first = await converse(inventory, "Which projects use parts made of cobalt?")
    second = await converse(inventory, "Which projects use parts made of cobalt?")
    assert first.responses == second.responses
    assert first.answer == second.answer


# -- locating values and reading comparisons -------------------------------------------------------


async def test_a_value_found_nowhere_is_said_plainly_and_nothing_is_listed(
    inventory: Project,
) -> None:
    run = await converse(inventory, "Which projects use parts made of unobtainium?")
    assert 'nothing called "unobtainium"' in run.answer
    assert run.final_query is None


async def test_partial_word_hits_do_not_count_as_found(inventory: Project) -> None:
    # "weigh" is inside "Lead Ballast Weight", but that part is not what the question means.
    run = await converse(inventory, "Which parts weigh more than 3 kg?")
    assert 'nothing called "weigh"' in run.answer
    assert run.final_query is None


async def test_a_named_row_on_another_manager_filters_through_find_path(
    inventory: Project,
) -> None:
    run = await converse(inventory, "Which parts does project Apollo use?")
    assert named_in(run.answer, await rows(inventory, "Part")) == {"Gear"}
    assert run.final_query is not None
    assert run.final_query["manager"] == "Part"
    assert run.final_query["filters"] == {"projectList__name": "Apollo"}


async def test_values_of_one_field_joined_by_or_become_an_in_filter(inventory: Project) -> None:
    run = await converse(inventory, "Which suppliers are in Germany, Sweden or Japan?")
    expected = await rows(
        inventory, "Supplier", filters={"country__in": ["Germany", "Sweden", "Japan"]}
    )
    assert named_in(run.answer, await rows(inventory, "Supplier")) == set(expected)
    assert len(expected) == 3


async def test_a_date_comparison_uses_the_date_field(inventory: Project) -> None:
    run = await converse(inventory, "Which purchase orders were placed before 2025-02-01?")
    expected = await rows(
        inventory, "PurchaseOrder", "number", filters={"orderDate__lt": "2025-02-01"}
    )
    assert set(expected) == {"PO-1001", "PO-1002", "PO-1003"}
    assert set(re.findall(r"PO-\d+", run.answer)) == set(expected)


async def test_a_year_is_a_date_range(inventory: Project) -> None:
    run = await converse(inventory, "How many purchase orders were placed in 2025?")
    expected = await rows(
        inventory,
        "PurchaseOrder",
        "number",
        filters={"orderDate__gte": "2025-01-01", "orderDate__lte": "2025-12-31"},
    )
    assert f"There are {len(expected)} purchase orders" in run.answer


async def test_a_measurement_comparison_is_sent_with_its_unit(inventory: Project) -> None:
    run = await converse(inventory, "Which parts are cheaper than 1 EUR?")
    expected = await rows(inventory, "Part", filters={"unitPrice__lt": "1 EUR"})
    assert run.final_query is not None
    assert run.final_query["filters"] == {"unitPrice__lt": "1 EUR"}
    assert named_in(run.answer, await rows(inventory, "Part")) == set(expected)
    assert "Bolt (unit price 0.25 EUR)" in run.answer


async def test_a_comparison_with_no_field_to_point_at_is_declined(inventory: Project) -> None:
    heavier = await converse(inventory, "Which parts are heavier than 5 kg?")
    assert 'which field of Part "heavier" refers to' in heavier.answer
    assert heavier.final_query is None
    vague = await converse(inventory, "Which parts have at least 3?")
    assert "could not tell which field of Part" in vague.answer
    assert vague.final_query is None


async def test_a_number_nothing_explains_is_not_dropped_silently(inventory: Project) -> None:
    run = await converse(inventory, "Which parts have 5 bolts?")
    assert 'what "5" refers to' in run.answer
    assert run.final_query is None


async def test_highest_orders_and_a_singular_question_gets_one_row(inventory: Project) -> None:
    run = await converse(inventory, "Which material has the highest density?")
    assert run.final_query is not None and run.final_query["order_by"] == ["-density"]
    assert named_in(run.answer, await rows(inventory, "Material")) == {"Lead"}
    assert "Lead (density 11.34)" in run.answer and "showing the first 1 of 8" in run.answer


async def test_a_count_with_a_related_value(inventory: Project) -> None:
    run = await converse(inventory, "How many parts are made of nylon?")
    expected = await rows(inventory, "Part", filters={"material__name": "Nylon"})
    assert f"There are {len(expected)} parts" in run.answer
    assert len(expected) == 6


async def test_a_boolean_on_a_related_manager_and_its_negation(inventory: Project) -> None:
    hazardous = await converse(inventory, "Which projects use hazardous materials?")
    expected = await rows(inventory, "Project", filters={"partsList__material__hazardous": True})
    assert named_in(hazardous.answer, await rows(inventory, "Project")) == set(expected)
    assert set(expected) == {"Orion", "Skylab"}
    safe = await converse(inventory, "Which purchase orders are not urgent?")
    assert safe.final_query is not None and safe.final_query["filters"] == {"urgent": False}


# -- conversations, ids and errors -----------------------------------------------------------------


async def test_a_follow_up_about_them_keeps_the_previous_rows(inventory: Project) -> None:
    history: list[Message] = []
    first = await converse(inventory, "Which projects use parts made of titanium?", history)
    projects = await rows(inventory, "Project")
    assert named_in(first.answer, projects) == {"Gemini", "Artemis", "Skylab"}
    second = await converse(inventory, "and which of them are planned?", history)
    assert named_in(second.answer, projects) == {"Artemis", "Skylab"}  # not Pioneer
    ids = [
        call.id for message in history if message.role == "assistant" for call in message.tool_calls
    ]
    assert ids == [f"offline-{n}" for n in range(1, len(ids) + 1)]


class FailingFinalQuery(ToolRunner):
    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name == "query" and args.get("limit") != 1:
            return {"status": "error", "code": "graphql_error", "message": "the server is down"}
        return await super().call_tool(name, args)


class FailingSupplierProbes(ToolRunner):
    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name == "query" and args.get("limit") == 1 and args.get("manager") == "Supplier":
            return {"status": "error", "code": "graphql_error", "message": "no suppliers today"}
        return await super().call_tool(name, args)


async def test_a_failed_final_query_is_reported_not_retried(inventory: Project) -> None:
    run = await converse(FailingFinalQuery(inventory), "List all parts")
    assert "the server is down" in run.answer
    assert run.rounds == 4
    assert sum(1 for call in run.calls if call.name == "query") == 1


async def test_a_failed_probe_is_ignored(inventory: Project) -> None:
    run = await converse(
        FailingSupplierProbes(inventory), "Which projects use parts made of cobalt?"
    )
    assert named_in(run.answer, await rows(inventory, "Project")) == {"Apollo"}


async def test_without_the_tools_it_says_what_is_missing(inventory: Project) -> None:
    tools = [
        ToolDefinition.from_dict(t)
        for t in inventory.tool_definitions()
        if t["name"] != "search_managers"
    ]
    run = await converse(inventory, "List all parts", tools=tools)
    assert run.calls == [] and "search_managers" in run.answer


async def test_no_question_gets_a_prompt_not_a_tool_call() -> None:
    events = [event async for event in OfflineProvider().complete([], [])]
    assert isinstance(events[0], TextChunkEvent) and "question" in events[0].content
    assert events[-1] == DoneEvent(TokenUsage(0, 0), finish_reason="stop")


def test_the_provider_is_named_offline() -> None:
    provider = OfflineProvider()
    assert provider.name == "offline" and provider.label == "offline"
    OfflineProvider.check_configuration()  # needs no SDK


class InactiveFirst(ToolRunner):
    """A server whose one-row status probe for "active" happens to return "inactive" first."""

    async def call_tool(self, name: str, args: dict[str, Any]) -> Any:
        if name == "query" and args.get("limit") == 1 and args.get("fields") == ["status"]:
            return {
                "data": [{"status": "inactive"}],
                "total_count": 4,
                "has_more": True,
                "complete": False,
            }
        return await super().call_tool(name, args)


async def test_a_value_seen_only_inside_a_longer_one_is_matched_exactly(
    inventory: Project,
) -> None:
    run = await converse(InactiveFirst(inventory), "Which projects are active?")
    assert run.final_query is not None
    assert run.final_query["filters"] == {"status__in": ["active", "Active", "ACTIVE"]}
    assert named_in(run.answer, await rows(inventory, "Project")) == {"Apollo", "Gemini", "Voyager"}


async def test_a_tie_for_the_lowest_is_shown_in_full(inventory: Project) -> None:
    run = await converse(inventory, "Which part has the lowest quantity?")
    expected = await rows(inventory, "Part", filters={"quantity": 0})
    assert named_in(run.answer, await rows(inventory, "Part")) == set(expected)
    assert len(expected) == 2


async def test_a_multi_word_name_and_a_grouped_number(inventory: Project) -> None:
    supplied = await converse(inventory, "Which parts does Alpine Precision AG supply?")
    expected = await rows(inventory, "Part", filters={"supplier__name": "Alpine Precision AG"})
    assert named_in(supplied.answer, await rows(inventory, "Part")) == set(expected)
    many = await converse(inventory, "Which parts have a quantity of more than 1,000?")
    assert many.final_query is not None
    assert many.final_query["filters"] == {"quantity__gt": 1000}

"""Tool calls with hostile input: bounded memory, bounded echoes, bounded work, clear refusals.

These are the findings of an outside test campaign (issue 11): a caller (a model, a script, a
pasted document) sends megabyte names, absurd windows, thousands of sort keys or no tool name
at all, and every call must still come back as a short, actionable tool result.
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import pytest

import gmchat_nb
from gmchat_nb import Chat
from gmchat_nb.core.project import Project

MB = 1 << 20


def long_name(seed: str, size: int) -> str:
    return (seed * (size // len(seed) + 1))[:size]


@pytest.fixture
async def writable_part() -> AsyncIterator[Project]:
    project = gmchat_nb.demo_project(allowed_mutations=["createPart"])
    yield project
    await project.aclose()


# -- item 2: caches keep no caller strings alive ---------------------------------------------------


def _hostile_call(number: int) -> tuple[str, dict[str, Any]]:
    name = long_name(f"{number:06d}Nme", 60_000 + 1_000 * (number % 40))
    calls: list[tuple[str, dict[str, Any]]] = [
        ("get_manager_schema", {"manager": name}),
        ("query", {"manager": "Part", "fields": ["name", name]}),
        ("search_managers", {"query": name}),
        ("find_path", {"from_manager": "Part", "to_manager": name}),
        ("mutate", {"mutation": name, "input": {}}),
        ("mutate", {"mutation": "createPart", "input": {name: 1}}),
        ("query", {"manager": "Part", "fields": ["name"], "filters": {name: 1}}),
        ("query", {"manager": "Part", "fields": ["name"], "order_by": [name]}),
        (name, {}),
    ]
    return calls[number % len(calls)]


async def test_unique_long_names_leave_no_memory_behind(writable_part: Project) -> None:
    for number in range(9):  # every path once, so first-use allocations are not counted
        await writable_part.call_tool(*_hostile_call(number))
    gc.collect()
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        for number in range(9, 409):  # about 25 MB of distinct names
            result = await writable_part.call_tool(*_hostile_call(number))
            assert isinstance(result, list) or result["status"] == "error"
        del result
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert grown < 4 * MB, f"{grown / MB:.1f} MiB stayed allocated"


# -- item 3: bounded work, bounded echoes ----------------------------------------------------------


async def test_a_long_search_reads_its_start_and_says_so(inventory: Project) -> None:
    words = "suppliers in germany " * 5000
    result = await inventory.call_tool("search_managers", {"query": words})
    assert result[0]["manager"] == "Supplier"
    assert result[-1] == {
        "note": "The query was long: only its first 32 words (at most 1,000 characters) were "
        "searched. Search with a few words that name the data."
    }
    many_words = " ".join(f"word{n}" for n in range(40))
    assert "note" in (await inventory.call_tool("search_managers", {"query": many_words}))[-1]
    short = await inventory.call_tool("search_managers", {"query": "suppliers in germany"})
    assert all("note" not in hit for hit in short)


@pytest.mark.parametrize("limit", [0, -3, 51, True])
async def test_search_limit_is_checked(inventory: Project, limit: Any) -> None:
    result = await inventory.call_tool("search_managers", {"query": "parts", "limit": limit})
    assert result["code"] == "invalid_arguments"


HUGE = long_name("Partz", MB)

# (tool, arguments, expected code) for a 1 MB string in every name-like argument.
MEGABYTE_NAMES: list[tuple[str, dict[str, Any], str]] = [
    ("get_manager_schema", {"manager": HUGE}, "unknown_manager"),
    ("find_path", {"from_manager": "Part", "to_manager": HUGE}, "unknown_manager"),
    ("query", {"manager": HUGE, "fields": ["name"]}, "unknown_manager"),
    ("query", {"manager": "Part", "fields": [HUGE]}, "unknown_field"),
    ("query", {"manager": "Part", "fields": [{HUGE: ["name"]}]}, "unknown_field"),
    ("query", {"manager": "Part", "fields": ["name"], "filters": {HUGE: 1}}, "unknown_filter"),
    (
        "query",
        {"manager": "Part", "fields": ["name"], "filters": {HUGE + "__name": 1}},
        "unknown_filter",
    ),
    ("query", {"manager": "Part", "fields": ["name"], "order_by": [HUGE]}, "invalid_order"),
    ("query", {"manager": "Part", "fields": ["name"], "root": HUGE}, "invalid_arguments"),
    (
        "query",
        {"manager": "Part", "fields": ["name"], "arguments": {HUGE: 1}},
        "invalid_arguments",
    ),
    ("mutate", {"mutation": HUGE, "input": {}}, "unknown_mutation"),
    ("mutate", {"mutation": "createPart", "input": {HUGE: 1}}, "invalid_mutation_input"),
    (HUGE, {}, "unknown_tool"),
    ("query_" + HUGE, {"fields": ["name"]}, "unknown_tool"),
]


@pytest.mark.parametrize(("tool", "args", "code"), MEGABYTE_NAMES)
async def test_a_megabyte_name_is_unknown_and_quoted_short(
    writable_part: Project, tool: str, args: dict[str, Any], code: str
) -> None:
    result = await writable_part.call_tool(tool, args)
    assert result["code"] == code
    assert "Partz" in result["message"] and "…" in result["message"]  # quoted, then cut
    assert len(json.dumps(result)) < 1000
    assert "suggestions" not in result  # nothing is close to a megabyte


async def test_an_unknown_top_level_key_is_quoted_short(inventory: Project) -> None:
    result = await inventory.call_tool("query", {"manager": "Part", "fields": ["id"], HUGE: 1})
    assert result["code"] == "invalid_arguments" and len(result["message"]) < 1000


async def test_a_server_quoting_a_megabyte_value_is_cut() -> None:
    project = gmchat_nb.demo_project(allowed_mutations=["createProject"])
    try:
        result = await project.call_tool(
            "mutate", {"mutation": "createProject", "input": {"name": "X", "parts": [HUGE]}}
        )
    finally:
        await project.aclose()
    assert result["code"] == "mutation_failed"
    assert result["field_errors"]["parts"][0].startswith("Part with id Partz")
    assert len(json.dumps(result)) < 2000


async def test_the_offline_provider_reads_the_start_of_a_long_question() -> None:
    question = "Which projects use parts made of cobalt? " * 1600  # 64 KB
    turn = await Chat(store=":memory:").ask(question)
    assert turn.error is None
    assert turn.answer.startswith(
        "(Your question was long: I read only its first 1,000 characters.)"
    )
    assert "Apollo" in turn.answer
    searches = [
        event["args"]
        for event in turn.events
        if event["type"] == "tool_call" and event["name"] == "search_managers"
    ]
    assert searches and all(len(args["query"]) <= 1000 for args in searches)


async def test_the_offline_provider_quotes_a_long_question_briefly() -> None:
    turn = await Chat(store=":memory:").ask("x" * 65536)
    assert turn.error is None
    assert "I could not find a data type" in turn.answer
    assert len(turn.answer) < 500


# -- item 4: page wrappers, windows, tool names, sort keys -----------------------------------------


@pytest.mark.parametrize(
    "fields",
    [["pageInfo"], ["items"], ["totalCount"], ["total_count"], [{"pageInfo": ["totalCount"]}]],
)
async def test_page_wrapper_names_are_not_fields(inventory: Project, fields: list[Any]) -> None:
    result = await inventory.call_tool("query", {"manager": "Part", "fields": fields})
    assert result["code"] == "unknown_field"
    assert "selected for you" in result["message"]
    assert "name, quantity" in result["message"]  # the fields it could ask for


async def test_a_nested_page_wrapper_alone_is_refused_in_place(inventory: Project) -> None:
    result = await inventory.call_tool(
        "query", {"manager": "Project", "fields": ["name", {"parts": ["pageInfo"]}]}
    )
    assert result["code"] == "unknown_field"
    assert "on Part (in 'partsList')" in result["message"]


@pytest.mark.parametrize(
    ("window", "fragment"),
    [
        ({"offset": 300_000_000_000}, "offset must be an integer from 0 to 1,000,000"),
        ({"offset": 1_000_001}, "offset must be an integer from 0 to 1,000,000"),
        ({"offset": -1}, "offset must be an integer from 0 to 1,000,000"),
        ({"limit": 0}, "limit must be a positive integer"),
        ({"arguments": {"page": 3_000_000_000, "pageSize": 10}}, "starts past row 1,000,000"),
        ({"arguments": {"page": 0}}, "page and pageSize must be positive integers"),
        ({"arguments": {"pageSize": 2.5}}, "page and pageSize must be positive integers"),
    ],
)
async def test_windows_out_of_bounds_are_invalid_arguments(
    inventory: Project, window: dict[str, Any], fragment: str
) -> None:
    result = await inventory.call_tool("query", {"manager": "Part", "fields": ["name"], **window})
    assert result["code"] == "invalid_arguments"
    assert fragment in result["message"]
    assert "$page" not in result["message"]


async def test_the_largest_offset_is_an_empty_page(inventory: Project) -> None:
    result = await inventory.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "offset": 1_000_000}
    )
    assert result["data"] == [] and result["total_count"] == 28


@pytest.mark.parametrize("name", [5, None, ["query"], {"name": "query"}, 2.5])
async def test_a_tool_name_that_is_not_a_string_is_an_unknown_tool(
    inventory: Project, name: Any, caplog: pytest.LogCaptureFixture
) -> None:
    result = await inventory.call_tool(name, {})
    assert result["code"] == "unknown_tool"
    assert "search_managers" in result["message"]
    assert not caplog.records  # no traceback logged


async def test_order_by_takes_a_few_fields(inventory: Project) -> None:
    result = await inventory.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "order_by": ["name"] * 2000}
    )
    assert result["code"] == "invalid_order"
    assert "at most 10 fields; got 2000" in result["message"]
    nested = await inventory.call_tool(
        "query",
        {
            "manager": "Project",
            "fields": [{"field": "parts", "arguments": {"order_by": ["name"] * 11}}],
        },
    )
    assert nested["code"] == "invalid_order"


@pytest.mark.parametrize(
    "filters", [{"id": 10**30}, {"id__in": [10**30, -(10**30)]}, {"material_id": str(10**30)}]
)
async def test_an_id_no_row_can_have_matches_nothing(inventory: Project, filters: Any) -> None:
    result = await inventory.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "filters": filters}
    )
    assert result["data"] == [] and result["total_count"] == 0

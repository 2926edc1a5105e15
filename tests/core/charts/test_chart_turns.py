"""The chart tool inside real turns: offered by the ``charts`` setting, run over the turn's own
query results (in process and over HTTP, where a round's reads run concurrently), its ``chart``
event right after its result and in the journal, and its mistakes results the model corrects."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.charts import CHART
from gmchat_nb.core.project.project import Project
from gmchat_nb.core.project.tools import TOOLS
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.session.offer import tools_and_prompt
from gmchat_nb.core.settings import load_settings

from ..conftest import chat_with

ORDERS = {
    "manager": "PurchaseOrder",
    "fields": ["number", "quantity", {"part": [{"material": ["name"]}]}],
}
BY_MATERIAL = {"mark": "bar", "x": "part.material.name", "y": "quantity"}


def _types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_a_chart_call_draws_the_query_it_names(closing: list[Chat]) -> None:
    chat, _ = chat_with(
        [
            {"tool_calls": [{"name": "query", "args": ORDERS}]},
            {"tool_calls": [{"name": "chart", "args": {**BY_MATERIAL, "query": "call-1"}}]},
            {"text": "Steel leads."},
        ]
    )
    closing.append(chat)
    turn = await chat.ask("Chart the ordered quantity by material")
    types = _types(turn.events)
    assert types[:5] == ["tool_call", "tool_result", "tool_call", "tool_result", "chart"]
    chart = turn.events[4]
    result = turn.events[3]["result"]
    assert result["status"] == "ok" and "data" not in result  # the model reads no data twice
    assert chart["id"] == "call-2" and chart["evidence_id"] == "call-1"
    assert chart["intent"]["aggregate"] == "sum" and chart["marks"] == len(
        chart["spec"]["data"]["values"]
    )
    rows = turn.events[1]["result"]["data"]
    totals: dict[str, float] = {}
    for row in rows:
        name = (row["part"]["material"] or {}).get("name")
        if name is None:
            continue  # left out of the chart, and the model is told how many
        totals[name] = totals.get(name, 0) + row["quantity"]
    assert {v["x"]: v["y"] for v in chart["spec"]["data"]["values"]} == totals
    journal = await chat.events()
    [stored] = [event for event in journal if event["type"] == "chart"]
    assert stored["spec"] == chart["spec"] and stored["evidence_id"] == "call-1"


async def test_a_chart_in_the_same_round_as_its_query_waits_for_it(
    project: Project, closing: list[Chat]
) -> None:
    provider = ScriptedProvider(
        {
            "rounds": [
                {
                    "tool_calls": [
                        {"name": "chart", "args": BY_MATERIAL},
                        {"name": "query", "args": ORDERS},
                    ]
                },
                {"text": "Drawn."},
            ]
        }
    )
    chat = Chat(project=project, provider=provider, store=":memory:")
    closing.append(chat)
    turn = await chat.ask("Plot quantity by material")
    events = turn.events
    charts = [event for event in events if event["type"] == "chart"]
    assert len(charts) == 1 and charts[0]["evidence_id"] == "call-2"
    chart_result = next(e for e in events if e["type"] == "tool_result" and e["name"] == "chart")
    assert chart_result["result"]["status"] == "ok"


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ("not json", "invalid_arguments"),
        (["bar"], "invalid_arguments"),
        ({"mark": "bar", "x": "part.material.nam"}, "unknown_column"),
        ({"mark": "bar", "x": "number", "y": "number"}, "invalid_chart"),
        ({"mark": "bar", "x": "number", "query": "call-7"}, "unknown_query"),
    ],
)
async def test_a_bad_chart_call_is_a_result_the_model_corrects(
    args: Any, code: str, closing: list[Chat]
) -> None:
    chat, _ = chat_with(
        [
            {"tool_calls": [{"name": "query", "args": ORDERS}]},
            {"tool_calls": [{"name": "chart", "args": args}]},
            {"tool_calls": [{"name": "chart", "args": BY_MATERIAL}]},
            {"text": "Done."},
        ]
    )
    closing.append(chat)
    turn = await chat.ask("Chart it")
    results = [e for e in turn.events if e["type"] == "tool_result"]
    assert results[1]["result"]["status"] == "error" and results[1]["result"]["code"] == code
    assert results[2]["result"]["status"] == "ok"
    assert _types(turn.events).count("chart") == 1 and turn.error is None


async def test_a_chart_before_any_query_says_to_query_first(closing: list[Chat]) -> None:
    chat, _ = chat_with([{"tool_calls": [{"name": "chart", "args": BY_MATERIAL}]}, {"text": "."}])
    closing.append(chat)
    turn = await chat.ask("Chart it")
    result = next(e for e in turn.events if e["type"] == "tool_result")
    assert result["result"]["code"] == "unknown_query"
    assert "call query first" in result["result"]["message"]


async def test_the_charts_setting_offers_the_tool_and_off_gives_generalmanager_s_set(
    inventory: Project, closing: list[Chat]
) -> None:
    on_tools, on_prompt = tools_and_prompt(inventory, load_settings(), ())
    off_tools, off_prompt = tools_and_prompt(inventory, load_settings(charts=False), ())
    gm = [name for name in TOOLS.names if name != TOOLS.mutate.name]
    assert [tool.name for tool in off_tools] == gm
    assert [tool.name for tool in on_tools] == [*gm, CHART.name]
    assert "chart" not in off_prompt and "call chart on that result" in on_prompt
    chat, _ = chat_with(
        [
            {"tool_calls": [{"name": "query", "args": ORDERS}]},
            {"tool_calls": [{"name": "chart", "args": BY_MATERIAL}]},
            {"text": "No chart."},
        ],
        charts=False,
    )
    closing.append(chat)
    turn = await chat.ask("Chart it")
    results = [e for e in turn.events if e["type"] == "tool_result"]
    assert results[1]["result"]["code"] == "unknown_tool" and "chart" not in _types(turn.events)

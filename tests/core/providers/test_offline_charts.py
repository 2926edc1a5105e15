"""The offline provider reads the usual ways of asking for a chart, on both engines.

Each phrasing is asked of a Chat on the inventory demo, once on the classic tool loop and once
on the planned engine (where the offline planner names the query and its chart in the plan). The
chart drawn must be the one the words ask for (mark, x, y, aggregate), drawn from the turn's
query, in at most four tool calls. Questions that only group ("by", "per", "for each") without
asking for a picture draw nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.charts.tool import CHART
from gmchat_nb.core.project.connect import demo_project
from gmchat_nb.core.project.tools import TOOLS

ENGINES = {"classic": {}, "planned": {"planned": {"enabled": True}}}
MAX_TOOL_CALLS = 4

# question -> the chart's mark, x, y and aggregate as drawn (the intent as applied)
CHARTS = [
    ("Chart the projects by status", "bar", "status", None, "count"),
    ("Visualise projects by status", "bar", "status", None, "count"),
    ("Graph the number of projects per status", "bar", "status", None, "count"),
    ("parts per material as a bar chart", "bar", "material.name", None, "count"),
    ("Show a pie chart of parts by material", "arc", "material.name", None, "count"),
    ("Donut chart of purchase orders per supplier", "arc", "supplier.name", None, "count"),
    ("Chart the number of purchase orders for each supplier", "bar", "supplier.name", None,
     "count"),
    ("Show a chart of purchase orders by supplier", "bar", "supplier.name", None, "count"),
    ("Draw the total quantity of parts per supplier", "bar", "supplier.name", "quantity", "sum"),
    ("Chart the average quantity of purchase orders per supplier", "bar", "supplier.name",
     "quantity", "mean"),
    ("Plot the quantity of purchase orders by part", "bar", "part.name", "quantity", "sum"),
    ("Chart parts by supplier country", "bar", "supplier.country", None, "count"),
    ("Plot the quantity of each part", "bar", "name", "quantity", "sum"),
    ("Plot the quantity of purchase orders over time", "line", "orderDate", "quantity", "sum"),
    ("Plot purchase orders by order date", "line", "orderDate", None, "count"),
    ("Area chart of purchase order quantity over time", "area", "orderDate", "quantity", "sum"),
    ("Show the purchase order quantities as bars over time", "bar", "orderDate", "quantity",
     "sum"),
    ("Show a histogram of part quantities", "histogram", "quantity", None, "count"),
    ("Plot the distribution of part quantities", "histogram", "quantity", None, "count"),
    ("Scatter plot of part quantity against unit price", "point", "quantity", "unitPrice.value",
     None),
]  # fmt: skip

# Grouping words in questions for rows, and a chart the question turns down: no chart.
NOT_CHARTS = [
    "List parts sorted by name",
    "Which orders were placed by Acme?",
    "How many parts per material?",
    "number of purchase orders for each supplier",
    "List the purchase orders by supplier",
    "List the parts by material, no chart",
]


async def _ask(question: str, engine: str, closing: list[Chat]) -> Any:
    chat = Chat(store=":memory:", **ENGINES[engine])
    closing.append(chat)
    turn = await chat.ask(question)
    assert turn.error is None, turn.error
    return turn


def _calls(turn: Any) -> list[dict[str, Any]]:
    return [event for event in turn.events if event["type"] == "tool_call"]


def _charts(turn: Any) -> list[dict[str, Any]]:
    return [event for event in turn.events if event["type"] == "chart"]


def _executor_requests(turn: Any) -> int:
    done = turn.events[-1]
    assert done["type"] == "done"
    requests = done["orchestration"]["requests"]
    return sum(count for role, count in requests.items() if "executor" in role)


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize(("question", "mark", "x", "y", "aggregate"), CHARTS)
async def test_a_chart_question_draws_the_chart_its_words_ask_for(
    question: str,
    mark: str,
    x: str,
    y: str | None,
    aggregate: str | None,
    engine: str,
    closing: list[Chat],
) -> None:
    turn = await _ask(question, engine, closing)
    [chart] = _charts(turn)
    intent = chart["intent"]
    drawn = {key: intent.get(key) for key in ("mark", "x", "y", "aggregate")}
    assert drawn == {"mark": mark, "x": x, "y": y, "aggregate": aggregate}, turn.answer
    calls = _calls(turn)
    assert len(calls) <= MAX_TOOL_CALLS, [call["name"] for call in calls]
    queries = [call for call in calls if call["name"] == TOOLS.query.name]
    # The chart draws the turn's (only) query: the classic loop names its call id, the planned
    # engine its evidence id.
    assert len(queries) == 1 and chart["marks"] > 0
    results = {e["id"]: e for e in turn.events if e["type"] == "tool_result"}
    result = results[queries[0]["id"]]
    assert chart["evidence_id"] in (queries[0]["id"], result.get("evidence_id"))
    if engine == "classic":
        assert calls[-1]["name"] == CHART.name
        assert "The chart shows" in turn.answer
    else:  # the plan named the query and its chart: no executor was asked for anything
        assert _executor_requests(turn) == 0
        assert queries[0]["task_id"] == "task_1"


@pytest.mark.parametrize("engine", list(ENGINES))
@pytest.mark.parametrize("question", NOT_CHARTS)
async def test_grouping_words_alone_draw_no_chart(
    question: str, engine: str, closing: list[Chat]
) -> None:
    turn = await _ask(question, engine, closing)
    assert _charts(turn) == []
    assert CHART.name not in [call["name"] for call in _calls(turn)]
    assert "chart" not in turn.answer.lower().replace("no chart", "")


def _values(chart: dict[str, Any]) -> dict[Any, float]:
    return {point["x"]: point["y"] for point in chart["spec"]["data"]["values"]}


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_the_chart_s_numbers_are_the_data_s(engine: str, closing: list[Chat]) -> None:
    """Counted and summed per group as a hand-written query of the same rows says."""
    async with demo_project() as project:
        orders = await project.call_tool(
            TOOLS.query.name,
            {"manager": "PurchaseOrder", "fields": ["quantity", "urgent", {"supplier": ["name"]}]},
        )
    totals: dict[str, float] = {}
    urgent: dict[str, float] = {}
    for row in orders["data"]:
        name = row["supplier"]["name"]
        totals[name] = totals.get(name, 0) + row["quantity"]
        if row["urgent"]:
            urgent[name] = urgent.get(name, 0) + 1
    assert not orders["has_more"] and 0 < sum(urgent.values()) < len(orders["data"])

    chat = Chat(store=":memory:", **ENGINES[engine])
    closing.append(chat)
    turn = await chat.ask("Plot the total quantity of purchase orders per supplier")
    [chart] = _charts(turn)
    assert _values(chart) == totals
    turn = await chat.ask("Chart urgent purchase orders by supplier")
    [chart] = _charts(turn)
    assert _values(chart) == urgent
    assert len(_calls(turn)) <= MAX_TOOL_CALLS


@pytest.mark.parametrize("engine", list(ENGINES))
async def test_charts_off_draw_nothing_but_answer(engine: str, closing: list[Chat]) -> None:
    chat = Chat(store=":memory:", charts=False, **ENGINES[engine])
    closing.append(chat)
    turn = await chat.ask("Chart the projects by status")
    assert _charts(turn) == [] and turn.error is None
    assert "Apollo" in turn.answer and "chart" not in turn.answer.lower()

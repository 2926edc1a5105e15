"""The offline provider answers questions that ask for a chart with a chart intent, as a model
would: the mark the words ask for, the columns they name, after the query that holds them."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb import Chat


def _chart(turn: Any) -> dict[str, Any] | None:
    charts = [event for event in turn.events if event["type"] == "chart"]
    assert len(charts) <= 1
    return charts[0] if charts else None


@pytest.mark.parametrize(
    ("question", "intent", "says"),
    [
        ("Chart projects by status", {"mark": "bar", "x": "status", "aggregate": "count"},
         "The chart shows count of rows by status."),
        ("Plot the quantity of purchase orders by part",
         {"mark": "bar", "x": "part.name", "y": "quantity", "aggregate": "sum"},
         "sum of quantity by part.name"),
        ("pie chart of parts by material", {"mark": "arc", "x": "material.name"}, "by material"),
        ("Show a histogram of part quantities", {"mark": "histogram", "x": "quantity"},
         "distribution of quantity"),
        ("Plot the order quantity over time",
         {"mark": "line", "x": "orderDate", "y": "quantity"}, "quantity by orderDate"),
    ],
)  # fmt: skip
async def test_a_chart_question_is_answered_with_a_chart(
    question: str, intent: dict[str, Any], says: str, closing: list[Chat]
) -> None:
    chat = Chat(store=":memory:")
    closing.append(chat)
    turn = await chat.ask(question)
    chart = _chart(turn)
    assert chart is not None, turn.answer
    assert {key: chart["intent"].get(key) for key in intent} == intent
    assert says in turn.answer and turn.error is None
    query_ids = [e["id"] for e in turn.events if e["type"] == "tool_call" and e["name"] == "query"]
    assert chart["evidence_id"] == query_ids[-1]


async def test_other_questions_and_charts_off_draw_nothing(closing: list[Chat]) -> None:
    plain = Chat(store=":memory:")
    off = Chat(store=":memory:", charts=False)
    closing.extend([plain, off])
    assert _chart(await plain.ask("Which parts are made of steel?")) is None
    turn = await off.ask("Chart projects by status")
    assert _chart(turn) is None and "chart" not in turn.answer.lower()
    assert "Apollo" in turn.answer

"""Charts in the widget's kernel side: a turn's ``chart`` event reaches the front end beside its
query's table, a table's Chart button and pickers (``chart_request``) are answered with
``chart_options``, and ``chart_library`` sends the built charts.js (or says how to build it).

The front end is a recording comm; the widget, the chat, the loop and the demo project are real.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.charts import check_spec
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.widget import ChatWidget, charts

from .test_widget import RecordingComm

MATERIALS = {
    "name": "query",
    "id": "materials",
    "args": {"manager": "Material", "fields": ["name", "density"], "order_by": ["name"]},
}
DRAW = {"name": "chart", "id": "drawn", "args": {"mark": "bar", "x": "name", "y": "density"}}
ROUNDS: list[dict[str, Any]] = [
    {"tool_calls": [MATERIALS]},
    {"tool_calls": [DRAW]},
    {"text": "Charted."},
]


@pytest.fixture
async def charted() -> AsyncIterator[tuple[ChatWidget, RecordingComm, str]]:
    chat = Chat(provider=ScriptedProvider({"rounds": ROUNDS}), store=":memory:")
    widget = ChatWidget(chat, namespace={})
    comm = RecordingComm()
    widget.comm = comm
    record = await widget.run_turn("Chart the materials' densities")
    yield widget, comm, record["tables"][0]["key"]
    await chat.aclose()


async def test_a_turn_s_chart_event_comes_after_its_query_s_table(
    charted: tuple[ChatWidget, RecordingComm, str],
) -> None:
    widget, comm, _ = charted
    events = [event for message in comm.of("events") for event in message["events"]]
    [chart] = [event for event in events if event["type"] == "chart"]
    assert (chart["id"], chart["evidence_id"], chart["marks"]) == ("drawn", "materials", 8)
    check_spec(chart["spec"])
    [table] = comm.of("table")
    assert table["table"]["call_id"] == chart["evidence_id"]
    # kept in the turn's record (with its journal position): a later view draws it again
    [kept] = [event for event in widget.turns[0]["events"] if event["type"] == "chart"]
    assert {key: value for key, value in kept.items() if key != "position"} == chart


async def test_chart_request_answers_the_suggested_chart_then_the_one_picked(
    charted: tuple[ChatWidget, RecordingComm, str],
) -> None:
    widget, comm, key = charted
    widget.dispatch({"type": "chart_request", "table": key})
    [suggested] = comm.of("chart_options")
    assert suggested["table"] == key and suggested["error"] is None
    assert suggested["columns"] == [
        {"name": "name", "kind": "nominal"},
        {"name": "density", "kind": "quantitative"},
    ]
    assert suggested["intent"]["query"] == "materials"
    assert suggested["chart"]["id"] == "suggested:materials"
    assert suggested["chart"]["evidence_id"] == "materials"
    check_spec(suggested["chart"]["spec"])

    picked = {"mark": "bar", "x": "name", "y": "density", "aggregate": "max", "limit": 3}
    widget.dispatch({"type": "chart_request", "table": key, "intent": picked})
    answer = comm.of("chart_options")[-1]
    assert answer["intent"]["aggregate"] == "max" and answer["chart"]["marks"] == 3
    # a picker's mistake is the answer's error; the columns stay
    widget.dispatch(
        {"type": "chart_request", "table": key, "intent": {"mark": "line", "x": "name"}}
    )
    wrong = comm.of("chart_options")[-1]
    assert wrong["chart"] is None and wrong["error"]["code"] == "invalid_chart"
    assert wrong["columns"] == suggested["columns"]
    for intent in ("bar", ["bar"], {"mark": "bar", "x": "name", "shape": "round"}):
        widget.dispatch({"type": "chart_request", "table": key, "intent": intent})
        assert comm.of("chart_options")[-1]["error"]["code"] == "invalid_arguments", intent
    # an unknown table is refused like a page of one
    widget.dispatch({"type": "chart_request", "table": "t9-nope"})
    assert comm.messages[-1] == {"type": "error", "code": "bad_event", "message": "Unknown table."}


async def test_chart_library_sends_charts_js_or_says_how_to_build_it(
    charted: tuple[ChatWidget, RecordingComm, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    widget, comm, _ = charted
    widget.dispatch({"type": "chart_library"})
    [library] = comm.of("chart_library")
    assert library["source"] == charts.CHARTS_JS.read_text(encoding="utf-8")
    assert library["source"].startswith("// gmchat_nb chart library")
    monkeypatch.setattr(charts, "CHARTS_JS", tmp_path / "charts.js")
    widget.dispatch({"type": "chart_library"})
    assert comm.messages[-1] == {
        "type": "error",
        "code": "charts_unavailable",
        "message": charts.CHARTS_UNAVAILABLE,
    }

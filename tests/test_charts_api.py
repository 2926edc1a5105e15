"""Charts in Python: ``turn.charts`` after a turn whose model called the chart tool, their
mimebundle (Vega-Lite v5, PNG and SVG rendered offline), ``chart.code()`` run again (in process
and in a real kernel) giving the same spec, ``chart_spec`` on ``turn.frames`` giving the chat's
spec, the terminal's line, and the ``chart`` eval expectation."""

from __future__ import annotations

import ast
import asyncio
import base64
import io
import sys
from pathlib import Path
from typing import Any

import altair as alt
import pytest

from gmchat_nb import Chat
from gmchat_nb.charts import VEGALITE_MIME, Chart, ChartError, chart_spec, render_png
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals.dataset import DatasetError, parse_case
from gmchat_nb.evals.judges import CHARTS
from gmchat_nb.evals.report import dimension_counts, trace_record
from gmchat_nb.evals.runner import run_case
from gmchat_nb.terminal import ask_in_terminal

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
ORDERS = {
    "manager": "PurchaseOrder",
    "fields": ["number", "quantity", "orderDate", {"part": ["name", {"material": ["name"]}]}],
}
BY_MATERIAL = {"mark": "bar", "x": "part.material.name", "y": "quantity"}


def provider(*charts: dict[str, Any], query: dict[str, Any] = ORDERS) -> ScriptedProvider:
    """A model that queries, then draws ``charts`` (one round), then answers."""
    rounds: list[dict[str, Any]] = [{"tool_calls": [{"name": "query", "args": query, "id": "q1"}]}]
    if charts:
        calls = [{"name": "chart", "args": args, "id": f"c{n}"} for n, args in enumerate(charts, 1)]
        rounds.append({"tool_calls": calls})
    rounds.append({"text": "Nylon is ordered most."})
    return ScriptedProvider({"rounds": rounds})


@pytest.fixture
async def chats() -> Any:
    opened: list[Chat] = []
    yield opened
    for chat in opened:
        await chat.aclose()


async def charted(chats: list[Chat], *charts: dict[str, Any], **options: Any) -> Any:
    query = options.pop("query", ORDERS)
    chat = Chat(provider=provider(*charts, query=query), store=":memory:", **options)
    chats.append(chat)
    return await chat.ask("Chart the ordered quantity by material")


# -- turn.charts -------------------------------------------------------------------------------


async def test_turn_charts_hold_the_chart_the_model_drew(chats: list[Chat]) -> None:
    turn = await charted(chats, BY_MATERIAL)
    [event] = [event for event in turn.events if event["type"] == "chart"]
    [chart] = turn.charts
    assert isinstance(chart, Chart)
    assert chart.spec == event["spec"] and chart.title == event["title"]
    assert chart.evidence_id == "q1" and chart.id == "c1" and chart.marks == event["marks"]
    assert (
        chart.intent
        == {**event["intent"], "query": "q1"}
        == {
            **BY_MATERIAL,
            "aggregate": "sum",  # several orders per material: summed, as applied
            "sort": "-y",
            "query": "q1",
        }
    )
    assert repr(chart) == f"<Chart {chart.title!r}: bar, {chart.marks} marks>"


async def test_the_mimebundle_holds_vega_lite_and_images_rendered_offline(
    chats: list[Chat],
) -> None:
    [chart] = (await charted(chats, BY_MATERIAL)).charts
    bundle = chart._repr_mimebundle_()
    assert bundle[VEGALITE_MIME] == chart.spec
    assert bundle[VEGALITE_MIME]["$schema"] == "https://vega.github.io/schema/vega-lite/v5.json"
    png = base64.b64decode(bundle["image/png"])
    assert png.startswith(PNG_SIGNATURE) and png == chart.to_png()
    svg = bundle["image/svg+xml"]
    assert svg.startswith("<svg") and svg == chart.to_svg()
    assert "Nylon" in svg and chart.title in svg  # the data's own labels, drawn as text
    # A front end's include/exclude are honoured (nothing rendered that is not wanted).
    assert set(chart._repr_mimebundle_(exclude=["image/svg+xml", "image/png"])) == {
        "text/plain",
        VEGALITE_MIME,
    }


def test_rendering_fetches_nothing() -> None:
    # Our specs carry their data inline; a spec that names data elsewhere is not fetched.
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v5.json",
        "data": {"url": "https://example.com/data.csv"},
        "mark": "bar",
        "encoding": {"x": {"field": "a", "type": "nominal"}},
    }
    with pytest.raises(ValueError, match="url not allowed"):
        render_png(spec)
    with pytest.raises(ValueError, match="inline values only"):
        Chart(spec)  # and a Chart never holds one


async def test_without_vl_convert_a_chart_shows_as_vega_lite_and_names_the_extra(
    chats: list[Chat], monkeypatch: pytest.MonkeyPatch
) -> None:
    [chart] = (await charted(chats, BY_MATERIAL)).charts
    monkeypatch.setitem(sys.modules, "vl_convert", None)  # as if the extra were not installed
    assert set(chart._repr_mimebundle_()) == {"text/plain", VEGALITE_MIME}
    with pytest.raises(ModuleNotFoundError, match=r'pip install "gmchat_nb\[charts\]"'):
        chart.to_png()
    with pytest.raises(ModuleNotFoundError, match=r'pip install "gmchat_nb\[charts\]"'):
        chart.to_svg()


async def test_a_turn_read_back_from_the_journal_has_its_charts(tmp_path: Path) -> None:
    store = str(tmp_path / "chat.sqlite3")
    first = Chat(provider=provider(BY_MATERIAL), store=store)
    try:
        asked = await first.ask("Chart the ordered quantity by material", turn_id="t-1")
        conversation = first.conversation_id
    finally:
        await first.aclose()
    again = Chat(
        provider=ScriptedProvider({"rounds": []}), store=store, conversation_id=conversation
    )
    try:
        replayed = await again.ask("Chart the ordered quantity by material", turn_id="t-1")
    finally:
        await again.aclose()
    [chart] = replayed.charts
    assert chart.spec == asked.charts[0].spec and chart.evidence_id == "q1"
    # This session never ran the query: there is no cell that re-runs it, and it says so.
    with pytest.raises(LookupError, match="not in this session's evidence"):
        chart.code()


# -- chart.code() ------------------------------------------------------------------------------


async def run_cell(code: str) -> tuple[dict[str, Any], Any]:
    """A notebook cell run as a kernel runs it (top-level await): its namespace and the value of
    its last line."""
    body, last = code.rsplit("\n", 1)
    namespace: dict[str, Any] = {}
    ran = eval(compile(body, "cell", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT), namespace)
    if asyncio.iscoroutine(ran):
        await ran
    return namespace, eval(last, namespace)


@pytest.mark.parametrize(
    ("query", "intent"),
    [
        (ORDERS, BY_MATERIAL),
        (ORDERS, {"mark": "line", "x": "orderDate", "y": "quantity", "aggregate": "mean"}),
        (ORDERS, {"mark": "histogram", "x": "quantity", "title": "Order sizes"}),
        # two pages and a window inside them: the cell reads what the chat read
        ({**ORDERS, "limit": 5, "offset": 3}, {"mark": "arc", "x": "part.name", "y": "quantity"}),
    ],
    ids=["bar", "line", "histogram", "paged"],
)
async def test_code_runs_the_query_again_and_draws_the_same_spec(
    chats: list[Chat], query: dict[str, Any], intent: dict[str, Any]
) -> None:
    [chart] = (await charted(chats, intent, query=query)).charts
    code = chart.code()
    assert "gmchat_nb.demo_project()" in code and "from gmchat_nb.charts import chart_spec" in code
    namespace, drawn = await run_cell(code)
    assert isinstance(drawn, alt.Chart)
    assert drawn.to_dict() == alt.Chart.from_dict(chart.spec).to_dict()
    call = code.rsplit("\n", 1)[1]
    assert call.startswith("alt.Chart.from_dict(") and call.endswith(")")
    assert eval(call[len("alt.Chart.from_dict(") : -1], namespace) == chart.spec


async def test_code_run_in_a_kernel_draws_the_same_chart(chats: list[Chat]) -> None:
    # The dev environment has a kernel; .ci/run's graphql-core 3.3 job installs none.
    pytest.importorskip("ipykernel", reason="no Jupyter kernel installed")
    from jupyter_client.manager import start_new_async_kernel

    [chart] = (await charted(chats, BY_MATERIAL)).charts
    manager, client = await start_new_async_kernel(kernel_name="python3")
    results: list[dict[str, Any]] = []
    errors: list[str] = []

    def collect(message: dict[str, Any]) -> None:
        if message["msg_type"] == "execute_result":
            results.append(message["content"]["data"])
        elif message["msg_type"] == "error":
            errors.append("\n".join(message["content"]["traceback"]))

    try:
        reply = await client.execute_interactive(chart.code(), timeout=120, output_hook=collect)
    finally:
        client.stop_channels()
        await manager.shutdown_kernel(now=True)
    assert reply["content"]["status"] == "ok", errors
    [data] = results
    assert data[VEGALITE_MIME] == alt.Chart.from_dict(chart.spec).to_dict()


# -- chart_spec --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "intent",
    [
        BY_MATERIAL,
        {"mark": "line", "x": "orderDate", "y": "quantity"},
        {"mark": "point", "x": "quantity", "y": "quantity", "color": "part.material.name"},
        {"mark": "histogram", "x": "quantity"},
        {"mark": "bar", "x": "part.name", "aggregate": "count", "sort": "x", "limit": 3},
    ],
    ids=["bar", "line-dates", "point", "histogram", "count"],
)
async def test_chart_spec_on_the_turn_s_dataframe_is_the_chat_s_spec(
    chats: list[Chat], intent: dict[str, Any]
) -> None:
    turn = await charted(chats, intent)
    [chart] = turn.charts
    [frame] = turn.frames  # dotted columns, dates parsed, pandas dtypes
    assert chart_spec(frame, **intent) == chart.spec
    rows = turn.events[1]["result"]["data"]  # the query's own nested rows
    assert chart_spec(rows, **intent) == chart.spec


def test_chart_spec_errors_say_what_would_do() -> None:
    rows = [{"name": "Bolt", "quantity": 3}, {"name": "Gear", "quantity": 5}]
    with pytest.raises(ChartError, match="Did you mean 'quantity'") as unknown:
        chart_spec(rows, mark="bar", x="name", y="quantiy")
    assert unknown.value.code == "unknown_column"
    with pytest.raises(ChartError, match="Unknown mark 'pie'") as mark:
        chart_spec(rows, mark="pie", x="name")
    assert mark.value.code == "invalid_arguments"
    with pytest.raises(ChartError, match="no rows"):
        chart_spec([], mark="bar", x="name")
    with pytest.raises(TypeError, match="DataFrame or a list of rows"):
        chart_spec({"name": "Bolt"}, mark="bar", x="name")


# -- the terminal ------------------------------------------------------------------------------


async def test_the_terminal_says_what_was_charted_and_where_to_see_it(chats: list[Chat]) -> None:
    chat = Chat(
        provider=provider({**BY_MATERIAL, "title": "Quantity\x1b[31m by \x07material"}),
        store=":memory:",
    )
    chats.append(chat)
    out = io.StringIO()
    assert await ask_in_terminal(chat, "Chart the ordered quantity by material", out=out) == 0
    [line] = [line for line in out.getvalue().splitlines() if line.startswith("▨")]
    marks = chat.turns[-1].charts[0].marks
    assert line == (
        f"▨ chart: Quantity [31m by  material (bar, {marks} marks); open the turn in a notebook "
        "to see it"
    )


# -- the chart expectation ---------------------------------------------------------------------


def case(expectations: dict[str, Any]) -> Any:
    item = {
        "name": "chart-by-material",
        "conversation": [{"user": "Chart the ordered quantity by material"}],
        "expectations": expectations,
    }
    return parse_case(item, 1, "charts")


async def test_the_chart_expectation_passes_on_a_matching_chart() -> None:
    expected = case({"chart": {**BY_MATERIAL, "aggregate": "sum"}})
    result = await run_case(expected, provider({**BY_MATERIAL, "y": "quantity"}))
    assert result.status == "pass", result.reasons
    [verdict] = result.verdicts
    assert verdict.dimension == CHARTS and verdict.passed
    [turn] = result.turns
    [drawn] = turn.charts
    assert drawn["intent"]["mark"] == "bar" and drawn["marks"] == len(
        drawn["spec"]["data"]["values"]
    )
    assert trace_record(result)["turns"][0]["charts"] == turn.charts
    assert ("Charts", 1, 1) in dimension_counts([result])


async def test_the_chart_expectation_fails_naming_what_was_expected_and_drawn() -> None:
    expected = case({"chart": {"mark": "line", "x": "orderDate"}})
    result = await run_case(expected, provider(BY_MATERIAL))
    assert result.status == "fail"
    [verdict] = result.verdicts
    assert verdict.score == 0.0
    assert verdict.reasons == (
        "expected a chart (mark=line, x=orderDate); drawn: "
        "(mark=bar, x=part.material.name, y=quantity, aggregate=sum)",
    )
    nothing = await run_case(case({"turns": [{"chart": {}}]}), provider())
    assert nothing.status == "fail"
    assert nothing.verdicts[0].reasons == ("turn 1: expected a chart (any); no chart was drawn",)


async def test_a_case_without_a_chart_expectation_has_no_charts_row() -> None:
    result = await run_case(case({"answer_contains": ["Nylon"]}), provider(BY_MATERIAL))
    assert result.status == "pass"
    assert "Charts" not in [row[0] for row in dimension_counts([result])]


@pytest.mark.parametrize(
    ("chart", "message"),
    [
        ({"mark": "pie"}, "expectations.chart.mark: unknown mark 'pie'; one of ['bar', 'line'"),
        ({"aggregate": "avg"}, "unknown aggregate 'avg'; one of ['count', 'sum', 'mean'"),
        (
            {"colour": "x"},
            "expectations.chart: unknown key 'colour'; allowed: ['aggregate', 'mark'",
        ),
        ({"x": 3}, "expectations.chart.x must be text (a column name), got 3"),
        ("bar", "expectations.chart must be a mapping, got str"),
    ],
)
def test_a_bad_chart_expectation_is_a_dataset_error(chart: Any, message: str) -> None:
    with pytest.raises(DatasetError) as error:
        case({"chart": chart})
    assert message in str(error.value)
    assert str(error.value).startswith("charts: case 'chart-by-material'")

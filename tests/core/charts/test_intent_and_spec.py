"""Charts built from declared intents: every way an intent is refused, and the spec each mark and
aggregate gives, checked against the Vega-Lite v5 schema altair ships."""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest

from gmchat_nb.core.charts import (
    AGGREGATES,
    MARKS,
    MAX_MARKS,
    SCHEMA,
    ChartedQuery,
    ChartIntent,
    build_chart,
    chart_options,
    check_spec,
    run_chart,
    suggest_intent,
)
from gmchat_nb.core.project.errors import ToolError

ROWS: list[dict[str, Any]] = [
    {"number": "PO-1", "orderDate": "2026-01-08", "quantity": 500, "price": "1.50",
     "part": {"name": "Bolt", "material": {"name": "Steel"}}, "tags": [{"name": "a"}]},
    {"number": "PO-2", "orderDate": "2026-01-15", "quantity": 100, "price": "4.00",
     "part": {"name": "Nut", "material": {"name": "Steel"}}, "tags": []},
    {"number": "PO-3", "orderDate": "2026-02-01", "quantity": 40, "price": "9.25",
     "part": {"name": "Gear", "material": {"name": "Cobalt"}}, "tags": []},
    {"number": "PO-4", "orderDate": "2026-02-01", "quantity": 60, "price": None,
     "part": {"name": "Gear", "material": {"name": "Cobalt"}}, "tags": []},
]  # fmt: skip


@pytest.fixture(scope="module")
def validator() -> jsonschema.protocols.Validator:
    from altair.vegalite.v5.schema import load_schema

    schema = load_schema()
    cls = jsonschema.validators.validator_for(schema)
    return cls(schema)


def chart(**intent: Any) -> Any:
    return build_chart(ROWS, ChartIntent.from_args(intent))


def refused(rows: list[dict[str, Any]], **intent: Any) -> ToolError:
    with pytest.raises(ToolError) as caught:
        build_chart(rows, ChartIntent.from_args(intent))
    return caught.value


def values(built: Any) -> list[dict[str, Any]]:
    return list(built.spec["data"]["values"])


# -- the intent's shape ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        ({"mark": "bar", "x": "a", "colour": "b"}, "invalid_arguments", "does not take 'colour'"),
        ({"x": "a"}, "invalid_arguments", "chart needs 'mark'"),
        ({"mark": "bar"}, "invalid_arguments", "chart needs 'x'"),
        ({"mark": "bars", "x": "a"}, "invalid_arguments", "Did you mean 'bar'?"),
        ({"mark": "pie", "x": "a"}, "invalid_arguments", "Use 'bar', 'line'"),
        ({"mark": "bar", "x": "a", "aggregate": "average"}, "invalid_arguments", "aggregate"),
        ({"mark": "bar", "x": "a", "sort": "up"}, "invalid_arguments", "Unknown sort 'up'"),
        ({"mark": "bar", "x": 3}, "invalid_arguments", "'x' of chart must be a string; got int"),
        ({"mark": ["bar"], "x": "a"}, "invalid_arguments", "must be a string; got list"),
        ({"mark": "bar", "x": "a", "limit": 0}, "invalid_arguments", "from 1 to 1000"),
        ({"mark": "bar", "x": "a", "limit": True}, "invalid_arguments", "whole number"),
        ({"mark": "bar", "x": "a", "limit": 2.5}, "invalid_arguments", "whole number"),
        ({"mark": "bar", "x": "x" * 100_000}, "invalid_arguments", "too long to be a name"),
    ],
)
def test_a_malformed_intent_is_refused_with_what_would_be_valid(
    args: dict[str, Any], code: str, says: str
) -> None:
    with pytest.raises(ToolError) as caught:
        ChartIntent.from_args(args)
    assert caught.value.code == code and says in caught.value.message
    assert len(caught.value.message) < 400  # a megabyte argument is never echoed


def test_a_title_is_text_cut_to_length_and_lone_surrogates_replaced() -> None:
    intent = ChartIntent.from_args({"mark": "bar", "x": "a", "title": "\ud800" + "t" * 10_000})
    assert intent.title is not None and len(intent.title) == 200
    assert intent.title.startswith("\ufffd") and intent.title.endswith("…")
    json.dumps(intent.to_dict()).encode("utf-8")


# -- against the result's columns --------------------------------------------------------------


@pytest.mark.parametrize(
    ("intent", "code", "says"),
    [
        ({"mark": "bar", "x": "part.materal.name", "y": "quantity"}, "unknown_column",
         "Did you mean 'part.material.name' or"),
        ({"mark": "bar", "x": "part.name", "y": "quantty"}, "unknown_column",
         "no column 'quantty' for y"),
        ({"mark": "bar", "x": "part.name", "color": "colour"}, "unknown_column", "for color"),
        ({"mark": "bar", "x": "tags.name"}, "invalid_chart", "holds lists"),
        ({"mark": "bar", "x": "part.name", "y": "number"}, "invalid_chart",
         "'number' holds text. Number columns: 'quantity' or 'price'"),
        ({"mark": "line", "x": "part.name", "y": "quantity"}, "invalid_chart", "Use 'bar'"),
        ({"mark": "point", "x": "number", "y": "quantity"}, "invalid_chart", "needs dates or numbers"),
        ({"mark": "area", "x": "number", "y": "quantity"}, "invalid_chart", "needs dates or numbers"),
        ({"mark": "point", "x": "quantity"}, "invalid_chart", "needs a number column on y"),
        ({"mark": "bar", "x": "part.name", "aggregate": "sum"}, "invalid_chart",
         "needs a number column on y"),
        ({"mark": "arc", "x": "part.name", "y": "quantity", "color": "number"}, "invalid_chart",
         "leave out color"),
        ({"mark": "histogram", "x": "part.name"}, "invalid_chart", "holds text"),
        ({"mark": "histogram", "x": "quantity", "y": "price"}, "invalid_chart", "leave out y"),
        ({"mark": "histogram", "x": "quantity", "aggregate": "sum"}, "invalid_chart",
         "leave out y, color and aggregate"),
    ],
)  # fmt: skip
def test_an_intent_that_does_not_fit_the_result_is_refused(
    intent: dict[str, Any], code: str, says: str
) -> None:
    error = refused(ROWS, **intent)
    assert error.code == code and says in error.message, error.message


def test_an_empty_result_or_one_without_values_has_nothing_to_chart() -> None:
    assert refused([], mark="bar", x="a").code == "empty_result"
    error = refused([{"a": None, "b": None}], mark="line", x="a", y="b")
    assert error.code == "empty_result" and "'a' has no value in any row" in error.message


def test_too_many_marks_are_refused_with_what_to_do_instead() -> None:
    rows = [{"n": i, "v": i % 7} for i in range(MAX_MARKS + 1)]
    error = refused(rows, mark="point", x="n", y="v")
    assert error.code == "too_many_marks" and "5,001 marks" in error.message
    assert "limit" in error.message
    assert build_chart(rows, ChartIntent(mark="point", x="n", y="v", limit=50)).marks == 50
    assert build_chart(rows, ChartIntent(mark="histogram", x="n")).marks <= 41


def test_the_tool_names_its_query_or_takes_the_latest() -> None:
    first = ChartedQuery("call-1", ROWS)
    second = ChartedQuery("call-2", [{"k": "a", "v": 1}])
    built = run_chart({"mark": "bar", "x": "k", "y": "v"}, [first, second])
    assert built.intent.query == "call-2"
    built = run_chart({"mark": "bar", "x": "part.name", "query": "task_1:query:1"}, [first],
                      {"task_1:query:1": "call-1"})  # fmt: skip
    assert built.intent.query == "call-1"
    with pytest.raises(ToolError, match="no query result in this turn"):
        run_chart({"mark": "bar", "x": "k"}, [])
    with pytest.raises(ToolError, match=r"No query of this turn has the id 'call-9'.*'call-1'"):
        run_chart({"mark": "bar", "x": "k", "query": "call-9"}, [first, second])


# -- the specs -----------------------------------------------------------------------------------


def test_a_bar_sums_repeated_categories_largest_first(validator: Any) -> None:
    built = chart(mark="bar", x="part.material.name", y="quantity")
    assert values(built) == [{"x": "Steel", "y": 600}, {"x": "Cobalt", "y": 100}]
    assert built.intent.aggregate == "sum" and built.intent.sort == "-y" and built.marks == 2
    assert built.spec["encoding"]["x"] == {
        "field": "x", "type": "nominal", "title": "part.material.name", "sort": None
    }  # fmt: skip
    assert built.spec["encoding"]["y"]["title"] == "Sum of quantity"
    assert built.title == "Sum of quantity by part.material.name"
    validator.validate(built.spec)


@pytest.mark.parametrize(
    ("aggregate", "expected"),
    [
        ("sum", {"Steel": 600, "Cobalt": 100}),
        ("mean", {"Steel": 300, "Cobalt": 50}),
        ("min", {"Steel": 100, "Cobalt": 40}),
        ("max", {"Steel": 500, "Cobalt": 60}),
        ("count", {"Steel": 2, "Cobalt": 2}),
    ],
)
def test_each_aggregate(aggregate: str, expected: dict[str, float], validator: Any) -> None:
    built = chart(mark="bar", x="part.material.name", y="quantity", aggregate=aggregate)
    assert {row["x"]: row["y"] for row in values(built)} == expected
    validator.validate(built.spec)


def test_numeric_strings_are_numbers_and_rows_without_one_are_left_out() -> None:
    built = chart(mark="bar", x="part.name", y="price", aggregate="mean")
    assert {row["x"]: row["y"] for row in values(built)} == {"Bolt": 1.5, "Nut": 4, "Gear": 9.25}
    assert built.notes == ("1 row without a value to draw was left out.",)


@pytest.mark.parametrize("mark", [m for m in MARKS if m != "histogram"])
def test_every_mark_draws_a_valid_spec(mark: str, validator: Any) -> None:
    x = "part.name" if mark in ("bar", "arc") else "orderDate"
    built = chart(mark=mark, x=x, y="quantity")
    spec = built.spec
    validator.validate(spec)
    check_spec(spec)
    assert spec["$schema"] == SCHEMA and spec["mark"] == {"type": mark, "tooltip": True}
    assert set(spec["data"]) == {"values"} and "url" not in json.dumps(spec)
    if mark == "arc":
        assert set(spec["encoding"]) == {"theta", "color"}
    else:
        assert spec["encoding"]["x"]["type"] == ("nominal" if mark == "bar" else "temporal")


def test_a_line_over_dates_sums_each_date_in_date_order(validator: Any) -> None:
    built = chart(mark="line", x="orderDate", y="quantity")
    assert values(built) == [
        {"x": "2026-01-08", "y": 500},
        {"x": "2026-01-15", "y": 100},
        {"x": "2026-02-01", "y": 100},
    ]
    validator.validate(built.spec)


def test_colour_groups_and_limit_keeps_the_top_x_values(validator: Any) -> None:
    built = chart(mark="bar", x="part.name", y="quantity", color="part.material.name", limit=2)
    assert values(built) == [
        {"x": "Bolt", "y": 500, "color": "Steel"},
        {"x": "Nut", "y": 100, "color": "Steel"},
    ]
    assert built.spec["encoding"]["color"]["title"] == "part.material.name"
    validator.validate(built.spec)


def test_a_histogram_bins_every_value_once(validator: Any) -> None:
    rows = [{"v": math.sin(i) * 100} for i in range(1000)]
    built = build_chart(rows, ChartIntent(mark="histogram", x="v"))
    bins = values(built)
    assert sum(b["y"] for b in bins) == 1000
    assert all(b["x2"] > b["x"] for b in bins) and bins[0]["x"] <= -99.9 and bins[-1]["x2"] > 99.9
    assert built.spec["encoding"]["x"]["bin"] == {"binned": True}
    validator.validate(built.spec)
    single = build_chart([{"v": 3}, {"v": 3}], ChartIntent(mark="histogram", x="v"))
    assert values(single) == [{"x": 3, "x2": 4, "y": 2}]


def test_ten_thousand_rows_are_aggregated_before_drawing(validator: Any) -> None:
    rows = [{"material": {"name": f"M{i % 12}"}, "quantity": i} for i in range(10_000)]
    built = build_chart(rows, ChartIntent(mark="bar", x="material.name", y="quantity"))
    assert built.marks == 12 and len(values(built)) == 12
    assert sum(row["y"] for row in values(built)) == sum(range(10_000))
    assert len(json.dumps(built.spec)) < 3_000  # the rows stay in the table, not in the chart
    validator.validate(built.spec)


HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "a.b[0]['c']",  # a Vega field path, were it used as one
    "\ud800lone",
    "datum.x || alert(1)",
    "m" * 1_000_000,
]


@pytest.mark.parametrize("name", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_column_names_and_values_are_titles_and_data_only(
    name: str, validator: Any
) -> None:
    rows = [{name: name, "n": 1}, {name: "other", "n": 2}]
    built = (
        build_chart(rows, ChartIntent(mark="bar", x=name[:200], y="n"))
        if len(name) <= 200
        else None
    )
    if built is None:  # a megabyte column name is no name a chart can take: as a value it is cut
        rows = [{"label": name, "n": 1}]
        built = build_chart(rows, ChartIntent(mark="bar", x="label", y="n", title=name[:500]))
    text = json.dumps(built.spec)
    text.encode("utf-8")  # lone surrogates replaced: the spec is valid UTF-8
    assert len(text) < 2_000
    fields = {channel["field"] for channel in built.spec["encoding"].values()}
    assert fields <= {"x", "y", "color", "x2"}  # the names never become field paths
    validator.validate(built.spec)
    check_spec(built.spec)


@pytest.mark.parametrize(
    "spec",
    [
        {"$schema": SCHEMA, "data": {"url": "https://example.com/x.csv"}},
        {"$schema": SCHEMA, "data": {"values": []}, "transform": [{"calculate": "1", "as": "a"}]},
        {"$schema": SCHEMA, "data": {"values": []}, "params": [{"name": "p", "expr": "alert(1)"}]},
        {
            "$schema": SCHEMA,
            "data": {"values": []},
            "encoding": {"x": {"axis": {"labelExpr": "1"}}},
        },
        {"$schema": SCHEMA, "data": {"values": []}, "mark": {"type": "point", "href": "x"}},
        {"$schema": "https://vega.github.io/schema/vega/v5.json", "data": {"values": []}},
        {"$schema": SCHEMA, "data": {"values": [], "name": "d"}},
        [],
    ],
)
def test_check_spec_refuses_anything_that_could_fetch_or_evaluate(spec: Any) -> None:
    with pytest.raises(ValueError, match="chart spec"):
        check_spec(spec)


def test_check_spec_refuses_deep_nesting_without_recursing() -> None:
    deep: Any = {}
    cursor = deep
    for _ in range(10_000):
        cursor["a"] = {}
        cursor = cursor["a"]
    with pytest.raises(ValueError, match="nested too deeply"):
        check_spec({"$schema": SCHEMA, "data": {"values": []}, "mark": deep})


# -- suggestions -------------------------------------------------------------------------------


def test_suggestions_follow_the_column_kinds() -> None:
    suggested = suggest_intent(ROWS)
    assert suggested is not None and (suggested.mark, suggested.x, suggested.y) == (
        "bar", "number", "quantity"
    )  # fmt: skip
    dated = [{"day": r["orderDate"], "n": r["quantity"]} for r in ROWS]
    assert suggest_intent(dated) == ChartIntent(mark="line", x="day", y="n")
    pairs = [{"id": i, "a": i, "b": i * i} for i in range(5)]
    assert suggest_intent(pairs) == ChartIntent(mark="point", x="a", y="b")  # ids are no measure
    assert suggest_intent([{"a": 1.5}, {"a": 2}]) == ChartIntent(mark="histogram", x="a")
    words = [{"w": f"w{i}"} for i in range(40)]
    assert suggest_intent(words) == ChartIntent(mark="bar", x="w", aggregate="count", limit=25)
    assert suggest_intent([]) is None and suggest_intent([{"l": [{"a": 1}]}]) is None
    for intent in (suggest_intent(ROWS), suggest_intent(dated), suggest_intent(words)):
        assert intent is not None
        build_chart(ROWS if intent.x == "number" else dated if intent.x == "day" else words, intent)


def test_chart_options_name_each_column_kind() -> None:
    options = chart_options(ROWS)
    assert {c["name"]: c["kind"] for c in options["columns"]} == {
        "number": "nominal", "orderDate": "temporal", "quantity": "quantitative",
        "price": "quantitative", "part.name": "nominal", "part.material.name": "nominal",
        "tags.name": "list", "tags": "list",
    }  # fmt: skip
    assert options["marks"] == list(MARKS) and options["aggregates"] == list(AGGREGATES)

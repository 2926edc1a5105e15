"""A planned turn draws the chart its plan asks of a query requirement (as the chart tool would,
named by the query's evidence id); one that cannot be drawn is a notice, never a failed turn."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from gmchat_nb.core.planned.plan import PlanValidationError, validate_plan
from gmchat_nb.evals import select_cases
from gmchat_nb.evals.oracle import OracleProvider, load_oracle, planned_rounds
from gmchat_nb.evals.runner import run_case

CASE = next(case for case in select_cases("charts") if case.name == "chart_projects_by_status")


def _rounds(chart: dict[str, Any]) -> list[dict[str, Any]]:
    rounds = planned_rounds(load_oracle()[CASE.name])
    plan = copy.deepcopy(rounds[0])
    [requirement] = [
        r for task in plan["structured"]["tasks"] for r in task["requirements"] if "chart" in r
    ]
    requirement["chart"] = chart
    return [plan, *rounds[1:]]


async def test_the_plan_s_chart_is_drawn_from_its_query_evidence() -> None:
    rounds = _rounds({"mark": "bar", "x": "status", "aggregate": "count"})
    result = await run_case(CASE, OracleProvider({"rounds": rounds}), strategy="planned")
    [turn] = result.turns
    [chart] = turn.charts
    assert chart["intent"]["query"].endswith(":query:1") and chart["marks"] == 3
    assert result.status == "pass", result.reasons


async def test_a_chart_the_rows_cannot_draw_is_a_notice() -> None:
    rounds = _rounds({"mark": "line", "x": "status"})
    result = await run_case(CASE, OracleProvider({"rounds": rounds}), strategy="planned")
    [turn] = result.turns
    assert turn.charts == [] and turn.error is None
    notices = [e for e in turn.events if e["type"] == "notice" and e["kind"] == "chart"]
    assert len(notices) == 1 and "dates or numbers on x" in notices[0]["message"]
    assert notices[0]["details"]["code"] == "invalid_chart"


def test_a_chart_is_only_for_a_query_requirement() -> None:
    plan = {
        "intent": "read",
        "tasks": [
            {
                "task_id": "task_1",
                "objective": "find",
                "requirements": [
                    {"requirement_id": "r1", "kind": "schema", "chart": {"mark": "bar"}}
                ],
            }
        ],
    }
    with pytest.raises(PlanValidationError, match="chart must be an object on a query"):
        validate_plan(plan)

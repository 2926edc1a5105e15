"""GeneralManager 0.87.1's planned-orchestration dataset runs unmodified through our engine.

The dataset is read out of GeneralManager's wheel, cached by ``scripts/fetch-generalmanager``
(``.ci/run`` fetches it before the tests). Every case is played through the real planned engine
with role-scripted providers and stubbed tools, and judged on coverage, terminal reason, tool
sequence, answer tokens and cited evidence. All eleven pass (GeneralManager's own runner fails
``mutation_fallback``: it stops a read-only eval at a mutation plan).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gmchat_nb.evals.gm_planned import (
    GMPlannedResult,
    gm_wheel_path,
    load_gm_planned,
    report,
    run_gm_case,
)


def wheel() -> Path:
    path = gm_wheel_path()
    if not path.is_file():
        pytest.fail(
            f"GeneralManager's wheel is not cached at {path}: run "
            "`.venv/bin/python scripts/fetch-generalmanager` (CI does, in .ci/run)"
        )
    return path


@pytest.fixture(scope="module")
async def results() -> dict[str, GMPlannedResult]:
    return {case.name: await run_gm_case(case) for case in load_gm_planned(wheel())}


def test_the_dataset_is_read_from_the_wheel_as_it_is() -> None:
    cases = load_gm_planned(wheel())
    assert len(cases) == 11
    assert cases[0].name == "multi_manager_alias_discovery"
    assert all(case.expectations.planned for case in cases)


def test_a_missing_wheel_names_the_fetch_script(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="scripts/fetch-generalmanager"):
        load_gm_planned(tmp_path / "missing.whl")


async def test_every_case_is_judged_as_expected(results: dict[str, GMPlannedResult]) -> None:
    text = report(list(results.values()))
    for name, result in results.items():
        assert result.error is None, f"{name}: {result.error}"
        assert result.passed, f"{name}: {result.reasons}\n{text}"
        # every scripted round was asked for: the engine made exactly the requests GM scripted
        assert not result.unplayed, f"{name}: unplayed script entries {result.unplayed}"
    assert "Passed 11 of 11" in text


async def test_each_role_is_counted(results: dict[str, GMPlannedResult]) -> None:
    first = results["multi_manager_alias_discovery"]
    assert first.requests == {"planner": 1, "executor": 4, "synthesizer": 1, "fallback": 0}
    assert first.tokens == {"planner": 2, "executor": 8, "synthesizer": 2, "fallback": 0}
    # the engine's own ledger agrees (it counts the fallback profile as the role it stands in for)
    assert first.ledger == {"planner": 1, "executor": 4, "synthesizer": 1}


async def test_the_duplicate_call_ran_the_tool_once(results: dict[str, GMPlannedResult]) -> None:
    result = results["duplicate_rejection"]
    assert result.tool_sequence == ["query", "query"]  # both calls were announced
    assert result.executions == [("query", {"manager": "PartManager", "fields": ["name"]})]
    served = [e for e in result.events if e["type"] == "tool_result"]
    assert [e["evidence_id"] for e in served] == ["task_1:query:1", "task_1:query:1"]
    assert served[1].get("duration_ms") is None  # the second came from the evidence store


async def test_the_calculation_is_the_engines(results: dict[str, GMPlannedResult]) -> None:
    result = results["deterministic_calculation"]
    calculation = result.calculation("task_1:calculation:2")
    assert calculation is not None, result.orchestration
    assert calculation["operation"] == "average"
    assert calculation["value"] == "4"
    assert calculation["inputs"] == [
        {"evidence_id": "task_1:query:1", "path": ["data", 0, "value"], "value": "4"}
    ]
    assert result.cited == ["task_1:query:1", "task_1:calculation:2"]


async def test_a_child_hands_its_evidence_to_its_root(results: dict[str, GMPlannedResult]) -> None:
    result = results["dynamic_child_creation"]
    assert result.cited == ["task_1:child:task_1_child:query:1"]
    assert "task_1_child:query:1" in result.evidence_ids
    assert result.orchestration is not None
    assert result.orchestration["coverage"] == {"resolved": 1, "total": 1}


async def test_limits_end_tasks_for_their_own_reasons(results: dict[str, GMPlannedResult]) -> None:
    budget = results["budget_exhaustion"]
    assert len(budget.executions) == 3  # three distinct calls, then the round limit of 3
    assert budget.events[-1]["type"] == "error"
    assert budget.events[-1]["code"] == "budget_exhausted"
    deadline = results["deadline_exhaustion"]
    assert deadline.requests["executor"] == 1 and deadline.tokens["executor"] == 0  # cut off
    assert deadline.events[-1]["code"] == "deadline_exceeded"
    circles = results["two_pass_no_progress"]
    assert [name for name, _ in circles.executions] == ["search_managers", "search_managers"]
    partial = results["partial_independent_answer"]
    assert partial.orchestration is not None
    assert partial.orchestration["unresolved"] == [
        {"task_id": "task_2", "reason": "manager_unresolved"}
    ]


async def test_legacy_strategy_answers_from_the_toy_fixture(
    results: dict[str, GMPlannedResult],
) -> None:
    result = results["legacy_stability"]
    assert result.strategy == "legacy"
    assert result.tool_sequence == []  # no planned engine ran...
    assert "query" in result.legacy_tools  # ...the legacy loop read the projects itself
    assert "Apollo" in result.answer


async def test_a_mutation_plan_goes_to_the_legacy_loop(
    results: dict[str, GMPlannedResult],
) -> None:
    """The plan's mutation intent hands the turn to the legacy loop with no executor; the offline
    legacy model refuses the write, naming the change it understood."""
    result = results["mutation_fallback"]
    assert result.terminal_reason == "mutation"
    assert result.requests["planner"] == 1 and result.requests["executor"] == 0
    assert result.tool_sequence == []
    assert result.answer.startswith("I can't update the Apollo record: ")
    assert "only reads data" in result.answer

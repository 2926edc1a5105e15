"""Every eval case passes with the oracle playing the planned roles (``--strategy planned``).

The oracle (evals/oracle/) plays the planner (a plan naming the queries it would make, and the
discovery it does as an executor task), the executor and the synthesizer, in the order the
planned engine asks; every round must be asked for. The calculation cases pass on the engine's
numbers: the synthesizer quotes what the engine computed from the rows.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import Case, DatasetError, parse_cases, select_cases
from gmchat_nb.evals.oracle import load_oracle, oracle_provider, planned_rounds
from gmchat_nb.evals.runner import CaseResult, CountingProvider, run_case

ROOT = Path(__file__).resolve().parents[2]
CALCULATIONS = {case.name for case in select_cases("calculations")}
# "All datasets" leaves the planned-only calculations out; these tests cover them too.
CASES: dict[str, Case] = {
    case.name: case for case in [*select_cases(), *select_cases("calculations")]
}


async def planned(name: str, spec: str = "oracle") -> tuple[CaseResult, ScriptedProvider]:
    provider = oracle_provider(CASES[name], "planned", spec)
    return await run_case(CASES[name], provider, strategy="planned"), provider


def test_planned_entries_name_dataset_cases() -> None:
    given = load_oracle("planned.yaml")
    assert set(given) <= set(CASES), sorted(set(given) - set(CASES))
    assert set(given) >= CALCULATIONS  # a calculation is more than the oracle's legacy calls


@pytest.mark.parametrize("name", list(CASES))
async def test_the_oracle_passes_every_case_in_planned_roles(name: str) -> None:
    result, provider = await planned(name)
    assert result.status == "pass", f"{name}: {result.reasons}"
    assert not result.reasons, result.reasons  # no strategy deviation either
    assert result.strategy == "planned"
    assert provider.remaining == 0, f"{provider.remaining} rounds were never requested"
    for turn in result.turns:
        assert turn.orchestration is not None and turn.orchestration["status"] == "complete"
        assert turn.roles["planner"]["requests"] == 1
        assert turn.roles["synthesizer"]["requests"] == 1
        assert "legacy" not in turn.roles  # no request went to the tool loop
        assert turn.requests == sum(entry["requests"] for entry in turn.roles.values())
        assert turn.orchestration["requests"] == {
            role: turn.roles.get(role, {}).get("requests", 0)
            for role in ("planner", "executor", "synthesizer")
        }


@pytest.mark.parametrize("name", sorted(CALCULATIONS))
async def test_calculation_answers_quote_the_engines_numbers(name: str) -> None:
    result, _ = await planned(name)
    [turn] = result.turns
    assert turn.orchestration is not None
    [calculation] = turn.orchestration["calculations"]
    assert calculation["evidence_id"] == "task_1:calculation:2"
    quoted = [group["text"] for group in calculation.get("groups", [])] or [calculation["text"]]
    for text in quoted:
        assert text in turn.answer, (text, turn.answer)
    assert turn.roles.get("executor") is None  # the plan's own query and binding: no executor


async def test_the_calculations_are_the_engines() -> None:
    values = {}
    for name in sorted(CALCULATIONS):
        result, _ = await planned(name)
        orchestration = result.turns[0].orchestration
        assert orchestration is not None
        values[name] = orchestration["calculations"][0]
    assert values["titanium_stock_value"]["text"] == "56394 EUR"
    assert values["count_parts_in_catalog"]["text"] == "28"
    assert values["nylon_units_in_stock"]["text"] == "7995"
    groups = {g["group"]: g["text"] for g in values["average_unit_price_per_material"]["groups"]}
    assert groups["Titanium"] == "413.48 EUR" and groups["Nylon"] == "3.475 EUR"
    assert len(groups) == 8  # every material; the Gasket Set, with none, is in no group


def test_derived_plans_name_the_oracles_queries() -> None:
    rounds = planned_rounds(load_oracle()["projects_using_steel_empty"])
    plan = rounds[0]["structured"]
    assert [task["task_id"] for task in plan["tasks"]] == ["task_1", "task_2", "task_3"]
    assert plan["tasks"][0]["requirements"][0]["kind"] == "schema"  # its search_managers
    assert plan["tasks"][1]["depends_on"] == ["task_1"]
    assert plan["tasks"][1]["requirements"][0]["query"]["manager"] == "Project"
    assert plan["tasks"][2]["requirements"][0]["query"]["manager"] == "Part"
    assert rounds[1] == {
        "tool_calls": [{"name": "search_managers", "args": {"query": "projects parts material"}}]
    }
    assert json.loads(rounds[2]["text"])["action"] == "complete"
    assert rounds[-1]["text"].startswith("None of our projects uses steel parts.")
    # a follow-up answered from the conversation plans its evidence again
    follow_up = planned_rounds(load_oracle()["bolt_orders_then_largest"])
    assert follow_up[-2]["structured"]["tasks"][0]["requirements"][0]["query"]["filters"] == {
        "part__name": "Bolt"
    }


async def test_a_lean_plan_leaves_discovery_to_the_planners_candidates() -> None:
    full, _ = await planned("list_materials")
    lean, provider = await planned("list_materials", "oracle:lean")
    assert lean.status == "pass" and provider.remaining == 0
    assert lean.provider == "oracle:lean"
    assert full.roles["executor"]["requests"] == 2  # search_managers, then "complete"
    assert "executor" not in lean.roles
    assert [c["name"] for c in lean.turns[0].tool_calls] == ["query"]


async def test_counting_provider_forwards_and_counts_structured_requests() -> None:
    inner = ScriptedProvider(
        {"rounds": [{"structured": {"intent": "read"}, "usage": {"input_tokens": 7}}]}
    )
    counter = CountingProvider(inner)
    reply = await counter.complete_structured([], {"type": "object"}, name="plan")
    assert reply.value == {"intent": "read"}
    assert inner.structured_requests and inner.structured_requests[0][2] == "plan"
    assert counter.requests == 1
    assert counter.roles.counts["planner"] == {
        "requests": 1,
        "input_tokens": 7,
        "output_tokens": 0,
    }


def plan_file(tmp_path: Path) -> Path:
    path = tmp_path / "planner.yaml"
    plan = {
        "intent": "read",
        "tasks": [
            {
                "task_id": "task_1",
                "objective": "materials",
                "requirements": [
                    {
                        "requirement_id": "q",
                        "kind": "query",
                        "query": {"manager": "Material", "fields": ["name", "hazardous"]},
                    }
                ],
            }
        ],
    }
    path.write_text(yaml.safe_dump([{"structured": plan, "usage": {"input_tokens": 11}}]))
    return path


async def test_a_case_pins_a_role_to_its_own_provider(tmp_path: Path) -> None:
    item: dict[str, Any] = {
        "name": "pinned_planner",
        "conversation": [{"user": "Which materials are hazardous?"}],
        "strategy": "planned",
        "providers": {"planner": f"scripted:{plan_file(tmp_path)}"},
        "expectations": {"answer_contains": ["Lead"], "results_contain": ["Lead"]},
    }
    [case] = parse_cases([item], "inline")
    synthesizer = ScriptedProvider({"rounds": [{"text": "Lead is hazardous.", "usage": {}}]})
    result = await run_case(case, synthesizer)  # the run's default strategy is legacy
    assert result.status == "pass", result.reasons
    assert result.strategy == "planned"  # the case's own key
    assert synthesizer.remaining == 0 and not synthesizer.structured_requests
    assert result.roles["planner"] == {"requests": 1, "input_tokens": 11, "output_tokens": 0}
    assert result.roles["synthesizer"]["requests"] == 1


def test_strategy_and_pins_are_checked_when_loading() -> None:
    base = {"name": "c", "conversation": [{"user": "q"}]}
    with pytest.raises(DatasetError, match="'strategy' must be one of"):
        parse_cases([{**base, "strategy": "fast"}], "x")
    with pytest.raises(DatasetError, match="unknown key 'critic'"):
        parse_cases([{**base, "providers": {"critic": "offline"}}], "x")
    [plain] = parse_cases([base], "x")
    [pinned] = parse_cases([{**base, "strategy": "planned"}], "x")
    assert plain.strategy is None and plain.case_hash != pinned.case_hash


def test_cli_strategy_planned_reports_each_role(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "gmchat_nb.evals", "--provider", "oracle"),
            *("--strategy", "planned", "--dataset", "calculations", "--trace-jsonl", str(trace)),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Outcomes: 4 PASS, 0 FAIL, 0 UNSCORED" in done.stdout
    assert "Per role (4 planned cases)" in done.stdout
    planner = next(line for line in done.stdout.splitlines() if line.startswith("  planner"))
    assert planner.split()[1] == "4"  # one plan per case
    record = json.loads(trace.read_text().splitlines()[0])
    assert record["strategy"] == "planned"
    assert record["roles"]["planner"]["requests"] == 1
    assert record["turns"][0]["orchestration"]["coverage"] == {"resolved": 1, "total": 1}

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb import demo_project
from gmchat_nb.evals import DatasetError, parse_cases, run
from gmchat_nb.evals.dataset import ResultSetExpectation, ToolCallExpectation, load_dataset
from gmchat_nb.evals.judges import (
    TurnData,
    judge_answer,
    judge_contract,
    judge_query,
    judge_result_set,
    judge_tools,
)

GM_CASE = {
    "name": "steel_parts",
    "description": "Parts made of steel",
    "tier": 1,
    "tags": ["basic"],
    "conversation": [{"user": "Which parts are made of steel?"}],
    "expectations": {
        "contract": {
            "category": "single_manager_query",
            "hard": {
                "required_tool_calls": [
                    {"name": "query", "args_contain": {"manager": "PartManager"}}
                ],
                "forbidden_tools": ["mutate"],
                "results_contain": ["Bolt"],
                "answer_contains": ["Bolt"],
                "unavailable_managers": ["VehicleManager"],
            },
            "strategy": {
                "recommended_tool_calls": [{"name": "search_managers"}],
                "strict_order": False,
            },
        },
        "tool_calls": [
            {"name": "search_managers"},
            {"name": "query", "args_contain": {"manager": "PartManager"}},
        ],
        "results_contain": ["Bolt"],
        "answer_contains": ["Bolt"],
        "answer_excludes": ["Gear"],
        "result_set": {"manager": "PartManager", "rows": [{"name": "Bolt"}], "fields": ["name"]},
    },
}
FAIL_CASE = {
    "name": "wrong_answer",
    "conversation": [{"user": "Which parts are made of steel?"}],
    "expectations": {"answer_contains": ["Gear"]},
}


def resolve(name: str) -> str | None:
    found = PROJECT.index.find(name)
    return None if found is None else found.name


PROJECT = demo_project("inventory")


def query_turn(rows: list[dict[str, Any]], manager: str = "Part", name: str = "query") -> TurnData:
    args = {"manager": manager, "fields": ["name"]}
    return TurnData(
        tool_calls=[{"id": "1", "name": name, "args": args}],
        tool_results=[{"id": "1", "name": name, "args": args, "result": {"data": rows}}],
    )


# -- judges --------------------------------------------------------------------------------------


def test_answer_whole_word() -> None:
    assert not judge_answer("I do not know.", ["no"], []).passed
    assert judge_answer("No, none of them.", ["no"], []).passed
    verdict = judge_answer("Bolt and gear", ["bolt", "Gear"], ["not"])
    assert verdict.passed and verdict.score == 1.0
    assert not judge_answer("Bolt, not gear", ["bolt"], ["not"]).passed
    assert judge_answer("a b c d", ["a", "b", "c", "d", "e"], []).passed  # 0.8 threshold
    assert not judge_answer("a b c d", ["a", "b", "c", "d", "e"], [], strict=True).passed


def test_tool_selection_subsequence_and_manager_names() -> None:
    calls = [
        {"name": "search_managers", "args": {"query": "x"}},
        {"name": "query", "args": {"manager": "Part", "limit": 5}},
    ]
    for manager in ("PartManager", "parts", "Part"):
        expected = [ToolCallExpectation("query", {"manager": manager})]
        assert judge_tools(expected, calls, resolve).passed
    assert judge_tools([ToolCallExpectation("query", {"limit": 5})], calls).passed
    assert not judge_tools([ToolCallExpectation("query", {"limit": 6})], calls).passed
    wrong_order = [ToolCallExpectation("query"), ToolCallExpectation("search_managers")]
    verdict = judge_tools(wrong_order, calls)
    assert not verdict.passed and "search_managers" in verdict.reasons[0]
    direct = [{"name": "query_PartManager", "args": {}}]
    assert judge_tools([ToolCallExpectation("query", {"manager": "Part"})], direct, resolve).passed


def test_query_correctness() -> None:
    turn = query_turn([{"name": "Bolt", "material": {"name": "Steel", "density": 7.8}}])
    assert judge_query(["bolt", "Steel", 7.8], ["Gear"], [turn]).passed
    verdict = judge_query(["Gear"], ["Steel"], [turn])
    assert not verdict.passed and verdict.score == 0.0
    failed = TurnData(tool_results=[{"name": "query", "args": {}, "result": {"error": "x"}}])
    assert not judge_query(["Bolt"], [], [failed]).passed


def test_result_set_multiset() -> None:
    expected = ResultSetExpectation("PartManager", ({"name": "Bolt"}, {"name": "Bolt"}), ("name",))
    assert judge_result_set(
        expected, query_turn([{"name": "Bolt"}, {"name": "Bolt"}]), resolve
    ).passed
    verdict = judge_result_set(expected, query_turn([{"name": "Bolt"}]), resolve)
    assert not verdict.passed and "result_set_mismatch" in verdict.reasons[0]
    assert judge_result_set(expected, TurnData(), resolve).reasons == ("missing_query_for_turn",)
    relation = ResultSetExpectation(
        "Project", ({"name": "A", "parts": [{"name": "x"}, {"name": "y"}]},), ("name", "parts")
    )
    rows = [{"name": "A", "parts": [{"name": "y"}, {"name": "x"}]}]
    assert judge_result_set(relation, query_turn(rows, "Project"), resolve).passed


def test_contract_hard_and_strategy() -> None:
    case = parse_cases([GM_CASE])[0]
    contract = case.expectations.contract
    assert contract is not None
    turn = query_turn([{"name": "Bolt"}])
    turn.answer = "Bolt is made of steel."
    verdict = judge_contract(contract, [turn], resolve)
    assert verdict.passed
    assert verdict.deviations == ("Recommended tool call missing: search_managers",)
    strict = parse_cases(
        [
            {
                **GM_CASE,
                "expectations": {
                    "contract": {
                        "strategy": {
                            "recommended_tool_calls": ["search_managers"],
                            "fail_on_deviation": True,
                        }
                    }
                },
            }
        ]
    )
    strict_contract = strict[0].expectations.contract
    assert strict_contract is not None
    assert not judge_contract(strict_contract, [turn], resolve).passed
    turn.tool_calls.append({"name": "mutate", "args": {}})
    turn.answer = "Vehicles are available: see VehicleManager."
    verdict = judge_contract(contract, [turn], resolve)
    assert not verdict.passed
    assert any("Forbidden tool used: mutate" in r for r in verdict.reasons)
    assert any("VehicleManager" in r for r in verdict.reasons)


# -- loader --------------------------------------------------------------------------------------


def test_loader_errors(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match=r"case 'x'.*unknown key 'bogus'"):
        parse_cases([{"name": "x", "conversation": [{"user": "hi"}], "bogus": 1}])
    with pytest.raises(DatasetError, match=r"case 'x'.*hard.*unknown key 'oops'"):
        parse_cases(
            [
                {
                    "name": "x",
                    "conversation": [{"user": "hi"}],
                    "expectations": {"contract": {"hard": {"oops": []}}},
                }
            ]
        )
    with pytest.raises(DatasetError, match="conversation"):
        parse_cases([{"name": "x"}])
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump([GM_CASE]))
    (case,) = load_dataset(path)
    assert case.tier == 1 and case.project == "inventory" and case.dataset == "d"
    assert case.expectations.result_set is not None


# -- runner --------------------------------------------------------------------------------------


def test_gm_case_runs_offline() -> None:
    results = run([GM_CASE, FAIL_CASE], provider="offline")
    by_name = {r.case.name: r for r in results.results}
    assert by_name["steel_parts"].status == "pass", by_name["steel_parts"].reasons
    assert by_name["steel_parts"].requests >= 2
    assert by_name["wrong_answer"].status == "fail"
    assert set(results.cases["status"]) == {"pass", "fail"}
    overall = results.summary.set_index("dimension").loc["Overall"]
    assert overall["passed"] == 1 and overall["total"] == 2


def test_scripted_provider_pass_fail_and_unscored(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(
        yaml.safe_dump(
            [
                {
                    "tool_calls": [
                        {
                            "name": "query",
                            "args": {
                                "manager": "Part",
                                "fields": ["name"],
                                "filters": {"material__name": "Steel"},
                            },
                        }
                    ],
                    "usage": {"input_tokens": 10, "output_tokens": 2},
                },
                {"text": "Only Bolt.", "usage": {"input_tokens": 20, "output_tokens": 3}},
            ]
        )
    )
    cases = [
        {
            "name": "ok",
            "conversation": [{"user": "steel parts?"}],
            "expectations": {
                "tool_calls": [{"name": "query", "args_contain": {"manager": "parts"}}],
                "results_contain": ["Bolt"],
                "answer_contains": ["Bolt"],
            },
        },
        {
            "name": "bad",
            "conversation": [{"user": "steel parts?"}],
            "expectations": {"answer_excludes": ["Bolt"]},
        },
    ]
    results = run(cases, provider=f"scripted:{script}", concurrency=2)
    ok, bad = results.results
    assert ok.status == "pass" and ok.requests == 2
    assert ok.usage["input_tokens"] > 0
    assert bad.status == "fail"
    missing = run(cases[:1], provider=f"scripted:{tmp_path / 'none.yaml'}")
    assert missing.results[0].status == "unscored"


def test_multi_turn_per_turn_expectations(tmp_path: Path) -> None:
    script = tmp_path / "s.yaml"
    script.write_text(yaml.safe_dump([{"text": "Hello there."}, {"text": "Bolt."}]))
    case = {
        "name": "mt",
        "conversation": [{"user": "hi"}, {"user": "steel?"}],
        "expectations": {"turns": [{"answer_contains": ["hello"]}, {"answer_contains": ["Bolt"]}]},
    }
    result = run([case], provider=f"scripted:{script}").results[0]
    assert result.status == "pass" and len(result.turns) == 2


# -- CLI -----------------------------------------------------------------------------------------


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_statuses_and_trace(tmp_path: Path) -> None:
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump([GM_CASE]))
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text(yaml.safe_dump([GM_CASE, FAIL_CASE]))
    trace = tmp_path / "trace.jsonl"
    ok = cli("--dataset", str(good), "--trace-jsonl", str(trace))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "Exact result sets" in ok.stdout and "Overall" in ok.stdout
    record = json.loads(trace.read_text().splitlines()[0])
    assert record["case"] == "steel_parts" and record["passed"] is True
    assert record["provider"] == "offline" and record["status"] == "pass"
    assert {
        "tool_calls",
        "tool_results",
        "turns",
        "requests",
        "usage",
        "verdicts",
        "expectations",
        "conversation",
        "error",
        "answer",
    } <= set(record)
    failing = cli("--dataset", str(mixed), "-v")
    assert failing.returncode == 1 and "Failures:" in failing.stdout
    assert cli("--dataset", str(good), "--tag", "nope").returncode == 2
    assert cli("--dataset", "no_such_dataset").returncode == 2
    assert cli("--bogus").returncode == 2
    assert cli("--help").returncode == 0
    compared = cli("--dataset", str(good), "--compare", "offline,offline")
    assert compared.returncode == 0 and "Requests/case" in compared.stdout

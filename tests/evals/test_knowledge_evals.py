"""Evals with knowledge, as a team measuring it meets them: a dataset that names knowledge, the
``--knowledge`` modes compared side by side, what recall did in traces and reports, the
paraphrase dataset, and verified queries exported as a regression dataset that passes.

Real parts throughout: the eval loader and runner, real Chats on the inventory demo, the
offline provider, the command line as a subprocess.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb import Chat
from gmchat_nb.core.knowledge.as_eval import as_eval_yaml
from gmchat_nb.core.providers.base import Message, ToolCallEvent
from gmchat_nb.evals import compare_async, select_cases
from gmchat_nb.evals.counting import prompt_characters
from gmchat_nb.evals.dataset import DatasetError, load_dataset, parse_cases, resolve_datasets
from gmchat_nb.evals.html_report import html_report
from gmchat_nb.evals.report import compare_report, trace_record
from gmchat_nb.evals.runner import TRACE_READERS, TurnRecord, run_case
from gmchat_nb.evals.trajectory import trajectory_frame

ROOT = Path(__file__).resolve().parents[2]
TITANIUM = {
    "name": "titanium parts",
    "question": "Which parts are made of titanium?",
    "calls": [
        {
            "tool": "query",
            "arguments": {
                "manager": "Part",
                "fields": ["name", "quantity"],
                "filters": {"material__name": "Titanium"},
            },
        }
    ],
}
KNOWLEDGE = {"verified_queries": [TITANIUM]}
CASE = {
    "name": "titanium_paraphrase",
    "conversation": [{"user": "What parts use titanium?"}],
    "expectations": {
        "tool_calls": [{"name": "query", "args_contain": {"manager": "Part"}}],
        "results_contain": ["Titanium Shaft", "Turbine Blade"],
        "results_exclude": ["Bolt"],
    },
}


def cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
    )


# -- a dataset that names knowledge -----------------------------------------------------------


def test_a_dataset_loads_its_knowledge_inline_or_from_a_file_beside_it(tmp_path: Path) -> None:
    inline = tmp_path / "inline.yaml"
    inline.write_text(yaml.safe_dump({"knowledge": KNOWLEDGE, "cases": [CASE]}))
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "knowledge.yaml").write_text(yaml.safe_dump(KNOWLEDGE))
    beside = tmp_path / "beside.yaml"
    beside.write_text(yaml.safe_dump({"knowledge": "shared/knowledge.yaml", "cases": [CASE]}))
    plain = tmp_path / "plain.yaml"
    plain.write_text(yaml.safe_dump([CASE]))
    (with_inline,) = load_dataset(inline)
    (with_file,) = load_dataset(beside)
    (without,) = load_dataset(plain)
    assert with_inline.knowledge == KNOWLEDGE == with_file.knowledge
    assert without.knowledge is None
    # the knowledge is part of what the case asks: another knowledge is another case
    assert with_inline.case_hash == with_file.case_hash != without.case_hash


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"knowledge": KNOWLEDGE, "cases": [CASE], "extra": 1}, "unknown key 'extra'"),
        ({"knowledge": KNOWLEDGE, "cases": {"a": 1}}, "'cases' must be a YAML list"),
        ({"knowledge": "missing.yaml", "cases": [CASE]}, "cannot read"),
        ({"knowledge": {"recipes": []}, "cases": [CASE]}, "unknown section 'recipes'"),
        (
            {"knowledge": {"verified_queries": [{"name": "x", "question": "y"}]}, "cases": [CASE]},
            "verified_queries[1]: calls must be a non-empty list",
        ),
    ],
)
def test_a_dataset_with_bad_knowledge_is_refused_naming_why(
    tmp_path: Path, document: dict[str, Any], message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(document))
    with pytest.raises(DatasetError) as caught:
        load_dataset(path)
    assert message in str(caught.value)
    assert "bad" in str(caught.value)


def test_knowledge_datasets_run_by_name_only() -> None:
    every = [path.stem for path in resolve_datasets()]
    assert "knowledge_paraphrases" not in every and "basic_queries" in every
    assert [p.stem for p in resolve_datasets("knowledge_paraphrases")] == ["knowledge_paraphrases"]


# -- running it ----------------------------------------------------------------------------


async def test_each_mode_runs_the_case_with_the_dataset_knowledge_loaded() -> None:
    (case,) = parse_cases({"knowledge": KNOWLEDGE, "cases": [CASE]}, "inline")
    results = await compare_async(["offline"], [case], knowledge="off,keyword", concurrency=2)
    off, keyword = results.results
    assert results.providers == ["offline [off]", "offline [keyword]"]
    assert (off.knowledge, keyword.knowledge) == ("off", "keyword")
    assert off.turns[0].recalled is None  # no recall event when it is off
    recalled = keyword.turns[0].recalled or []
    assert [item["name"] for item in recalled] == ["titanium parts"]
    assert keyword.turns[0].trusted == {"id": recalled[0]["id"], "name": "titanium parts"}
    assert off.turns[0].trusted is None
    assert keyword.passed and off.passed
    assert keyword.requests == 2 < off.requests
    assert keyword.tool_calls == 1 < off.tool_calls
    assert 0 < keyword.prompt_characters < off.prompt_characters

    report = compare_report(results.results, results.providers, verbose=True, timings=False)
    rows = {
        line.split()[0] + " " + line.split()[1]: line.split()[2:]
        for line in report.splitlines()
        if len(line.split()) > 3
    }
    assert rows["Tool calls/case"] == [f"{off.tool_calls:.1f}", "1.0"]
    assert rows["Recalled turns"] == ["0/1", "1/1"]
    assert rows["Trusted answers"] == ["0/1", "1/1"]
    assert f"{keyword.prompt_characters:,}" in report
    page = html_report(results.results, results.providers, timings=False)
    assert "keyword: recalled before 1 of 1 turns, 1 trusted answers" in page
    assert f"2.0 requests, 1.0 tool calls, 0 tokens, {keyword.prompt_characters:,} prompt" in page

    record = trace_record(keyword)
    assert record["knowledge"] == "keyword"
    assert record["turns"][0]["recalled"][0]["name"] == "titanium parts"
    assert record["turns"][0]["trusted"]["name"] == "titanium parts"
    steps = trajectory_frame(keyword)
    assert list(steps["step"]) == ["user", "recall", "call", "result", "answer", "trusted"]
    assert "titanium parts" in steps.iloc[1]["detail"]
    assert "Verified query: titanium parts" in steps.iloc[-1]["detail"]


async def test_knowledge_the_project_refuses_leaves_the_case_unscored() -> None:
    broken = {
        "verified_queries": [
            {
                **TITANIUM,
                "calls": [{"tool": "query", "arguments": {"manager": "Part", "fields": ["title"]}}],
            }
        ]
    }
    (case,) = parse_cases({"knowledge": broken, "cases": [CASE]}, "inline")
    result = await run_case(case, "offline")
    assert result.status == "unscored" and result.error == "knowledge_invalid"
    assert "titanium parts" in result.reasons[0] and "title" in result.reasons[0]


def test_the_recall_event_has_a_trace_reader() -> None:
    turn = TurnRecord()
    items = [{"kind": "definition", "id": "k-1", "name": "active project", "score": 0.03}]
    TRACE_READERS["recall"](turn, {"type": "recall", "items": items}, {})
    assert turn.recalled == items
    TRACE_READERS["recall"](turn, {"type": "recall", "items": []}, {})
    assert turn.recalled == []  # recall ran and found nothing: not None


def test_prompt_characters_count_what_the_model_reads() -> None:
    call = ToolCallEvent("c1", "query", {"manager": "Part"})
    messages = [
        Message("system", "abc"),
        Message("user", "Which parts?"),
        Message("assistant", tool_calls=(call,)),
        Message("tool", tool_call_id="c1", tool_name="query", tool_result={"data": []}),
    ]
    envelope = '{"tool":"query","call_id":"c1","data":{"data":[]}}'
    assert prompt_characters(messages) == 3 + 12 + len("query") + len('{"manager": "Part"}') + len(
        envelope
    )


# -- the command line ------------------------------------------------------------------------


def test_the_command_line_compares_modes_and_refuses_bad_ones(tmp_path: Path) -> None:
    path = tmp_path / "knowing.yaml"
    path.write_text(yaml.safe_dump({"knowledge": KNOWLEDGE, "cases": [CASE]}))
    done = cli("--dataset", str(path), "--knowledge", "off,hybrid", "--concurrency", "1")
    assert done.returncode == 0, done.stderr
    assert "offline [off]" in done.stdout and "offline [hybrid]" in done.stdout
    assert "Prompt chars/case" in done.stdout and "Trusted answers" in done.stdout
    bad = cli("--dataset", str(path), "--knowledge", "off,sometimes")
    assert bad.returncode == 2
    assert "unknown knowledge mode 'sometimes'" in bad.stderr
    broken = tmp_path / "broken.yaml"
    calls = [{"tool": "query", "arguments": {"manager": "AuditSecret", "fields": ["name"]}}]
    entry = {"name": "secrets", "question": "Which secrets are there?", "calls": calls}
    broken.write_text(yaml.safe_dump({"knowledge": {"verified_queries": [entry]}, "cases": [CASE]}))
    refused = cli("--dataset", str(broken))
    assert refused.returncode == 2
    assert "broken: knowledge for inventory" in refused.stderr and "'secrets'" in refused.stderr


# -- the paraphrase dataset ------------------------------------------------------------------


async def test_knowledge_passes_more_paraphrases_with_fewer_requests() -> None:
    cases = select_cases("knowledge_paraphrases")
    assert 12 <= len(cases) <= 20 and all(case.knowledge for case in cases)
    results = await compare_async(["offline"], cases, knowledge=["off", "keyword", "hybrid"])
    by_mode = {
        mode: [r for r in results.results if r.knowledge == mode]
        for mode in ("off", "keyword", "hybrid")
    }
    passed = {mode: sum(r.passed for r in rs) for mode, rs in by_mode.items()}
    requests = {mode: sum(r.requests for r in rs) / len(rs) for mode, rs in by_mode.items()}
    chars = {mode: sum(r.prompt_characters for r in rs) / len(rs) for mode, rs in by_mode.items()}
    for mode in ("keyword", "hybrid"):
        assert passed[mode] > passed["off"] + 5, passed
        assert requests[mode] < requests["off"], requests
        assert chars[mode] < chars["off"], chars
    assert passed["hybrid"] >= passed["keyword"], passed
    # what must not come from knowledge never does: nothing recalled, or not followed
    for result in by_mode["hybrid"]:
        if "nothing_recalled" in result.case.tags:
            assert result.turns[0].recalled == [], result.case.name
        if {"nothing_recalled", "not_applicable"} & set(result.case.tags):
            assert result.passed and result.turns[0].trusted is None, result.case.name
    # the cases the provider alone answers it answers with knowledge too
    for off, hybrid in zip(by_mode["off"], by_mode["hybrid"], strict=True):
        assert not off.passed or hybrid.passed, off.case.name


# -- verified queries as a regression dataset ------------------------------------------------


async def test_exported_verified_queries_load_as_a_dataset_that_passes(tmp_path: Path) -> None:
    chat = Chat(store=":memory:")
    try:
        book = (await chat.session()).knowledge
        book.add_verified_query(**TITANIUM)
        book.add_verified_query(
            "urgent purchase orders",
            "Which purchase orders are urgent?",
            [
                {
                    "tool": "query",
                    "arguments": {
                        "manager": "PurchaseOrder",
                        "fields": ["number"],
                        "filters": {"urgent": True},
                    },
                }
            ],
        )
        book.add_verified_query(
            "parts per material",
            "Chart the number of parts per material",
            [
                {
                    "tool": "query",
                    "arguments": {"manager": "Part", "fields": ["name", {"material": ["name"]}]},
                },
                {
                    "tool": "chart",
                    "arguments": {"mark": "bar", "x": "material.name", "aggregate": "count"},
                },
            ],
        )
        book.add_definition("active project", "a project whose status is active or planned")
        records = book.list()
        exported = book.export_data()
    finally:
        await chat.aclose()
    text = as_eval_yaml(records)
    plain = tmp_path / "regression.yaml"
    plain.write_text(text)
    cases = load_dataset(plain)  # the eval loader reads it as it is
    assert [case.name for case in cases] == [
        "titanium_parts",
        "urgent_purchase_orders",
        "parts_per_material",
    ]
    assert all(case.project == "inventory" and case.knowledge is None for case in cases)
    titanium = cases[0]
    assert titanium.conversation == ("Which parts are made of titanium?",)
    assert titanium.expectations.tool_calls is not None
    assert titanium.expectations.tool_calls[0].args_contain == {
        "manager": "Part",
        "filters": {"material__name": "Titanium"},
    }
    assert (
        cases[2].expectations.chart is not None and cases[2].expectations.chart.x == "material.name"
    )

    with_knowledge = tmp_path / "regression_with_knowledge.yaml"
    with_knowledge.write_text(
        yaml.safe_dump({"knowledge": exported, "cases": yaml.safe_load(text)})
    )
    loaded = load_dataset(with_knowledge)
    results = await compare_async(["offline"], loaded, knowledge="keyword")
    assert [r.status for r in results.results] == ["pass"] * 3, [r.reasons for r in results.results]
    assert all(r.turns[0].trusted for r in results.results)
    # the expectation has teeth: re-running the verified query for another value fails it
    moved = dataclasses.replace(loaded[0], conversation=("Which parts are made of copper?",))
    (result,) = (await compare_async(["offline"], [moved], knowledge="keyword")).results
    assert result.status == "fail"
    assert any("Tool selection" in reason for reason in result.reasons)


def test_no_verified_query_exports_an_empty_dataset() -> None:
    text = as_eval_yaml([])
    assert yaml.safe_load(text) == []
    assert json.dumps(yaml.safe_load(text)) == "[]"

"""What eval cases cost and the budgets that fail a run: tokens and cost per case and provider
in every report (unknown as "—", never $0.00), cost per passed case, a case's ``budget``, and the
command line's ``--max-cost``/``--max-tokens``, from real runs of scripted providers (whose
``done.cost`` is 0 from the ``scripted`` source, or what ``prices`` says) and of a custom
provider no price list knows."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    TokenUsage,
    ToolDefinition,
)
from gmchat_nb.evals import DatasetError, parse_cases, run
from gmchat_nb.evals.api import compare
from gmchat_nb.evals.costs import money_text, provider_cost
from gmchat_nb.evals.diagnostics import primary_diagnosis
from gmchat_nb.evals.report import trace_record
from gmchat_nb.evals.runner import CaseResult, TurnRecord

ROOT = Path(__file__).resolve().parents[2]
MODULE = "tests.evals.test_costs"

STEEL = {
    "name": "steel_parts",
    "conversation": [{"user": "Which parts are made of steel?"}],
    "expectations": {"answer_contains": ["Bolt"]},
}
# one request of 1,000 input and 500 output tokens
BOLT = [{"text": "Bolt.", "usage": {"input_tokens": 1000, "output_tokens": 500}}]
# USD per million tokens: the request above costs (1000 * 1 + 500 * 2) / 1e6 = $0.002
PRICES = {"scripted": {"input": 1.0, "output": 2.0}}


class UnpricedProvider(BaseLLMProvider):
    """A model no price list knows: its requests cost ``None``."""

    name: ClassVar[str] = "canned"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        yield TextChunkEvent("Bolt.")
        yield DoneEvent(TokenUsage(200, 20))


class BrokenUnpricedProvider(BaseLLMProvider):
    """A model no price list knows whose request breaks: the turn ends without a cost."""

    name: ClassVar[str] = "canned"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        raise RuntimeError("broke")
        yield TextChunkEvent("never")  # pragma: no cover  (makes this an async generator)


def scripted(tmp_path: Path, rounds: list[dict[str, Any]], name: str = "script") -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(rounds * 3))  # enough rounds for a case run three times
    return f"scripted:{path}"


def dataset(tmp_path: Path, *cases: Mapping[str, Any]) -> Path:
    path = tmp_path / "cases.yaml"
    path.write_text(yaml.safe_dump(list(cases)))
    return path


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )


def line(report: str, prefix: str) -> str:
    (found,) = [text for text in report.splitlines() if text.startswith(prefix)]
    return found


# -- what a case and a provider cost ---------------------------------------------------------------


def test_money_is_shown_to_its_size_and_unknown_as_a_dash() -> None:
    assert money_text(None) == "—"
    assert money_text(0) == money_text(0.0) == "$0.00"
    assert money_text(0.01) == "$0.01"
    assert money_text(0.0123456) == "$0.0123"
    assert money_text(0.000045) == "$0.000045"
    assert money_text(1234.5) == "$1,234.50"
    assert money_text(float("nan")) == "—"  # how a DataFrame holds an unknown cost


def test_a_scripted_model_costs_nothing_and_says_so(tmp_path: Path) -> None:
    results = run([STEEL], provider=scripted(tmp_path, BOLT))
    (result,) = results.results
    (turn,) = result.turns
    assert turn.cost is not None and turn.cost["sources"] == ["scripted"]
    assert (turn.cost_usd, turn.cost_sources) == (0.0, ["scripted"])
    assert (result.tokens, result.cost_usd, result.cost_sources) == (1500, 0.0, ["scripted"])
    report = results.report(timings=False)
    assert line(report, "Cost: ") == ("Cost: $0.00 for 1 cases, $0.00 per passed case (scripted)")
    assert line(report, "steel_parts").split()[-2:] == ["1500", "$0.00"]


def test_a_priced_model_shows_its_cost_and_cost_per_passed_case(tmp_path: Path) -> None:
    failing = {**STEEL, "name": "steel_failing", "expectations": {"answer_contains": ["Gear"]}}
    results = run([STEEL, failing], provider=scripted(tmp_path, BOLT), prices=PRICES)
    passed, failed = results.results
    assert (passed.status, failed.status) == ("pass", "fail")
    assert passed.cost_usd == pytest.approx(0.002) and passed.cost_sources == ["override"]
    # two cases spent $0.004; one passed: a pass cost $0.004
    cost = provider_cost("scripted", results.results)
    assert cost.cost_usd == pytest.approx(0.004)
    assert cost.per_passed_case == pytest.approx(0.004)
    report = results.report(timings=False)
    assert line(report, "Cost: ") == ("Cost: $0.004 for 2 cases, $0.004 per passed case (override)")
    assert line(report, "steel_failing").split()[-2:] == ["1500", "$0.002"]
    costs = results.costs.iloc[0]
    assert (costs["cases"], costs["passed"], costs["tokens"], costs["unpriced"]) == (2, 1, 3000, 0)
    assert costs["cost_usd"] == pytest.approx(0.004)
    assert costs["cost_per_passed_case"] == pytest.approx(0.004)
    frame = results.cases
    assert list(frame["tokens"]) == [1500, 1500]
    assert list(frame["cost_usd"]) == pytest.approx([0.002, 0.002])


def test_an_unknown_price_is_a_dash_never_zero_and_the_comparison_says_how_many(
    tmp_path: Path,
) -> None:
    cases = [STEEL, {**STEEL, "name": "steel_again"}]
    results = compare([scripted(tmp_path, BOLT), f"{MODULE}.UnpricedProvider"], cases)
    assert results.providers == ["scripted", "canned"]
    unknown = [r for r in results.results if r.provider == "canned"]
    assert [r.status for r in unknown] == ["pass", "pass"]
    assert [r.cost_usd for r in unknown] == [None, None]
    assert unknown[0].turns[0].cost_sources == ["unknown"]

    report = results.report(timings=False)
    width = 12
    assert line(report, "Cost ") == f"{'Cost':<20}{'$0.00':>{width}}{'—':>{width}}"
    assert line(report, "Cost/passed case") == (
        f"{'Cost/passed case':<20}{'$0.00':>{width}}{'—':>{width}}"
    )
    assert line(report, "Unpriced cases") == f"{'Unpriced cases':<20}{'0':>{width}}{'2':>{width}}"
    assert "Per case:" not in report
    verbose = results.report(verbose=True, timings=False)
    rows = verbose.split("Per case:\n", 1)[1].splitlines()
    assert rows[0].split() == ["Case", "Provider", "Status", "Tokens", "Cost"]
    assert rows[1].split() == ["steel_parts", "scripted", "PASS", "1500", "$0.00"]
    assert rows[3].split() == ["steel_parts", "canned", "PASS", "220", "—"]

    single = run(cases, provider=f"{MODULE}.UnpricedProvider").report(timings=False)
    assert line(single, "Cost: ") == (
        "Cost: — (2 of 2 cases could not be priced: no price for canned), — per passed case"
    )

    costs = results.costs.set_index("provider")
    assert costs.loc["scripted", "cost_usd"] == 0.0
    assert math.isnan(costs.loc["canned", "cost_usd"])
    assert math.isnan(costs.loc["canned", "cost_per_passed_case"])
    assert costs.loc["canned", "unpriced"] == 2
    assert results.cases.set_index("provider").loc["canned", "cost_usd"].isna().all()

    page = results.html(timings=False)
    assert "— in all, — per passed case" in page and "$0.00 in all, $0.00 per passed case" in page
    assert '<th class="num">Cost</th>' in page and '<td class="num">—</td>' in page

    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    tokens, cost = results.plot_cost()
    # bars bottom-up, so that the first provider is on top: canned, then scripted
    assert [t.get_text() for t in tokens.texts] == [" 220", " 1,500"]
    assert [t.get_text() for t in cost.texts] == [" — (not priced)", " $0.00"]


def test_a_turn_that_broke_after_asking_an_unknown_model_has_an_unknown_cost(
    tmp_path: Path,
) -> None:
    (broken,) = run([STEEL], provider=f"{MODULE}.BrokenUnpricedProvider").results
    (turn,) = broken.turns
    assert turn.error and turn.cost is None and turn.requests == 1
    assert broken.cost_usd is None
    # a scripted model's broken request costs nothing: it is free whatever happened
    script = scripted(tmp_path, [{"error": "the server broke"}])
    (free,) = run([STEEL], provider=script).results
    assert free.turns[0].error and (free.cost_usd, free.cost_sources) == (0.0, ["scripted"])


def test_a_case_costs_the_sum_of_its_turns_and_nothing_is_known_when_one_is_not() -> None:
    (case,) = parse_cases([STEEL], "inline")
    known = CaseResult(case, "p", turns=[TurnRecord(cost_usd=0.001), TurnRecord(cost_usd=0.002)])
    assert known.cost_usd == pytest.approx(0.003)
    partly = CaseResult(case, "p", turns=[TurnRecord(cost_usd=0.001), TurnRecord(cost_usd=None)])
    assert partly.cost_usd is None
    assert CaseResult(case, "p").cost_usd == 0  # no turn ran: nothing spent


def test_the_trace_carries_each_turns_cost_and_the_cases(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    path = dataset(tmp_path, STEEL)
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump(PRICES))
    done = cli(
        "--dataset",
        str(path),
        "--provider",
        scripted(tmp_path, BOLT),
        "--prices",
        str(prices),
        "--trace-jsonl",
        str(trace),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Cost: $0.002 for 1 cases, $0.002 per passed case (override)" in done.stdout
    record = json.loads(trace.read_text())
    assert record["tokens"] == 1500 and record["cost_usd"] == pytest.approx(0.002)
    assert record["cost_sources"] == ["override"] and record["budget"] is None
    (turn,) = record["turns"]
    assert turn["cost_usd"] == pytest.approx(0.002)
    assert turn["cost"]["sources"] == ["override"] and turn["cost"]["currency"] == "USD"
    assert turn["cost"]["tokens"]["input_tokens"] == 1000

    (unknown,) = run([STEEL], provider=f"{MODULE}.UnpricedProvider").results
    assert trace_record(unknown)["cost_usd"] is None


# -- a case's budget -------------------------------------------------------------------------------


def test_a_case_over_its_budget_fails_and_says_which_budget_by_how_much(tmp_path: Path) -> None:
    tight = {**STEEL, "budget": {"max_tokens": 1000, "max_cost_usd": 0.001}}
    roomy = {**STEEL, "name": "steel_roomy", "budget": {"max_tokens": 2000, "max_cost_usd": 1}}
    results = run([tight, roomy], provider=scripted(tmp_path, BOLT), prices=PRICES)
    over, within = results.results
    assert (over.status, within.status) == ("fail", "pass")
    (verdict,) = [v for v in over.verdicts if v.dimension == "Budget"]
    assert verdict.reasons == (
        "1,500 tokens, 500 over max_tokens 1,000",
        "cost $0.002, $0.001 over max_cost_usd $0.001",
    )
    assert "Budget: 1,500 tokens, 500 over max_tokens 1,000" in over.reasons
    diagnosis = primary_diagnosis(over)
    assert diagnosis is not None and diagnosis.key == "prompt/over_budget"
    report = results.report(timings=False)
    assert line(report, "Budget ").split() == ["Budget", "1", "2", "50%"]
    assert trace_record(over)["budget"] == {"max_cost_usd": 0.001, "max_tokens": 1000}

    # the command line says it on stderr, with the case and provider, and exits 1
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump(PRICES))
    done = cli(
        "--dataset",
        str(dataset(tmp_path, tight, roomy)),
        "--provider",
        scripted(tmp_path, BOLT, "cli"),
        "--prices",
        str(prices),
    )
    assert done.returncode == 1
    assert (
        "error: case 'steel_parts' (scripted) over its budget: 1,500 tokens, 500 over "
        "max_tokens 1,000; cost $0.002, $0.001 over max_cost_usd $0.001"
    ) in done.stderr
    assert "steel_roomy" not in done.stderr


def test_a_cost_budget_fails_on_an_unknown_cost(tmp_path: Path) -> None:
    budgeted = {**STEEL, "budget": {"max_cost_usd": 1}}
    (result,) = run([budgeted], provider=f"{MODULE}.UnpricedProvider").results
    assert result.status == "fail"  # the answer is right; the cost could not be held to $1
    (verdict,) = [v for v in result.verdicts if v.dimension == "Budget"]
    assert verdict.reasons == (
        "cost could not be priced (no price for canned): an unknown cost does not pass "
        "max_cost_usd $1.00",
    )
    diagnosis = primary_diagnosis(result)
    assert diagnosis is not None and diagnosis.key == "provider/unpriced_cost"
    # a token budget alone does not need a price
    tokens_only = {**STEEL, "budget": {"max_tokens": 1000}}
    (counted,) = run([tokens_only], provider=f"{MODULE}.UnpricedProvider").results
    assert counted.status == "pass"


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        ({}, r"case 'steel_parts'\.budget needs max_cost_usd \(US dollars\) or max_tokens"),
        (5, r"case 'steel_parts'\.budget must be a mapping"),
        ({"max_usd": 1}, r"case 'steel_parts'\.budget: unknown key 'max_usd'"),
        ({"max_cost_usd": -0.5}, r"'steel_parts'\.budget\.max_cost_usd must be a number of US"),
        ({"max_cost_usd": "cheap"}, r"max_cost_usd must be a number of US dollars >= 0, got"),
        ({"max_cost_usd": True}, r"max_cost_usd must be a number"),
        ({"max_cost_usd": float("nan")}, r"max_cost_usd must be a number"),
        ({"max_tokens": 1.5}, r"'steel_parts'\.budget\.max_tokens must be a whole number"),
        ({"max_tokens": -1}, r"max_tokens must be a whole number of tokens >= 0, got -1"),
        ({"max_tokens": True}, r"max_tokens must be a whole number"),
    ],
)
def test_a_bad_budget_is_a_dataset_error_naming_the_case(budget: Any, message: str) -> None:
    with pytest.raises(DatasetError, match=message):
        parse_cases([{**STEEL, "budget": budget}], "cases")


def test_a_budget_is_part_of_the_case_and_its_hash() -> None:
    plain, budgeted, tokens = parse_cases(
        [
            STEEL,
            {**STEEL, "name": "b", "budget": {"max_cost_usd": 0, "max_tokens": 10}},
            {**STEEL, "name": "c", "budget": {"max_tokens": 10}},
        ]
    )
    assert plain.budget is None
    assert budgeted.budget is not None and budgeted.budget.to_dict() == {
        "max_cost_usd": 0.0,
        "max_tokens": 10,
    }
    assert tokens.budget is not None and tokens.budget.max_cost_usd is None
    renamed = parse_cases([{**STEEL, "name": "b"}])[0]
    assert renamed.case_hash != budgeted.case_hash  # the budget is hashed with the case
    assert parse_cases([STEEL])[0].case_hash == plain.case_hash


# -- the run's budgets on the command line ---------------------------------------------------------


def test_max_tokens_and_max_cost_fail_the_run_and_say_by_how_much(tmp_path: Path) -> None:
    path = str(dataset(tmp_path, STEEL, {**STEEL, "name": "steel_again"}))
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump(PRICES))
    provider = scripted(tmp_path, BOLT)
    over = cli(
        "--dataset",
        path,
        "--provider",
        provider,
        "--prices",
        str(prices),
        "--max-cost",
        "0.003",
        "--max-tokens",
        "2500",
    )
    assert over.returncode == 1, over.stdout + over.stderr
    assert over.stderr.splitlines() == [
        "error: over budget: scripted: 3,000 tokens, 500 over --max-tokens 2,500",
        "error: over budget: scripted: cost $0.004, $0.001 over --max-cost $0.003",
    ]
    assert over.stdout.rstrip().endswith(
        "Budget: --max-cost $0.003, --max-tokens 2,500 per provider\n"
        "  scripted: $0.004, 3,000 tokens: OVER (3,000 tokens, 500 over --max-tokens 2,500; "
        "cost $0.004, $0.001 over --max-cost $0.003)"
    )
    within = cli(
        "--dataset", path, "--provider", provider, "--max-cost", "0.01", "--max-tokens", "3000"
    )
    assert within.returncode == 0, within.stdout + within.stderr
    assert within.stderr == ""
    assert "  scripted: $0.00, 3,000 tokens: within" in within.stdout


def test_max_cost_fails_on_a_cost_that_could_not_be_priced(tmp_path: Path) -> None:
    path = str(dataset(tmp_path, STEEL))
    unknown = cli("--dataset", path, "--provider", f"{MODULE}.UnpricedProvider", "--max-cost", "1")
    assert unknown.returncode == 1, unknown.stdout + unknown.stderr
    assert unknown.stderr.strip() == (
        "error: over budget: canned: cost could not be priced (1 of 1 cases; no price for "
        "canned): an unknown cost does not pass --max-cost $1.00"
    )
    # with --compare each provider's run is held to the budget, and the message names it
    compared = cli(
        "--dataset",
        path,
        "--compare",
        f"offline,{MODULE}.UnpricedProvider",
        "--max-tokens",
        "100",
    )
    assert compared.returncode == 1
    assert compared.stderr.strip() == (
        "error: over budget: canned: 220 tokens, 120 over --max-tokens 100"
    )
    assert "  offline: $0.00, 0 tokens: within" in compared.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--max-cost", "-1"], "--max-cost takes US dollars >= 0, got -1.0"),
        (["--max-cost", "nan"], "--max-cost takes US dollars >= 0, got nan"),
        (["--max-tokens", "-5"], "--max-tokens takes a number of tokens >= 0, got -5"),
        (["--max-tokens", "many"], "argument --max-tokens: invalid int value: 'many'"),
    ],
)
def test_a_bad_run_budget_is_a_usage_error(args: list[str], message: str) -> None:
    done = cli("--dataset", "basic_queries", *args)
    assert done.returncode == 2
    assert message in done.stderr and done.stdout == ""


def test_a_bad_prices_file_is_a_usage_error_naming_the_key(tmp_path: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(yaml.safe_dump({"scripted": {"input": 1}}))
    done = cli("--dataset", "basic_queries", "--prices", str(prices))
    assert done.returncode == 2 and "prices.scripted.output" in done.stderr
    prices.write_text("- not a mapping\n")
    done = cli("--dataset", "basic_queries", "--prices", str(prices))
    assert done.returncode == 2 and "must be a mapping" in done.stderr
    done = cli("--dataset", "basic_queries", "--prices", str(tmp_path / "missing.yaml"))
    assert done.returncode == 2 and "cannot read --prices" in done.stderr

"""The figures beside the pass rates (calls the project accepted, the right manager, speed), in
every report, from real runs: the offline provider and scripted ones standing in for models."""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
from collections.abc import AsyncIterator
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
    ToolCallEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.constrained import PROBE, ConstrainedProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import compare, run
from gmchat_nb.evals.figures import percent_text

ROOT = Path(__file__).resolve().parents[2]

# expects a query of Part under the name the datasets use, PartManager
STEEL_PARTS = {
    "name": "steel_parts",
    "conversation": [{"user": "Which parts are made of steel?"}],
    "expectations": {
        "tool_calls": [{"name": "query", "args_contain": {"manager": "PartManager"}}],
        "answer_contains": ["Bolt"],
    },
}
STEEL_QUERY = {
    "name": "query",
    "args": {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Steel"}},
}
UNKNOWN_FIELD = {"name": "query", "args": {"manager": "Part", "fields": ["colour"]}}
MATERIAL_QUERY = {"name": "query", "args": {"manager": "Material", "fields": ["name"]}}
NEEDS_NO_MANAGER = {
    "name": "greeting",
    "conversation": [{"user": "Hello"}],
    "expectations": {"answer_contains": ["Bolt"]},
}


def script(tmp_path: Path, name: str, rounds: list[dict[str, Any]]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(rounds))
    return f"scripted:{path}"


def line(report: str, prefix: str) -> str:
    (found,) = [text for text in report.splitlines() if text.startswith(prefix)]
    return found


def test_a_rejected_query_is_made_but_not_accepted(tmp_path: Path) -> None:
    rounds = [
        {"tool_calls": [UNKNOWN_FIELD]},  # the project answers status: error
        {"tool_calls": [STEEL_QUERY]},
        {"text": "Bolt."},
    ]
    results = run([STEEL_PARTS], provider=script(tmp_path, "retry", rounds))
    (result,) = results.results
    assert result.turns[0].tool_results[0]["result"]["status"] == "error"
    lines = results.report().splitlines()
    outcomes = next(n for n, text in enumerate(lines) if text.startswith("Outcomes:"))
    assert lines[outcomes + 1] == (
        "Calls: 2 made, 1 accepted by the project (50%); right manager in 1 of 1 cases"
    )
    assert lines[outcomes + 2].startswith("Speed: ")
    row = results.figures.iloc[0]
    assert (row["calls_made"], row["calls_accepted"], row["accepted_rate"]) == (2, 1, 0.5)
    case = results.cases.iloc[0]
    assert (case["calls_made"], case["calls_accepted"], case["turns"]) == (2, 1, 1)


def test_a_query_of_the_wrong_manager_lowers_the_right_manager_count(tmp_path: Path) -> None:
    right = script(tmp_path, "right", [{"tool_calls": [STEEL_QUERY]}, {"text": "Bolt."}])
    wrong = script(tmp_path, "wrong", [{"tool_calls": [MATERIAL_QUERY]}, {"text": "Bolt."}])
    cases = [STEEL_PARTS, NEEDS_NO_MANAGER]  # the greeting names no manager: counted nowhere
    results = compare([right, wrong], cases)
    assert results.providers == ["scripted", "scripted#2"]
    by_provider = results.figures.set_index("provider")
    assert by_provider.loc["scripted", "right_manager"] == 1  # Part is PartManager
    assert by_provider.loc["scripted#2", "right_manager"] == 0
    assert set(by_provider["manager_cases"]) == {1}
    assert list(results.cases["right_manager"]) == [True, None, False, None]

    report = results.report()
    assert line(report, "Calls made") == f"{'Calls made':<20}{'2':>12}{'2':>12}"
    assert line(report, "Calls accepted") == f"{'Calls accepted':<20}{'100%':>12}{'100%':>12}"
    assert line(report, "Right manager") == f"{'Right manager':<20}{'100%':>12}{'0%':>12}"
    assert line(report, "Output tokens/s").split()[-2:] == ["n/a", "n/a"]
    assert line(report, "Seconds/turn")
    stable = results.report(timings=False)  # what a notebook shows: the same on every run
    assert "Right manager" in stable and "Seconds/turn" not in stable
    assert "Output tokens/s" not in stable

    (single,) = run([STEEL_PARTS], provider=wrong).results
    assert single.right_manager is False


def test_speed_is_the_median_turn_and_output_tokens_over_turn_seconds(tmp_path: Path) -> None:
    rounds = [
        {"text": "Bolt.", "usage": {"input_tokens": 50, "output_tokens": 40}},
        {"text": "Bolt.", "delay_seconds": 0.3, "usage": {"input_tokens": 50, "output_tokens": 2}},
        {"text": "Bolt.", "delay_seconds": 0.9},
    ]
    case = {
        "name": "three_turns",
        "conversation": [{"user": "Parts?"}, {"user": "Again?"}, {"user": "Once more?"}],
        "expectations": {"answer_contains": ["Bolt"]},
    }
    results = run([case], provider=script(tmp_path, "slow", rounds))
    (result,) = results.results
    seconds = [t.seconds for t in result.turns]
    median = statistics.median(seconds)
    assert 0.3 <= median < 0.9  # the middle turn: neither the mean nor the case's seconds
    rate = 42 / sum(seconds)
    row = results.figures.iloc[0]
    assert row["seconds_per_turn"] == median and row["tokens_per_second"] == pytest.approx(rate)
    assert line(results.report(), "Speed: ") == (
        f"Speed: {median:.2f} s per turn (median), {rate:.1f} output tokens/s"
    )
    assert "Speed: " not in results.report(timings=False) and "Speed" not in results.html(
        timings=False
    )
    assert "Calls</th>" in results.html(timings=False)


def test_tokens_per_second_is_not_available_without_tokens() -> None:
    results = run([STEEL_PARTS], provider="offline")
    assert results.results[0].usage["output_tokens"] == 0
    speed = line(results.report(), "Speed: ")
    assert re.fullmatch(r"Speed: \d+\.\d\d s per turn \(median\), n/a output tokens/s", speed)
    assert results.figures["tokens_per_second"].isna().all()
    assert "n/a output tokens/s" in results.html()


def test_small_model_modes_unit_probe_is_not_the_models_call() -> None:
    inner = ScriptedProvider(
        {
            "rounds": [
                {"structured": {"manager": "Part"}},
                {
                    "structured": {
                        "fields": ["name"],
                        "filter": {"path": "material__name", "value": "Steel"},
                    }
                },
                {"text": "Bolt is made of steel."},
            ]
        }
    )
    results = run([STEEL_PARTS], provider=ConstrainedProvider(inner))
    (result,) = results.results
    calls = [c for t in result.turns for c in t.tool_calls]
    probes = [c for c in calls if str(c["id"]).startswith(PROBE)]
    assert len(probes) == 1 and probes[0]["args"]["limit"] == 1
    assert results.figures.iloc[0]["calls_made"] == len(calls) - 1
    assert result.right_manager is True


class QueryThenBreak(BaseLLMProvider):
    """Queries steel parts and answers; breaks the chat itself (unscored) on "explode"."""

    name: ClassVar[str] = "query-then-break"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        if "explode" in messages[-1].content:
            raise RuntimeError("exploded as asked")
        if messages[-1].role == "tool":
            yield TextChunkEvent("Bolt.")
        else:
            yield ToolCallEvent("call-1", STEEL_QUERY["name"], dict(STEEL_QUERY["args"]))
        yield DoneEvent(TokenUsage(output_tokens=5))


def test_unscored_cases_count_nowhere() -> None:
    breaking = {**STEEL_PARTS, "conversation": [{"user": "Steel parts?"}, {"user": "explode"}]}
    results = run([breaking], provider=QueryThenBreak)
    (result,) = results.results
    assert result.status == "unscored" and result.error == "chat_error"
    assert result.turns[0].tool_calls and result.turns[0].usage["output_tokens"]  # made before
    assert line(results.report(), "Calls: ") == (
        "Calls: 0 made, 0 accepted by the project (-); no case names a manager"
    )
    assert line(results.report(), "Speed: ") == (
        "Speed: n/a s per turn (median), n/a output tokens/s"
    )
    scored = run([STEEL_PARTS], provider=QueryThenBreak)
    assert line(scored.report(), "Calls: ") == (
        "Calls: 1 made, 1 accepted by the project (100%); right manager in 1 of 1 cases"
    )


def test_the_cli_prints_the_figures_under_the_outcomes() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "gmchat_nb.evals", "--dataset", "basic_queries"],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    lines = done.stdout.splitlines()
    outcomes = next(n for n, text in enumerate(lines) if text.startswith("Outcomes:"))
    calls, speed = lines[outcomes + 1 : outcomes + 3]
    found = re.fullmatch(
        r"Calls: (\d+) made, (\d+) accepted by the project \(\d+%\); "
        r"right manager in (\d+) of 11 cases",
        calls,
    )
    assert found, done.stdout
    made, accepted, right = map(int, found.groups())
    assert 0 < accepted <= made and 0 < right <= 11
    assert speed.startswith("Speed: ") and speed.endswith(
        " s per turn (median), n/a output tokens/s"
    )


def test_a_share_short_of_all_never_reads_as_all() -> None:
    assert [percent_text(r) for r in (524 / 525, 1 / 1000, 49 / 52, 1.0, 0.0, None)] == [
        "99%",
        "1%",
        "94%",
        "100%",
        "0%",
        "-",
    ]


def test_small_model_mode_counts_model_requests_and_catches_echoes_of_its_prompts() -> None:
    """Engine steps are no model requests; an answer that repeats small-model mode's own answer
    prompt (which the loop never sees) fails answer sense, as a real 270M model's answers did."""
    from gmchat_nb.core.providers.constrained import ANSWER_PROMPT

    inner = ScriptedProvider(
        {
            "rounds": [
                {"structured": {"manager": "Part"}},
                {"structured": {"fields": ["name"], "filter": None}},
                {"text": ANSWER_PROMPT},
            ]
        }
    )
    contracted = {  # answer sense is judged where a case has a product contract
        **STEEL_PARTS,
        "expectations": {
            **STEEL_PARTS["expectations"],  # type: ignore[dict-item]
            "contract": {
                "category": "single_manager_query",
                "hard": {"forbidden_tools": ["mutate"]},
            },
        },
    }
    results = run([contracted], provider=ConstrainedProvider(inner))
    (result,) = results.results
    assert result.requests == 3  # pick, fill, answer: not the loop's five rounds
    sense = next(v for v in result.verdicts if v.dimension == "Answer sense")
    assert not sense.passed
    assert any("repeats the system prompt" in reason for reason in sense.reasons)

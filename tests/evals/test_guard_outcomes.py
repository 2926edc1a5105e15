"""Eval runs report what the turn's defences did: each turn keeps its ``done`` event's guards,
gate verdicts, retries and fallbacks, and the reports show the turns the loop guard stopped and
the gates answers still failed (only when that happened)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from gmchat_nb.evals import compare, run
from gmchat_nb.evals.report import case_frame, guard_lines, single_report
from gmchat_nb.evals.runner import TRACE_READERS, CaseResult, TurnRecord

QUERY: dict[str, Any] = {
    "name": "query",
    "args": {"manager": "Part", "fields": ["name"], "limit": 3},
}
LOOPING: list[dict[str, Any]] = [{"tool_calls": [QUERY]}] * 4 + [
    {"text": "Bolt, Bearing and Gear."}
]
INVENTING: list[dict[str, Any]] = [
    {"tool_calls": [QUERY]},
    {"text": "I have updated Bolt."},
    {"text": "I have updated Bolt, I am sure."},
]
ANSWERING: list[dict[str, Any]] = [{"tool_calls": [QUERY]}, {"text": "Bolt, Bearing and Gear."}]
CASE: dict[str, Any] = {
    "name": "first_parts",
    "conversation": [{"user": "Which parts come first?"}],
    "expectations": {"answer_contains": ["Bolt"]},
}


def script(tmp_path: Path, name: str, rounds: list[dict[str, Any]]) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(rounds), encoding="utf-8")
    return f"scripted:{path}"


def only_turn(result: CaseResult) -> TurnRecord:
    [turn] = result.turns
    return turn


def test_a_looping_model_s_turn_records_the_loop_guard_stop(tmp_path: Path) -> None:
    [result] = run([CASE], provider=script(tmp_path, "looping", LOOPING)).results
    assert result.status == "pass", result.reasons
    turn = only_turn(result)
    assert turn.stopped_by == "repeated_call"
    assert turn.guards is not None and turn.guards["repeats"] == 1
    assert turn.guards["refusals"] == 2 and turn.guards["tool_calls"] == 4
    assert turn.gates is not None and turn.failed_gates == []
    assert turn.attempts is None and turn.fallbacks is None
    assert turn.requests == 5  # four rounds of calls and the forced answer
    report = single_report([result], timings=False)
    assert "Loop guard: 1 of 1 turns stopped (repeated_call 1)" in report.splitlines()
    assert "Failed gates" not in report
    frame = case_frame([result])
    assert frame.loc[0, "loop_guard_stops"] == 1 and frame.loc[0, "failed_gates"] == 0


def test_an_answer_failing_its_gate_twice_is_counted(tmp_path: Path) -> None:
    [result] = run([CASE], provider=script(tmp_path, "inventing", INVENTING)).results
    turn = only_turn(result)
    assert turn.failed_gates == ["phantom_write"] and turn.stopped_by is None
    assert "Not verified" in turn.answer
    assert guard_lines([result]) == ["Failed gates: phantom_write 1"]
    assert case_frame([result]).loc[0, "failed_gates"] == 1


def test_a_run_without_stops_or_failed_gates_reports_as_before(tmp_path: Path) -> None:
    [result] = run([CASE], provider=script(tmp_path, "answering", ANSWERING)).results
    turn = only_turn(result)
    assert turn.stopped_by is None and turn.failed_gates == []
    assert turn.guards is None  # nothing happened that done.guards would report
    report = single_report([result], timings=False)
    assert guard_lines([result]) == []
    assert "Loop guard" not in report and "Failed gates" not in report
    frame = case_frame([result])
    assert frame.loc[0, "loop_guard_stops"] == 0 and frame.loc[0, "failed_gates"] == 0


def test_a_comparison_has_a_row_per_outcome_that_happened(tmp_path: Path) -> None:
    looping = script(tmp_path, "looping", LOOPING)
    answering = script(tmp_path, "answering", ANSWERING)
    results = compare([looping, answering], [CASE])
    rows = {line[:20].strip(): line[20:].split() for line in results.report().splitlines()}
    assert rows["Loop-guard stops"] == ["1", "0"]
    assert "Failed gates" not in rows


def test_the_done_event_s_attempts_and_fallbacks_are_read() -> None:
    turn = TurnRecord(user="q")
    switch = {"from": "openai:m", "to": "anthropic:m", "reason": "HTTP 503"}
    TRACE_READERS["done"](
        turn,
        {
            "type": "done",
            "usage": {"input_tokens": 3, "output_tokens": 1},
            "attempts": {"requests": 2, "retried": 1, "retries": 1},
            "fallbacks": [switch],
            "gates": [{"name": "phantom_write", "passed": False, "details": ["claim: Done."]}],
            "guards": {"stopped_by": "budget_tool_calls", "tool_calls": 25},
        },
        {},
    )
    assert turn.attempts == {"requests": 2, "retried": 1, "retries": 1}
    assert turn.fallbacks == [switch]
    assert turn.failed_gates == ["phantom_write"] and turn.stopped_by == "budget_tool_calls"
    assert turn.usage == {"input_tokens": 3, "output_tokens": 1}

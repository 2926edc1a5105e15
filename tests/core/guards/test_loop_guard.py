"""LoopGuard: fingerprints, repeats and refusals, stuck patterns, budgets (a fake clock), summary."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb.core.guards.loop_guard import (
    FINAL_ANSWER_REQUEST,
    STOP_REASONS,
    Budgets,
    LoopGuard,
    Verdict,
    final_answer_request,
    fingerprint,
)
from gmchat_nb.core.project.tools import TOOLS

QUERY = TOOLS.query.name
SCHEMA = TOOLS.get_manager_schema.name
SEARCH = TOOLS.search_managers.name
PATH = TOOLS.find_path.name
MUTATE = TOOLS.mutate.name

PARTS: dict[str, Any] = {"manager": "Part", "fields": ["name"], "filters": {"name": "Bolt"}}
ROWS: dict[str, Any] = {"status": "ok", "data": [{"name": "Bolt"}], "complete": True}
ERROR: dict[str, Any] = {"status": "error", "code": "invalid_filter", "message": "no such filter"}
CHANGE: dict[str, Any] = {"mutation": "createPart", "input": {"name": "Bolt"}}


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ran(guard: LoopGuard, name: str, args: dict[str, Any], result: Any = None) -> Verdict:
    """Ask the guard, and when it says run, tell it of a successful result."""
    verdict = guard.before_call(name, args)
    if verdict.action == "run":
        guard.after_call(name, args, ROWS if result is None else result, failed=False)
    return verdict


def failed(guard: LoopGuard, name: str, args: dict[str, Any]) -> Verdict:
    """Ask the guard, and when it says run, tell it of a failure."""
    verdict = guard.before_call(name, args)
    if verdict.action == "run":
        guard.after_call(name, args, ERROR, failed=True)
    return verdict


# -- fingerprint ---------------------------------------------------------------------------------


def test_fingerprint_ignores_key_order() -> None:
    reordered = {"filters": {"name": "Bolt"}, "fields": ["name"], "manager": "Part"}
    assert fingerprint(QUERY, PARTS) == fingerprint(QUERY, reordered)


def test_fingerprint_normalises_whitespace_in_nested_strings() -> None:
    spaced = {"manager": " Part ", "fields": ["name  "], "filters": {"name": "\tBolt\n"}}
    assert fingerprint(QUERY, PARTS) == fingerprint(QUERY, spaced)
    assert fingerprint(SEARCH, {"query": "steel  parts"}) == fingerprint(
        SEARCH, {"query": " steel parts "}
    )


def test_fingerprint_sorts_nested_keys() -> None:
    one = {"filters": {"a": {"x": 1, "y": 2}, "b": 3}}
    other = {"filters": {"b": 3, "a": {"y": 2, "x": 1}}}
    assert fingerprint(QUERY, one) == fingerprint(QUERY, other)


def test_fingerprint_tells_different_values_and_tools_apart() -> None:
    assert fingerprint(QUERY, PARTS) != fingerprint(QUERY, {**PARTS, "filters": {"name": "Nut"}})
    assert fingerprint(QUERY, PARTS) != fingerprint(QUERY, {**PARTS, "limit": 5})
    assert fingerprint(QUERY, {"limit": 1}) != fingerprint(QUERY, {"limit": True})
    assert fingerprint(QUERY, {"fields": ["a", "b"]}) != fingerprint(QUERY, {"fields": ["b", "a"]})
    assert fingerprint(SCHEMA, {"manager": "Part"}) != fingerprint(PATH, {"manager": "Part"})


def test_fingerprint_is_a_short_hex_digest() -> None:
    value = fingerprint(QUERY, PARTS)
    assert len(value) == 16
    int(value, 16)


@pytest.mark.parametrize(
    "odd",
    [
        float("nan"),
        float("inf"),
        {"b", "a", "c"},
        frozenset({1, 2}),
        object(),
        b"bytes",
        {1: "int key", "1": "str key"},
        ({"nested": {"set"}},),
    ],
)
def test_fingerprint_never_raises_on_odd_values(odd: Any) -> None:
    assert fingerprint(QUERY, {"value": odd}) == fingerprint(QUERY, {"value": odd})


def test_fingerprint_of_nan_is_stable_and_sets_ignore_order() -> None:
    assert fingerprint(QUERY, {"x": float("nan")}) == fingerprint(QUERY, {"x": float("nan")})
    assert fingerprint(QUERY, {"x": {"b", "a"}}) == fingerprint(QUERY, {"x": {"a", "b"}})


def test_fingerprint_survives_a_cycle() -> None:
    looped: dict[str, Any] = {}
    looped["self"] = looped
    assert len(fingerprint(QUERY, looped)) == 16


# -- repeats, refusals and the stop that follows --------------------------------------------------


def test_first_read_runs() -> None:
    guard = LoopGuard()
    assert guard.before_call(QUERY, PARTS) == Verdict("run")
    assert guard.stop_reason() is None


def test_second_identical_read_repeats_the_earlier_result() -> None:
    guard = LoopGuard()
    ran(guard, QUERY, PARTS)
    spaced = {**PARTS, "manager": "Part "}
    verdict = guard.before_call(QUERY, spaced)
    assert verdict.action == "repeat"
    assert verdict.result["data"] == ROWS["data"]
    assert verdict.result["repeat"] is True
    assert QUERY in verdict.result["note"]
    assert "repeat" not in ROWS  # a copy: the earlier result is untouched
    assert guard.stop_reason() is None


def test_repeat_of_a_non_dict_result_is_wrapped() -> None:
    guard = LoopGuard()
    ran(guard, SEARCH, {"query": "bolts"}, result=["Part", "Material"])
    verdict = guard.before_call(SEARCH, {"query": "bolts"})
    assert verdict.action == "repeat"
    assert verdict.result["result"] == ["Part", "Material"]
    assert verdict.result["repeat"] is True
    assert verdict.result["status"] == "ok"
    assert verdict.result["note"]


def test_third_identical_read_is_refused_and_a_fourth_stops() -> None:
    guard = LoopGuard()
    ran(guard, QUERY, PARTS)
    assert guard.before_call(QUERY, PARTS).action == "repeat"
    third = guard.before_call(QUERY, PARTS)
    assert third.action == "refuse"
    assert third.result["status"] == "error"
    assert third.result["code"] == "repeated_call"
    assert f"do not call {QUERY} with these arguments again" in third.result["message"].lower()
    assert "earlier result" in third.result["message"]
    assert guard.stop_reason() is None  # a refusal alone is not a stop
    fourth = guard.before_call(QUERY, PARTS)
    assert fourth.action == "refuse"
    assert guard.stop_reason() == "repeated_call"


def test_after_call_for_repeated_or_refused_calls_changes_nothing() -> None:
    guard = LoopGuard()
    ran(guard, QUERY, PARTS)
    for _ in range(2):
        verdict = guard.before_call(QUERY, PARTS)
        guard.after_call(QUERY, PARTS, verdict.result, failed=verdict.action == "refuse")
    assert guard.stop_reason() is None
    assert guard.summary()["refusals"] == 1


def test_a_different_read_still_runs() -> None:
    guard = LoopGuard()
    ran(guard, QUERY, PARTS)
    guard.before_call(QUERY, PARTS)
    assert guard.before_call(QUERY, {**PARTS, "offset": 50}).action == "run"


def test_a_failed_read_may_be_retried_once_then_the_turn_stops() -> None:
    guard = LoopGuard()
    assert failed(guard, QUERY, PARTS).action == "run"
    assert guard.stop_reason() is None
    assert failed(guard, QUERY, PARTS).action == "run"
    assert guard.stop_reason() == "same_failing_call"
    third = guard.before_call(QUERY, PARTS)
    assert third.action == "refuse"
    assert third.result["code"] == "repeated_call"


def test_a_failure_then_a_success_caches_the_success() -> None:
    guard = LoopGuard()
    failed(guard, QUERY, PARTS)
    assert ran(guard, QUERY, PARTS).action == "run"
    assert guard.before_call(QUERY, PARTS).action == "repeat"
    assert guard.stop_reason() is None


# -- patterns ------------------------------------------------------------------------------------


def test_alternating_two_calls_twice_stops() -> None:
    guard = LoopGuard()
    a, b = {"manager": "Part"}, {"manager": "Material"}
    ran(guard, SCHEMA, a)
    ran(guard, SCHEMA, b)
    ran(guard, SCHEMA, a)
    assert guard.stop_reason() is None  # A-B-A is not yet two cycles
    ran(guard, SCHEMA, b)
    assert guard.stop_reason() == "alternating"


def test_a_b_a_c_is_not_stuck() -> None:
    guard = LoopGuard()
    for manager in ("Part", "Material", "Part", "Supplier"):
        ran(guard, SCHEMA, {"manager": manager})
    assert guard.stop_reason() is None


def test_the_same_call_four_times_is_not_alternating() -> None:
    guard = LoopGuard()
    ran(guard, SCHEMA, {"manager": "Part"})
    guard.before_call(SCHEMA, {"manager": "Part"})
    guard.before_call(SCHEMA, {"manager": "Part"})
    assert guard.stop_reason() is None


def test_two_empty_responses_in_a_row_stop() -> None:
    guard = LoopGuard()
    guard.after_response(text="  ", calls=0, tokens=10)
    assert guard.stop_reason() is None
    guard.after_response(text="", calls=0, tokens=10)
    assert guard.stop_reason() == "empty_responses"


def test_a_response_between_empty_ones_resets_the_count() -> None:
    guard = LoopGuard()
    guard.after_response(text="", calls=0, tokens=10)
    guard.after_response(text="", calls=1, tokens=10)
    guard.after_response(text="", calls=0, tokens=10)
    assert guard.stop_reason() is None


# -- budgets -------------------------------------------------------------------------------------


def test_model_request_budget() -> None:
    guard = LoopGuard(Budgets(model_requests=2))
    guard.after_response(text="a", calls=1, tokens=1)
    assert guard.stop_reason() is None
    guard.after_response(text="b", calls=1, tokens=1)
    assert guard.stop_reason() == "budget_model_requests"


def test_tool_call_budget() -> None:
    guard = LoopGuard(Budgets(tool_calls=3))
    for manager in ("Part", "Material"):
        ran(guard, SCHEMA, {"manager": manager})
    assert guard.stop_reason() is None
    ran(guard, SCHEMA, {"manager": "Supplier"})
    assert guard.stop_reason() == "budget_tool_calls"


def test_token_budget() -> None:
    guard = LoopGuard(Budgets(tokens=1000))
    guard.after_response(text="a", calls=1, tokens=999)
    assert guard.stop_reason() is None
    guard.after_response(text="b", calls=1, tokens=1)
    assert guard.stop_reason() == "budget_tokens"


def test_seconds_budget_counts_from_construction() -> None:
    clock = FakeClock()
    guard = LoopGuard(Budgets(seconds=30.0), clock=clock)
    clock.now += 29.9
    assert guard.stop_reason() is None
    clock.now += 0.1
    assert guard.stop_reason() == "budget_seconds"


def test_a_stuck_pattern_is_named_before_a_budget() -> None:
    guard = LoopGuard(Budgets(tool_calls=2))
    failed(guard, QUERY, PARTS)
    failed(guard, QUERY, PARTS)
    assert guard.stop_reason() == "same_failing_call"


# -- mutations -----------------------------------------------------------------------------------


def test_a_mutation_is_never_cached() -> None:
    guard = LoopGuard()
    done = {"status": "ok", "data": {"id": 1}}
    assert ran(guard, MUTATE, CHANGE, result=done).action == "run"
    guard.mutation_executed()
    assert ran(guard, MUTATE, CHANGE, result=done).action == "run"


def test_an_executed_mutation_clears_the_read_cache() -> None:
    guard = LoopGuard()
    ran(guard, QUERY, PARTS)
    assert guard.before_call(QUERY, PARTS).action == "repeat"
    guard.before_call(QUERY, PARTS)  # refused once
    ran(guard, MUTATE, CHANGE)
    guard.mutation_executed()
    assert ran(guard, QUERY, PARTS).action == "run"
    assert guard.before_call(QUERY, PARTS).action == "repeat"
    assert guard.before_call(QUERY, PARTS).action == "refuse"
    assert guard.stop_reason() is None  # the refusal before the change is forgotten


def test_a_rejected_mutation_is_refused_with_its_message() -> None:
    guard = LoopGuard()
    ran(guard, MUTATE, CHANGE, result={"status": "cancelled", "reason": "user_rejected"})
    guard.mutation_rejected(CHANGE)
    again = {"input": {"name": " Bolt"}, "mutation": "createPart"}
    verdict = guard.before_call(MUTATE, again)
    assert verdict.action == "refuse"
    assert verdict.reason == "rejected_change"
    assert verdict.result["status"] == "error"
    assert verdict.result["code"] == "rejected_change"
    assert "rejected exactly this change in this turn" in verdict.result["message"]
    assert "do not propose it again" in verdict.result["message"]


def test_a_rejected_mutation_proposed_twice_more_stops() -> None:
    guard = LoopGuard()
    guard.mutation_rejected(CHANGE)
    guard.before_call(MUTATE, CHANGE)
    assert guard.stop_reason() is None
    guard.before_call(MUTATE, CHANGE)
    assert guard.stop_reason() == "repeated_call"


def test_a_different_mutation_still_runs() -> None:
    guard = LoopGuard()
    guard.mutation_rejected(CHANGE)
    other = {"mutation": "createPart", "input": {"name": "Nut"}}
    assert guard.before_call(MUTATE, other).action == "run"


# -- summary, stop and the final answer request ----------------------------------------------------


def test_summary_counts_and_stopped_by() -> None:
    guard = LoopGuard()
    guard.after_response(text="", calls=1, tokens=5)
    ran(guard, QUERY, PARTS)
    guard.before_call(QUERY, PARTS)
    guard.before_call(QUERY, PARTS)
    assert guard.summary() == {"repeats": 1, "refusals": 1, "requests": 1, "tool_calls": 3}
    guard.before_call(QUERY, PARTS)
    reason = guard.stop_reason()
    assert reason == "repeated_call"
    assert "stopped_by" not in guard.summary()
    guard.stop(reason)
    guard.stop("budget_tokens")  # the first reason is kept
    assert guard.summary() == {
        "repeats": 1,
        "refusals": 2,
        "requests": 1,
        "tool_calls": 4,
        "stopped_by": "repeated_call",
    }
    assert guard.stop_reason() == "repeated_call"


def test_stop_ends_the_turn_even_without_a_pattern() -> None:
    guard = LoopGuard()
    guard.stop("budget_seconds")
    assert guard.stop_reason() == "budget_seconds"


def test_final_answer_request_explains_every_reason() -> None:
    assert "{reason}" in FINAL_ANSWER_REQUEST
    for reason, words in STOP_REASONS.items():
        message = final_answer_request(reason)
        assert words in message
        assert message.startswith("Stop calling tools")
        assert "say what could not be found" in message
    assert "something odd" in final_answer_request("something odd")

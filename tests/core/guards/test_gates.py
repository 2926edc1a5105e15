"""The completion gates: every labelled case of tests/fixtures/gate_cases.yaml, the corrective
message and the footnote, and a large result handled whole."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb.core.guards.gates import (
    GATES,
    GateResult,
    MutationFact,
    TurnFacts,
    check_answer,
    correction_request,
    warning_note,
)

CASES_FILE = Path(__file__).resolve().parents[2] / "fixtures" / "gate_cases.yaml"
CASES: list[dict[str, Any]] = yaml.safe_load(CASES_FILE.read_text(encoding="utf-8"))["cases"]


def turn_facts(raw: dict[str, Any]) -> TurnFacts:
    return TurnFacts(
        user_texts=tuple(raw.get("user_texts", ())),
        results=tuple(raw.get("results", ())),
        data_calls=raw["data_calls"],
        data_rows=raw["data_rows"],
        mutations=tuple(
            MutationFact(m["mutation"], m["status"], m.get("input", {}))
            for m in raw.get("mutations", ())
        ),
    )


def test_the_cases_are_many_unique_and_cover_every_verdict() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 40
    assert len(set(ids)) == len(ids)
    labels = {(gate, verdict) for case in CASES for gate, verdict in case["expect"].items()}
    assert labels == {(gate, verdict) for gate in GATES for verdict in ("pass", "fail")}


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_each_labelled_case_gets_its_verdict(case: dict[str, Any]) -> None:
    results = {r.name: r for r in check_answer(case["answer"], turn_facts(case["facts"]))}
    got = {gate: "pass" if results[gate].passed else "fail" for gate in case["expect"]}
    assert got == case["expect"], {gate: results[gate].details for gate in case["expect"]}


REJECTED = TurnFacts(
    user_texts=("Change Acme's email to anna@acme.de",),
    results=(),
    data_calls=0,
    data_rows=0,
    mutations=(MutationFact("updateSupplier", "rejected", {"email": "anna@acme.de"}),),
)


def test_a_phantom_write_names_the_claim_and_the_facts() -> None:
    answer = "I looked at Acme. I have updated the supplier. Anything else?"
    [result] = check_answer(answer, REJECTED, enabled=["phantom_write"])

    assert not result.passed
    assert result.details == (
        "claim: I have updated the supplier.",
        "fact: no change was executed in this turn (updateSupplier was rejected by the user)",
    )
    assert result.to_dict() == {
        "name": "phantom_write",
        "passed": False,
        "details": list(result.details),
    }


def test_the_correction_request_quotes_each_failed_claim_and_the_facts() -> None:
    answer = "I have updated the supplier. Its rating is now 4.7."
    failed = [r for r in check_answer(answer, REJECTED) if not r.passed]
    text = correction_request(failed, REJECTED)

    assert [r.name for r in failed] == ["phantom_write", "grounded_numbers"]
    assert text.startswith(
        "Your answer says 'I have updated the supplier', but no change was executed in this turn "
        "(updateSupplier was rejected by the user)."
    )
    assert "Your answer gives 4.7, which neither" in text
    assert text.endswith(
        "Rewrite the answer so it states only what the tool results show; "
        "do not call any tool to change data."
    )
    assert correction_request([], REJECTED) == ""


def test_the_correction_request_for_an_answer_over_nothing() -> None:
    facts = TurnFacts(("Suppliers in Norway?",), ({"status": "ok", "rows": []},), 1, 0)
    failed = [r for r in check_answer("Norway has 3 suppliers:\n- A\n- B", facts) if not r.passed]
    text = correction_request(failed, facts)

    assert [r.name for r in failed] == ["empty_data"]  # 3 is a small count: grounded by rule
    assert "Your answer states results (a list of 2 items" in text
    assert "every data call of this turn (1) returned no rows or failed" in text
    assert "say that nothing was found" in text


def test_the_warning_note_is_a_short_footnote_per_failed_gate() -> None:
    failed = [
        GateResult("phantom_write", False, ("claim: Done.", "fact: no change was executed")),
        GateResult("grounded_numbers", False, ("950", "17%")),
    ]
    note = warning_note(failed)

    assert note.startswith("\n\n> ⚠ Not verified: ")
    assert "it says a change was made, but none was executed" in note
    assert "950, 17% could not be traced to this turn's data" in note
    assert "\n" not in note.strip()
    assert warning_note([]) == ""


def test_only_the_enabled_gates_run_and_unknown_ones_are_refused() -> None:
    facts = TurnFacts((), (), 0, 0)
    assert [r.name for r in check_answer("Hi", facts, enabled={"empty_data"})] == ["empty_data"]
    assert check_answer("Hi", facts)[2].details == ("no data calls",)
    with pytest.raises(ValueError, match="unknown completion gates: nope"):
        check_answer("Hi", facts, enabled=["nope"])


def test_a_result_of_two_thousand_rows_is_handled_whole() -> None:
    amounts = [round(10 + (i % 97) * 1.5, 2) for i in range(2000)]
    rows = [
        {"number": f"A-{1000 + i}", "amount": amount, "quantity": i % 13}
        for i, amount in enumerate(amounts)
    ]
    total = sum(amounts)
    facts = TurnFacts(
        ("Summarise all orders",), ({"status": "ok", "rows": rows, "total_count": 2000},), 1, 2000
    )
    answer = (
        f"There are 2,000 orders worth {total:,.2f} EUR in all, {total / 2000:.2f} EUR on "
        f"average; the largest is {max(amounts):.2f} EUR. "
        "Order A-2999 is the last. Somewhere 987,654.321 EUR went missing."
    )
    [numbers, empty] = check_answer(answer, facts, enabled=["grounded_numbers", "empty_data"])

    assert numbers.details == ("987,654.321",)
    assert empty.passed

"""The answer judges' text handling: number formatting, negations, sentence boundaries."""

from __future__ import annotations

import pytest

from gmchat_nb.evals import parse_cases
from gmchat_nb.evals.judges import TurnData, judge_answer, judge_contract, mentions


@pytest.mark.parametrize(
    ("text", "term", "found"),
    [
        ("The unit price is 1,450 EUR.", "1450", True),  # a correct answer with a separator
        ("The unit price is 1450 EUR.", "1,450", True),
        ("It weighs 1\u202f450 g.", "1450", True),  # narrow no-break space (locale formatting)
        ("Costs 1,45 EUR", "145", False),  # a decimal comma is not a thousands separator
        ("Items 1, 450 and 7", "1450", False),  # a list is not a number
        ("12,345,678 rows", "12345678", True),
        ("Order 21450", "1450", False),  # still whole words
    ],
)
def test_numbers_match_whatever_thousands_separator_the_answer_uses(
    text: str, term: str, found: bool
) -> None:
    assert mentions(text, term) is found


def test_the_expected_price_passes_in_either_format() -> None:
    assert judge_answer("Turbine Blade costs 1,450 EUR.", ["1450"], []).passed
    assert not judge_answer("Turbine Blade costs 1,540 EUR.", ["1450"], []).passed


UNKNOWN_EMPLOYEES = {
    "name": "unknown_employees",
    "conversation": [{"user": "How many employees do we have?"}],
    "expectations": {"contract": {"hard": {"unavailable_managers": ["Employee"]}}},
}


@pytest.mark.parametrize(
    ("answer", "claims"),
    [
        ("I couldn't find any employee data.", False),
        ("I didn\u2019t find employees in this project.", False),  # a typographic apostrophe
        ("Nothing here holds Employee records.", False),
        (
            "I checked PayrollShift.name and e.g. HotelReceipt, but there is no Employee data.",
            False,
        ),
        ("Employee records: 12 found.", True),
        ("There is no payroll. Employees: 12.", True),  # the negation is in another sentence
    ],
)
def test_unavailable_managers_are_judged_per_sentence(answer: str, claims: bool) -> None:
    contract = parse_cases([UNKNOWN_EMPLOYEES])[0].expectations.contract
    assert contract is not None
    verdict = judge_contract(contract, [TurnData(answer=answer)], None)
    assert verdict.passed is not claims, verdict.reasons

"""The answer judges' text handling: number formatting, negations, sentence boundaries, echoes of
the question or the system prompt."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any, ClassVar

import pytest

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.constrained import ConstrainedProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.evals import parse_cases, run
from gmchat_nb.evals.diagnostics import diagnose
from gmchat_nb.evals.judges import (
    TurnData,
    echo_issue,
    judge_answer,
    judge_answer_sense,
    judge_contract,
    mentions,
)


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


# -- answers that only echo the question or the system prompt --------------------------------

STEEL_QUESTION = "Which parts are made of steel?"
SYSTEM_PROMPT = (
    "You answer questions about the inventory project from its data. Call the tools to find "
    "the managers, their fields and rows; never invent a value the tool results do not hold."
)


@pytest.mark.parametrize(
    "answer",
    [
        "Which parts are made of steel?",
        "which parts are MADE of steel",  # case and punctuation aside
        "Which parts are made of steel? Which parts are made of steel?",
        "Which parts are made of steel? Which parts are made of",  # a repetition cut short
        "Question: Which parts are made of steel?\nAnswer:",
        "Sure! Which parts are made of steel?",
        "Parts are made of steel.",  # the question's words, no part named
    ],
)
def test_an_answer_that_only_repeats_the_question_fails_answer_sense(answer: str) -> None:
    verdict = judge_answer_sense(answer, [], question=STEEL_QUESTION)
    assert not verdict.passed
    assert verdict.reasons == ("no_echo: the answer only repeats the question",)


@pytest.mark.parametrize(
    ("question", "answer"),
    [
        (STEEL_QUESTION, "Parts made of steel: Bolt, Nut."),
        (STEEL_QUESTION, "Which parts are made of steel? Bolt and Nut."),
        (STEEL_QUESTION, "No parts are made of steel."),
        (STEEL_QUESTION, "None."),
        ("Is Bolt made of steel?", "Bolt is made of steel."),  # a yes-or-no question answered
        ("Is Bolt made of steel?", "Yes."),
        ("Which is heavier, Bolt or Nut?", "Bolt."),  # a choice among the question's words
        ("What is the density of steel?", "The density of steel is 7.85 g/cm3."),
        ("How many parts are there?", "There are 12 parts."),
        ("Hello", "Hello"),  # a greeting answered, not a question echoed
    ],
)
def test_answers_that_reuse_the_question_words_with_the_data_pass(
    question: str, answer: str
) -> None:
    verdict = judge_answer_sense(answer, ["Bolt"], question=question)
    assert verdict.passed, verdict.reasons


# What PyPI's pretrained Gemma 3 270M answered in small-model mode (evals/cassettes/
# gemma3-270m-local.jsonl): its answer prompt, the question, then junk.
GEMMA_ECHOES = [
    "Answer the question in one or two sentences using only these records. If there are none, "
    "say so.\n\nQuestion: Which parts are made of steel?\n\nRecords: []iatrics\niatricsmodel\n"
    "Answer the question in one or two sentences using only these",
    "Question: Which parts are made of steel?\n\nRecords: []で購入したvalve.\n\nQuestion: Which "
    "parts are made of steel?\n\nRecords: []で購入したvalve.",
]


@pytest.mark.parametrize("answer", GEMMA_ECHOES)
def test_a_small_models_copy_of_its_prompt_fails_answer_sense(answer: str) -> None:
    verdict = judge_answer_sense(
        answer, ["Bolt"], question=STEEL_QUESTION, system_prompts=ConstrainedProvider.instructions
    )
    assert not verdict.passed
    assert verdict.reasons[0].startswith("no_echo: the answer ")


@pytest.mark.parametrize(
    "answer",
    [
        "Which parts are made of steel? Bolt and Nut.",  # names the rows, no expected value given
        "Which parts are made of steel? There are 2 of them.",
        "Which parts are made of steel? None of them, it seems.",
    ],
)
def test_a_restated_question_with_any_data_passes_without_expected_values(answer: str) -> None:
    assert judge_answer_sense(answer, [], question=STEEL_QUESTION).passed


def test_an_answer_that_repeats_the_system_prompt_fails_answer_sense() -> None:
    echoed = "You answer questions about the inventory project from its data. Call the tools"
    verdict = judge_answer_sense(
        echoed, [], question=STEEL_QUESTION, system_prompts=[SYSTEM_PROMPT]
    )
    assert verdict.reasons == ("no_echo: the answer only repeats the system prompt",)
    both = f"{STEEL_QUESTION} {echoed}"
    assert not judge_answer_sense(
        both, [], question=STEEL_QUESTION, system_prompts=[SYSTEM_PROMPT]
    ).passed
    answered = "Parts made of steel: Bolt. I never invent a value the tool results do not hold."
    assert judge_answer_sense(
        answered, ["Bolt"], question=STEEL_QUESTION, system_prompts=[SYSTEM_PROMPT]
    ).passed
    assert echo_issue(echoed) is None  # without the prompt there is nothing to compare with


STEEL_QUERY = {
    "name": "query",
    "args": {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Steel"}},
}
STEEL_CONTRACT_CASE = {
    "name": "steel_parts",
    "conversation": [{"user": STEEL_QUESTION}],
    "expectations": {"contract": {"hard": {"results_contain": ["Bolt"]}}},
}


class SystemPromptEcho(BaseLLMProvider):
    """A pretrained model's habit: it continues the system prompt instead of answering."""

    name: ClassVar[str] = "system-echo"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        if not any(m.role == "tool" for m in messages):
            yield ToolCallEvent("call-1", STEEL_QUERY["name"], dict(STEEL_QUERY["args"]))
        else:
            system = next(m.content for m in messages if m.role == "system")
            yield TextChunkEvent(" ".join(system.split()[:40]))
        yield DoneEvent()


def test_a_run_whose_answer_echoes_the_question_fails_answer_sense() -> None:
    def answering(text: str) -> ScriptedProvider:
        return ScriptedProvider({"rounds": [{"tool_calls": [STEEL_QUERY]}, {"text": text}]})

    echoed = run([STEEL_CONTRACT_CASE], provider=answering(STEEL_QUESTION)).results[0]
    assert echoed.status == "fail"
    assert "Answer sense: no_echo: the answer only repeats the question" in echoed.reasons
    assert diagnose(echoed)[0].key == "prompt/answer_contract"
    answered = run([STEEL_CONTRACT_CASE], provider=answering("Parts made of steel: Bolt."))
    assert answered.results[0].status == "pass", answered.results[0].reasons


def test_a_run_whose_answer_echoes_the_system_prompt_fails_answer_sense() -> None:
    (result,) = run([STEEL_CONTRACT_CASE], provider=SystemPromptEcho).results
    assert result.turns[0].system_prompts  # what the model was sent reaches the judge
    assert result.status == "fail"
    assert "Answer sense: no_echo: the answer only repeats the system prompt" in result.reasons


# -- the same checks on GeneralManager-format cases (answer_contains) ---------------------------

STEEL_GM_CASE = {
    "name": "steel_parts_gm",
    "conversation": [{"user": STEEL_QUESTION}],
    "expectations": {"answer_contains": ["steel"]},
}
STEEL_GM_TURNS_CASE = {
    "name": "steel_parts_gm_turns",
    "conversation": [{"user": STEEL_QUESTION}],
    "expectations": {"turns": [{"answer_contains": ["steel"]}]},
}


@pytest.mark.parametrize("case", [STEEL_GM_CASE, STEEL_GM_TURNS_CASE], ids=["case", "per turn"])
@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (STEEL_QUESTION, "no_echo: the answer only repeats the question"),
        (
            "Steel parts: would you like me to run a query for them?",
            "no_unnecessary_deferral",
        ),
        ("query { partList(filter: {material: steel}) { name } }", "no_raw_query_syntax"),
    ],
)
def test_a_gm_format_case_fails_an_answer_that_only_looks_right(
    case: dict[str, Any], answer: str, reason: str
) -> None:
    """``answer_contains: [steel]`` is not met by an answer without sense that says "steel"."""
    provider = ScriptedProvider({"rounds": [{"tool_calls": [STEEL_QUERY]}, {"text": answer}]})
    (result,) = run([case], provider=provider).results
    assert result.status == "fail"
    assert any(reason in text for text in result.reasons), result.reasons


@pytest.mark.parametrize("case", [STEEL_GM_CASE, STEEL_GM_TURNS_CASE], ids=["case", "per turn"])
def test_a_gm_format_case_passes_a_real_answer(case: dict[str, Any]) -> None:
    provider = ScriptedProvider(
        {"rounds": [{"tool_calls": [STEEL_QUERY]}, {"text": "One part is made of steel: Bolt."}]}
    )
    (result,) = run([case], provider=provider).results
    assert result.status == "pass", result.reasons

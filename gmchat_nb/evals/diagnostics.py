"""Who should act on a case that did not pass: an owner, a category and a piece of advice.

The owners and categories are GeneralManager 0.87's (``evals/diagnostics.py``): ``prompt``,
``tool_schema``, ``runtime``, ``provider``, ``harness`` and ``dataset``. A case gets every
diagnosis its error and verdicts support; the first (the most upstream cause, see ``_RANK``) is
its ``failure_category``. Passing cases are diagnosed only when they deviated from the
recommended strategy, as GeneralManager's report does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from .costs import UNPRICED
from .dataset import Expectations
from .judges import ANSWER, BUDGET, CHARTS, CONTRACT, QUERY, RESULT_SET, SENSE, TOOLS
from .runner import CaseResult

__all__ = [
    "OWNERS",
    "Diagnosis",
    "diagnose",
    "diagnostics_lines",
    "next_action_lines",
    "primary_diagnosis",
]

OWNERS = ("prompt", "tool_schema", "runtime", "provider", "harness", "dataset")

# (owner, category) -> what to do about it
ADVICE: dict[tuple[str, str], str] = {
    ("dataset", "invalid_expectations"): "Fix the case's expectations in the dataset",
    ("provider", "provider_error"): (
        "Check the provider: credentials, endpoint, model name and its rate limits, then rerun"
    ),
    ("provider", "no_tool_calls"): (
        "The provider returned no tool call although tools were offered: the server may not be "
        "passing the tools to the model. Check it with gmchat doctor --provider SPEC; try the "
        "provider settings tool_choice and stream (--provider-config tool_choice=auto "
        "--provider-config stream=false for llama-cpp-python's server)"
    ),
    ("harness", "turn_request_budget_exhausted"): (
        "The turn ran out of provider requests: find out why the model loops, or raise the limit"
    ),
    ("harness", "guardrail_stop"): (
        "A chat guardrail ended the turn: look at the repeated tool errors, or the limit itself"
    ),
    ("harness", "rate_limited"): "The chat's rate limit stopped the case: lower --concurrency",
    ("runtime", "chat_error"): (
        "The chat failed internally: read the reason and the log (a bug, or the project connection)"
    ),
    ("runtime", "forbidden_tool"): (
        "A forbidden tool ran: check the mutation allow-list and the tools offered for reads"
    ),
    ("prompt", "missing_required_tool"): (
        "Tighten the tool-decision prompt or the tool descriptions so the required call is made"
    ),
    ("prompt", "tool_sequence_mismatch"): (
        "Review the prompt's discovery order (search, schema, path, query) against the case"
    ),
    ("tool_schema", "wrong_query_result"): (
        "Check the filters the model built against the schema's field and filter descriptions"
    ),
    ("tool_schema", "result_contract"): (
        "Check the query's filters, fields and paging against the exact rows expected"
    ),
    ("prompt", "missing_turn_answer"): "Make the prompt require a final answer after tool results",
    ("prompt", "answer_quality"): "Make the prompt require naming the values the results hold",
    ("prompt", "answer_contract"): (
        "Tighten the answer rules: no deferral, no raw queries, no contradictions or claims of "
        "unavailable data"
    ),
    ("prompt", "strategy_deviation"): (
        "Tighten the tool-decision prompt, or accept the deviation from the recommended calls"
    ),
    ("prompt", "model_task_failure"): "The model did not complete the task: read its trace",
    ("prompt", "chart_mismatch"): (
        "The turn drew no chart, or another one: check that the chart tool is offered (setting "
        "charts) and that the prompt names the mark and columns the question asks for"
    ),
    ("provider", "unpriced_cost"): (
        "The case has a cost budget but its cost could not be priced (a model genai-prices does "
        "not know, or a replayed cassette's label): give the model a price with --prices FILE "
        "(the prices setting), or drop max_cost_usd from the case's budget"
    ),
    ("prompt", "over_budget"): (
        "The case used more tokens or cost more than its budget: read its requests and tokens "
        "per turn (more tool rounds, a longer prompt or context, a pricier model), or raise it"
    ),
}

# Most upstream cause first: a broken case or provider explains every later symptom, a skipped
# tool call explains missing rows, and missing rows explain an answer without the facts.
_RANK = {key: rank for rank, key in enumerate(ADVICE)}

# chat error codes -> diagnosis; codes not listed are the model's task failure
_ERRORS: dict[str, tuple[str, str]] = {
    "provider_unavailable": ("provider", "provider_error"),
    "provider_failed": ("provider", "provider_error"),
    "deadline_exceeded": ("provider", "provider_error"),
    "turn_limit": ("harness", "turn_request_budget_exhausted"),
    "tool_retry_limit": ("harness", "guardrail_stop"),
    "mutation_limit": ("harness", "guardrail_stop"),
    "mutation_batch_unsupported": ("harness", "guardrail_stop"),
    "confirmation_required_transport": ("harness", "guardrail_stop"),
    "confirmation_pending": ("harness", "guardrail_stop"),
    "confirmation_unavailable": ("harness", "guardrail_stop"),
    "rate_limited": ("harness", "rate_limited"),
    "chat_error": ("runtime", "chat_error"),
}

# product-contract violation prefixes (judges.judge_contract) -> diagnosis
_CONTRACT: tuple[tuple[str, tuple[str, str]], ...] = (
    ("Forbidden tool used", ("runtime", "forbidden_tool")),
    ("Required tool call missing", ("prompt", "missing_required_tool")),
    ("missing results", ("tool_schema", "wrong_query_result")),
    ("excluded results present", ("tool_schema", "wrong_query_result")),
    ("Answer missing", ("prompt", "answer_quality")),
    ("Answer contains excluded", ("prompt", "answer_quality")),
    ("Answer claims unavailable", ("prompt", "answer_contract")),
)

_DETAIL_LIMIT = 120


@dataclass(frozen=True)
class Diagnosis:
    """One cause of a case's outcome: ``owner/category``, the advice, and the evidence."""

    owner: str
    category: str
    detail: str | None = None

    @property
    def advice(self) -> str:
        """What the owner should do about it."""
        return ADVICE[(self.owner, self.category)]

    @property
    def key(self) -> str:
        """``owner/category``."""
        return f"{self.owner}/{self.category}"


def _strip_turn(reason: str) -> str:
    # per-turn verdicts prefix their reasons with "turn N: "
    head, found, rest = reason.partition(": ")
    return rest if found and head.startswith("turn ") else reason


def _from_verdicts(result: CaseResult) -> list[Diagnosis]:
    found: list[Diagnosis] = []
    for verdict in result.verdicts:
        if verdict.deviations:
            found.append(Diagnosis("prompt", "strategy_deviation", verdict.deviations[0]))
        if verdict.passed:
            continue
        first = verdict.reasons[0] if verdict.reasons else None
        if verdict.dimension == CONTRACT:
            for reason in verdict.reasons:
                text = _strip_turn(reason)
                for prefix, (owner, category) in _CONTRACT:
                    if text.startswith(prefix):
                        found.append(Diagnosis(owner, category, reason))
                        break
        elif verdict.dimension == TOOLS:
            found.append(Diagnosis("prompt", "tool_sequence_mismatch", first))
        elif verdict.dimension == QUERY:
            found.append(Diagnosis("tool_schema", "wrong_query_result", first))
        elif verdict.dimension == ANSWER:
            found.append(Diagnosis("prompt", "answer_quality", first))
        elif verdict.dimension == SENSE:
            found.append(Diagnosis("prompt", "answer_contract", first))
        elif verdict.dimension == CHARTS:
            found.append(Diagnosis("prompt", "chart_mismatch", first))
        elif verdict.dimension == BUDGET:
            for reason in verdict.reasons:
                unpriced = reason.startswith(UNPRICED)
                category = "unpriced_cost" if unpriced else "over_budget"
                found.append(Diagnosis("provider" if unpriced else "prompt", category, reason))
        elif verdict.dimension == RESULT_SET:
            for reason in verdict.reasons:
                text = _strip_turn(reason)
                if text.startswith("invalid_result_set_expectation"):
                    found.append(Diagnosis("dataset", "invalid_expectations", reason))
                elif text.startswith("missing_query_for_turn"):
                    found.append(Diagnosis("prompt", "missing_required_tool", reason))
                else:
                    found.append(Diagnosis("tool_schema", "result_contract", reason))
    return found


# diagnoses a case gets when the model made no tool call: symptoms of that, not causes
_WITHOUT_TOOLS = frozenset(
    {"missing_required_tool", "tool_sequence_mismatch", "wrong_query_result", "result_contract"}
)


def _expects_tools(expectations: Expectations) -> bool:
    """The case (or one of its turns) expects a tool call, a query's rows or a result set."""
    contract = expectations.contract
    return (
        bool(expectations.tool_calls)
        or expectations.has_results
        or expectations.result_set is not None
        or (
            contract is not None
            and bool(
                contract.required_tool_calls
                or contract.recommended_tool_calls
                or contract.results_contain
                or contract.results_exclude
            )
        )
        or any(_expects_tools(turn) for turn in expectations.turns)
    )


def _no_tool_calls(result: CaseResult, found: Sequence[Diagnosis]) -> Diagnosis | None:
    """``provider/no_tool_calls`` for a failed case that needed tools, was offered them, and got
    no tool call from the provider in any request of any turn: a model that never calls a tool
    usually never saw them (llama-cpp-python's server drops ``tools`` without a
    ``tool_choice``), which no prompt change fixes."""
    if result.status != "fail" or result.error:
        return None
    offers = sum(turn.tool_offers for turn in result.turns)
    if not offers or any(turn.provider_tool_calls or turn.tool_calls for turn in result.turns):
        return None
    if not (
        _expects_tools(result.case.expectations) or any(d.category in _WITHOUT_TOOLS for d in found)
    ):
        return None
    requests = "request" if offers == 1 else "requests"
    return Diagnosis(
        "provider", "no_tool_calls", f"no tool call in {offers} {requests} that offered tools"
    )


def diagnose(result: CaseResult) -> list[Diagnosis]:
    """Every diagnosis of ``result``, most upstream first; empty for a clean pass."""
    found: list[Diagnosis] = []
    if result.status != "pass":
        if result.error:
            owner, category = _ERRORS.get(result.error, ("prompt", "model_task_failure"))
            detail = next(
                (r for r in result.reasons if r.startswith(f"{result.error}: ")),
                f"error: {result.error}",
            )
            found.append(Diagnosis(owner, category, detail))
        elif any(not turn.answer.strip() for turn in result.turns):
            found.append(Diagnosis("prompt", "missing_turn_answer"))
    found.extend(_from_verdicts(result))
    silent = _no_tool_calls(result, found)
    if silent is not None:
        found.append(silent)
    if result.status != "pass" and not found:
        found.append(Diagnosis("prompt", "model_task_failure"))
    unique: dict[tuple[str, str], Diagnosis] = {}
    for diagnosis in found:
        unique.setdefault((diagnosis.owner, diagnosis.category), diagnosis)
    return sorted(unique.values(), key=lambda d: _RANK[(d.owner, d.category)])


def primary_diagnosis(result: CaseResult) -> Diagnosis | None:
    """The most upstream diagnosis of ``result`` (its failure category), or None."""
    found = diagnose(result)
    return found[0] if found else None


def diagnostics_lines(results: Sequence[CaseResult]) -> list[str]:
    """``Diagnostics:`` and one line per owner (``  prompt: answer_quality=2, ...``), counting
    each case once by its primary diagnosis; empty when no case has one."""
    counts: dict[str, Counter[str]] = {}
    for result in results:
        primary = primary_diagnosis(result)
        if primary is not None:
            counts.setdefault(primary.owner, Counter())[primary.category] += 1
    if not counts:
        return []
    lines = ["Diagnostics:"]
    for owner in OWNERS:
        if owner in counts:
            cells = ", ".join(f"{name}={n}" for name, n in sorted(counts[owner].items()))
            lines.append(f"  {owner}: {cells}")
    return lines


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _DETAIL_LIMIT else text[: _DETAIL_LIMIT - 1] + "…"


def next_action_lines(results: Sequence[CaseResult]) -> list[str]:
    """``Next actions:`` and one line per diagnosed case,
    ``  case_name: [owner/category] advice (evidence)``; empty when no case has a diagnosis."""
    lines = []
    for result in results:
        primary = primary_diagnosis(result)
        if primary is None:
            continue
        evidence = f" ({_shorten(primary.detail)})" if primary.detail else ""
        lines.append(f"  {result.case.name}: [{primary.key}] {primary.advice}{evidence}")
    return ["Next actions:", *lines] if lines else []

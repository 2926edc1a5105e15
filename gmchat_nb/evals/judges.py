"""The judges: each turns a run's evidence into a :class:`Verdict` for one dimension.

Dimensions (GeneralManager 0.87's report rows): ``Product contract``, ``Tool selection``,
``Query correctness``, ``Answer quality``, ``Answer sense`` and ``Exact result sets``; ours:
``Charts`` (the ``chart`` expectation, judged from the charts' intents and specs) and ``Budget``
(a case's ``budget``, judged by :mod:`.costs` from its turns' tokens and cost).

Over 400 lines: the judges share the matching of calls, managers and values
(``call_matches``, ``mentions``, ``flatten_scalars``); split apart, each judge would import them
back.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.project.tools import TOOLS as REGISTRY
from .dataset import (
    ChartExpectation,
    Contract,
    Expectations,
    ResultSetExpectation,
    ToolCallExpectation,
)
from .echo import echo_issue, plain_numbers

__all__ = [
    "DIMENSIONS",
    "TurnData",
    "Verdict",
    "echo_issue",
    "judge_answer",
    "judge_answer_sense",
    "judge_case",
    "judge_chart",
    "judge_contract",
    "judge_query",
    "judge_result_set",
    "judge_sensible_answer",
    "judge_tools",
    "mentions",
]

CONTRACT = "Product contract"
TOOLS = "Tool selection"
QUERY = "Query correctness"
ANSWER = "Answer quality"
SENSE = "Answer sense"
RESULT_SET = "Exact result sets"
CHARTS = "Charts"
BUDGET = "Budget"
DIMENSIONS = (CONTRACT, TOOLS, QUERY, ANSWER, SENSE, RESULT_SET, CHARTS, BUDGET)
ANSWER_THRESHOLD = 0.8

# resolves a manager name (``PartManager``, ``parts``) to a canonical name, or None
Resolver = Callable[[str], str | None]


@dataclass(frozen=True)
class Verdict:
    dimension: str
    passed: bool
    score: float
    reasons: tuple[str, ...] = ()
    deviations: tuple[str, ...] = ()  # strategy deviations (contract judge only)

    def to_dict(self) -> dict[str, Any]:
        return {
            "dimension": self.dimension,
            "passed": self.passed,
            "score": round(self.score, 4),
            "reasons": list(self.reasons),
            "deviations": list(self.deviations),
        }


@dataclass
class TurnData:
    """What one turn did: tool calls ``{id, name, args}``, results ``{id, name, args, result}``
    and the answer; ``user`` is the message it answered, ``system_prompts`` the distinct system
    messages the model was sent during it; ``charts`` the charts it drew, ``{intent, spec,
    marks}`` each."""

    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    tool_results: list[dict[str, Any]] = field(default_factory=list)
    answer: str = ""
    error: str | None = None
    user: str = ""
    system_prompts: list[str] = field(default_factory=list, repr=False)
    charts: list[dict[str, Any]] = field(default_factory=list, repr=False)


# -- helpers -------------------------------------------------------------------------------------


def _manager_key(name: Any, resolve: Resolver | None) -> str:
    text = str(name)
    if resolve is not None:
        found = resolve(text)
        if found is not None:
            return found.lower()
    key = text.lower()
    return key[: -len("manager")] if key.endswith("manager") and len(key) > 7 else key


def normalize_call(name: str, args: Mapping[str, Any] | None) -> tuple[str, dict[str, Any]]:
    """``query_<x>`` direct tools become ``query`` with ``manager=<x>``."""
    args = dict(args or {})
    if name.startswith("query_") and len(name) > len("query_"):
        args.setdefault("manager", name[len("query_") :])
        return REGISTRY.query.name, args
    return name, args


def call_matches(
    expected: ToolCallExpectation, name: str, args: Mapping[str, Any], resolve: Resolver | None
) -> bool:
    """Name equal; every ``args_contain`` item equal (``manager`` compared as a manager name)."""
    name, args = normalize_call(name, args)
    if expected.name != name:
        return False
    for key, value in expected.args_contain.items():
        if key not in args:
            return False
        if key in ("manager", "from_manager", "to_manager"):
            if _manager_key(value, resolve) != _manager_key(args[key], resolve):
                return False
        elif args[key] != value:
            return False
    return True


def _subsequence(
    expected: Sequence[ToolCallExpectation],
    actual: Sequence[Mapping[str, Any]],
    resolve: Resolver | None,
) -> tuple[int, ToolCallExpectation | None]:
    """How many expected calls matched in order, and the first that did not."""
    position = 0
    for count, item in enumerate(expected):
        while position < len(actual):
            call = actual[position]
            position += 1
            if call_matches(item, call["name"], call.get("args") or {}, resolve):
                break
        else:
            return count, item
    return len(expected), None


def _describe(call: ToolCallExpectation) -> str:
    if not call.args_contain:
        return call.name
    args = ", ".join(f"{k}={v}" for k, v in call.args_contain.items())
    return f"{call.name}({args})"


def _scalar_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value).strip().lower()


def flatten_scalars(value: Any) -> list[str]:
    """Every scalar inside ``value`` (dicts and lists walked), lowercased text."""
    out: list[str] = []
    if isinstance(value, Mapping):
        for item in value.values():
            out.extend(flatten_scalars(item))
    elif isinstance(value, list | tuple):
        for item in value:
            out.extend(flatten_scalars(item))
    elif value is not None:
        out.append(_scalar_text(value))
    return out


def _query_failed(result: Any) -> bool:
    if not isinstance(result, Mapping):
        return True
    return bool(result.get("error") or result.get("errors")) or result.get("status") == "error"


def successful_queries(turn: TurnData) -> list[dict[str, Any]]:
    """The ``query`` results of a turn that returned rows (``data``)."""
    out = []
    for item in turn.tool_results:
        name, args = normalize_call(item["name"], item.get("args"))
        result = item.get("result")
        if (
            name == REGISTRY.query.name
            and isinstance(result, Mapping)
            and not _query_failed(result)
        ):
            rows = result.get("data")
            if isinstance(rows, list):
                out.append({"args": args, "rows": rows})
    return out


def mentions(text: str, term: str) -> bool:
    """Whole-word, case-insensitive: ``no`` is not found in ``not`` or ``know``.

    Thousands separators are ignored on both sides, so ``1450`` is found in "1,450 EUR".
    """
    term = plain_numbers(term.strip())
    if not term:
        return True
    pattern = r"(?<!\w)" + re.escape(term) + r"(?!\w)"
    return re.search(pattern, plain_numbers(text), flags=re.IGNORECASE) is not None


# -- judges --------------------------------------------------------------------------------------


def judge_tools(
    expected: Sequence[ToolCallExpectation],
    actual: Sequence[Mapping[str, Any]],
    resolve: Resolver | None = None,
) -> Verdict:
    """Expected calls must appear as an ordered subsequence of the actual calls (binary)."""
    matched, missing = _subsequence(expected, actual, resolve)
    if missing is None:
        return Verdict(TOOLS, True, 1.0)
    return Verdict(
        TOOLS,
        False,
        matched / len(expected) if expected else 0.0,
        (f"Expected tool '{_describe(missing)}' not found in sequence",),
    )


def judge_query(
    contain: Sequence[Any], exclude: Sequence[Any], turns: Sequence[TurnData]
) -> Verdict:
    """Expected values among the scalars of the rows successful queries returned; none excluded.

    The score is the share of checks that hold (recall of ``contain`` and precision with
    respect to ``exclude``); passing needs all of them.
    """
    values = set()
    for turn in turns:
        for query in successful_queries(turn):
            values.update(flatten_scalars(query["rows"]))
    missing = [v for v in contain if _scalar_text(v) not in values]
    present = [v for v in exclude if _scalar_text(v) in values]
    total = len(contain) + len(exclude)
    score = (total - len(missing) - len(present)) / total if total else 1.0
    reasons = []
    if missing:
        reasons.append(f"missing results: {missing}")
    if present:
        reasons.append(f"excluded results present: {present}")
    return Verdict(QUERY, not reasons, score, tuple(reasons))


def judge_answer(
    answer: str, contains: Sequence[str], excludes: Sequence[str], *, strict: bool = False
) -> Verdict:
    """Fraction of ``contains`` found as whole words; pass at >= 0.8 (1.0 strict), no excludes."""
    found = [term for term in contains if mentions(answer, term)]
    score = len(found) / len(contains) if contains else 1.0
    hits = [term for term in excludes if mentions(answer, term)]
    reasons = []
    threshold = 1.0 if strict else ANSWER_THRESHOLD
    if score < threshold:
        missing = [term for term in contains if term not in found]
        reasons.append(f"answer score: {score:.0%} (missing {missing})")
    if hits:
        reasons.append(f"answer contains excluded: {hits}")
    return Verdict(ANSWER, score >= threshold and not hits, score, tuple(reasons))


def _canonical(value: Any) -> Any:
    """Hashable form of a row value: relation lists unordered, page wrappers unwrapped."""
    if isinstance(value, Mapping):
        if set(value) <= {"items", "pageInfo", "page_info", "total_count"} and "items" in value:
            return _canonical(value["items"])
        return tuple(sorted((str(k), _canonical(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return ("__list__", tuple(sorted((_canonical(v) for v in value), key=repr)))
    if isinstance(value, str):
        return value.strip()
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _project(row: Mapping[str, Any], fields: Sequence[str]) -> Any:
    return tuple((name, _canonical(row.get(name))) for name in fields)


def judge_result_set(
    expected: ResultSetExpectation, turn: TurnData, resolve: Resolver | None = None
) -> Verdict:
    """The last ``query`` for the manager in the turn returns exactly these rows (a multiset)."""
    fields = list(expected.fields or sorted({k for row in expected.rows for k in row}))
    if not fields:
        return Verdict(RESULT_SET, False, 0.0, ("invalid_result_set_expectation",))
    target = _manager_key(expected.manager, resolve)
    last = None
    for item in turn.tool_results:
        name, args = normalize_call(item["name"], item.get("args"))
        if name == REGISTRY.query.name and _manager_key(args.get("manager", ""), resolve) == target:
            last = item
    if last is None:
        return Verdict(RESULT_SET, False, 0.0, ("missing_query_for_turn",))
    result = last.get("result")
    if not isinstance(result, Mapping) or _query_failed(result):
        return Verdict(RESULT_SET, False, 0.0, ("query_failed",))
    rows = result.get("data")
    if not isinstance(rows, list):
        return Verdict(RESULT_SET, False, 0.0, ("missing_result_rows",))
    if rows and any(name not in row for row in rows for name in fields):
        return Verdict(RESULT_SET, False, 0.0, ("missing_result_fields",))
    want = Counter(_project(row, fields) for row in expected.rows)
    got = Counter(_project(row, fields) for row in rows)
    if want == got:
        return Verdict(RESULT_SET, True, 1.0)
    overlap = sum((want & got).values())
    score = overlap / max(sum(want.values()), sum(got.values()), 1)
    return Verdict(
        RESULT_SET,
        False,
        score,
        (
            f"result_set_mismatch: {sum(want.values())} expected rows, {len(rows)} returned, "
            f"{overlap} in common",
        ),
    )


def _drawn(chart: Mapping[str, Any]) -> dict[str, Any]:
    """What a chart drew: its mark as its spec draws it (a histogram is binned bars), its
    columns and aggregate as its intent applied them."""
    intent, spec = chart.get("intent") or {}, chart.get("spec") or {}
    mark = spec.get("mark")
    mark = mark.get("type") if isinstance(mark, Mapping) else mark
    x = (spec.get("encoding") or {}).get("x") or {}
    if mark == "bar" and isinstance(x, Mapping) and x.get("bin"):
        mark = "histogram"
    return {"mark": mark, **{key: intent.get(key) for key in ("x", "y", "aggregate")}}


def _chart_text(chart: Mapping[str, Any]) -> str:
    return ", ".join(f"{key}={value}" for key, value in chart.items() if value is not None)


def judge_chart(expected: ChartExpectation, turns: Sequence[TurnData]) -> Verdict:
    """Some chart of ``turns`` has every key the expectation names (no pixels: the spec's mark,
    the intent's columns and aggregate); the score is the best chart's share of those keys."""
    wanted = expected.to_dict()
    drawn = [_drawn(chart) for turn in turns for chart in turn.charts]
    scores = [sum(chart[k] == v for k, v in wanted.items()) / (len(wanted) or 1) for chart in drawn]
    if scores and max(scores) == 1.0:
        return Verdict(CHARTS, True, 1.0)
    expected_text = f"expected a chart ({_chart_text(wanted) or 'any'})"
    if not drawn:
        return Verdict(CHARTS, False, 0.0, (f"{expected_text}; no chart was drawn",))
    shown = "; ".join(f"({_chart_text(chart)})" for chart in drawn[:5])
    return Verdict(CHARTS, False, max(scores), (f"{expected_text}; drawn: {shown}",))


_NEGATION = re.compile(
    r"\b(no|not|none|nothing|never|nobody|no one|isn't|aren't|wasn't|weren't|doesn't|don't|"
    r"didn't|hasn't|haven't|couldn't|won't|cannot|can't|unavailable|unable|neither|nor|"
    r"without|lack|lacks|missing|unknown)\b",
    re.IGNORECASE,
)
_DEFERRAL = re.compile(
    r"would you like me to (run|query|fetch|look)|shall i (run|query|fetch)|"
    r"i can run (a|the|this) query",
    re.IGNORECASE,
)
_RAW_QUERY = re.compile(r"```graphql|\bquery\s*\{", re.IGNORECASE)


def _manager_words(name: str) -> list[str]:
    base = name[: -len("Manager")] if name.endswith("Manager") and len(name) > 7 else name
    words = {name, base}
    words.add(base + "s")
    return sorted(words)


def _sentences(text: str) -> list[str]:
    """Split at . ! ? followed by white space ("PayrollShift.name" and "e.g." end nothing)."""
    return re.split(r"(?<=[.!?])\s+|\n+", text.replace("\u2019", "'"))


def _claims_available(answer: str, manager: str) -> bool:
    """A sentence naming the manager without any negation claims it is available."""
    for sentence in _sentences(answer):
        named = any(mentions(sentence, word) for word in _manager_words(manager))
        if named and not _NEGATION.search(sentence):
            return True
    return False


def judge_answer_sense(
    answer: str,
    expected_values: Iterable[Any] = (),
    *,
    question: str = "",
    system_prompts: Iterable[str] = (),
) -> Verdict:
    """A few answer-sense checks: no deferral, no raw query syntax, no negated expected values,
    and not an echo of ``question`` or of a system prompt (:func:`echo_issue`)."""
    issues = []
    expected_values = list(expected_values)
    echo = echo_issue(answer, question, system_prompts, expected_values)
    if echo:
        issues.append(f"no_echo: {echo}")
    if _DEFERRAL.search(answer):
        issues.append("no_unnecessary_deferral")
    if _RAW_QUERY.search(answer):
        issues.append("no_raw_query_syntax")
    for value in expected_values:
        text = str(value)
        for sentence in _sentences(answer):
            if mentions(sentence, text) and re.search(
                r"\b(no|not|none)\b[^.]{0,20}" + re.escape(text), sentence, re.IGNORECASE
            ):
                issues.append(f"no_contradiction: {text}")
                break
    checks = 4
    score = (checks - min(len(issues), checks)) / checks
    return Verdict(SENSE, not issues, score, tuple(issues))


def judge_contract(
    contract: Contract, turns: Sequence[TurnData], resolve: Resolver | None = None
) -> Verdict:
    """Hard violations fail; strategy deviations are reported (fail only with fail_on_deviation)."""
    calls = [c for turn in turns for c in turn.tool_calls]
    answer = turns[-1].answer if turns else ""
    violations: list[str] = []
    for required in contract.required_tool_calls:
        if not any(call_matches(required, c["name"], c.get("args") or {}, resolve) for c in calls):
            violations.append(f"Required tool call missing: {_describe(required)}")
    used = {normalize_call(c["name"], c.get("args"))[0] for c in calls} | {c["name"] for c in calls}
    for tool in contract.forbidden_tools:
        if tool in used:
            violations.append(f"Forbidden tool used: {tool}")
    if contract.results_contain or contract.results_exclude:
        query = judge_query(contract.results_contain, contract.results_exclude, turns)
        violations.extend(query.reasons)
    for term in contract.answer_contains:
        if not mentions(answer, term):
            violations.append(f"Answer missing: {term!r}")
    for term in contract.answer_excludes:
        if mentions(answer, term):
            violations.append(f"Answer contains excluded: {term!r}")
    for manager in contract.unavailable_managers:
        if _claims_available(answer, manager):
            violations.append(f"Answer claims unavailable manager is available: {manager}")
    deviations: list[str] = []
    if contract.strict_order:
        _, missing = _subsequence(contract.recommended_tool_calls, calls, resolve)
        if missing is not None:
            deviations.append(f"Recommended tool call missing: {_describe(missing)}")
    else:
        for recommended in contract.recommended_tool_calls:
            if not any(
                call_matches(recommended, c["name"], c.get("args") or {}, resolve) for c in calls
            ):
                deviations.append(f"Recommended tool call missing: {_describe(recommended)}")
    failing = violations + (deviations if contract.fail_on_deviation else [])
    checks = (
        len(contract.required_tool_calls)
        + len(contract.forbidden_tools)
        + len(contract.results_contain)
        + len(contract.results_exclude)
        + len(contract.answer_contains)
        + len(contract.answer_excludes)
        + len(contract.unavailable_managers)
    )
    score = 1.0 if not checks else max(0.0, (checks - len(violations)) / checks)
    return Verdict(CONTRACT, not failing, score, tuple(violations), tuple(deviations))


def judge_sensible_answer(
    turn: TurnData,
    contains: Sequence[str],
    excludes: Sequence[str],
    *,
    results_contain: Iterable[Any] = (),
    strict: bool = False,
) -> Verdict:
    """:func:`judge_answer` with :func:`judge_answer_sense`'s findings as failures: an answer
    that only repeats the question or a prompt, defers, shows raw query syntax or denies a value
    the results must contain does not count as containing its terms (the contract format judges
    sense on a dimension of its own). The terms themselves are not checked for negation: "no
    part is made of gold" is the right answer to an empty result."""
    verdict = judge_answer(turn.answer, contains, excludes, strict=strict)
    sense = judge_answer_sense(
        turn.answer, results_contain, question=turn.user, system_prompts=turn.system_prompts
    )
    if sense.passed:
        return verdict
    return Verdict(ANSWER, False, min(verdict.score, sense.score), verdict.reasons + sense.reasons)


def _combine(dimension: str, verdicts: Sequence[Verdict]) -> Verdict:
    if len(verdicts) == 1:
        return verdicts[0]
    return Verdict(
        dimension,
        all(v.passed for v in verdicts),
        min(v.score for v in verdicts),
        tuple(r for v in verdicts for r in v.reasons),
        tuple(d for v in verdicts for d in v.deviations),
    )


def judge_case(
    expectations: Expectations, turns: Sequence[TurnData], resolve: Resolver | None = None
) -> list[Verdict]:
    """Every verdict the expectations call for, per-turn expectations folded in (strictly)."""
    found: dict[str, list[Verdict]] = {}

    def add(verdict: Verdict, turn: int | None = None) -> None:
        if turn is not None:
            verdict = Verdict(
                verdict.dimension,
                verdict.passed,
                verdict.score,
                tuple(f"turn {turn}: {r}" for r in verdict.reasons),
                tuple(f"turn {turn}: {d}" for d in verdict.deviations),
            )
        found.setdefault(verdict.dimension, []).append(verdict)

    last = turns[-1] if turns else TurnData()
    calls = [c for turn in turns for c in turn.tool_calls]
    if expectations.contract is not None:
        add(judge_contract(expectations.contract, turns, resolve))
        sense = judge_answer_sense(
            last.answer,
            expectations.contract.results_contain,
            question=last.user,
            system_prompts=last.system_prompts,
        )
        add(sense)
    if expectations.tool_calls is not None:
        add(judge_tools(expectations.tool_calls, calls, resolve))
    if expectations.has_results:
        add(judge_query(expectations.results_contain, expectations.results_exclude, turns))
    if expectations.has_answer:
        add(judge_sensible_answer(last, expectations.answer_contains, expectations.answer_excludes))
    if expectations.result_set is not None:
        add(judge_result_set(expectations.result_set, last, resolve))
    if expectations.chart is not None:
        add(judge_chart(expectations.chart, turns))
    for number, (expected, turn) in enumerate(zip(expectations.turns, turns, strict=False), 1):
        if expected.contract is not None:
            add(judge_contract(expected.contract, [turn], resolve), number)
        if expected.tool_calls is not None:
            add(judge_tools(expected.tool_calls, turn.tool_calls, resolve), number)
        if expected.has_results:
            add(judge_query(expected.results_contain, expected.results_exclude, [turn]), number)
        if expected.has_answer:
            verdict = judge_sensible_answer(
                turn,
                expected.answer_contains,
                expected.answer_excludes,
                results_contain=expected.results_contain,
                strict=True,
            )
            add(verdict, number)
        if expected.result_set is not None:
            add(judge_result_set(expected.result_set, turn, resolve), number)
        if expected.chart is not None:
            add(judge_chart(expected.chart, [turn]), number)
    return [_combine(d, found[d]) for d in DIMENSIONS if d in found]

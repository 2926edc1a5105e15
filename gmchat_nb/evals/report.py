"""Reports in GeneralManager 0.87's layouts, trace JSONL records and pandas summaries.

Over 400 lines: GeneralManager's two report layouts, the trace records and the pandas
frames are all read from the same results with the same dimension counts.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.digest import canonical_json, digest
from .costs import case_cost_lines, cost_line, cost_rows, money_text
from .diagnostics import diagnostics_lines, next_action_lines, primary_diagnosis
from .figures import call_counts, figures_lines, percent_text, run_figures
from .judges import BUDGET, CHARTS, DIMENSIONS, RESULT_SET
from .knowledge import knowledge_line, knowledge_rows, recall_text, trusted_text
from .runner import CaseResult
from .strategy import COUNTED_ROLES, sum_roles

if TYPE_CHECKING:
    import pandas as pd

    from .figures import RunFigures

__all__ = [
    "EVALUATION_CONTRACT",
    "case_frame",
    "compare_report",
    "dimension_counts",
    "figures_frame",
    "guard_lines",
    "outcomes",
    "provider_lines",
    "provider_notes",
    "rate_text",
    "role_lines",
    "single_report",
    "summary_frame",
    "trace_record",
    "write_trace",
]

EVALUATION_CONTRACT = "chat-evaluation/5"


def dimension_counts(results: Sequence[CaseResult]) -> list[tuple[str, int, int]]:
    """``(dimension, passed, total)`` per judged dimension, then ``Overall``; unscored cases
    count nowhere."""
    rows = []
    # an unscored case says nothing about any dimension, whatever its partial verdicts were
    scored = [r for r in results if r.status != "unscored"]
    for dimension in DIMENSIONS:
        verdicts = [v for r in scored for v in r.verdicts if v.dimension == dimension]
        if dimension in (RESULT_SET, CHARTS, BUDGET) and not verdicts:  # only cases asking them
            continue
        rows.append((dimension, sum(v.passed for v in verdicts), len(verdicts)))
    rows.append(("Overall", sum(r.passed for r in scored), len(scored)))
    return rows


def rate_text(passed: int, total: int) -> str:
    """``75%``, or ``-`` when nothing was judged."""
    return f"{passed / total:.0%}" if total else "-"


def outcomes(results: Sequence[CaseResult]) -> str:
    """``3 PASS, 1 FAIL, 0 UNSCORED``."""
    statuses = [r.status for r in results]
    return (
        f"{statuses.count('pass')} PASS, {statuses.count('fail')} FAIL, "
        f"{statuses.count('unscored')} UNSCORED"
    )


def provider_notes(results: Sequence[CaseResult]) -> dict[str, str]:
    """Provider label -> its description, for the providers that have one (in run order)."""
    notes: dict[str, str] = {}
    for r in results:
        if r.provider_note and r.provider not in notes:
            notes[r.provider] = r.provider_note
    return notes


def provider_lines(results: Sequence[CaseResult]) -> list[str]:
    """``Providers:`` and ``  label: description`` lines; empty when no provider describes itself.

    Printed in every report so that a replayed or scripted stand-in is never read as a real model.
    """
    notes = provider_notes(results)
    if not notes:
        return []
    return ["Providers:", *(f"  {label}: {note}" for label, note in notes.items())]


def single_report(
    results: Sequence[CaseResult], *, verbose: bool = False, timings: bool = True
) -> str:
    """The single-provider table, outcomes, the calls the project accepted and the right
    manager (:mod:`.figures`), speed, the cost and the cost per passed case (:mod:`.costs`),
    per-case requests, tokens and cost, diagnostics and (verbose) failures and next actions.

    ``timings=False`` leaves out the speed and the Seconds column, so the text is the same on
    every run (for notebook outputs that nbval compares).
    """
    lines = [f"{'Dimension':<20}{'Pass':>6}{'Total':>7}{'Rate':>9}", "-" * 42]
    counts = dimension_counts(results)
    for dimension, passed, total in counts[:-1]:
        lines.append(f"{dimension:<20}{passed:>6}{total:>7}{rate_text(passed, total):>9}")
    lines.append("-" * 42)
    dimension, passed, total = counts[-1]
    lines.append(f"{dimension:<20}{passed:>6}{total:>7}{rate_text(passed, total):>9}")
    lines.append(f"Outcomes: {outcomes(results)} ({EVALUATION_CONTRACT})")
    lines.extend(figures_lines(run_figures(results), timings=timings))
    lines.append(cost_line(results))
    knowledge = knowledge_line(results)
    if knowledge is not None:
        lines.append(knowledge)
    lines.extend(guard_lines(results))
    lines.extend(provider_lines(results))
    lines.append("")
    header = f"{'Case':<40}{'Status':>10}{'Requests':>10}{'Tokens':>10}{'Cost':>12}"
    lines.append(header + (f"{'Seconds':>9}" if timings else ""))
    for r in results:
        row = (
            f"{r.case.name[:39]:<40}{r.status.upper():>10}{r.requests:>10}{r.tokens:>10}"
            f"{money_text(r.cost_usd):>12}"
        )
        lines.append(row + (f"{r.seconds:>9.2f}" if timings else ""))
    roles = role_lines(results)
    if roles:
        lines.append("")
        lines.extend(roles)
    failed = [r for r in results if r.status != "pass"]
    if verbose and failed:
        lines.append("")
        lines.extend(failure_lines(failed))
    diagnostics = diagnostics_lines(results)
    if diagnostics:
        if not (verbose and failed):  # GeneralManager prints Diagnostics right under Failures
            lines.append("")
        lines.extend(diagnostics)
        if verbose:
            lines.extend(next_action_lines(results))
    return "\n".join(lines)


def _counted(counts: Counter[str]) -> str:
    return ", ".join(f"{name} {count}" for name, count in sorted(counts.items()))


def guard_lines(results: Sequence[CaseResult]) -> list[str]:
    """``Loop guard:`` (the turns it ended with a forced answer, by reason) and ``Failed gates:``
    (the completion gates answers still failed after their correction), each only when it
    happened: a run without either reports as before."""
    turns = [t for r in results for t in r.turns]
    stops = Counter(t.stopped_by for t in turns if t.stopped_by)
    gates = Counter(name for t in turns for name in t.failed_gates)
    lines = []
    if stops:
        stopped = sum(stops.values())
        lines.append(f"Loop guard: {stopped} of {len(turns)} turns stopped ({_counted(stops)})")
    if gates:
        lines.append(f"Failed gates: {_counted(gates)}")
    return lines


def role_lines(results: Sequence[CaseResult]) -> list[str]:
    """Requests and tokens per role, when any case ran planned (empty otherwise): the planner,
    the executors, the synthesizer, the legacy loop (a mutation plan's turn) and the session's
    summaries of long conversations."""
    planned = [r for r in results if r.strategy == "planned"]
    if not planned:
        return []
    totals = sum_roles(*(r.roles for r in planned))
    lines = [
        f"Per role ({len(planned)} planned cases)"
        + f"{'Requests':>12}{'Tokens':>10}{'Req/case':>10}{'Tokens/case':>13}"
    ]
    width = len(lines[0]) - 45
    for role in COUNTED_ROLES:
        entry = totals.get(role, {})
        requests = entry.get("requests", 0)
        tokens = entry.get("input_tokens", 0) + entry.get("output_tokens", 0)
        lines.append(
            f"  {role:<{width - 2}}{requests:>12}{tokens:>10}"
            f"{requests / len(planned):>10.2f}{tokens / len(planned):>13.1f}"
        )
    return lines


def failure_lines(failed: Sequence[CaseResult], title: str = "Failures:") -> list[str]:
    """``Failures:`` and, per case that did not pass, its description, status and reasons."""
    lines = [title]
    for r in failed:
        lines.append(f"  {r.case.name}: {r.case.description}".rstrip(": "))
        lines.append(f"    status: {r.status}")
        lines.extend(f"    {reason}" for reason in r.reasons)
        for number, turn in enumerate(r.turns, start=1):
            recalled, trusted = recall_text(turn), trusted_text(turn)
            if recalled is not None:
                lines.append(f"    turn {number} recalled: {recalled}")
            if trusted is not None:
                lines.append(f"    turn {number} {trusted}")
    return lines


def compare_report(
    results: Sequence[CaseResult],
    providers: Sequence[str],
    *,
    verbose: bool = False,
    timings: bool = True,
) -> str:
    """Percentages only, a column per provider, plus mean requests and tokens per case, the cost
    and the cost per passed case ("—" when unknown; :mod:`.costs`), the calls made and the share
    the project accepted, the share of cases with the right manager and (``timings``) the median
    seconds per turn and output tokens per second (:mod:`.figures`); ``verbose`` adds each case's
    tokens, cost and seconds per provider, and each provider's failures, diagnostics and next
    actions."""
    width = max([12, *(len(p) + 2 for p in providers)])
    lines = [f"{'Dimension':<20}" + "".join(f"{p:>{width}}" for p in providers)]
    lines.append("-" * (20 + width * len(providers)))
    by_provider = {p: [r for r in results if r.provider == p] for p in providers}
    counts = {p: {d: (a, b) for d, a, b in dimension_counts(rs)} for p, rs in by_provider.items()}
    dimensions = [d for d in DIMENSIONS if _any(counts, d)] + ["Overall"]
    for dimension in dimensions:
        cells = []
        for p in providers:
            passed, total = counts[p].get(dimension, (0, 0))
            cells.append(f"{rate_text(passed, total):>{width}}")
        lines.append(f"{dimension:<20}" + "".join(cells))
    for title, key in (("Requests/case", "requests"), ("Tokens/case", "tokens")):
        cells = []
        for p in providers:
            rs = by_provider[p]
            values = [r.requests if key == "requests" else sum(r.usage.values()) for r in rs]
            mean = sum(values) / len(values) if values else 0.0
            cells.append(f"{mean:>{width}.1f}")
        lines.append(f"{title:<20}" + "".join(cells))
    lines.extend(cost_rows(by_provider, width))
    lines.extend(knowledge_rows(by_provider, width))
    if any(r.strategy == "planned" for r in results):
        for role in COUNTED_ROLES:
            cells = []
            for p in providers:
                rs = by_provider[p]
                requests = sum(r.roles.get(role, {}).get("requests", 0) for r in rs)
                cells.append(f"{requests / len(rs) if rs else 0.0:>{width}.2f}")
            lines.append(f"{role + ' req/case':<20}" + "".join(cells))
    lines.extend(_figure_rows({p: run_figures(by_provider[p]) for p in providers}, width, timings))
    lines.extend(_guard_rows(by_provider, width))
    if any(r.status == "unscored" for r in results):
        # GeneralManager's comparison shows rates only; say how many cases the rates leave out
        cells = [
            f"{sum(r.status == 'unscored' for r in by_provider[p]):>{width}}" for p in providers
        ]
        lines.append(f"{'Unscored':<20}" + "".join(cells))
    lines.extend(provider_lines(results))
    if verbose:
        lines.append("")
        lines.extend(case_cost_lines(results, timings=timings))
        for provider in providers:
            own = by_provider[provider]
            failed = [r for r in own if r.status != "pass"]
            if not failed:
                continue
            lines.append("")
            lines.extend(failure_lines(failed, f"Failures of {provider}:"))
            lines.extend(diagnostics_lines(own))
            lines.extend(next_action_lines(own))
    return "\n".join(lines)


def _figure_rows(figures: Mapping[str, RunFigures], width: int, timings: bool) -> list[str]:
    def number(value: float | None, spec: str) -> str:
        return "n/a" if value is None else format(value, spec)

    rows = [
        ("Calls made", [str(f.calls_made) for f in figures.values()]),
        ("Calls accepted", [percent_text(f.accepted_rate) for f in figures.values()]),
        ("Right manager", [percent_text(f.right_manager_rate) for f in figures.values()]),
    ]
    if timings:
        rows.append(("Seconds/turn", [number(f.seconds_per_turn, ".2f") for f in figures.values()]))
        rows.append(
            ("Output tokens/s", [number(f.tokens_per_second, ".1f") for f in figures.values()])
        )
    return [f"{title:<20}" + "".join(f"{c:>{width}}" for c in cells) for title, cells in rows]


def _guard_rows(by_provider: Mapping[str, Sequence[CaseResult]], width: int) -> list[str]:
    """Per provider, the turns the loop guard stopped and the gates answers still failed; each
    row only when it is not all zeros."""
    turns = [[t for r in rs for t in r.turns] for rs in by_provider.values()]
    stops = [sum(t.stopped_by is not None for t in ts) for ts in turns]
    gates = [sum(len(t.failed_gates) for t in ts) for ts in turns]
    rows = []
    for title, cells in (("Loop-guard stops", stops), ("Failed gates", gates)):
        if any(cells):
            rows.append(f"{title:<20}" + "".join(f"{c:>{width}}" for c in cells))
    return rows


def _any(counts: dict[str, dict[str, tuple[int, int]]], dimension: str) -> bool:
    return any(c.get(dimension, (0, 0))[1] for c in counts.values())


def _contract_block(result: CaseResult) -> dict[str, Any] | None:
    contract = next((v for v in result.verdicts if v.dimension == "Product contract"), None)
    if contract is None:
        return None
    sense = next((v for v in result.verdicts if v.dimension == "Answer sense"), None)
    expectation = result.case.expectations.contract
    return {
        "category": expectation.category if expectation else "",
        "passed": contract.passed,
        "violations": list(contract.reasons),
        "strategy_deviations": list(contract.deviations),
        "answer_sense": None
        if sense is None
        else {
            "passed": sense.passed,
            "score": sense.score,
            "checks": [],
            "issues": list(sense.reasons),
            "abstentions": [],
        },
    }


SELECTION_VERSION = "chat-eval-selection/1"


def selection_manifest(results: Sequence[CaseResult]) -> dict[str, Any]:
    """GeneralManager's ``run`` block: the datasets and the exact cases selected, hashed, so two
    traces can be checked to have run the same selection."""
    cases: dict[tuple[str, str], dict[str, str]] = {}
    for result in results:
        case = result.case
        cases.setdefault(
            (case.dataset, case.name),
            {"dataset": case.dataset, "name": case.name, "case_hash": case.case_hash},
        )
    listed = list(cases.values())
    return {
        "datasets": sorted({entry["dataset"] for entry in listed}),
        "selection_manifest": {
            "version": SELECTION_VERSION,
            "cases": listed,
            "hash": digest(listed),
        },
    }


def trace_record(result: CaseResult, run: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """One case as GeneralManager's trace keys plus ``provider``, ``provider_note``,
    ``failure_owner``, ``usage``, ``tokens``, ``cost_usd`` (``None`` when unknown),
    ``cost_sources``, ``budget`` and ``verdicts`` (each turn with its ``cost_usd`` and its
    ``done`` event's ``cost``); ``run`` is the :func:`selection_manifest` block (default: this
    case alone)."""
    case = result.case
    result_set = next((v for v in result.verdicts if v.dimension == RESULT_SET), None)
    diagnosis = None if result.passed else primary_diagnosis(result)
    return {
        "case": case.name,
        "dataset": case.dataset,
        "description": case.description,
        "run": dict(run) if run is not None else selection_manifest([result]),
        "conversation": [{"user": text} for text in case.conversation],
        "expectations": dict(case.expectations.raw),
        "tool_calls": [
            {"name": c["name"], "args": c["args"]} for t in result.turns for c in t.tool_calls
        ],
        "tool_results": [item["result"] for t in result.turns for item in t.tool_results],
        "answer": result.answer,
        "passed": result.passed,
        "status": result.status,
        "abstentions": [],
        "failure_category": None if diagnosis is None else diagnosis.category,
        "failure_owner": None if diagnosis is None else diagnosis.owner,
        "evaluation_contract": EVALUATION_CONTRACT,
        "requests": result.requests,
        "result_set": None
        if result_set is None
        else {"passed": result_set.passed, "reason": ";".join(result_set.reasons) or None},
        "turns": [
            {
                "turn": number,
                "tool_calls": [{"name": c["name"], "args": c["args"]} for c in t.tool_calls],
                "tool_results": [item["result"] for item in t.tool_results],
                "answer": t.answer,
                "error": t.error,
                "abstentions": [],
                "requests": t.requests,
                "usage": t.usage,
                "roles": t.roles,
                "orchestration": t.orchestration,
                "seconds": round(t.seconds, 4),
                "cost_usd": t.cost_usd,
                "cost": t.cost,
                **({"charts": t.charts} if t.charts else {}),  # ours: {intent, spec, marks}
                # ours, when recall ran: what it found, and the verified query re-run
                **({"recalled": t.recalled} if t.recalled is not None else {}),
                **({"trusted": t.trusted} if t.trusted else {}),
                **({"prompt_characters": t.prompt_characters} if result.knowledge else {}),
            }
            for number, t in enumerate(result.turns, start=1)
        ],
        "recovery_events": [],
        "contract": _contract_block(result),
        "error": result.error,
        "reasons": list(result.reasons),
        "provider": result.provider,
        "provider_note": result.provider_note,
        "strategy": result.strategy,
        "roles": result.roles,
        "usage": result.usage,
        "tokens": result.tokens,
        "cost_usd": result.cost_usd,
        "cost_sources": result.cost_sources,
        "budget": None if case.budget is None else case.budget.to_dict(),
        **({"knowledge": result.knowledge} if result.knowledge is not None else {}),
        "seconds": round(result.seconds, 4),
        "verdicts": [v.to_dict() for v in result.verdicts],
    }


def write_trace(results: Sequence[CaseResult], path: str | Path) -> None:
    """Truncate ``path`` and write one sorted-key compact JSON object per case."""
    run = selection_manifest(results)
    with Path(path).open("w", encoding="utf-8") as handle:
        for result in results:
            handle.write(canonical_json(trace_record(result, run)) + "\n")


def case_frame(results: Sequence[CaseResult]) -> pd.DataFrame:
    """One row per (provider, case), with its failure category and the provider's note; then
    the case's turns, its seconds in turns, the model's calls that got a result and those the
    project accepted, whether a query named the expected manager (None when none is), the
    turns the loop guard stopped, the gates that failed, its ``tokens``, ``cost_usd`` (NaN when
    unknown: sum it with ``skipna=False``, or read :func:`.costs.cost_frame`) and price sources."""
    import pandas as pd

    rows = []
    for r in results:
        diagnosis = None if r.passed else primary_diagnosis(r)
        row: dict[str, Any] = {
            "provider": r.provider,
            "provider_note": r.provider_note,
            "dataset": r.case.dataset,
            "case": r.case.name,
            "tier": r.case.tier,
            "status": r.status,
            "passed": r.passed,
            "strategy": r.strategy,
            "requests": r.requests,
            "input_tokens": r.usage["input_tokens"],
            "output_tokens": r.usage["output_tokens"],
            "seconds": r.seconds,
            "error": r.error,
            "failure_category": None if diagnosis is None else diagnosis.key,
            "reasons": "; ".join(r.reasons),
        }
        for v in r.verdicts:
            row[v.dimension] = v.passed
        rows.append(row)
    frame = pd.DataFrame(rows)
    # added after the verdict columns, which come first as they always did
    counts = [call_counts(r.turns) for r in results]
    frame["turns"] = [len(r.turns) for r in results]
    frame["turn_seconds"] = [sum(t.seconds for t in r.turns) for r in results]
    frame["calls_made"] = [made for made, _ in counts]
    frame["calls_accepted"] = [accepted for _, accepted in counts]
    frame["right_manager"] = pd.Series([r.right_manager for r in results], dtype="object")
    # the turns the loop guard ended with a forced answer, the gates answers still failed
    frame["loop_guard_stops"] = [sum(t.stopped_by is not None for t in r.turns) for r in results]
    frame["failed_gates"] = [sum(len(t.failed_gates) for t in r.turns) for r in results]
    frame["tokens"] = [r.tokens for r in results]
    frame["cost_usd"] = pd.Series(
        [float("nan") if r.cost_usd is None else r.cost_usd for r in results], dtype="float64"
    )
    frame["cost_sources"] = [", ".join(r.cost_sources) for r in results]
    return frame


def summary_frame(results: Sequence[CaseResult]) -> pd.DataFrame:
    """Pass counts and rates per (provider, dimension), with Overall."""
    import pandas as pd

    rows = []
    providers = list(dict.fromkeys(r.provider for r in results))
    for p in providers:
        for dimension, passed, total in dimension_counts([r for r in results if r.provider == p]):
            rows.append(
                {
                    "provider": p,
                    "dimension": dimension,
                    "passed": passed,
                    "total": total,
                    "rate": passed / total if total else float("nan"),
                }
            )
    return pd.DataFrame(rows, columns=["provider", "dimension", "passed", "total", "rate"])


FIGURE_COLUMNS = [
    "provider",
    "calls_made",
    "calls_accepted",
    "accepted_rate",
    "manager_cases",
    "right_manager",
    "right_manager_rate",
    "turns",
    "seconds_per_turn",
    "output_tokens",
    "tokens_per_second",
]


def figures_frame(results: Sequence[CaseResult]) -> pd.DataFrame:
    """One row per provider (scored cases only): the model's calls that got a result and those
    the project accepted, the cases naming a manager for a query and those whose query named it,
    turns, the median seconds per turn and output tokens per second (NaN where a report prints
    ``-`` or ``n/a``)."""
    import pandas as pd

    def value(number: float | None) -> float:
        return float("nan") if number is None else number

    rows = []
    for p in dict.fromkeys(r.provider for r in results):
        figures = run_figures([r for r in results if r.provider == p])
        rows.append(
            {
                "provider": p,
                "calls_made": figures.calls_made,
                "calls_accepted": figures.calls_accepted,
                "accepted_rate": value(figures.accepted_rate),
                "manager_cases": figures.manager_cases,
                "right_manager": figures.right_manager,
                "right_manager_rate": value(figures.right_manager_rate),
                "turns": len(figures.turn_seconds),
                "seconds_per_turn": value(figures.seconds_per_turn),
                "output_tokens": figures.output_tokens,
                "tokens_per_second": value(figures.tokens_per_second),
            }
        )
    return pd.DataFrame(rows, columns=FIGURE_COLUMNS)

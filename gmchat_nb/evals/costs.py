"""What eval cases cost, and the budgets a release gate holds them to.

A turn's cost is its ``done`` event's (``cost.usd``, priced by
:mod:`gmchat_nb.core.providers.pricing`: the hosted vendors' models by genai-prices or the
``prices`` setting; ``offline``, ``scripted`` and local models cost nothing). A case's cost is
the sum of its turns'; it is **unknown** (``None``, shown as "—", never 0) when any turn's is: a
model without a price (the oracle cassettes' ``openai:oracle``), or a turn that asked a model and
ended with an error before it said what it cost. Per provider: the total over its cases and the
**cost per passed case**, that total over the cases that passed (failures' spending included:
what one pass costs); "—" when the total is unknown or no case passed.

Budgets: a case's ``budget: {max_cost_usd, max_tokens}`` is its ``Budget`` verdict
(:func:`judge_budget`); a run's ``--max-cost`` and ``--max-tokens`` hold each provider's run of
the cases (:func:`run_budget_problems`). Tokens are input plus output (cache reads and writes are
part of the input, reasoning part of the output). **An unknown cost fails a cost budget**: a gate
that could not price what it ran has not shown that it stayed within its budget. Prices a run
adds come from a ``--prices`` file (:func:`prices_file`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core.providers.base import TokenUsage
from ..core.providers.pricing import FREE_SOURCES, ServedRequest, price_request
from .dataset import Budget
from .judges import BUDGET, Verdict

if TYPE_CHECKING:
    import pandas as pd

    from .runner import CaseResult, TurnRecord

__all__ = [
    "UNKNOWN",
    "ProviderCost",
    "budget_lines",
    "case_cost_lines",
    "cost_frame",
    "cost_line",
    "cost_rows",
    "judge_budget",
    "money_text",
    "prices_file",
    "provider_cost",
    "run_budget_problems",
    "unpriced_reason",
    "unsaid_cost",
]

UNKNOWN = "—"
"""How an unknown cost (or a figure computed from one) is shown."""
UNPRICED = "cost could not be priced"
"""How every message about an unknown cost starts (the diagnostics read it)."""
OPTIONS = ("max_cost_usd", "max_tokens")
"""The budgets' names in messages; the command line names them ``--max-cost`` and
``--max-tokens``."""


def money_text(usd: float | None) -> str:
    """``$12.50``, ``$0.01``, ``$0.0123``, ``$0.000045``, ``$0.00``; "—" for an unknown cost
    (``None``, or NaN as the DataFrames hold it)."""
    if usd is None or math.isnan(usd):
        return UNKNOWN
    size = abs(usd)
    if size == 0 or size >= 1:
        return f"${usd:,.2f}"
    if size < 0.000001:
        return "<$0.000001"
    digits = f"{usd:.4f}" if size >= 0.01 else f"{usd:.6f}"
    whole, _, decimals = digits.partition(".")
    return f"${whole}.{decimals.rstrip('0').ljust(2, '0')}"


def unsaid_cost(
    providers: Sequence[Any], prices: Mapping[str, Any] | None = None
) -> tuple[float | None, list[str]]:
    """The cost and price sources of a turn whose ``done`` said none (an error ended it, or it
    asked no model), from the ``providers`` it asked (each with a ``label`` and a ``name``):
    nothing when it asked none, or only providers that cost nothing (offline, scripted, local,
    not given a price in ``prices``); else unknown (``None``)."""
    sources = set()
    for provider in providers:
        label, name = str(provider.label), str(provider.name)
        if prices and (label in prices or label.partition(":")[2] in prices):
            return None, []  # priced per token, and the tokens of a broken turn are not known
        priced = price_request(ServedRequest(label, name, TokenUsage(), 0.0))
        if priced.source not in FREE_SOURCES.values():
            return None, []
        sources.add(priced.source)
    return 0.0, sorted(sources)


def unpriced_reason(turns: Sequence[TurnRecord]) -> str | None:
    """Why the turns' cost is unknown (``no price for openai:oracle``), or None when it is not."""
    models: dict[str, None] = {}
    ended: list[str] = []
    for number, turn in enumerate(turns, start=1):
        if turn.cost_usd is not None:
            continue
        if turn.cost is None:
            ended.append(f"turn {number} ended ({turn.error or 'without a done event'})")
        else:
            models.update(dict.fromkeys(str(m) for m in turn.cost.get("models") or ()))
    parts = []
    if models:
        parts.append(f"no price for {', '.join(models)}")
    if ended:
        parts.append(", ".join(ended) + " before it said what it cost")
    return "; ".join(parts) or None


@dataclass(frozen=True)
class ProviderCost:
    """What one provider's cases used and cost."""

    provider: str
    cases: int
    passed: int
    unpriced: int  # cases whose cost is unknown
    tokens: int
    cost_usd: float | None  # None when any case's is unknown
    seconds: float
    sources: tuple[str, ...]  # where the prices came from
    reason: str | None = None  # why the cost is unknown (the first case's reason)

    @property
    def per_passed_case(self) -> float | None:
        """The cost over the cases that passed; None when it is unknown or none passed."""
        if self.cost_usd is None or not self.passed:
            return None
        return self.cost_usd / self.passed


def provider_cost(provider: str, results: Sequence[CaseResult]) -> ProviderCost:
    """``results``' (one provider's) tokens, cost, cost per passed case and seconds."""
    costs = [r.cost_usd for r in results]
    unpriced = [r for r in results if r.cost_usd is None]
    return ProviderCost(
        provider=provider,
        cases=len(results),
        passed=sum(r.passed for r in results),
        unpriced=len(unpriced),
        tokens=sum(r.tokens for r in results),
        cost_usd=None if unpriced else float(sum(c for c in costs if c is not None)),
        seconds=sum(r.seconds for r in results),
        sources=tuple(sorted({s for r in results for s in r.cost_sources})),
        reason=unpriced_reason(unpriced[0].turns) if unpriced else None,
    )


def _by_provider(
    results: Sequence[CaseResult], providers: Sequence[str] | None = None
) -> dict[str, list[CaseResult]]:
    labels = list(providers or dict.fromkeys(r.provider for r in results))
    return {p: [r for r in results if r.provider == p] for p in labels}


# -- budgets -------------------------------------------------------------------------------------


def _over(
    tokens: int,
    cost: float | None,
    reason: str | None,
    *,
    max_cost_usd: float | None,
    max_tokens: int | None,
    names: Sequence[str],
) -> list[str]:
    """What went over a budget, one text each: ``1,234 tokens, 234 over max_tokens 1,000``."""
    problems = []
    if max_tokens is not None and tokens > max_tokens:
        problems.append(
            f"{tokens:,} tokens, {tokens - max_tokens:,} over {names[1]} {max_tokens:,}"
        )
    if max_cost_usd is not None:
        limit = f"{names[0]} {money_text(max_cost_usd)}"
        if cost is None:
            problems.append(
                f"{UNPRICED} ({reason or 'no price'}): an unknown cost does not pass {limit}"
            )
        elif cost > max_cost_usd:
            problems.append(
                f"cost {money_text(cost)}, {money_text(cost - max_cost_usd)} over {limit}"
            )
    return problems


def judge_budget(budget: Budget, result: CaseResult) -> Verdict:
    """The ``Budget`` verdict of a case with a ``budget``: its turns' tokens and cost within it
    (an unknown cost fails a cost budget)."""
    reasons = _over(
        result.tokens,
        result.cost_usd,
        unpriced_reason(result.turns),
        max_cost_usd=budget.max_cost_usd,
        max_tokens=budget.max_tokens,
        names=OPTIONS,
    )
    return Verdict(BUDGET, not reasons, 0.0 if reasons else 1.0, tuple(reasons))


def _run_reason(cost: ProviderCost) -> str | None:
    """Why a run's cost is unknown: ``11 of 11 cases; no price for openai:oracle``."""
    return cost.reason and f"{cost.unpriced} of {cost.cases} cases; {cost.reason}"


def run_budget_problems(
    results: Sequence[CaseResult],
    providers: Sequence[str] | None = None,
    *,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    names: Sequence[str] = OPTIONS,
) -> list[str]:
    """Each provider's run over a run budget, one text each (``offline: 1,234 tokens, 234 over
    max_tokens 1,000``); empty when every run stayed within. ``names`` are the budgets' names
    in the texts (the command line's ``--max-cost``, ``--max-tokens``)."""
    verdicts = _run_verdicts(results, providers, max_cost_usd, max_tokens, names)
    return [f"{cost.provider}: {problem}" for cost, over in verdicts for problem in over]


def _run_verdicts(
    results: Sequence[CaseResult],
    providers: Sequence[str] | None,
    max_cost_usd: float | None,
    max_tokens: int | None,
    names: Sequence[str],
) -> list[tuple[ProviderCost, list[str]]]:
    """Each provider's run cost and what it went over (empty: within)."""
    verdicts = []
    for provider, own in _by_provider(results, providers).items():
        cost = provider_cost(provider, own)
        over = _over(
            cost.tokens,
            cost.cost_usd,
            _run_reason(cost),
            max_cost_usd=max_cost_usd,
            max_tokens=max_tokens,
            names=names,
        )
        verdicts.append((cost, list(over)))
    return verdicts


def budget_lines(
    results: Sequence[CaseResult],
    providers: Sequence[str] | None = None,
    *,
    max_cost_usd: float | None = None,
    max_tokens: int | None = None,
    names: Sequence[str] = OPTIONS,
) -> list[str]:
    """``Budget: max_cost_usd $0.01, max_tokens 100,000 per provider`` and a line per provider:
    its cost and tokens, ``within`` or ``OVER`` (and why); empty without a budget."""
    if max_cost_usd is None and max_tokens is None:
        return []
    limits = []
    if max_cost_usd is not None:
        limits.append(f"{names[0]} {money_text(max_cost_usd)}")
    if max_tokens is not None:
        limits.append(f"{names[1]} {max_tokens:,}")
    lines = [f"Budget: {', '.join(limits)} per provider"]
    for cost, over in _run_verdicts(results, providers, max_cost_usd, max_tokens, names):
        verdict = "OVER (" + "; ".join(over) + ")" if over else "within"
        lines.append(
            f"  {cost.provider}: {money_text(cost.cost_usd)}, {cost.tokens:,} tokens: {verdict}"
        )
    return lines


# -- reports -------------------------------------------------------------------------------------


def cost_line(results: Sequence[CaseResult]) -> str:
    """``Cost: $0.0123 for 11 cases, $0.0021 per passed case (genai-prices 0.0.40)``, or with
    "—" and why for a cost that could not be priced."""
    cost = provider_cost("", results)
    per_pass = f"{money_text(cost.per_passed_case)} per passed case"
    if cost.cost_usd is None:
        return (
            f"Cost: {UNKNOWN} ({cost.unpriced} of {cost.cases} cases could not be priced: "
            f"{cost.reason}), {per_pass}"
        )
    if not cost.passed:
        per_pass += " (none passed)"
    sources = f" ({', '.join(cost.sources)})" if cost.sources else ""
    return f"Cost: {money_text(cost.cost_usd)} for {cost.cases} cases, {per_pass}{sources}"


def cost_rows(
    by_provider: Mapping[str, Sequence[CaseResult]], width: int, title_width: int = 20
) -> list[str]:
    """The comparison's rows: each provider's ``Cost`` and ``Cost/passed case``, and how many
    of its cases could not be priced (only when any could not)."""
    costs = [provider_cost(p, rs) for p, rs in by_provider.items()]
    rows = [
        ("Cost", [money_text(c.cost_usd) for c in costs]),
        ("Cost/passed case", [money_text(c.per_passed_case) for c in costs]),
    ]
    if any(c.unpriced for c in costs):
        rows.append(("Unpriced cases", [str(c.unpriced) for c in costs]))
    return [
        f"{title:<{title_width}}" + "".join(f"{cell:>{width}}" for cell in cells)
        for title, cells in rows
    ]


def case_cost_lines(results: Sequence[CaseResult], *, timings: bool = True) -> list[str]:
    """``Per case:`` and a row per (case, provider): status, tokens, cost and (``timings``)
    seconds."""
    provider_width = max([10, *(len(r.provider) + 2 for r in results)])
    header = f"{'Case':<40}{'Provider':<{provider_width}}{'Status':>10}{'Tokens':>10}{'Cost':>12}"
    lines = ["Per case:", header + (f"{'Seconds':>9}" if timings else "")]
    for r in results:
        row = (
            f"{r.case.name[:39]:<40}{r.provider:<{provider_width}}{r.status.upper():>10}"
            f"{r.tokens:>10}{money_text(r.cost_usd):>12}"
        )
        lines.append(row + (f"{r.seconds:>9.2f}" if timings else ""))
    return lines


COST_COLUMNS = [
    "provider",
    "cases",
    "passed",
    "tokens",
    "cost_usd",
    "cost_per_passed_case",
    "unpriced",
    "seconds",
    "sources",
]


def cost_frame(results: Sequence[CaseResult]) -> pd.DataFrame:
    """One row per provider: cases, passed, tokens, ``cost_usd``, ``cost_per_passed_case``
    (NaN where the report shows "—": unknown, or no case passed), the cases that could not be
    priced, the cases' seconds and the price sources."""
    import pandas as pd

    def value(number: float | None) -> float:
        return float("nan") if number is None else number

    rows: list[dict[str, Any]] = []
    for provider, own in _by_provider(results).items():
        cost = provider_cost(provider, own)
        rows.append(
            {
                "provider": provider,
                "cases": cost.cases,
                "passed": cost.passed,
                "tokens": cost.tokens,
                "cost_usd": value(cost.cost_usd),
                "cost_per_passed_case": value(cost.per_passed_case),
                "unpriced": cost.unpriced,
                "seconds": cost.seconds,
                "sources": ", ".join(cost.sources),
            }
        )
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def prices_file(path: str) -> dict[str, Any]:
    """The ``--prices`` file's mapping, checked as the ``prices`` setting (ValueError: why not)."""
    import yaml

    from ..core.settings import load_settings

    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise ValueError(f"cannot read --prices {path}: {error.strerror or error}") from None
    except yaml.YAMLError as error:
        raise ValueError(f"--prices {path} is not valid YAML: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(
            f"--prices {path} must be a mapping of provider labels or model names to prices "
            "({input, output, ...} in USD per million tokens)"
        )
    load_settings(prices=data)  # ChatConfigurationError (a ValueError) names the key at fault
    return data

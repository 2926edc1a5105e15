"""The figures a team comparing models reads beside the pass rates: the tool calls the project
accepted, the cases whose query named the right manager, and the time and tokens per turn.

Only the model's own calls count: the one-row probe small-model mode sends for measurement units
(an id starting ``constrained_probe_``) is the engine's, not a decision of the model.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..core.project.tools import TOOLS
from ..core.providers.constrained import PROBE
from .dataset import Expectations, ToolCallExpectation
from .judges import Resolver, TurnData, call_matches

if TYPE_CHECKING:
    from .runner import CaseResult

__all__ = [
    "RunFigures",
    "call_counts",
    "calls_text",
    "figures_lines",
    "model_calls",
    "names_expected_managers",
    "percent_text",
    "run_figures",
    "speed_text",
]


def model_calls(turn: TurnData) -> list[dict[str, Any]]:
    """The turn's tool calls the model made: every call but small-model mode's unit probes."""
    return [c for c in turn.tool_calls if not str(c.get("id") or "").startswith(PROBE)]


def _rejected(result: Any) -> bool:
    return isinstance(result, Mapping) and result.get("status") == "error"


def call_counts(turns: Sequence[TurnData]) -> tuple[int, int]:
    """``(made, accepted)``: the model's calls that got a result, and those whose result is not
    an error (``status: "error"``). A call answered twice (a mutation pending, then executed)
    is judged by its last result."""
    made = accepted = 0
    for turn in turns:
        results = {str(item.get("id")): item.get("result") for item in turn.tool_results}
        for call in model_calls(turn):
            key = str(call.get("id"))
            if key in results:
                made += 1
                accepted += not _rejected(results[key])
    return made, accepted


def names_expected_managers(
    expectations: Expectations, turns: Sequence[TurnData], resolve: Resolver | None = None
) -> bool | None:
    """Whether every manager the expectations' ``tool_calls`` name for a ``query`` is named by at
    least one of the model's query calls (names resolved as the tool-selection judge resolves
    them: ``PartManager`` is ``Part``); None when they name no manager for a query."""
    wanted = [
        ToolCallExpectation(TOOLS.query.name, {"manager": expected.args_contain["manager"]})
        for expected in expectations.tool_calls or ()
        if expected.name == TOOLS.query.name and "manager" in expected.args_contain
    ]
    if not wanted:
        return None
    calls = [c for turn in turns for c in model_calls(turn)]
    return all(
        any(call_matches(w, c["name"], c.get("args") or {}, resolve) for c in calls) for w in wanted
    )


@dataclass(frozen=True)
class RunFigures:
    """What one provider's scored cases add up to (unscored cases count nowhere, as in the
    pass rates)."""

    calls_made: int
    calls_accepted: int
    manager_cases: int  # cases whose expectations name a manager for a query
    right_manager: int  # ... whose query calls named it
    turn_seconds: tuple[float, ...]
    output_tokens: int

    @property
    def accepted_rate(self) -> float | None:
        """Accepted calls over calls made; None when no call was made."""
        return self.calls_accepted / self.calls_made if self.calls_made else None

    @property
    def right_manager_rate(self) -> float | None:
        """Cases with the right manager over the cases that name one; None when none does."""
        return self.right_manager / self.manager_cases if self.manager_cases else None

    @property
    def seconds_per_turn(self) -> float | None:
        """The median seconds of a turn (a ``chat.ask``); None when no turn ran."""
        return statistics.median(self.turn_seconds) if self.turn_seconds else None

    @property
    def tokens_per_second(self) -> float | None:
        """Output tokens over the seconds of every turn; None when the provider counted no
        output tokens (offline, a script) or no time passed."""
        seconds = sum(self.turn_seconds)
        return self.output_tokens / seconds if self.output_tokens and seconds > 0 else None


def run_figures(results: Sequence[CaseResult]) -> RunFigures:
    """The figures of ``results`` (one provider's) over their scored cases."""
    scored = [r for r in results if r.status != "unscored"]
    made = accepted = 0
    for r in scored:
        case_made, case_accepted = call_counts(r.turns)
        made += case_made
        accepted += case_accepted
    named = [r.right_manager for r in scored if r.right_manager is not None]
    return RunFigures(
        calls_made=made,
        calls_accepted=accepted,
        manager_cases=len(named),
        right_manager=sum(named),
        turn_seconds=tuple(t.seconds for r in scored for t in r.turns),
        output_tokens=sum(r.usage["output_tokens"] for r in scored),
    )


def percent_text(rate: float | None) -> str:
    """``94%``; ``-`` for None. A share short of all (524 of 525) never reads ``100%``, nor a
    share above none ``0%``."""
    if rate is None:
        return "-"
    whole = round(rate * 100)
    if 0 < rate < 1:
        whole = min(max(whole, 1), 99)
    return f"{whole}%"


def calls_text(figures: RunFigures) -> str:
    """``52 made, 49 accepted by the project (94%); right manager in 9 of 11 cases``."""
    manager = (
        f"right manager in {figures.right_manager} of {figures.manager_cases} cases"
        if figures.manager_cases
        else "no case names a manager"
    )
    return (
        f"{figures.calls_made} made, {figures.calls_accepted} accepted by the project "
        f"({percent_text(figures.accepted_rate)}); {manager}"
    )


def speed_text(figures: RunFigures) -> str:
    """``0.05 s per turn (median), 12.3 output tokens/s`` (``n/a`` for what was not measured)."""
    per_turn, rate = figures.seconds_per_turn, figures.tokens_per_second
    return (
        f"{'n/a' if per_turn is None else f'{per_turn:.2f}'} s per turn (median), "
        f"{'n/a' if rate is None else f'{rate:.1f}'} output tokens/s"
    )


def figures_lines(figures: RunFigures, *, timings: bool = True) -> list[str]:
    """``Calls: ...`` and (``timings``) ``Speed: ...``, the lines under a report's outcomes.

    ``timings=False`` leaves out the speed, which differs from run to run.
    """
    lines = [f"Calls: {calls_text(figures)}"]
    if timings:
        lines.append(f"Speed: {speed_text(figures)}")
    return lines

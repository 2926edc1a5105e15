"""The Python API: :func:`run` and :func:`compare` return :class:`EvalResults`."""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib.util
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .costs import UNKNOWN, cost_frame, money_text, run_budget_problems
from .dataset import Case, DatasetError, load_dataset, parse_cases, resolve_datasets
from .html_report import html_report, write_html_report
from .report import (
    case_frame,
    compare_report,
    figures_frame,
    single_report,
    summary_frame,
    write_trace,
)
from .runner import KNOWLEDGE_MODES, CaseResult, ResultCallback, run_cases
from .trajectory import trajectory_frame

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "EvalResults",
    "compare",
    "compare_async",
    "knowledge_modes",
    "run",
    "run_async",
    "select_cases",
]


@dataclass
class EvalResults:
    """The results of one run: a :class:`CaseResult` per (provider, case), providers in order."""

    results: list[CaseResult]
    providers: list[str]

    @property
    def scored(self) -> int:
        """How many results were scored (passed or failed, not unscored)."""
        return sum(r.status != "unscored" for r in self.results)

    @property
    def unscored(self) -> int:
        """How many results could not be scored (provider or chat unavailable)."""
        return sum(r.status == "unscored" for r in self.results)

    @property
    def passed(self) -> bool:
        """No case failed and at least one was scored: a run that scored nothing proves nothing."""
        return self.scored > 0 and all(r.status != "fail" for r in self.results)

    @property
    def summary(self) -> pd.DataFrame:
        """Pass counts and rates per (provider, dimension), with Overall."""
        return summary_frame(self.results)

    @property
    def cases(self) -> pd.DataFrame:
        """One row per (provider, case): status, cost, failure category, provider note, turns,
        the calls the project accepted and whether a query named the expected manager."""
        return case_frame(self.results)

    @property
    def costs(self) -> pd.DataFrame:
        """One row per provider: cases, passed, tokens, ``cost_usd`` and
        ``cost_per_passed_case`` (NaN where reports show "—": a cost that could not be priced,
        or no case passed), the unpriced cases, seconds and price sources."""
        return cost_frame(self.results)

    def over_budget(
        self, max_cost_usd: float | None = None, max_tokens: int | None = None
    ) -> list[str]:
        """Each provider's run over a budget, one text each (empty when every run stayed
        within): tokens are input plus output, and a cost that could not be priced fails a cost
        budget. A case's own ``budget`` is its ``Budget`` verdict instead."""
        return run_budget_problems(
            self.results, self.providers, max_cost_usd=max_cost_usd, max_tokens=max_tokens
        )

    @property
    def figures(self) -> pd.DataFrame:
        """One row per provider: calls made and accepted by the project, cases with the right
        manager, median seconds per turn and output tokens per second (the report's
        ``Calls:`` and ``Speed:`` figures)."""
        return figures_frame(self.results)

    def report(self, verbose: bool = False, timings: bool = True) -> str:
        """The GeneralManager-style text report (a comparison for several providers).

        ``verbose`` adds failures and next actions; ``timings=False`` leaves out the speed and
        the Seconds column so that the text is the same on every run (notebook outputs checked by
        nbval).
        """
        if len(self.providers) > 1:
            return compare_report(self.results, self.providers, verbose=verbose, timings=timings)
        return single_report(self.results, verbose=verbose, timings=timings)

    def html(self, timings: bool = True) -> str:
        """The report as one self-contained HTML document."""
        return html_report(self.results, self.providers, timings=timings)

    def write_html(self, path: str | Path, timings: bool = True) -> None:
        """Write :meth:`html` to ``path``."""
        write_html_report(self.results, path, self.providers, timings=timings)

    def write_trace(self, path: str | Path) -> None:
        """One sorted-key JSON object per case (GeneralManager's ``--trace-jsonl`` records)."""
        write_trace(self.results, path)

    def result(self, case: str, provider: str | None = None) -> CaseResult:
        """The result of ``case`` (by name) for ``provider`` (a label; default the first)."""
        label = provider or self.providers[0]
        for result in self.results:
            if result.case.name == case and result.provider == label:
                return result
        known = sorted({r.case.name for r in self.results})
        raise KeyError(
            f"no result for case {case!r} and provider {label!r}; providers: {self.providers}, "
            f"cases: {len(known)} (e.g. {known[:3]})"
        )

    def trajectory(self, case: str, provider: str | None = None) -> pd.DataFrame:
        """Every step of one case, turn by turn: the question, tool calls, results, answer."""
        return trajectory_frame(self.result(case, provider))

    def plot(self, **kwargs: Any) -> Any:
        """Horizontal bars of the pass rate per dimension, a bar per provider (needs matplotlib).

        Dimensions read top-down in the report's order (Overall last); ``kwargs`` go to
        ``DataFrame.plot.barh``. Returns the matplotlib Axes.
        """
        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError("EvalResults.plot() needs matplotlib: pip install 'gmchat_nb[plot]'")
        summary = self.summary
        order = list(dict.fromkeys(summary["dimension"]))
        table = summary.pivot(index="dimension", columns="provider", values="rate")
        table = table.reindex(index=order[::-1], columns=self.providers)
        axes = table.plot.barh(**{"xlim": (0, 1), **kwargs})
        handles, labels = axes.get_legend_handles_labels()  # barh lists the last column on top
        axes.legend(handles[::-1], labels[::-1], loc="upper left", bbox_to_anchor=(1.01, 1))
        axes.set_xlabel("pass rate")
        axes.set_ylabel("")
        return axes

    def plot_cost(self, **kwargs: Any) -> Any:
        """Tokens and cost per passed case, a bar per provider side by side (needs matplotlib).

        Each bar is labelled with its value; a cost that could not be priced, or a provider
        that passed no case, has no bar and reads "— (not priced)" or "— (no case passed)".
        ``kwargs`` go to
        ``matplotlib.pyplot.subplots``. Returns the two Axes.
        """
        if importlib.util.find_spec("matplotlib") is None:
            raise ImportError(
                "EvalResults.plot_cost() needs matplotlib: pip install 'gmchat_nb[plot]'"
            )
        import matplotlib.pyplot as plt
        import pandas as pd

        frame = self.costs.set_index("provider").reindex(self.providers[::-1])  # first on top
        passed = frame["passed"].where(frame["passed"] > 0)
        panels = (
            ("tokens per passed case", frame["tokens"] / passed, _count_text),
            ("cost per passed case (USD)", frame["cost_per_passed_case"], money_text),
        )
        size = (10, 1.2 + 0.5 * len(frame))
        _, axes = plt.subplots(1, 2, sharey=True, **{"figsize": size, "layout": "tight", **kwargs})
        for ax, (title, values, text) in zip(axes, panels, strict=True):
            numbers = [None if pd.isna(v) else float(v) for v in values]
            ax.barh(list(frame.index), [v or 0.0 for v in numbers])
            for row, (value, wins) in enumerate(zip(numbers, frame["passed"], strict=True)):
                why = "no case passed" if not wins else "not priced"
                label = f"{UNKNOWN} ({why})" if value is None else text(value)
                ax.text(value or 0.0, row, f" {label}", va="center")
            top = max((v for v in numbers if v is not None), default=0.0)
            ax.set_xlim(0, top * 1.4 or 1.0)  # room for the labels; 0..1 when all are 0
            ax.set_title(title)
        return axes

    def __repr__(self) -> str:
        # without timings: a notebook cell showing the results stays the same from run to run
        return self.report(timings=False)


def knowledge_modes(value: str | Sequence[str] | None) -> list[str] | None:
    """The recall modes a run compares, checked: ``"off,hybrid"`` or a list of modes
    (``ValueError`` naming a mode that is not one); ``None`` for the settings' own."""
    if value is None:
        return None
    modes = value.split(",") if isinstance(value, str) else list(value)
    modes = [str(mode).strip() for mode in modes if str(mode).strip()]
    if not modes:
        raise ValueError("knowledge needs one or more modes: " + ", ".join(KNOWLEDGE_MODES))
    for mode in modes:
        if mode not in KNOWLEDGE_MODES:
            raise ValueError(
                f"unknown knowledge mode {mode!r}; one of {', '.join(KNOWLEDGE_MODES)}"
            )
    if len(set(modes)) != len(modes):
        raise ValueError(f"knowledge mode named twice: {', '.join(modes)}")
    return modes


def _count_text(value: float) -> str:
    return f"{value:,.0f}"


def select_cases(
    dataset: Any = None,
    *,
    tier: int | None = None,
    tags: Sequence[str] = (),
) -> list[Case]:
    """Cases from dataset names/paths, a list of case mappings, or Case objects; then filtered."""
    cases: list[Case] = []
    if isinstance(dataset, list) and dataset and all(isinstance(c, Case) for c in dataset):
        cases = list(dataset)
    elif isinstance(dataset, list) and dataset and isinstance(dataset[0], Mapping):
        cases = parse_cases(dataset, "inline")
    elif isinstance(dataset, Mapping):  # {cases, knowledge}: a dataset with its knowledge
        cases = parse_cases(dataset, "inline", Path.cwd())
    else:
        paths = resolve_datasets(dataset)
        if not paths:
            raise DatasetError("no datasets found")
        for path in paths:
            cases.extend(load_dataset(path))
    if tier is not None:
        cases = [c for c in cases if c.tier == tier]
    for tag in tags:
        cases = [c for c in cases if tag in c.tags]
    return cases


async def compare_async(
    providers: Sequence[Any],
    dataset: Any = None,
    *,
    tier: int | None = None,
    tags: Sequence[str] = (),
    concurrency: int = 4,
    model: str | None = None,
    project: Any = None,
    exposed: Sequence[str] | None = None,
    provider_config: Mapping[str, Any] | None = None,
    on_result: ResultCallback | None = None,
    strategy: str | None = None,
    prices: Mapping[str, Any] | None = None,
    knowledge: str | Sequence[str] | None = None,
) -> EvalResults:
    """Run the selected cases against every provider (see :func:`compare`)."""
    cases = select_cases(dataset, tier=tier, tags=tags)
    config = dict(provider_config or {})
    if model:
        config["model"] = model
    results = await run_cases(
        cases,
        list(providers),
        concurrency=concurrency,
        provider_config=config,
        project=project,
        exposed=exposed,
        on_result=on_result,
        strategy=strategy,
        prices=prices,
        knowledge=knowledge_modes(knowledge),
    )
    labels = list(dict.fromkeys(r.provider for r in results)) or [str(p) for p in providers]
    return EvalResults(results, labels)


async def run_async(dataset: Any = None, provider: Any = "offline", **options: Any) -> EvalResults:
    """Run ``dataset`` against one provider (see :func:`run`); for a running event loop."""
    return await compare_async([provider], dataset, **options)


def _sync(coro: Any) -> Any:
    """Run ``coro`` to its end from synchronous code.

    Inside a running loop (a Jupyter cell), the run gets its own loop on a worker thread and the
    cell waits for it, so ``evals.run(...)`` works in a notebook as in a script.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass  # no loop: run below, outside this handler, so errors do not chain onto it
    else:
        with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="gmchat-evals") as pool:
            return pool.submit(asyncio.run, coro).result()
    return asyncio.run(coro)


def run(dataset: Any = None, provider: Any = "offline", **options: Any) -> EvalResults:
    """Run ``dataset`` (names, paths, inline cases; default all) against one provider.

    Options: ``tier``, ``tags``, ``concurrency`` (4), ``model``, ``project`` (a demo name or a
    GraphQL URL for every case), ``exposed`` (the managers the chat may see there),
    ``provider_config``, ``strategy`` (``"legacy"``, the default, or ``"planned"``: planned
    orchestration; a case's own ``strategy`` key wins), ``prices`` (the chat's ``prices``
    setting, ``{label or model: {input, output, ...}}`` in USD per million tokens: what the
    turns' costs use where genai-prices has no price, or another one), ``knowledge`` (the recall
    mode, ``"off"``, ``"keyword"`` or ``"hybrid"``, or several to compare them, a column each;
    default the settings' ``knowledge``) and ``on_result`` (called with each
    :class:`CaseResult` as its case finishes, e.g. to drive a progress bar). ``dataset`` may be
    a mapping of ``cases`` and ``knowledge``, as a dataset file may.
    """
    return _sync(run_async(dataset, provider, **options))  # type: ignore[no-any-return]


def compare(providers: Sequence[Any], dataset: Any = None, **options: Any) -> EvalResults:
    """Run the same cases against several providers (a column per provider in the report);
    the options are :func:`run`'s."""
    return _sync(compare_async(providers, dataset, **options))  # type: ignore[no-any-return]

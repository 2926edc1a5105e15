"""The Python API: :func:`run` and :func:`compare` return :class:`EvalResults`."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .dataset import Case, DatasetError, load_dataset, parse_cases, resolve_datasets
from .report import case_frame, compare_report, single_report, summary_frame, write_trace
from .runner import CaseResult, run_cases

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["EvalResults", "compare", "compare_async", "run", "run_async", "select_cases"]


@dataclass
class EvalResults:
    results: list[CaseResult]
    providers: list[str]

    @property
    def passed(self) -> bool:
        return all(r.status != "fail" for r in self.results)

    @property
    def summary(self) -> pd.DataFrame:
        return summary_frame(self.results)

    @property
    def cases(self) -> pd.DataFrame:
        return case_frame(self.results)

    def report(self, verbose: bool = False) -> str:
        if len(self.providers) > 1:
            return compare_report(self.results, self.providers)
        return single_report(self.results, verbose=verbose)

    def write_trace(self, path: str | Path) -> None:
        write_trace(self.results, path)

    def plot(self, **kwargs: Any) -> Any:
        """A bar chart of pass rates per dimension (needs matplotlib)."""
        table = self.summary.pivot(index="dimension", columns="provider", values="rate")
        return table.plot.barh(**kwargs)

    def __repr__(self) -> str:
        return self.report()


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
    project: str | None = None,
    provider_config: Mapping[str, Any] | None = None,
) -> EvalResults:
    cases = select_cases(dataset, tier=tier, tags=tags)
    config = dict(provider_config or {})
    if model:
        config["model"] = model
    results = await run_cases(
        cases, list(providers), concurrency=concurrency, provider_config=config, project=project
    )
    labels = list(dict.fromkeys(r.provider for r in results)) or [str(p) for p in providers]
    return EvalResults(results, labels)


async def run_async(dataset: Any = None, provider: Any = "offline", **options: Any) -> EvalResults:
    return await compare_async([provider], dataset, **options)


def _sync(coro: Any) -> Any:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    coro.close()
    raise RuntimeError("an event loop is running here: use `await run_async(...)`")


def run(dataset: Any = None, provider: Any = "offline", **options: Any) -> EvalResults:
    """Run ``dataset`` (names, paths, inline cases; default all) against one provider."""
    return _sync(run_async(dataset, provider, **options))  # type: ignore[no-any-return]


def compare(providers: Sequence[Any], dataset: Any = None, **options: Any) -> EvalResults:
    """Run the same cases against several providers (a column per provider in the report)."""
    return _sync(compare_async(providers, dataset, **options))  # type: ignore[no-any-return]

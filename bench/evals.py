"""Benchmark of the eval runner: cases per second for 1 and 4 concurrent providers.

Run from the repository root::

    .venv/bin/python bench/evals.py

Two workloads over all datasets under ``evals/``, no network beyond nothing at all:

* CPU-bound: the ``offline`` provider, once alone and once as four copies compared side by side
  (``compare``), with the runner's default concurrency bound of 4. This is the runner's own
  overhead plus the demo project's queries: what a CI gate pays before any model time. Once
  more with ``strategy="planned"`` (the offline model plans, executes and synthesizes).
* Model-bound: the committed oracle cassette replayed with 50 ms added before every response,
  standing in for a hosted model's latency, at concurrency 1 (the baseline, how GeneralManager's
  runner works) and 4. This is where running cases concurrently pays.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import describe  # noqa: E402  (bench/ is on sys.path when run)

from gmchat_nb import evals  # noqa: E402
from gmchat_nb.core.providers.base import (  # noqa: E402
    BaseLLMProvider,
    Message,
    ProviderEvent,
    StructuredReply,
    ToolDefinition,
)
from gmchat_nb.core.providers.replay import ReplayProvider  # noqa: E402

CASSETTE = ROOT / "evals" / "cassettes" / "oracle-openai.jsonl"
LATENCY = 0.05


class SlowReplay(BaseLLMProvider):
    """The oracle cassette, answering each request after ``LATENCY`` seconds."""

    name = "slow-replay"

    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__(config)
        self.inner = ReplayProvider({"path": str(CASSETTE)})

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        await asyncio.sleep(LATENCY)
        async for event in self.inner.complete(messages, tools):
            yield event

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        # Forwarded with the same latency: the base class's default would turn a planner's
        # structured request into a streamed one the cassette never recorded.
        await asyncio.sleep(LATENCY)
        return await self.inner.complete_structured(messages, response_schema, name=name)


def row(label: str, results: evals.EvalResults, seconds: float, baseline: float | None) -> None:
    cases = len(results.results)
    rate = sum(r.passed for r in results.results) / cases
    speed = cases / seconds
    ratio = f"{speed / baseline:.2f}x" if baseline else "1.00x (baseline)"
    print(f"| {label} | {cases} | {seconds:.2f} s | {speed:.1f} | {ratio} | {rate:.0%} |")


def timed(function: Any, *args: Any, **kwargs: Any) -> tuple[evals.EvalResults, float]:
    start = time.perf_counter()
    results = function(*args, **kwargs)
    return results, time.perf_counter() - start


def main() -> None:
    print("# gmchat_nb eval runner benchmark\n")
    print(f"{describe()} (before)\n")
    print("| workload | cases run | wall time | cases/s | vs baseline | pass rate |")
    print("|---|---:|---:|---:|---:|---:|")
    results, seconds = timed(evals.run)
    baseline = len(results.results) / seconds
    row("offline, 1 provider", results, seconds, None)
    results, seconds = timed(evals.compare, ["offline"] * 4)
    row("offline, 4 providers", results, seconds, baseline)
    results, seconds = timed(evals.run, strategy="planned")
    row("offline, 1 provider, planned", results, seconds, baseline)
    results, seconds = timed(evals.run, provider=SlowReplay, concurrency=1)
    baseline = len(results.results) / seconds
    row("oracle + 50 ms/request, concurrency 1", results, seconds, None)
    results, seconds = timed(evals.run, provider=SlowReplay, concurrency=4)
    row("oracle + 50 ms/request, concurrency 4", results, seconds, baseline)
    results, seconds = timed(evals.compare, [SlowReplay] * 4, concurrency=4)
    row("oracle + 50 ms/request, 4 providers", results, seconds, baseline)


if __name__ == "__main__":
    main()

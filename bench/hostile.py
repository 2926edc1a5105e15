"""Benchmark of hostile input: what a megabyte argument costs each tool, and what many unique
long names leave allocated.

Run from the repository root::

    .venv/bin/python bench/hostile.py            # ~1 minute
    .venv/bin/python bench/hostile.py --quick    # a smoke run
    PYTHONPATH=<another checkout> .venv/bin/python bench/hostile.py --timings-only   # its tools

1. Each tool called with a 1 MB string in one argument (a name, a search query, a filter key, a
   field, a sort key, a mutation and its input key, the tool's own name), a new string every run,
   median of the runs; baseline in the same run: the same call with a short string.
2. Memory still allocated (tracemalloc) after many calls with unique 20–100 KB names, every tool
   path alike, after one warm-up call per path.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import describe, load

import gmchat_nb

MB = 1 << 20
Call = Callable[[str], tuple[str, dict[str, Any]]]
CALLS: dict[str, Call] = {
    "search_managers, the query": lambda s: ("search_managers", {"query": s}),
    "get_manager_schema, the manager": lambda s: ("get_manager_schema", {"manager": s}),
    "find_path, a manager": lambda s: ("find_path", {"from_manager": "Part", "to_manager": s}),
    "query, the manager": lambda s: ("query", {"manager": s, "fields": ["name"]}),
    "query, a field": lambda s: ("query", {"manager": "Part", "fields": ["name", s]}),
    "query, a filter key": lambda s: (
        "query",
        {"manager": "Part", "fields": ["name"], "filters": {s: 1}},
    ),
    "query, a sort key": lambda s: (
        "query",
        {"manager": "Part", "fields": ["name"], "order_by": [s]},
    ),
    "mutate, the mutation": lambda s: ("mutate", {"mutation": s, "input": {}}),
    "mutate, an input key": lambda s: ("mutate", {"mutation": "createPart", "input": {s: 1}}),
    "the tool's name": lambda s: (s, {}),
}


def text(seed: int, size: int) -> str:
    """A string of ``size`` characters that no earlier call used (caches cannot help)."""
    unit = f"steel parts {seed:07d} "
    return (unit * (size // len(unit) + 1))[:size]


async def timings(project: Any, runs: int) -> dict[str, tuple[float, float, int]]:
    """Per call: (median ms with 1 MB, median ms with a short string, result characters)."""
    measured = {}
    seed = 0
    for label, make in CALLS.items():
        big, small, size = [], [], 0
        for _ in range(runs):
            seed += 1
            for length, into in ((MB, big), (12, small)):
                name, args = make(text(seed, length))
                start = time.perf_counter()
                result = await project.call_tool(name, args)
                into.append((time.perf_counter() - start) * 1000)
                if length == MB:
                    size = max(size, len(str(result)))
        measured[label] = (statistics.median(big), statistics.median(small), size)
    return measured


async def memory(project: Any, calls: int) -> tuple[float, float]:
    """(MiB still allocated after ``calls`` calls with unique 20–100 KB names, MB of names)."""
    makers = list(CALLS.values())
    for number, make in enumerate(makers):  # first-use allocations are not what is measured
        await project.call_tool(*make(text(number, 20_000)))
    gc.collect()
    tracemalloc.start()
    sent = 0
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(calls):
            size = 20_000 + (number * 7919) % 80_000
            sent += size
            await project.call_tool(*makers[number % len(makers)](text(10_000 + number, size)))
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    return grown / MB, sent / 1e6


async def main(quick: bool, timings_only: bool) -> None:
    runs, calls = (3, 500) if quick else (7, 10_000)
    project = gmchat_nb.demo_project(allowed_mutations=["createPart"])
    print("# gmchat_nb hostile-input benchmark\n")
    print(f"{describe()} (before)\n")
    measured = await timings(project, runs)
    print(f"## One call with a 1 MB argument (median of {runs}; a new string every run)\n")
    print("| tool, argument | 1 MB | baseline: short string | result size |")
    print("|---|---:|---:|---:|")
    for label, (big, small, size) in measured.items():
        print(f"| {label} | {big:.2f} ms | {small:.2f} ms | {size:,} chars |")
    if not timings_only:  # a checkout with unbounded caches takes minutes here
        grown, sent = await memory(project, calls)
        print(f"\n## {calls:,} calls with unique 20–100 KB names ({sent:,.0f} MB of names)\n")
        print(f"Still allocated afterwards: {grown:.2f} MiB.")
    print(f"\nload average after: {load()}")
    await project.aclose()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timings-only", action="store_true", help="skip the memory part")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick, arguments.timings_only))

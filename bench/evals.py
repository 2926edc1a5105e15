"""Benchmark of the eval runner: cases per second for 1 and 4 concurrent providers.

Run from the repository root::

    .venv/bin/python bench/evals.py

All datasets under ``evals/`` run against the ``offline`` provider (no model, no network): once
as one provider, and once as four copies of it compared side by side (``compare``), with the
runner's default concurrency bound of 4. The numbers are the runner's own overhead plus the demo
project's queries — what a CI gate pays before any model time.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gmchat_nb import evals


def main() -> None:
    print("# gmchat_nb eval runner benchmark\n")
    print("| providers | cases run | wall time | cases/s | pass rate |")
    print("|---:|---:|---:|---:|---:|")
    for count in (1, 4):
        providers = ["offline"] * count
        start = time.perf_counter()
        results = evals.compare(providers) if count > 1 else evals.run()
        seconds = time.perf_counter() - start
        cases = len(results.cases)
        rate = float((results.cases["status"] == "pass").mean())
        print(f"| {count} | {cases} | {seconds:.2f} s | {cases / seconds:.1f} | {rate:.0%} |")


if __name__ == "__main__":
    main()

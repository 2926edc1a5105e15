"""The two engines side by side on every offline eval dataset: the tool loop ("classic") and the
planned engine, each case's pass and model requests.

Run from the repository root::

    .venv/bin/python bench/strategies.py      # ~30 s

Every dataset under ``evals/`` with the ``offline`` provider (no model, no network), once with
``strategy="legacy"`` (the tool loop) and once with ``strategy="planned"`` (planner, executors,
synthesizer); a case's own ``strategy`` key wins, as in the eval CLI, so the few cases that pin
one engine run on it both times. Per dataset: cases passed, and model requests summed over the
cases (a planned turn's planner, executor and synthesizer requests all count). Nothing is
asserted; the machine's load is printed.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from machine import load  # noqa: E402  (bench/ is on sys.path when run)

from gmchat_nb import evals  # noqa: E402
from gmchat_nb.evals.dataset import dataset_dir  # noqa: E402


def main() -> None:
    before = load()
    names = sorted(path.stem for path in dataset_dir().glob("*.yaml"))
    print("# The tool loop and the planned engine, offline\n")
    print(
        "| dataset | cases | classic: passed | classic: requests | planned: passed | "
        "planned: requests |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    totals = [0, 0, 0, 0, 0]
    for name in names:
        row = [0]
        for strategy in ("legacy", "planned"):
            cases = evals.run([name], provider="offline", strategy=strategy).cases
            row[0] = len(cases)
            row += [int(cases["passed"].sum()), int(cases["requests"].sum())]
        totals = [a + b for a, b in zip(totals, row, strict=True)]
        print(f"| {name} | " + " | ".join(f"{value:,}" for value in row) + " |")
    print("| all | " + " | ".join(f"{value:,}" for value in totals) + " |")
    print(f"\nload average {before} before, {load()} after")


if __name__ == "__main__":
    main()

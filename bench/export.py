"""Benchmark of a conversation exported as a notebook (``gmchat_nb.core.export``): how long a long
conversation takes, and what a large query weighs in the notebook.

Run from the repository root::

    .venv/bin/python bench/export.py            # 200 turns, a 100,000-row query
    .venv/bin/python bench/export.py --quick    # a smoke run: 20 turns, 10,000 rows

1. **A 200-turn conversation** (SQLite file; a scripted model: each turn one query of the
   inventory demo, a chart every fifth turn, a Markdown answer), exported without execution:
   ``conversation_notebook`` (the store read once, the cells built) and ``notebook_text`` (the
   ``.ipynb`` JSON, nbformat's validation included), median of several runs. The baseline,
   measured in the same run on the same store: reading what any replay reads, the
   conversation's turns and its whole journal (``conversation_turns`` and ``journal_since``).
   The issue's goal: under 2 s.
2. **A query that read 100,000 rows** (a demo manager of that many readings, one turn): the
   size of its ``tool_result`` in the journal (every row) against the size of the exported
   notebook (its code, not its rows), and the export's time.

Nothing is asserted; the machine's load is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from charts import readings  # bench/charts.py: a demo manager of that many readings
from machine import describe, load  # bench/ is on sys.path when run

from gmchat_nb import Chat
from gmchat_nb.core.export import conversation_notebook, notebook_text
from gmchat_nb.core.providers.scripted import ScriptedProvider

RUNS = 7
MATERIALS = ("Copper", "Nylon", "Titanium", "Brass", "Lead")


def conversation_rounds(turns: int) -> list[dict[str, Any]]:
    """Each turn: one query (a material's parts), a chart every fifth turn, an answer."""
    rounds: list[dict[str, Any]] = []
    for turn in range(turns):
        query = {
            "manager": "Part",
            "fields": ["name", "quantity", {"material": ["name"]}],
            "filters": {"material__name": MATERIALS[turn % len(MATERIALS)]},
            "order_by": ["name"],
        }
        rounds.append({"tool_calls": [{"id": f"q{turn}", "name": "query", "args": query}]})
        if turn % 5 == 0:
            chart = {"mark": "bar", "x": "name", "y": "quantity", "query": f"q{turn}"}
            rounds.append({"tool_calls": [{"id": f"c{turn}", "name": "chart", "args": chart}]})
        rounds.append({"text": f"Turn {turn}: the parts are **listed** above, with their stock."})
    return rounds


def median_ms(work: Callable[[], Any], runs: int = RUNS) -> tuple[float, float, Any]:
    """The median and the slowest of ``runs`` runs, in ms, and the last run's value."""
    times, value = [], None
    for _ in range(runs):
        started = time.perf_counter()
        value = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, max(times) * 1000, value


async def long_conversation(folder: Path, turns: int) -> None:
    store = str(folder / "long.sqlite3")
    # no summaries (a summary is a model request the script would have to play) and no
    # request budget (200 questions are more than an hour's default)
    chat = Chat(
        provider=ScriptedProvider({"rounds": conversation_rounds(turns)}),
        store=store,
        summarize_after=10 * turns,
        rate_limit={"requests": None},
    )
    try:
        started = time.perf_counter()
        for turn in range(turns):
            await chat.ask(f"Which parts are made of {MATERIALS[turn % len(MATERIALS)]}?")
        played = time.perf_counter() - started
        answered = sum(turn.error is None and len(turn.outcomes) == 1 for turn in chat.turns)
        assert answered == turns, f"only {answered} of {turns} turns ran their query"
        session = await chat.session()
        conversation = chat.conversation_id
        assert conversation is not None
        store_ = session.store

        def replay() -> int:
            store_.conversation_turns(conversation)
            return sum(1 for _ in store_.journal_since(conversation, 0))

        def export() -> Any:
            return conversation_notebook(store_, conversation, settings=chat.settings)

        def export_text() -> str:
            return notebook_text(export())

        base, base_max, events = median_ms(replay)
        built, built_max, notebook = median_ms(export)
        written, written_max, text = median_ms(export_text)
    finally:
        await chat.aclose()
    print(f"## A {turns}-turn conversation exported without execution (median of {RUNS})\n")
    print(f"{turns} turns played in {played:.1f} s: {events:,} journaled events, "
          f"{len(notebook.cells):,} cells, a notebook of {len(text.encode()):,} bytes.\n")  # fmt: skip
    print("| measure | median | slowest |")
    print("|---|---:|---:|")
    print(f"| baseline: the turns and the journal read (a replay) | {base:.1f} ms | {base_max:.1f} ms |")  # fmt: skip
    print(f"| `conversation_notebook` | {built:.1f} ms | {built_max:.1f} ms |")
    print(f"| `conversation_notebook` + `notebook_text` | {written:.1f} ms | {written_max:.1f} ms |")  # fmt: skip
    print(f"\nThe export's own work: {written - base:.1f} ms over the baseline; the goal: under "
          f"2,000 ms ({'met' if written < 2000 else 'NOT met'}).\n")  # fmt: skip


async def large_query(folder: Path, rows: int) -> None:
    project = readings(rows)
    query = {"manager": "Reading", "fields": ["sensor", "value", "humidity", "takenOn"],
             "limit": rows}  # fmt: skip
    rounds = [
        {"tool_calls": [{"id": "big", "name": "query", "args": query}]},
        {"text": "The readings are in the table."},
    ]
    chat = Chat(
        project=project,
        provider=ScriptedProvider({"rounds": rounds}),
        store=str(folder / "large.sqlite3"),
        max_results=rows,
    )
    try:
        await chat.ask("Show every reading")
        session = await chat.session()
        conversation = chat.conversation_id
        assert conversation is not None
        [result] = [
            event
            for event in session.store.events(conversation)
            if event["type"] == "tool_result" and event["id"] == "big"
        ]
        read = len(result["result"]["data"])
        journaled = len(json.dumps(result, default=str).encode())
        took, _slowest, text = median_ms(
            lambda: notebook_text(
                conversation_notebook(session.store, conversation, settings=chat.settings)
            ),
            runs=3,
        )
    finally:
        await chat.aclose()
        await project.aclose()
    print(f"## A query that read {read:,} rows\n")
    print("| what | bytes |")
    print("|---|---:|")
    print(f"| its `tool_result` in the journal (every row) | {journaled:,} |")
    print(f"| the exported notebook (its code, not its rows) | {len(text.encode()):,} |")
    print(f"\nExported in {took:.0f} ms (median of 3; the journal's rows are read and parsed).\n")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="20 turns and 10,000 rows")
    options = parser.parse_args()
    turns, rows = (20, 10_000) if options.quick else (200, 100_000)
    print("# gmchat_nb export benchmark\n")
    print(f"{describe()} (before)\n")
    with tempfile.TemporaryDirectory(prefix="gmchat-export-bench-") as folder:
        await long_conversation(Path(folder), turns)
        await large_query(Path(folder), rows)
    print(f"load average after: {load()}")


if __name__ == "__main__":
    asyncio.run(main())

"""Benchmark of charts: building the spec, rendering it as PNG, and what a chart weighs on the
wire against the table of the same result.

Run from the repository root (needs the ``[charts]`` extra for the PNG column)::

    .venv/bin/python bench/charts.py

1. Spec building (:func:`gmchat_nb.core.charts.build_chart`, what the ``chart`` tool runs) for a
   100-row and a 10,000-row query result (a demo project with one manager of that many sensor
   readings), one chart of each kind: a bar of sums per sensor, a line of means per date, a
   histogram, points (refused at 10,000 rows: more than 5,000 marks), a bar of counts; and
   :func:`gmchat_nb.charts.chart_spec` over the result's DataFrame (the rows converted first).
   Medians of several runs.
2. The PNG of each spec rendered offline by vl-convert (:meth:`Chart.to_png`, a new chart each
   run, so nothing is cached), median of several runs, and the first render of the process apart
   (it starts vl-convert's JavaScript engine).
3. In the same run, a real turn through the chat widget (query, then ``chart``): the ``chart``
   event's JSON, the widget's ``table`` message for that result (its first page of rows; the
   rest travel on request) and the query's ``tool_result`` as the journal stores it (every row).
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd
from machine import describe  # bench/ is on sys.path when run
from widget import CountingComm  # bench/widget.py: the widget's comm, counted

from gmchat_nb import Chat
from gmchat_nb.charts import Chart, chart_spec
from gmchat_nb.core.charts import ChartIntent, build_chart
from gmchat_nb.core.frames import flatten_row
from gmchat_nb.core.project import LocalExecutor, Project
from gmchat_nb.core.project.demo import DemoSpec, Field, ManagerSpec, build_demo
from gmchat_nb.core.project.errors import ToolError
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.widget import ChatWidget

SIZES = (100, 10_000)
RUNS = 5
FIELDS = ["sensor", "value", "humidity", "takenOn"]
INTENTS: dict[str, dict[str, Any]] = {
    "bar: sum of value per sensor": {"mark": "bar", "x": "sensor", "y": "value", "aggregate": "sum"},
    "line: mean of value per date": {"mark": "line", "x": "takenOn", "y": "value", "aggregate": "mean"},
    "histogram of value": {"mark": "histogram", "x": "value"},
    "point: humidity against value": {"mark": "point", "x": "value", "y": "humidity"},
    "bar: count per sensor, top 10": {"mark": "bar", "x": "sensor", "aggregate": "count", "sort": "-y", "limit": 10},
}  # fmt: skip


class RecordingComm(CountingComm):
    """The front end's place: keeps the JSON size of every message by type."""

    def __init__(self) -> None:
        super().__init__()
        self.sizes: dict[str, list[int]] = {}

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        super().send(data, metadata, buffers)
        message = data.get("content") if isinstance(data, dict) else None  # a custom message
        kind = message.get("type") if isinstance(message, dict) else None
        self.sizes.setdefault(str(kind), []).append(len(json.dumps(message, default=str)))


def readings(rows: int) -> Project:
    spec = DemoSpec(
        "readings",
        (
            ManagerSpec(
                "Reading",
                "Sensor readings.",
                (
                    Field("sensor", "str"),
                    Field("value", "float"),
                    Field("humidity", "float"),
                    Field("taken_on", "date"),
                ),
                rows=tuple(
                    {
                        "id": i,
                        "sensor": f"S{i % 37}",
                        "value": round((i * 7919) % 1000 * 0.37, 2),
                        "humidity": round(30 + (i * 104729) % 500 / 10, 1),
                        "taken_on": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
                    }
                    for i in range(1, rows + 1)
                ),
            ),
        ),
        max_page_size=rows,
    )
    backend = build_demo(spec)
    return Project(
        LocalExecutor(backend.schema), max_results=rows, max_page_size=rows, on_close=backend.close
    )


def median_ms(work: Callable[[], Any], runs: int = RUNS) -> tuple[float, Any]:
    times, value = [], None
    for _ in range(runs):
        started = time.perf_counter()
        value = work()
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000, value


async def turn_sizes(rows: int) -> dict[str, int]:
    """One widget turn: query ``rows`` readings, chart them; the sizes of what it made."""
    project = readings(rows)
    query = {"manager": "Reading", "fields": FIELDS, "limit": rows}
    rounds = [
        {"tool_calls": [{"name": "query", "args": query, "id": "q1"}]},
        {"tool_calls": [{"name": "chart", "args": INTENTS["line: mean of value per date"]}]},
        {"text": "Done."},
    ]
    chat = Chat(
        project=project,
        provider=ScriptedProvider({"rounds": rounds}),
        store=":memory:",
        max_results=rows,
    )
    widget = ChatWidget(chat, namespace={})
    comm = RecordingComm()
    widget.comm = comm
    try:
        await widget.run_turn("Chart the mean value per date")
        turn = chat.turns[-1]
        [chart] = [event for event in turn.events if event["type"] == "chart"]
        [result] = [e for e in turn.events if e["type"] == "tool_result" and e["id"] == "q1"]
        assert len(result["result"]["data"]) == rows
        return {
            "chart": len(json.dumps({k: v for k, v in chart.items() if k != "sequence"})),
            "marks": int(chart["marks"]),
            "table": max(comm.sizes.get("table", [0])),
            "result": len(json.dumps(result, default=str)),
        }
    finally:
        await chat.aclose()
        await project.aclose()


async def main() -> None:
    print("# gmchat_nb charts benchmark\n")
    print(f"{describe()} (before)\n")
    results: dict[int, list[dict[str, Any]]] = {}
    for rows in SIZES:
        project = readings(rows)
        try:
            outcome = await project.query(manager="Reading", fields=FIELDS, limit=rows)
        finally:
            await project.aclose()
        assert len(outcome.rows) == rows
        frame = pd.DataFrame([flatten_row(row) for row in outcome.rows]).convert_dtypes()
        measured = []
        for label, intent in INTENTS.items():
            parsed = ChartIntent.from_args(intent)
            try:
                build, built = median_ms(lambda p=parsed, r=outcome.rows: build_chart(r, p))
            except ToolError as error:
                measured.append({"label": label, "refused": error.code})
                continue
            frame_ms, spec = median_ms(lambda i=intent, f=frame: chart_spec(f, **i))
            assert spec == built.spec
            measured.append(
                {"label": label, "build": build, "frame": frame_ms, "marks": built.marks,
                 "spec": built.spec, "bytes": len(json.dumps(built.spec))}
            )  # fmt: skip
        results[rows] = measured

    # the first render of the process starts vl-convert's engine
    first_spec = results[SIZES[0]][0]["spec"]
    started = time.perf_counter()
    try:
        Chart(first_spec).to_png()
    except ModuleNotFoundError as error:
        print(f"(no PNG column: {error})\n")
        png = False
    else:
        png = True
    first = (time.perf_counter() - started) * 1000

    print(f"## Spec building and PNG rendering (median of {RUNS} runs)\n")
    print(
        "| rows | chart | marks | spec JSON | build_chart | chart_spec on the DataFrame | PNG render | PNG size |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for rows, measured in results.items():
        for item in measured:
            if "refused" in item:
                print(f"| {rows:,} | {item['label']} | refused: `{item['refused']}` | | | | | |")
                continue
            render, size = "n/a", "n/a"
            if png:
                spec = item["spec"]
                render_ms, image = median_ms(lambda s=spec: Chart(s).to_png())
                render, size = f"{render_ms:,.0f} ms", f"{len(image):,} B"
            print(
                f"| {rows:,} | {item['label']} | {item['marks']:,} | {item['bytes']:,} B "
                f"| {item['build']:,.1f} ms | {item['frame']:,.1f} ms | {render} | {size} |"
            )
    if png:
        print(f"\nFirst PNG render of the process (starts vl-convert's engine): {first:,.0f} ms")

    print("\n## A chart on the wire against the table of the same result (one widget turn)\n")
    print("| rows | marks | `chart` event JSON | widget `table` message (first page) | `tool_result` in the journal (every row) |")  # fmt: skip
    print("|---:|---:|---:|---:|---:|")
    for rows in SIZES:
        sizes = await turn_sizes(rows)
        print(
            f"| {rows:,} | {sizes['marks']:,} | {sizes['chart']:,} B | {sizes['table']:,} B "
            f"| {sizes['result']:,} B |"
        )
    print(f"\n{describe()} (after)")


if __name__ == "__main__":
    asyncio.run(main())

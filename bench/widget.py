"""Benchmark of the chat widget's kernel side: streaming and big tables, batching on and off.

Run from the repository root::

    .venv/bin/python bench/widget.py

1. A 2,000-chunk answer streamed through ``ChatWidget.run_turn`` with a zero-latency scripted
   provider: the messages the kernel sends to the front end, their bytes, and the time, with
   batching on (the default: a message every 40 ms or 200 characters, tool steps at once) and off
   (one message per event). The front end is a recording comm, so this is kernel-side cost only.
2. A 10,000-row query result (a demo project with one 10,000-row manager): the time from the
   tool result to the DataFrame, and the bytes sent to the front end for its table (the first
   page; later pages travel on request).
"""

from __future__ import annotations

import asyncio
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from machine import describe  # bench/ is on sys.path when run

from gmchat_nb import Chat
from gmchat_nb.core.project import LocalExecutor, Project
from gmchat_nb.core.project.demo import DemoSpec, Field, ManagerSpec, build_demo
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.widget import ChatWidget


class CountingComm:
    """The front end's place: counts what arrives."""

    kernel = object()
    comm_id = "bench"

    def __init__(self) -> None:
        self.messages = 0

    def send(self, data: Any = None, metadata: Any = None, buffers: Any = None) -> None:
        self.messages += 1

    def close(self, *args: Any, **kwargs: Any) -> None:
        pass

    def on_msg(self, callback: Any) -> None:
        pass

    def on_close(self, callback: Any) -> None:
        pass


async def stream(batching: bool, chunks: int, runs: int) -> tuple[float, int, int]:
    times: list[float] = []
    messages = sent_bytes = 0
    for _ in range(runs):
        rounds = [{"chunks": [f"token{i} " for i in range(chunks)]}]
        chat = Chat(provider=ScriptedProvider({"rounds": rounds}), store=":memory:")
        widget = ChatWidget(chat, namespace={}, batching=batching)
        widget.comm = CountingComm()
        start = time.perf_counter()
        await widget.run_turn("Tell me a long story")
        times.append(time.perf_counter() - start)
        messages, sent_bytes = widget.sent_messages, widget.sent_bytes
        await chat.aclose()
    return statistics.median(times), messages, sent_bytes


async def big_table(rows: int) -> tuple[float, float, int, int]:
    spec = DemoSpec(
        "readings",
        (
            ManagerSpec(
                "Reading",
                "Sensor readings.",
                (Field("sensor", "str"), Field("value", "float"), Field("taken_on", "date")),
                rows=tuple(
                    {
                        "id": i,
                        "sensor": f"S{i % 37}",
                        "value": i * 0.5,
                        "taken_on": f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}",
                    }
                    for i in range(1, rows + 1)
                ),
            ),
        ),
        max_page_size=rows,
    )
    backend = build_demo(spec)
    project = Project(
        LocalExecutor(backend.schema), max_results=rows, max_page_size=rows, on_close=backend.close
    )
    query = {"manager": "Reading", "fields": ["sensor", "value", "takenOn"], "limit": rows}
    chat = Chat(
        project=project,
        provider=ScriptedProvider(
            {"rounds": [{"tool_calls": [{"name": "query", "args": query}]}, {"text": "Done."}]}
        ),
        store=":memory:",
        max_results=rows,
    )
    widget = ChatWidget(chat, namespace={})
    widget.comm = CountingComm()
    started = time.perf_counter()
    record = await widget.run_turn("All readings")
    turn_time = time.perf_counter() - started
    outcome = chat.turns[-1].outcomes[0]
    import pandas  # noqa: F401  (timed apart: the widget imports it only for "→ DataFrame")

    started = time.perf_counter()
    frame = chat.turns[-1]._frame(outcome)
    frame_time = time.perf_counter() - started
    assert len(frame) == rows and record["tables"][0]["total_rows"] == rows
    table_bytes = len(str(record["tables"][0]))
    await chat.aclose()
    await project.aclose()
    return turn_time, frame_time, table_bytes, widget.sent_bytes


FIRST_TURN = """
import asyncio, sys, time
sys.path.insert(0, {bench!r})
from widget import CountingComm
from gmchat_nb import Chat
from gmchat_nb.widget import ChatWidget
widget = ChatWidget(Chat(provider="offline", store=":memory:"), namespace={{}})
widget.comm = CountingComm()
start = time.perf_counter()
asyncio.run(widget.run_turn("Which projects use parts made of cobalt?"))
print(time.perf_counter() - start, "pandas" in sys.modules)
"""
IMPORT_PANDAS = (
    "import time; s = time.perf_counter(); import pandas; print(time.perf_counter() - s)"
)


def fresh(code: str) -> list[str]:
    """What a fresh interpreter running ``code`` printed."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def first_turn(runs: int) -> tuple[float, bool, float]:
    """A widget's first turn with tables in a fresh process (median seconds, whether pandas got
    imported), and ``import pandas`` alone in a fresh process (the cost it no longer pays)."""
    code = FIRST_TURN.format(bench=str(Path(__file__).resolve().parent))
    turns = [fresh(code) for _ in range(runs)]
    imports = [float(fresh(IMPORT_PANDAS)[0]) for _ in range(runs)]
    return (
        statistics.median(float(seconds) for seconds, _ in turns),
        any(loaded == "True" for _, loaded in turns),
        statistics.median(imports),
    )


async def main() -> None:
    chunks = 2000
    print("# gmchat_nb widget benchmark (kernel side)\n")
    print(f"{describe()} (before)\n")
    print(f"## Streaming a {chunks:,}-chunk answer\n")
    print("| batching | messages to the front end | bytes | turn time (median of 5) |")
    print("|---|---:|---:|---:|")
    for batching in (True, False):
        seconds, messages, sent = await stream(batching, chunks, 5)
        print(
            f"| {'on' if batching else 'off'} | {messages:,} | {sent:,} | {seconds * 1000:,.0f} ms |"
        )
    rows = 10_000
    turn_time, frame_time, table_bytes, sent = await big_table(rows)
    print(f"\n## A {rows:,}-row query result\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| whole turn (query, table message; no pandas) | {turn_time * 1000:,.0f} ms |")
    print(
        f"| rows to DataFrame on → DataFrame (dotted columns, dates parsed; pandas loaded) "
        f"| {frame_time * 1000:,.0f} ms |"
    )
    print(f"| table sent to the front end (first page of 25 rows) | {table_bytes:,} bytes |")
    print(f"| everything the turn sent to the front end | {sent:,} bytes |")
    seconds, loaded, pandas_import = first_turn(5)
    print("\n## A first offline turn in a fresh process (median of 5)\n")
    print("| measure | value |")
    print("|---|---:|")
    print(f"| the widget's first turn, tables included | {seconds * 1000:,.0f} ms |")
    print(f"| pandas imported by it | {'yes' if loaded else 'no'} |")
    print(f"| baseline: `import pandas` alone | {pandas_import * 1000:,.0f} ms |")


if __name__ == "__main__":
    asyncio.run(main())

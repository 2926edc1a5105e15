"""Benchmark of the turn's defences: a turn with every guard and gate on against the same turn
with them off, in the same run.

Run from the repository root::

    .venv/bin/python bench/guards.py            # ~1 minute (3 rounds)
    .venv/bin/python bench/guards.py --quick    # a smoke run

The two-tool read turns of ``bench/turn.py`` ("small": 4 rows, "typical": 68 rows) on the
in-process inventory demo with a zero-latency scripted provider, through ``Chat.ask`` with a
SQLite store in memory -- an offline turn, so the defences' cost is not hidden behind a model's
seconds. "On" is every defence (loop guard, data flags on every read result, the mutation intent
gate, all three completion gates on an answer that states numbers, the turn's trace);
"off" sets ``loop_guard.enabled: false``, ``completion_gates: false`` and ``injection``'s
``mutation_intent`` and ``flag_results`` to false (the trace is always recorded; it is
sanitized only when read). Turns alternate between the two
chats; medians of each round's medians. Then what one turn's pieces cost alone: the JSON
envelope the SDK adapters send for each tool result (not used by the scripted provider, so not in
the turn times), the scan of the results for suspicious text, and the gates' check of the answer.
Then what each stage of the tool-call pipeline costs inside real turns (a separate, instrumented
pass: each stage's parts and the gates timed with ``time.perf_counter``, totals per turn, on and
off), so a missed goal shows where the time goes.

Nothing is asserted; the machine's load is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from typing import Any

from machine import load  # bench/ is on sys.path when run
from turn import QUESTION, WORKLOADS

from gmchat_nb import Chat
from gmchat_nb.core.guards.envelope import tool_result_text
from gmchat_nb.core.guards.gates import TurnFacts, check_answer
from gmchat_nb.core.guards.scorer import scan
from gmchat_nb.core.providers.scripted import ScriptedProvider

TARGET = 0.05  # the issue's goal: under 5% of an offline turn
COMMON: dict[str, Any] = {"store": ":memory:", "rate_limit": {"requests": None}}
ON: dict[str, Any] = {"completion_gates": True}  # every gate
OFF: dict[str, Any] = {
    "loop_guard": {"enabled": False},
    "completion_gates": False,
    "injection": {"mutation_intent": False, "flag_results": False},
}
ANSWERS = {
    "small": "1 part is made of steel (Bolt), and 3 projects are active.",
    "typical": "There are 28 parts and 40 purchase orders; the largest order is 1,000 units.",
}


def rounds(queries: list[dict[str, Any]], answer: str) -> list[dict[str, Any]]:
    return [
        {"tool_calls": [{"name": "query", "args": query} for query in queries]},
        {"text": answer},
    ]


async def measure(name: str, warmup: int, runs: int) -> dict[str, Any]:
    """Median turn time with the defences on and off, turns alternating."""
    script = rounds(WORKLOADS[name], ANSWERS[name]) * (warmup + runs + 1)
    chats = {
        "on": Chat(provider=ScriptedProvider({"rounds": script}), **COMMON, **ON),
        "off": Chat(provider=ScriptedProvider({"rounds": script}), **COMMON, **OFF),
    }
    times: dict[str, list[float]] = {"on": [], "off": []}
    last: Any = None
    for number in range(warmup + runs):
        for key, chat in chats.items():
            session = await chat.session()
            session.new_conversation()  # the same context every time
            start = time.perf_counter()
            turn = await chat.ask(QUESTION)
            elapsed = time.perf_counter() - start
            assert turn.events[-1]["type"] == "done", turn.events[-1]
            if key == "on":
                gates = turn.events[-1].get("gates") or []
                assert all(gate["passed"] for gate in gates), gates
                last = turn
            if number >= warmup:
                times[key].append(elapsed)
            chat.turns.clear()
    for chat in chats.values():
        await chat.aclose()
    results = [e["result"] for e in last.events if e["type"] == "tool_result"]
    return {
        "on": statistics.median(times["on"]),
        "off": statistics.median(times["off"]),
        "results": results,
        "answer": last.answer,
    }


def piece(function: Any, repeat: int) -> float:
    """Median seconds of one call of ``function``."""
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        function()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


async def main(quick: bool, rounds_: int) -> None:
    warmup, runs = (3, 20) if quick else (20, 150)
    rounds_ = 1 if quick else rounds_
    before = load()
    measured: dict[str, dict[str, Any]] = {}
    for name in WORKLOADS:
        each = [await measure(name, warmup, runs) for _ in range(rounds_)]
        merged = dict(each[-1])
        for key in ("on", "off"):
            merged[key] = statistics.median(m[key] for m in each)
        measured[name] = merged
    after = load()
    print("# gmchat_nb defences benchmark\n")
    print(
        f"Python {sys.version.split()[0]}; {rounds_} rounds of {runs} turns per setting after "
        f"{warmup} warm-up, alternating, medians of the rounds' medians; load average {before} "
        f"before, {after} after\n"
    )
    print("| two-tool read turn | defences off | all on | overhead | goal |")
    print("|---|---:|---:|---:|---|")
    for name, m in measured.items():
        overhead = m["on"] / m["off"] - 1
        verdict = "✅" if overhead < TARGET else "❌"
        print(
            f"| {name} | {m['off'] * 1e6:,.0f} µs | {m['on'] * 1e6:,.0f} µs | "
            f"{overhead:+.1%} | < {TARGET:.0%} {verdict} |"
        )
    print("\n| one turn's pieces, alone | small | typical |")
    print("|---|---:|---:|")
    rows = {
        "tool-result envelopes (sent by the SDK adapters)": lambda r, a: [
            tool_result_text("query", "call_1", result) for result in r
        ],
        "scan of the results for suspicious text": lambda r, a: [scan(result) for result in r],
        "completion gates on the answer": lambda r, a: check_answer(
            a,
            TurnFacts(
                user_texts=(QUESTION,),
                results=tuple(r),
                data_calls=len(r),
                data_rows=sum(len(x.get("data") or []) for x in r),
            ),
        ),
    }
    repeat = 50 if quick else 500
    for label, function in rows.items():
        cells = [
            f"{piece(lambda m=m, f=function: f(m['results'], m['answer']), repeat) * 1e6:,.0f} µs"
            for m in measured.values()
        ]
        print(f"| {label} | {' | '.join(cells)} |")


async def stage_costs(name: str, turns: int) -> dict[str, dict[str, float]]:
    """Microseconds per turn in each tool-call stage (its check and after parts) and in the
    completion gates, inside real turns with the defences on and off."""
    from gmchat_nb.core.guards.turn import TurnGuards
    from gmchat_nb.core.toolcalls import pipeline

    spent: dict[str, dict[str, float]] = {}
    current = ["on"]

    def timed(function: Any, label: str) -> Any:
        def run(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                row = spent.setdefault(label, {"on": 0.0, "off": 0.0})
                row[current[0]] += time.perf_counter() - start

        return run

    originals: list[tuple[Any, str, Any]] = []
    for stage in pipeline._STAGES:  # the chain's stage objects, as every pipeline runs them
        for part in ("check", "after"):
            if getattr(type(stage), part) is not getattr(pipeline.Stage, part):
                originals.append((stage, part, None))
                setattr(stage, part, timed(getattr(stage, part), f"{stage.name} ({part})"))
    check_answer_ = TurnGuards.check_answer
    TurnGuards.check_answer = timed(check_answer_, "completion gates")  # type: ignore[method-assign]
    try:
        script = rounds(WORKLOADS[name], ANSWERS[name]) * (turns + 6)
        for key, settings in (("on", ON), ("off", OFF)):
            current[0] = key
            chat = Chat(provider=ScriptedProvider({"rounds": script}), **COMMON, **settings)
            for _ in range(turns):
                (await chat.session()).new_conversation()
                await chat.ask(QUESTION)
                chat.turns.clear()
            await chat.aclose()
    finally:
        for stage, part, _ in originals:
            delattr(stage, part)
        TurnGuards.check_answer = check_answer_  # type: ignore[method-assign]
    return {label: {k: v / turns * 1e6 for k, v in row.items()} for label, row in spent.items()}


async def print_stage_costs(quick: bool) -> None:
    turns = 20 if quick else 200
    print("\n| inside a turn (µs per turn) | small, on | small, off | typical, on | typical, off |")
    print("|---|---:|---:|---:|---:|")
    costs = {name: await stage_costs(name, turns) for name in WORKLOADS}
    labels = sorted(
        {label for rows in costs.values() for label in rows},
        key=lambda label: -costs["typical"].get(label, {"on": 0.0})["on"],
    )
    for label in labels:
        cells = []
        for name in WORKLOADS:
            row = costs[name].get(label, {"on": 0.0, "off": 0.0})
            cells += [f"{row['on']:,.0f}", f"{row['off']:,.0f}"]
        print(f"| {label} | {' | '.join(cells)} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    asyncio.run(main(arguments.quick, arguments.rounds))
    asyncio.run(print_stage_costs(arguments.quick))

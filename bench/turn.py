"""Benchmark of one chat turn: the turn engine's cost over raw GraphQL, and the prompt it sends.

Run from the repository root::

    .venv/bin/python bench/turn.py            # ~20 s
    .venv/bin/python bench/turn.py --quick    # a smoke run

A two-tool read turn on the in-process inventory demo with a zero-latency scripted provider
(round 1: two queries in one response; round 2: the answer), through ``Chat.ask`` with a
SQLite store in memory — so the time is everything gmchat_nb adds: session, persistence,
journal, rate limits, prompt, context, tool dispatch, compile, execute, normalise, frames.
Baseline in the same run: executing the same two compiled GraphQL documents directly with
graphql-core, timed in alternation with the turns. Then the characters of prompt sent to the
provider per turn (system prompt, tool definitions, messages and tool results, all requests).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import statistics
import sys
import time
from typing import Any

import graphql

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider

TARGET_RATIO = 1.5
TARGET_PROMPT_CHARS = 15_000
GM_RATIO = 33
GM_PROMPT_CHARS = 121_000

QUERIES = [
    {"manager": "Part", "filters": {"material__name": "Steel"}, "fields": ["name", "quantity", {"material": ["name"]}]},
    {"manager": "Project", "filters": {"status": "active"}, "fields": ["name", "startDate", {"parts": ["name"]}]},
]
ROUNDS = [
    {"tool_calls": [{"name": "query", "args": query} for query in QUERIES]},
    {"text": "Steel parts: Bolt. Active projects: Apollo, Gemini, Voyager."},
]
QUESTION = "Which parts are made of steel, and which projects are active?"


def request_chars(messages: list[Any], tools: list[Any]) -> int:
    """Characters of one provider request as an SDK would serialise it (JSON)."""
    payload = {
        "messages": [dataclasses.asdict(message) for message in messages],
        "tools": [dataclasses.asdict(tool) for tool in tools],
    }
    return len(json.dumps(payload, ensure_ascii=False, default=str))


async def main(quick: bool) -> None:
    warmup, runs = (3, 20) if quick else (20, 300)
    provider = ScriptedProvider({"rounds": ROUNDS * (warmup + runs + 1)})
    chat = Chat(provider=provider, store=":memory:", rate_limit={"requests": None})
    session = await chat.session()
    project = session.project
    plans = [project.compiler.compile(dict(query)) for query in QUERIES]
    requests = [(plan.document, plan.request_variables(plan.pages[0])) for plan in plans]

    def direct() -> None:
        for document, variables in requests:
            result = graphql.execute(project.executor.schema, document, variable_values=variables)
            assert isinstance(result, graphql.ExecutionResult) and not result.errors

    turn_times: list[float] = []
    direct_times: list[float] = []
    for number in range(warmup + runs):
        session.new_conversation()  # the same context every time
        start = time.perf_counter()
        turn = await chat.ask(QUESTION)
        middle = time.perf_counter()
        direct()
        end = time.perf_counter()
        assert turn.events[-1]["type"] == "done", turn.events[-1]
        if number >= warmup:
            turn_times.append(middle - start)
            direct_times.append(end - middle)
        chat.turns.clear()
    ours, raw = statistics.median(turn_times), statistics.median(direct_times)
    sent = provider.requests[-2:]  # the last turn's two requests
    chars = sum(request_chars(messages, tools) for messages, tools in sent)
    system = len(session.system_prompt)
    tools = len(json.dumps([dataclasses.asdict(t) for t in session.tools]))
    await chat.aclose()

    print("# gmchat_nb turn benchmark\n")
    print(f"Python {sys.version.split()[0]}, graphql-core {graphql.__version__}, {runs} turns after {warmup} warm-up\n")
    print("| measure | ours | baseline (same run) | ratio | target | GeneralManager 0.87.1 |")
    print("|---|---:|---:|---:|---|---|")
    ratio = ours / raw
    verdict = "✅" if ratio < TARGET_RATIO else "❌"
    print(
        f"| two-tool read turn, median | {ours * 1e6:,.0f} µs | {raw * 1e6:,.0f} µs (the two GraphQL "
        f"documents executed directly) | {ratio:.2f}x | < {TARGET_RATIO}x {verdict} | {GM_RATIO}x |"
    )
    verdict = "✅" if chars < TARGET_PROMPT_CHARS else "❌"
    print(
        f"| prompt characters sent per turn (2 requests) | {chars:,} | — | — | "
        f"< {TARGET_PROMPT_CHARS:,} {verdict} | ~{GM_PROMPT_CHARS:,} |"
    )
    print(f"\nOf those: system prompt {system:,} characters, tool definitions {tools:,} per request.")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))

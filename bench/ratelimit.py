"""Benchmark of the rate limiter: its cost per check against the usage history it has to count.

Run from the repository root::

    .venv/bin/python bench/ratelimit.py            # ~2-3 minutes
    .venv/bin/python bench/ratelimit.py --quick    # a smoke run (~10 s)

Two tables, every store a SQLite file in a temporary directory, markdown on stdout, progress on
stderr, nothing asserted (the target column only says whether a number meets its goal):

1. **One limiter cycle** — what a one-round turn asks of the limiter: ``admit_request``,
   ``check_tokens`` and ``record_usage`` — with a request and a token budget that never refuse,
   after 0, 1,000, 4,000 and 10,000 earlier turns in the window (one ``requests`` row and three
   token rows each). The clock is moved by hand, one earlier turn's spacing per cycle, so one
   turn's rows leave the window as one arrives and the window keeps its size. Timed in
   alternation, medians: the limiter; the same cycle with no budgets (the floor: only recording);
   and, as the baseline, the design this replaced, which sums every row of the window through
   ``ChatStore.usage`` on each check.
2. **Turns per second** through ``gmchat_nb.Chat`` on the demo project with the zero-latency
   scripted "small" turn of ``bench/turn.py`` (two queries, then the answer; each provider
   response reports token usage), a fresh conversation per turn: limiter on (``requests`` and
   ``tokens`` budgets of 10**9 and 10**12: every check runs, none refuses) against limiter off
   (``rate_limit: {requests: None}``), in alternating blocks of turns until each chat has run
   10,000. Turns/s is the median over the first blocks and over the last blocks (by then the
   limiter's window holds 10,000 requests: nothing leaves a one-hour window in a minute).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import load
from turn import QUESTION, WORKLOADS, rounds

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import TokenUsage
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.ratelimit import RateLimiter
from gmchat_nb.core.store import ChatStore

WINDOW = 3600.0
NEVER_REFUSE = {"requests": 10**9, "tokens": 10**12}
USAGE = TokenUsage(input_tokens=1200, output_tokens=80)
TARGET_SLOWDOWN = 0.10  # limiter on within 10 % of off after 10,000 turns
ISSUE_MS = {0: 0.1, 1000: 1.6, 4000: 8.1}  # the report in issue 11 (per request)


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- 1. one limiter cycle ------------------------------------------------------------------------


class ManualClock:
    """A clock the benchmark moves (so the window's size is what the benchmark says)."""

    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        return self.now


class EveryRowLimiter:
    """The design the limiter replaced, reduced to what a never-refusing cycle costs: each
    check sums every row of the window (``ChatStore.usage``), then usage is recorded."""

    def __init__(self, store: ChatStore, clock: ManualClock) -> None:
        self.store = store
        self.clock = clock

    def _room(self, actor: str, counters: list[str]) -> bool:
        start = self.clock() - WINDOW
        return all(
            sum(n for at, n in self.store.usage(actor, counter, since=start) if at > start)
            < NEVER_REFUSE[counter]
            for counter in counters
        )

    def cycle(self, actor: str) -> None:
        now = self.clock()
        if self._room(actor, ["requests", "tokens"]):
            self.store.record_usage(actor, "requests", 1, at=now)
        assert self._room(actor, ["tokens"])
        record_tokens(self.store, actor, now)


def record_tokens(store: ChatStore, actor: str, at: float) -> None:
    """The three token rows of one provider response."""
    store.record_usage(actor, "input_tokens", USAGE.input_tokens, at=at)
    store.record_usage(actor, "output_tokens", USAGE.output_tokens, at=at)
    store.record_usage(actor, "tokens", USAGE.input_tokens + USAGE.output_tokens, at=at)


def limiter_cycle(limiter: RateLimiter) -> Callable[[str], None]:
    """One turn's calls: admit the request, check tokens before the round, count its usage."""

    def cycle(actor: str) -> None:
        assert limiter.admit_request(actor).allowed
        assert limiter.check_tokens(actor).allowed
        limiter.record_usage(actor, USAGE)

    return cycle


def measure_cycles(directory: Path, history: int, runs: int) -> dict[str, float]:
    """Median seconds per cycle of each design with ``history`` earlier turns in the window."""
    clock = ManualClock()
    # Spacing keeps ``history`` turns in the window; with none, every cycle finds it empty.
    spacing = WINDOW / history if history else 2 * WINDOW
    # A store per design, so one design's reads do not evict another's pages from the cache.
    stores = {
        name: ChatStore(directory / f"cycles-{history}-{name}.sqlite3")
        for name in ("limiter", "floor", "every_row")
    }
    designs: dict[str, Callable[[str], None]] = {
        "limiter": limiter_cycle(RateLimiter(stores["limiter"], clock=clock, **NEVER_REFUSE)),
        "floor": limiter_cycle(RateLimiter(stores["floor"], requests=None, clock=clock)),
        "every_row": EveryRowLimiter(stores["every_row"], clock).cycle,
    }
    for _ in range(history):
        clock.now += spacing
        for store in stores.values():
            store.record_usage("alice", "requests", 1, at=clock.now)
            record_tokens(store, "alice", clock.now)
    times: dict[str, list[float]] = {name: [] for name in designs}
    for _ in range(runs):
        clock.now += spacing
        for name, cycle in designs.items():
            start = time.perf_counter()
            cycle("alice")
            times[name].append(time.perf_counter() - start)
    for store in stores.values():
        store.close()
    return {name: statistics.median(values) for name, values in times.items()}


def print_cycles(results: dict[int, dict[str, float]], runs: int) -> None:
    print(f"## One limiter cycle (admit_request + check_tokens + record_usage), median of {runs}\n")
    print(
        "| earlier turns in the window | limiter | no budgets (floor) | limiter over floor "
        "| baseline: every row read per check | baseline / limiter | issue 11 (per request) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|")
    for history, medians in results.items():
        reported = f"{ISSUE_MS[history]} ms" if history in ISSUE_MS else ""
        print(
            f"| {history:,} | {medians['limiter'] * 1e6:,.0f} µs | {medians['floor'] * 1e6:,.0f} µs"
            f" | {(medians['limiter'] - medians['floor']) * 1e6:,.0f} µs"
            f" | {medians['every_row'] * 1e6:,.0f} µs"
            f" | {medians['every_row'] / medians['limiter']:,.1f}x | {reported} |"
        )


# -- 2. turns per second -----------------------------------------------------------------------


def scripted_rounds(turns: int) -> list[dict[str, Any]]:
    """``turns`` small turns whose provider responses report token usage."""
    usage = {"input_tokens": USAGE.input_tokens, "output_tokens": USAGE.output_tokens}
    return [{**item, "usage": usage} for item in rounds(WORKLOADS["small"])] * turns


class TimedLimiter:
    """Stands in for a session's RateLimiter, adding up the seconds its calls take."""

    def __init__(self, limiter: RateLimiter) -> None:
        self.limiter = limiter
        self.seconds = 0.0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.limiter, name)
        if not callable(attribute):
            return attribute

        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return attribute(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


@dataclass(frozen=True, slots=True)
class Block:
    """Some turns of one chat: turns per second and seconds per turn spent in the limiter."""

    turns_per_second: float
    limiter_seconds: float


async def run_block(chat: Chat, provider: ScriptedProvider, turns: int) -> Block:
    """``turns`` turns, each in a fresh conversation (made untimed)."""
    session = await chat.session()
    limiter = session.limiter
    assert isinstance(limiter, TimedLimiter)
    limiter.seconds = 0.0
    gc.collect()  # this block does not pay for the garbage of the one before
    elapsed = 0.0
    for _ in range(turns):
        session.new_conversation()
        start = time.perf_counter()
        turn = await chat.ask(QUESTION)
        elapsed += time.perf_counter() - start
        assert turn.events[-1]["type"] == "done", turn.events[-1]
    chat.turns.clear()
    provider.requests.clear()  # the scripted provider keeps every request: bound the memory
    return Block(turns / elapsed, limiter.seconds / turns)


@dataclass(frozen=True, slots=True)
class Throughput:
    """Medians over some blocks, limiter on and off: turns/s, the paired ratio (each "on" block
    against the "off" block run next to it, so load hits both alike) and the limiter's time."""

    on: float
    off: float
    ratio: float
    limiter_on: float
    limiter_off: float

    @classmethod
    def of(cls, on: list[Block], off: list[Block]) -> Throughput:
        return cls(
            on=statistics.median(block.turns_per_second for block in on),
            off=statistics.median(block.turns_per_second for block in off),
            ratio=statistics.median(
                a.turns_per_second / b.turns_per_second for a, b in zip(on, off, strict=True)
            ),
            limiter_on=statistics.median(block.limiter_seconds for block in on),
            limiter_off=statistics.median(block.limiter_seconds for block in off),
        )


async def measure_throughput(
    directory: Path, total: int, block: int, edge: int
) -> tuple[Throughput, Throughput]:
    """The first and the last ``edge`` blocks of ``total`` turns, limiter on and off, the two
    chats taking turns block by block (which goes first alternates)."""
    budgets: dict[str, dict[str, int | None]] = {
        "on": dict(NEVER_REFUSE),
        "off": {"requests": None},
    }
    chats: dict[str, tuple[Chat, ScriptedProvider]] = {}
    for name, rate_limit in budgets.items():
        provider = ScriptedProvider({"rounds": scripted_rounds(total)})
        store = directory / f"turns-{name}.sqlite3"
        chat = Chat(provider=provider, store=store, rate_limit=rate_limit)
        session = await chat.session()
        session.limiter = TimedLimiter(session.limiter)  # type: ignore[assignment]
        chats[name] = (chat, provider)
    blocks: dict[str, list[Block]] = {name: [] for name in chats}
    for number in range(total // block):
        for name in ("on", "off") if number % 2 == 0 else ("off", "on"):
            blocks[name].append(await run_block(*chats[name], block))
        if (number + 1) * block % 1000 == 0:
            progress(f"  {(number + 1) * block:,} turns each")
    for chat, _ in chats.values():
        await chat.aclose()
    on, off = blocks["on"], blocks["off"]
    return Throughput.of(on[:edge], off[:edge]), Throughput.of(on[-edge:], off[-edge:])


def print_throughput(
    results: tuple[Throughput, Throughput], total: int, block: int, edge: int
) -> None:
    print(
        f"\n## Turns per second through Chat (file store), {total:,} turns each in blocks of "
        f"{block}, medians of {edge} blocks\n"
    )
    print(
        "| turns | limiter on | limiter off (baseline) | on vs off (paired) | target "
        "| time in the limiter per turn, on / off |"
    )
    print("|---|---:|---:|---:|---|---:|")
    labels = (f"1–{edge * block:,}", f"{total - edge * block + 1:,}–{total:,}")
    for label, measured in zip(labels, results, strict=True):
        change = measured.ratio - 1
        verdict = "✅" if change >= -TARGET_SLOWDOWN else "❌"
        print(
            f"| {label} | {measured.on:,.0f} | {measured.off:,.0f} | {change:+.1%} "
            f"| within -{TARGET_SLOWDOWN:.0%} {verdict} "
            f"| {measured.limiter_on * 1e6:,.0f} µs / {measured.limiter_off * 1e6:,.0f} µs |"
        )


async def main(quick: bool) -> None:
    histories = [0, 1000] if quick else [0, 1000, 4000, 10_000]
    runs = 10 if quick else 40
    total, block, edge = (600, 20, 10) if quick else (10_000, 20, 50)
    print("# gmchat_nb rate limiter benchmark\n")
    print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load at start {load()}\n")
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        cycles = {}
        for history in histories:
            progress(f"cycles with {history:,} earlier turns")
            cycles[history] = measure_cycles(directory, history, runs)
        print_cycles(cycles, runs)
        progress("turns through Chat")
        throughput = await measure_throughput(directory, total, block, edge)
        print_throughput(throughput, total, block, edge)
    print(f"\nLoad at the end: {load()} (1/5/15-minute averages).")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))

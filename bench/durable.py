"""Benchmark of durable turns against a real `jupyter server` (bench/server.py's set-up), on a
SQLite file and on a PostgreSQL database.

Run from the repository root::

    .venv/bin/python bench/durable.py            # ~2 minutes (also: bench/server.py --durable)
    .venv/bin/python bench/durable.py --quick    # a smoke run
    .venv/bin/python bench/durable.py --baseline ../main-before   # + the hub measures, side by side

PostgreSQL is ``GMCHAT_BENCH_POSTGRES`` (a ``postgresql://`` URL; a fresh schema is used) or a
throwaway cluster started from Debian's ``postgresql`` package, as the tests do (but with
fsync on, as a deployment has it). Measured on each
store in one run, each against today's path on the same server:

1. **Admission latency**: ``POST turns/`` (202 once the turn is stored and started, before any
   provider work) against ``POST {url}`` for the same turn (the answer at the end), the
   "small" workload of ``bench/turn.py`` with a zero-latency scripted provider, each in a new
   conversation; medians of ``--runs``.
2. **Turns per second with 20 clients**: each turn in a new conversation, through ``POST {url}``
   (today) and durably (``POST turns/``, then ``GET conversations/{id}/events`` after the
   admission's sequence until ``done``); the raw keep-alive client of bench/rawhttp.py; medians
   of ``--rounds`` rounds.
3. **A 1,000-event turn** (one answer streamed in 1,000 chunks): time to the last event through
   ``POST stream/`` (live, today's path); admitted and followed through ``GET
   conversations/{id}/events`` (live from the journal); and replayed from the journal after the
   turn ended (``?after=0``). The client is httpx in every case; medians of 5.

With ``--baseline PATH`` (another commit's worktree, e.g. today's main), measured for this
checkout and the baseline in the same run:

4. **Follower latency**: a 120-chunk answer streamed 10 ms a chunk
   (``streaming_provider.StreamingProvider``) through ``POST stream/``, and followed at once on
   ``GET conversations/{id}/events``; each event's arrival on the follower minus its arrival on
   the live stream, p50 and p95 over every event of ``--follows`` turns: one server on SQLite,
   and two servers on one PostgreSQL store (live on one, followed on the other).
5. **Write transactions per turn** (bench/transactions.py): a simple two-tool turn, plain and
   durable, and a 1,000-event answer at once and over ~5 s.
6. **Turns per second with 20 clients split over two servers on one PostgreSQL store**: durable
   turns (admit on a server, follow on the same server to ``done``), medians of ``--rounds``.

Nothing is asserted; the machine's load is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import httpx
import yaml
from machine import describe, load  # bench/ is on sys.path when run
from rawhttp import Connection
from server import AUTH, CHAT, CLIENTS, jupyter_server, new_conversation, post_turn
from server import turns_per_second as throughput
from transactions import KINDS, counts
from turn import QUESTION

CHUNKS = 1000
DONE = b'"type": "done"'

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests.postgresql
STREAMING = "streaming_provider.StreamingProvider"


async def admit(conn: Connection) -> float:
    body = {
        "text": QUESTION,
        "turn_id": uuid.uuid4().hex,
        "conversation_id": await new_conversation(conn),
    }
    start = time.perf_counter()
    response = await conn.request("POST", CHAT + "turns/", body)
    elapsed = time.perf_counter() - start
    assert response.status == 202, response.body[:300]
    return elapsed


async def durable_turn(conn: Connection, port: int) -> None:
    """One turn as a durable client runs it: admit, then follow the journal to its end."""
    body = {
        "text": QUESTION,
        "turn_id": uuid.uuid4().hex,
        "conversation_id": await new_conversation(conn),
    }
    admitted = await conn.request("POST", CHAT + "turns/", body)
    assert admitted.status == 202, admitted.body[:300]
    path = CHAT + f"conversations/{body['conversation_id']}/events"
    async with Connection("127.0.0.1", port, AUTH) as stream:
        await stream.follow(f"{path}?after={admitted.json()['sequence']}", DONE)


async def throughputs(port: int, turns: int, rounds: int) -> dict[str, float]:
    post, durable = [], []
    for _ in range(rounds):
        post.append(await throughput(port, turns))
        durable.append(await throughput(port, turns, turn=durable_turn))
    return {"post_rate": statistics.median(post), "durable_rate": statistics.median(durable)}


async def admission(port: int, runs: int) -> dict[str, float]:
    admitted, posted = [], []
    async with Connection("127.0.0.1", port, AUTH) as conn:
        for _ in range(runs):
            admitted.append(await admit(conn))
            posted.append(await post_turn(conn))
            await asyncio.sleep(0.01)  # the admitted turn finishes before the next request
    return {"admit": statistics.median(admitted), "post": statistics.median(posted)}


async def last_event_live(client: httpx.AsyncClient, base: str) -> float:
    conversation = (await client.post(base + "conversations/", json={})).json()["conversation"]
    start = time.perf_counter()
    body = {"text": "Tell me everything", "conversation_id": conversation["id"]}
    async with client.stream("POST", base + "stream/", json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith('data: {"type": "done"') or '"type": "done"' in line:
                break
    return time.perf_counter() - start


async def last_event_followed(client: httpx.AsyncClient, base: str) -> tuple[float, str, int]:
    conversation = (await client.post(base + "conversations/", json={})).json()["conversation"]
    cid = conversation["id"]
    start = time.perf_counter()
    body = {"text": "Tell me everything", "turn_id": uuid.uuid4().hex, "conversation_id": cid}
    assert (await client.post(base + "turns/", json=body)).status_code == 202
    count = await _read_to_done(client, base + f"conversations/{cid}/events", 0)
    return time.perf_counter() - start, cid, count


async def _read_to_done(client: httpx.AsyncClient, url: str, after: int) -> int:
    count = 0
    async with client.stream("GET", url, params={"after": str(after)}) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                count += 1
                if '"type": "done"' in line:
                    break
    return count


async def big_turn(port: int, runs: int) -> dict[str, float]:
    base = f"http://127.0.0.1:{port}{CHAT}"
    live, followed, replayed = [], [], []
    async with httpx.AsyncClient(headers=AUTH, timeout=120) as client:
        for _ in range(runs):
            live.append(await last_event_live(client, base))
            seconds, cid, count = await last_event_followed(client, base)
            assert count == CHUNKS + 1, count
            followed.append(seconds)
            start = time.perf_counter()
            await _read_to_done(client, base + f"conversations/{cid}/events", 0)
            replayed.append(time.perf_counter() - start)
    return {
        "live": statistics.median(live),
        "followed": statistics.median(followed),
        "replayed": statistics.median(replayed),
    }


Store = tuple[str, str | None, str | None]  # name, the small turns' store, the big turn's


@contextmanager
def stores() -> Iterator[list[Store]]:
    """Each store: fresh SQLite files (None: each server's own), then fresh PostgreSQL schemas."""
    from tests.postgresql import cluster, fresh_schema, wait_until_ready

    configured = os.environ.get("GMCHAT_BENCH_POSTGRES")
    with nullcontext(configured) if configured else cluster(fsync=True) as server:
        wait_until_ready(server)
        with fresh_schema(server) as small, fresh_schema(server) as big:
            yield [("SQLite", None, None), ("PostgreSQL", small, big)]


def measure(store: str | None, big_store: str | None, runs: int, rounds: int, turns: int,
            big_runs: int) -> dict[str, Any]:  # fmt: skip
    with jupyter_server(store=store) as (_, port):
        latencies = asyncio.run(admission(port, runs))
        rates = asyncio.run(throughputs(port, turns, rounds))
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "big.yaml"
        script_rounds: list[dict[str, Any]] = [{"chunks": [f"w{i} " for i in range(CHUNKS)]}]
        script.write_text(yaml.safe_dump(script_rounds * (2 * big_runs + 2)))
        with jupyter_server(provider=f"scripted:{script}", store=big_store) as (_, port):
            big = asyncio.run(big_turn(port, big_runs))
    return {**latencies, **rates, **{f"big_{key}": value for key, value in big.items()}}


async def follower_latencies(live: int, follower: int, turns: int) -> list[float]:
    """Seconds from each event's arrival on the live ``POST stream/`` of server ``live`` to its
    arrival on a ``GET events`` reader of server ``follower`` (the journal's events of a turn
    are the live stream's, in order)."""
    deltas: list[float] = []
    async with httpx.AsyncClient(headers=AUTH, timeout=120) as client:
        for _ in range(turns):
            created = await client.post(f"http://127.0.0.1:{live}{CHAT}conversations/", json={})
            cid = created.json()["conversation"]["id"]
            followed: list[float] = []
            ready = asyncio.Event()

            async def follow(
                cid: str = cid, followed: list[float] = followed, ready: asyncio.Event = ready
            ) -> None:
                url = f"http://127.0.0.1:{follower}{CHAT}conversations/{cid}/events"
                async with client.stream("GET", url, params={"after": "0"}) as response:
                    ready.set()
                    async for line in response.aiter_lines():
                        if line.startswith("data: "):
                            followed.append(time.perf_counter())
                            if '"type": "done"' in line or '"type": "error"' in line:
                                return

            reader = asyncio.create_task(follow())
            await ready.wait()
            lived: list[float] = []
            body = {"text": "Tell me everything", "conversation_id": cid}
            url = f"http://127.0.0.1:{live}{CHAT}stream/"
            async with client.stream("POST", url, json=body) as response:
                async for line in response.aiter_lines():
                    if line.startswith("data: "):
                        lived.append(time.perf_counter())
            await asyncio.wait_for(reader, 120)
            deltas.extend(there - here for there, here in zip(followed, lived, strict=False))
    return deltas


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(len(ordered) * share) - 1))]


async def split_throughput(ports: list[int], turns: int) -> float:
    """Durable turns per second, 20 clients split over ``ports`` (each client on one server)."""

    async def worker(port: int, count: int) -> None:
        async with Connection("127.0.0.1", port, AUTH) as conn:
            for _ in range(count):
                await durable_turn(conn, port)

    start = time.perf_counter()
    per = turns // CLIENTS
    await asyncio.gather(*(worker(ports[i % len(ports)], per) for i in range(CLIENTS)))
    return per * CLIENTS / (time.perf_counter() - start)


def hub_measures(
    checkout: Path | None, postgresql: str, follows: int, rounds: int, turns: int
) -> dict[str, Any]:
    """Follower latencies (one SQLite server; two PostgreSQL servers) and turns/s over two
    PostgreSQL servers, with ``checkout``'s gmchat_nb (None: this one)."""
    from tests.postgresql import fresh_schema

    found: dict[str, Any] = {}
    with jupyter_server(provider=STREAMING, checkout=checkout, path=[HERE]) as (_, port):
        found["follow_sqlite"] = asyncio.run(follower_latencies(port, port, follows))
    with (
        fresh_schema(postgresql) as store,
        jupyter_server(provider=STREAMING, checkout=checkout, path=[HERE], store=store) as (_, a),
        jupyter_server(provider=STREAMING, checkout=checkout, path=[HERE], store=store) as (_, b),
    ):
        found["follow_postgresql"] = asyncio.run(follower_latencies(a, b, follows))
    with (
        fresh_schema(postgresql) as store,
        jupyter_server(checkout=checkout, store=store) as (_, a),
        jupyter_server(checkout=checkout, store=store) as (_, b),
    ):
        found["split"] = statistics.median(
            asyncio.run(split_throughput([a, b], turns)) for _ in range(rounds)
        )
    return found


def report_hub(baseline: Path, *, quick: bool, rounds: int) -> None:
    """Sections 4-6 (see the module docstring): this checkout against ``baseline``."""
    from tests.postgresql import cluster, wait_until_ready

    follows, turns = (3, 100) if quick else (10, 20 * CLIENTS)
    rounds = 1 if quick else rounds
    print(f"\n{describe()}: this checkout against {baseline.name} (the baseline), same run\n")
    configured = os.environ.get("GMCHAT_BENCH_POSTGRES")
    with nullcontext(configured) if configured else cluster(fsync=True) as server:
        wait_until_ready(server)
        results = {
            name: hub_measures(checkout, server, follows, rounds, turns)
            for name, checkout in (("this", None), ("baseline", baseline))
        }
    with tempfile.TemporaryDirectory() as folder:
        writes = {
            "this": counts(HERE.parent, Path(folder) / "this.sqlite3"),
            "baseline": counts(baseline, Path(folder) / "baseline.sqlite3"),
        }
    print(f"## Follower latency: `GET events` after the live `POST stream/`, {follows} turns of "
          "120 chunks 10 ms apart, every event\n")  # fmt: skip
    print("| where | this checkout p50 / p95 | baseline p50 / p95 |")
    print("|---|---:|---:|")
    for key, label in (("follow_sqlite", "one server, SQLite"),
                       ("follow_postgresql", "two servers, one PostgreSQL store")):  # fmt: skip
        cells = [
            f"{percentile(results[name][key], 0.5) * 1e3:.0f} / "
            f"{percentile(results[name][key], 0.95) * 1e3:.0f} ms"
            for name in ("this", "baseline")
        ]
        print(f"| {label} | {cells[0]} | {cells[1]} |")
    print("\n## Write transactions per turn (SQLite, BEGIN IMMEDIATE counted)\n")
    print("| turn | this checkout | baseline |")
    print("|---|---:|---:|")
    for kind, label in KINDS.items():
        print(f"| {label} | {writes['this'][kind]} | {writes['baseline'][kind]} |")
    print(f"\n## Durable turns/s, {CLIENTS} clients split over two servers on one PostgreSQL "
          f"store, {turns} turns (medians of {rounds})\n")  # fmt: skip
    this, base = results["this"]["split"], results["baseline"]["split"]
    print("| this checkout | baseline | ratio |")
    print("|---:|---:|---:|")
    print(f"| {this:.0f} | {base:.0f} | {this / base:.2f}x |")
    print(f"\nload average after: {load()}")


def report(*, quick: bool = False, runs: int = 30, rounds: int = 3) -> None:
    """Measure on both stores and print the tables."""
    runs, rounds, turns, big_runs = (5, 1, 100, 2) if quick else (runs, rounds, 20 * CLIENTS, 5)
    before = describe()
    with stores() as configured:
        results = {
            name: measure(store, big_store, runs, rounds, turns, big_runs)
            for name, store, big_store in configured
        }
    after = load()
    print("# gmchat_nb durable turns benchmark\n")
    print(f"{before} before, load {after} after; a real jupyter server on 127.0.0.1\n")
    print(f"## Admission latency (medians of {runs})\n")
    print("| store | `POST turns/` (202, turn stored and started) | `POST {url}` (the whole turn) "
          "| ratio |")  # fmt: skip
    print("|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['admit'] * 1e3:.2f} ms | {r['post'] * 1e3:.2f} ms | "
              f"{r['admit'] / r['post']:.2f}x |")  # fmt: skip
    print(f"\n## Turns per second, {CLIENTS} clients, {turns} turns (medians of {rounds})\n")
    print("| store | `POST {url}` (today) | durable: admit + follow `GET events` | ratio |")
    print("|---|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['post_rate']:.0f} | {r['durable_rate']:.0f} | "
              f"{r['durable_rate'] / r['post_rate']:.2f}x |")  # fmt: skip
    sqlite_rate = results["SQLite"]
    for name, r in results.items():
        if name != "SQLite":
            print(f"\n{name} / SQLite: today's path {r['post_rate'] / sqlite_rate['post_rate']:.2f}x, "
                  f"durable {r['durable_rate'] / sqlite_rate['durable_rate']:.2f}x")  # fmt: skip
    print(f"\n## A {CHUNKS:,}-event turn: time to its last event (medians of {big_runs})\n")
    print("| store | live, `POST stream/` (today) | admitted, followed on `GET events` | "
          "replayed from the journal after it ended | followed / live | replay / live |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|")
    for name, r in results.items():
        print(f"| {name} | {r['big_live'] * 1e3:.0f} ms | {r['big_followed'] * 1e3:.0f} ms | "
              f"{r['big_replayed'] * 1e3:.0f} ms | {r['big_followed'] / r['big_live']:.2f}x | "
              f"{r['big_replayed'] / r['big_live']:.2f}x |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path, help="another checkout: sections 4-6")
    parser.add_argument("--hub-only", action="store_true", help="only sections 4-6")
    options = parser.parse_args()
    if not options.hub_only:
        report(quick=options.quick, runs=options.runs, rounds=options.rounds)
    if options.baseline is not None:
        report_hub(options.baseline, quick=options.quick, rounds=options.rounds)


if __name__ == "__main__":
    main()

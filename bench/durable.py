"""Benchmark of durable turns against a real `jupyter server` (bench/server.py's set-up).

Run from the repository root::

    .venv/bin/python bench/durable.py            # ~1 minute
    .venv/bin/python bench/durable.py --quick    # a smoke run

Measured in one run, each against today's path:

1. **Admission latency**: ``POST turns/`` (202 once the turn is stored and started, before any
   provider work) against ``POST {url}`` for the same turn (the answer at the end), the
   "small" workload of ``bench/turn.py`` with a zero-latency scripted provider, each in a new
   conversation; medians of ``--runs``.
2. **A 1,000-event turn** (one answer streamed in 1,000 chunks): time to the last event through
   ``POST stream/`` (live, today's path); admitted and followed through ``GET
   conversations/{id}/events`` (live from the journal); and replayed from the journal after the
   turn ended (``?after=0``). The client is httpx in every case; medians of ``--runs``.

Turns per second with 20 clients on SQLite and on PostgreSQL belong to the shared store, which
is not built yet (issue 15). Nothing is asserted; the machine's load is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml
from machine import describe, load  # bench/ is on sys.path when run
from rawhttp import Connection
from server import AUTH, CHAT, jupyter_server, new_conversation, post_turn
from turn import QUESTION

CHUNKS = 1000


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--runs", type=int, default=30)
    options = parser.parse_args()
    runs, big_runs = (5, 2) if options.quick else (options.runs, 5)
    before = describe()
    with jupyter_server() as (_, port):
        latencies = asyncio.run(admission(port, runs))
    with tempfile.TemporaryDirectory() as directory:
        script = Path(directory) / "big.yaml"
        rounds: list[dict[str, Any]] = [{"chunks": [f"w{i} " for i in range(CHUNKS)]}]
        script.write_text(yaml.safe_dump(rounds * (2 * big_runs + 2)))
        with jupyter_server(provider=f"scripted:{script}") as (_, port):
            big = asyncio.run(big_turn(port, big_runs))
    after = load()
    print("# gmchat_nb durable turns benchmark\n")
    print(f"{before} before, load {after} after; a real jupyter server on 127.0.0.1, SQLite\n")
    print(f"## Admission latency (medians of {runs})\n")
    print(
        "| `POST turns/` (202, turn stored and started) | `POST {url}` (the whole turn) | ratio |"
    )
    print("|---:|---:|---:|")
    print(
        f"| {latencies['admit'] * 1e3:.2f} ms | {latencies['post'] * 1e3:.2f} ms | "
        f"{latencies['admit'] / latencies['post']:.2f}x |"
    )
    print(f"\n## A {CHUNKS:,}-event turn: time to its last event (medians of {big_runs})\n")
    print(
        "| live, `POST stream/` (today) | admitted, followed on `GET events` | "
        "replayed from the journal after it ended | followed / live | replay / live |"
    )
    print("|---:|---:|---:|---:|---:|")
    print(
        f"| {big['live'] * 1e3:.0f} ms | {big['followed'] * 1e3:.0f} ms | "
        f"{big['replayed'] * 1e3:.0f} ms | {big['followed'] / big['live']:.2f}x | "
        f"{big['replayed'] / big['live']:.2f}x |"
    )


if __name__ == "__main__":
    main()

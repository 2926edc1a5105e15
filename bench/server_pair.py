"""Two checkouts' server extensions side by side: paired turn latencies and throughput.

Run from the repository root, with a second checkout of another commit (``git worktree add``)::

    .venv/bin/python bench/server_pair.py --baseline ../main-before        # ~2 minutes
    .venv/bin/python bench/server_pair.py --baseline ../main-before --runs 20
    .venv/bin/python bench/server_pair.py --baseline ../main-before --postgresql

Each checkout's gmchat_nb runs in its own `jupyter server` subprocess (imported from that
checkout; ``bench/server.py`` starts them and times the turns through ``bench/rawhttp.py``), both
with the zero-latency scripted "small" turn of ``bench/turn.py`` over the
in-process demo and a file store. Turns alternate between the two servers (the order flips every
run), so the machine's noise falls on both alike: a POST turn, a WebSocket turn and SSE time to
the first event, each in a fresh conversation; then throughput with 20 concurrent clients, three
rounds each, alternating. Printed: medians and this checkout / baseline ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
from contextlib import AsyncExitStack, ExitStack
from pathlib import Path
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import websockets

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import load
from rawhttp import Connection
from server import (
    AUTH,
    CHAT,
    jupyter_server,
    post_turn,
    sse_first_event,
    turns_per_second,
    ws_turn,
)

HERE = Path(__file__).resolve().parents[1]


async def measure(ports: dict[str, int], runs: int) -> dict[str, dict[str, list[float]]]:
    """Per server: POST, WebSocket and SSE-first times (ms), alternating; then throughput."""
    results: dict[str, dict[str, list[float]]] = {
        name: {"post": [], "ws": [], "sse": [], "throughput": []} for name in ports
    }
    async with AsyncExitStack() as stack:
        conns = {
            name: await stack.enter_async_context(Connection("127.0.0.1", port, AUTH))
            for name, port in ports.items()
        }
        sockets = {
            name: await stack.enter_async_context(
                websockets.connect(f"ws://127.0.0.1:{port}{CHAT}ws", additional_headers=AUTH)
            )
            for name, port in ports.items()
        }
        for conn in conns.values():  # warm-up: connect the project, fill caches
            for _ in range(5):
                await post_turn(conn)
        for run in range(runs):
            names = list(ports) if run % 2 == 0 else list(reversed(ports))
            for name in names:
                conn = conns[name]
                results[name]["post"].append(await post_turn(conn) * 1000)
                results[name]["ws"].append(await ws_turn(conn, sockets[name]) * 1000)
                results[name]["sse"].append(await sse_first_event(conn) * 1000)
        for _ in range(3):
            for name, port in ports.items():
                results[name]["throughput"].append(await turns_per_second(port, 200))
    return results


def with_option(url: str, option: str) -> str:
    """``url`` with one more server option in its libpq ``options`` parameter."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query))
    query["options"] = f"{query.get('options', '')} {option}".strip()
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument("--runs", type=int, default=100, help="turns of each kind per server")
    parser.add_argument(
        "--postgresql", action="store_true", help="each server on a PostgreSQL schema (fsync on)"
    )
    parser.add_argument(
        "--async-commit",
        action="store_true",
        help="with --postgresql: this checkout's store URL sets synchronous_commit=off, as the "
        "baseline's code did (to tell that cost from the rest)",
    )
    args = parser.parse_args()
    print(f"load average before: {load()}")
    with ExitStack() as stack:
        stores: list[str | None] = [None, None]
        if args.postgresql:
            sys.path.insert(0, str(HERE))  # tests.postgresql
            from tests.postgresql import cluster, fresh_schema, wait_until_ready

            server = stack.enter_context(cluster(fsync=True))
            wait_until_ready(server)
            stores = [stack.enter_context(fresh_schema(server)) for _ in range(2)]
            if args.async_commit:
                stores[0] = with_option(str(stores[0]), "-csynchronous_commit=off")
        _, this = stack.enter_context(jupyter_server(checkout=HERE, store=stores[0]))
        _, baseline = stack.enter_context(
            jupyter_server(checkout=args.baseline.resolve(), store=stores[1])
        )
        results = asyncio.run(measure({"this": this, "baseline": baseline}, args.runs))
    print(f"load average after: {load()}\n")
    where = "PostgreSQL" if args.postgresql else "SQLite"
    if args.async_commit:
        where += " (this checkout's with synchronous_commit=off)"
    print(f"this checkout vs {args.baseline}, {args.runs} turns of each kind, alternating, "
          f"{where} stores\n")  # fmt: skip
    print("| measure | this checkout | baseline | this / baseline |")
    print("|---|---:|---:|---:|")
    for key, label, unit in (
        ("post", "POST turn, median", "ms"),
        ("ws", "WebSocket turn, median", "ms"),
        ("sse", "SSE first event, median", "ms"),
        ("throughput", "throughput, 20 clients", "turns/s"),
    ):
        this = statistics.median(results["this"][key])
        base = statistics.median(results["baseline"][key])
        print(f"| {label} | {this:.2f} {unit} | {base:.2f} {unit} | {this / base:.2f} |")


if __name__ == "__main__":
    main()

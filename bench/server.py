"""Benchmark of the Jupyter server extension: a real `jupyter server` subprocess on 127.0.0.1.

Run from the repository root::

    .venv/bin/python bench/server.py            # ~2 minutes
    .venv/bin/python bench/server.py --quick    # a smoke run
    .venv/bin/python bench/server.py --limiter  # + 10,000 turns with the rate limiter on and off
    .venv/bin/python bench/server.py --durable  # durable turns on SQLite and PostgreSQL (durable.py)
    .venv/bin/python bench/server.py --baseline ../main-before  # + write transactions, both checkouts

Each turn is the "small" workload of ``bench/turn.py`` (two queries in one provider response,
then the answer) with a zero-latency scripted provider over the in-process inventory demo, in a
fresh conversation (created untimed), so every turn sends the same context. Measured in
``--rounds`` rounds (3) on one server, each row the median of the rounds' medians: POST latency,
SSE time to the first event, a WebSocket turn, throughput with 20 concurrent clients, and the
server's peak RSS. Requests go through ``bench/rawhttp.py``, a minimal keep-alive client, so the
client is not what is measured (httpx cost ~1 ms of Python per request and capped throughput).
Baseline in the same run: the same compiled GraphQL documents executed directly with
graphql-core in this process. GeneralManager's column is quoted (measured once by an earlier
session on this kind of machine), not re-run here.

Responsiveness: a second server with the offline provider answers 64 KiB questions (HTTP and
WebSocket, the largest a client may send) while another connection polls ``/api/status``; the
status latencies are compared with the same server's idle ones, measured in the same run. Chat
turns run on the extension's engine thread, so a busy turn must not hold up the server's loop.

``--limiter``: two servers, one with request and token budgets that never refuse (so every check
runs) and one with no budgets, take 20 concurrent clients' turns in alternating blocks of 500
until each has served 10,000; turns/s of the first and last blocks show whether the limiter's
cost grows with its history (it counts every turn of the last hour).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import graphql
import websockets
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import load
from rawhttp import Connection
from turn import QUESTION, WORKLOADS, rounds

from gmchat_nb import demo_project

TOKEN = "bench-token"
AUTH = {"Authorization": f"token {TOKEN}"}
CHAT = "/gmchat/chat/"
# Quoted: GeneralManager 0.87.1 measured once by an earlier session on this kind of machine.
GM = {"post": 460.0, "first": 160.0, "throughput": 2.0, "rss": 120.0}
TARGET = {"post": 20.0, "first": 5.0, "throughput": 50.0}
BIG_QUESTION = ("Which projects use parts made of steel or cobalt, and who supplies them? " * 900)[
    : 64 * 1024 - 200
]  # just under the default 64 KiB body limit, JSON envelope included
LIMITER_ON = {"requests": 10**9, "tokens": 10**12}
LIMITER_BLOCK = 500
CLIENTS = 20


@contextmanager
def jupyter_server(
    provider: str | None = None,
    rate_limit: dict[str, Any] | None = None,
    checkout: Path | None = None,
    store: str | None = None,
    path: list[Path] | None = None,
    python: str | None = None,
    settings: dict[str, Any] | None = None,
) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    """`jupyter server` with gmchat configured for the benchmark: (process, port).

    The provider is the zero-latency scripted "small" workload unless one is named; no rate
    limit unless one is given; gmchat_nb imported from ``checkout`` when given (another commit's
    worktree, for side-by-side comparisons); the store a fresh SQLite file unless one is named
    (a ``postgresql://`` URL); ``path``: folders the server imports from besides (a provider
    class of the benchmark's); ``python``: the interpreter that runs the server (another
    checkout's venv; this one's by default); ``settings``: more chat settings, over these."""
    with tempfile.TemporaryDirectory() as directory:
        tmp = Path(directory)
        script = tmp / "rounds.yaml"
        script.write_text(yaml.safe_dump(rounds(WORKLOADS["small"])))
        config = {
            "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": True}},
            "GMChat": {
                "provider": provider or f"scripted:{script}",
                "project": "demo",
                "store": store or str(tmp / "chat.sqlite3"),
                "chat_settings": {
                    "rate_limit": rate_limit or {"requests": None},
                    **(settings or {}),
                },
            },
        }
        (tmp / "config").mkdir()
        (tmp / "config" / "jupyter_server_config.json").write_text(json.dumps(config))
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        env = {
            "JUPYTER_CONFIG_DIR": str(tmp / "config"),
            "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
            "JUPYTER_DATA_DIR": str(tmp / "data"),
            "HOME": str(tmp),
            "PATH": "/usr/bin:/bin",
            "PYTHONPATH": os.pathsep.join(
                str(folder) for folder in [*([checkout] if checkout else []), *(path or [])]
            ),
        }
        process = subprocess.Popen(
            [
                python or sys.executable,
                "-m",
                "jupyter_server",
                "--no-browser",
                "--allow-root",
                "--ServerApp.ip=127.0.0.1",
                f"--ServerApp.port={port}",
                "--ServerApp.port_retries=0",
                f"--IdentityProvider.token={TOKEN}",
                f"--ServerApp.root_dir={tmp}",
                "--ServerApp.log_level=WARN",
            ],
            env=env,
            cwd=checkout,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            asyncio.run(_wait_until_up(process, port))
            yield process, port
        finally:
            process.terminate()
            process.wait(timeout=15)


async def _wait_until_up(process: subprocess.Popen[bytes], port: int) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            async with Connection("127.0.0.1", port, AUTH) as conn:
                if (await conn.request("GET", "/api/status")).status == 200:
                    return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError("jupyter server did not start")


def peak_rss_mib(pid: int) -> float:
    """VmHWM of the server process (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def new_conversation(conn: Connection) -> str:
    return str(
        (await conn.request("POST", CHAT + "conversations/", {})).json()["conversation"]["id"]
    )


async def post_turn(conn: Connection, _port: int = 0) -> float:
    body = {"text": QUESTION, "conversation_id": await new_conversation(conn)}
    start = time.perf_counter()
    response = await conn.request("POST", CHAT, body)
    elapsed = time.perf_counter() - start
    assert response.json()["events"][-1]["type"] == "done", response.body[:300]
    return elapsed


async def sse_first_event(conn: Connection) -> float:
    body = {"text": QUESTION, "conversation_id": await new_conversation(conn)}
    first, _ = await conn.first_event(CHAT + "stream/", body)
    return first


async def ws_turn(conn: Connection, ws: Any) -> float:
    body = {"type": "message", "text": QUESTION, "conversation_id": await new_conversation(conn)}
    start = time.perf_counter()
    await ws.send(json.dumps(body))
    while json.loads(await ws.recv())["type"] not in ("done", "error"):
        pass
    return time.perf_counter() - start


async def turns_per_second(
    port: int, turns: int, clients: int = CLIENTS, turn: Callable[..., Awaitable[Any]] = post_turn
) -> float:
    """Throughput of ``turns`` turns (each in a new conversation) from concurrent clients, each
    turn ``turn(connection, port)`` (today's ``POST {url}`` unless another is given)."""

    async def worker(count: int) -> None:
        async with Connection("127.0.0.1", port, AUTH) as conn:
            for _ in range(count):
                await turn(conn, port)

    start = time.perf_counter()
    await asyncio.gather(*(worker(turns // clients) for _ in range(clients)))
    return (turns // clients * clients) / (time.perf_counter() - start)


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


async def latency_rounds(port: int, runs: int, rounds_: int) -> dict[str, Any]:
    """Per round: median POST, SSE-first and WebSocket times (ms) and throughput; all samples."""
    medians: dict[str, list[float]] = {"post": [], "first": [], "ws": [], "throughput": []}
    samples: dict[str, list[float]] = {"post": [], "first": [], "ws": []}
    ws_url = f"ws://127.0.0.1:{port}{CHAT}ws"
    async with (
        Connection("127.0.0.1", port, AUTH) as conn,
        websockets.connect(ws_url, additional_headers=AUTH) as ws,
    ):
        for _ in range(5):  # warm-up: connect the project, import, fill caches
            await post_turn(conn)
        for _ in range(rounds_):
            this = {
                "post": [await post_turn(conn) * 1000 for _ in range(runs)],
                "first": [await sse_first_event(conn) * 1000 for _ in range(runs)],
                "ws": [await ws_turn(conn, ws) * 1000 for _ in range(runs)],
            }
            for key, values in this.items():
                medians[key].append(statistics.median(values))
                samples[key].extend(values)
            medians["throughput"].append(await turns_per_second(port, 10 * CLIENTS))
    return {"medians": medians, "samples": samples}


async def status_latencies(conn: Connection, busy: Any) -> list[float]:
    """``/api/status`` latencies (ms), polled every 2 ms while ``busy`` (a task) runs."""
    latencies = []
    while not busy.done():
        start = time.perf_counter()
        response = await conn.request("GET", "/api/status")
        latencies.append((time.perf_counter() - start) * 1000)
        assert response.status == 200
        await asyncio.sleep(0.002)
    await busy
    return latencies


async def big_http_turn(port: int) -> None:
    async with Connection("127.0.0.1", port, AUTH) as conn:
        response = await conn.request("POST", CHAT, {"text": BIG_QUESTION})
        assert response.status == 200, response.body[:300]


async def big_ws_turn(port: int) -> None:
    async with websockets.connect(f"ws://127.0.0.1:{port}{CHAT}ws", additional_headers=AUTH) as ws:
        await ws.send(json.dumps({"type": "message", "text": BIG_QUESTION}))
        while json.loads(await ws.recv())["type"] not in ("done", "error"):
            pass


async def responsiveness(port: int, reps: int) -> dict[str, list[float]]:
    """Status latencies while idle, and during 64 KiB questions over HTTP and WebSocket."""
    async with Connection("127.0.0.1", port, AUTH) as conn:
        await big_http_turn(port)  # warm-up
        idle = []
        for _ in range(reps * 20):
            start = time.perf_counter()
            await conn.request("GET", "/api/status")
            idle.append((time.perf_counter() - start) * 1000)
            await asyncio.sleep(0.002)
        http: list[float] = []
        ws: list[float] = []
        for _ in range(reps):
            http += await status_latencies(conn, asyncio.ensure_future(big_http_turn(port)))
            ws += await status_latencies(conn, asyncio.ensure_future(big_ws_turn(port)))
    return {"idle": idle, "http": http, "ws": ws}


async def limiter_blocks(on: int, off: int, total: int) -> list[tuple[float, float]]:
    """(on, off) turns/s per block of 500, alternating which server goes first."""
    blocks = []
    for number in range(total // LIMITER_BLOCK):
        order = [(on, 0), (off, 1)] if number % 2 == 0 else [(off, 1), (on, 0)]
        pair = [0.0, 0.0]
        for port, slot in order:
            pair[slot] = await turns_per_second(port, LIMITER_BLOCK)
        blocks.append((pair[0], pair[1]))
        print(f"block {number + 1}: on {pair[0]:.0f}, off {pair[1]:.0f} turns/s", file=sys.stderr)
    return blocks


def direct_ms(runs: int) -> float:
    """The same GraphQL documents executed directly (median ms per turn's worth)."""
    project = demo_project()
    plans = [project.compiler.compile(dict(q)) for q in WORKLOADS["small"]]
    requests = [(p.document, p.request_variables(page)) for p in plans for page in p.pages]
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        for document, variables in requests:
            result = graphql.execute(project.executor.schema, document, variable_values=variables)
            assert isinstance(result, graphql.ExecutionResult) and not result.errors
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1000


def print_latencies(
    result: dict[str, Any], rounds_: int, runs: int, rss: float, raw: float
) -> None:
    medians, samples = result["medians"], result["samples"]

    def row(key: str) -> str:
        return f"{statistics.median(medians[key]):.1f} / {p95(samples[key]):.1f} ms"

    post = statistics.median(medians["post"])
    print(f"Jupyter server extension: {rounds_} rounds of {runs} turns per row, medians of the")
    print(f"rounds' medians (p95 over all {rounds_ * runs}); throughput: {CLIENTS} clients\n")
    print("| measure | gmchat_nb | target | GeneralManager 0.87.1 (quoted) |")
    print("|---|---:|---|---:|")
    print(
        f"| POST turn, median / p95 | {row('post')} | < {TARGET['post']:.0f} ms | {GM['post']:.0f} ms |"
    )
    print(
        f"| SSE first event, median / p95 | {row('first')} | < {TARGET['first']:.0f} ms "
        f"| {GM['first']:.0f} ms |"
    )
    print(f"| WebSocket turn, median / p95 | {row('ws')} | | |")
    print(
        f"| throughput, {CLIENTS} clients | {statistics.median(medians['throughput']):.0f} turns/s "
        f"| > {TARGET['throughput']:.0f} turns/s | {GM['throughput']:.0f} turns/s |"
    )
    print(f"| server peak RSS | {rss:.0f} MiB | | {GM['rss']:.0f} MiB |")
    print(f"| raw GraphQL (same queries, direct) | {raw:.2f} ms | | |")
    print(f"| POST turn / raw GraphQL | {post / raw:.1f}x | | |")


def print_responsiveness(latencies: dict[str, list[float]]) -> None:
    idle = statistics.median(latencies["idle"])
    print("\n`/api/status` while one chat request is served (offline provider, 64 KiB question)\n")
    print("| while | polls | median | p95 | max | median / idle |")
    print("|---|---:|---:|---:|---:|---:|")
    for key, label in (
        ("idle", "idle (baseline)"),
        ("http", "a 64 KiB HTTP question"),
        ("ws", "a 64 KiB WebSocket question"),
    ):
        values = latencies[key]
        print(
            f"| {label} | {len(values)} | {statistics.median(values):.1f} ms "
            f"| {p95(values):.1f} ms | {max(values):.1f} ms "
            f"| {statistics.median(values) / idle:.2f}x |"
        )


def print_transactions(baseline: Path | None) -> None:
    """Write transactions per turn (bench/transactions.py), with ``baseline``'s beside."""
    from transactions import KINDS, counts

    here = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as folder:
        mine = counts(here, Path(folder) / "this.sqlite3")
        base = counts(baseline, Path(folder) / "base.sqlite3") if baseline else None
    print("\nWrite transactions per turn (SQLite, BEGIN IMMEDIATE counted)\n")
    print("| turn | this checkout |" + (" baseline |" if base else ""))
    print("|---|---:|" + ("---:|" if base else ""))
    for kind, label in KINDS.items():
        print(f"| {label} | {mine[kind]} |" + (f" {base[kind]} |" if base else ""))


def print_limiter(blocks: list[tuple[float, float]]) -> None:
    edge = max(1, len(blocks) // 5)
    print("\nRate limiter on (budgets that never refuse) vs off, 20 clients, blocks of 500 turns\n")
    print("| turns served by each server | limiter on | limiter off | on / off |")
    print("|---|---:|---:|---:|")
    for label, part in (
        (f"first {edge * LIMITER_BLOCK:,}", blocks[:edge]),
        (f"last {edge * LIMITER_BLOCK:,} (of {len(blocks) * LIMITER_BLOCK:,})", blocks[-edge:]),
    ):
        on = statistics.median(b[0] for b in part)
        off = statistics.median(b[1] for b in part)
        ratio = statistics.median(b[0] / b[1] for b in part)
        print(f"| {label} | {on:.0f} turns/s | {off:.0f} turns/s | {ratio:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds (medians)")
    parser.add_argument("--limiter", action="store_true", help="also 10,000 turns, limiter on/off")
    parser.add_argument(
        "--durable", action="store_true", help="only bench/durable.py: durable turns, both stores"
    )
    parser.add_argument(
        "--baseline", type=Path, help="another checkout: its write transactions per turn too"
    )
    args = parser.parse_args()
    if args.durable:
        from durable import report

        report(quick=args.quick)
        return
    runs = 10 if args.quick else 40
    rounds_ = 1 if args.quick else args.rounds
    print(f"load average before: {load()}\n")
    with jupyter_server() as (process, port):
        result = asyncio.run(latency_rounds(port, runs, rounds_))
        rss = peak_rss_mib(process.pid)
    with jupyter_server(provider="offline") as (_, port):
        latencies = asyncio.run(responsiveness(port, 2 if args.quick else 5))
    raw = direct_ms(runs * 3)
    print_latencies(result, rounds_, runs, rss, raw)
    print_responsiveness(latencies)
    print_transactions(args.baseline)
    if args.limiter:
        with (
            jupyter_server(rate_limit=LIMITER_ON) as (_, on),
            jupyter_server() as (_, off),
        ):
            print_limiter(asyncio.run(limiter_blocks(on, off, 1_000 if args.quick else 10_000)))
    print(f"\nload average after: {load()}")


if __name__ == "__main__":
    main()

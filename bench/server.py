"""Benchmark of the Jupyter server extension: a real `jupyter server` subprocess on 127.0.0.1.

Run from the repository root::

    .venv/bin/python bench/server.py            # ~1 minute
    .venv/bin/python bench/server.py --quick    # a smoke run
    .venv/bin/python bench/server.py --limiter  # + 10,000 turns with the rate limiter on and off

Each turn is the "small" workload of ``bench/turn.py`` (two queries in one provider response,
then the answer) with a zero-latency scripted provider over the in-process inventory demo, in a
fresh conversation (created untimed), so every turn sends the same context. Measured: POST
latency, SSE time to the first event, a WebSocket turn, throughput with 20 concurrent HTTP
clients, and the server's peak RSS. Baseline: the same compiled GraphQL documents executed
directly with graphql-core in this process.

Responsiveness: a second server with the offline provider answers 64 KiB questions (HTTP and
WebSocket, the largest a client may send) while another client polls ``/api/status``; the status
latencies are compared with the same server's idle ones, measured in the same run. Chat turns run
on the extension's engine thread, so a busy turn must not hold up the server's own loop.

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
from pathlib import Path
from typing import Any

import graphql
import httpx
import websockets
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from turn import QUESTION, WORKLOADS, rounds

from gmchat_nb import demo_project

TOKEN = "bench-token"
AUTH = {"Authorization": f"token {TOKEN}"}
GM = {"post": 460.0, "first": 160.0, "throughput": 2.0, "rss": 120.0}
TARGET = {"post": 20.0, "first": 5.0, "throughput": 50.0}


def start_server(
    tmp: Path, provider: str | None = None, rate_limit: dict[str, Any] | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`jupyter server` with gmchat configured for the benchmark; returns (process, chat URL).

    The provider is the zero-latency scripted "small" workload unless one is named; no rate
    limit unless one is given."""
    script = tmp / "rounds.yaml"
    script.write_text(yaml.safe_dump(rounds(WORKLOADS["small"])))
    config = {
        "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": True}},
        "GMChat": {
            "provider": provider or f"scripted:{script}",
            "project": "demo",
            "store": str(tmp / "chat.sqlite3"),
            "chat_settings": {"rate_limit": rate_limit or {"requests": None}},
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
    }
    process = subprocess.Popen(
        [
            sys.executable,
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
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(base + "api/status", headers=AUTH).status_code == 200:
                return process, base + "gmchat/chat/"
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError("jupyter server did not start")


def peak_rss_mib(pid: int) -> float:
    """VmHWM of the server process (Linux)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def new_conversation(client: httpx.AsyncClient, url: str) -> str:
    response = await client.post(url + "conversations/", json={}, headers=AUTH)
    return str(response.json()["conversation"]["id"])


async def post_turn(client: httpx.AsyncClient, url: str) -> float:
    cid = await new_conversation(client, url)
    start = time.perf_counter()
    response = await client.post(url, json={"text": QUESTION, "conversation_id": cid}, headers=AUTH)
    elapsed = time.perf_counter() - start
    assert response.json()["events"][-1]["type"] == "done", response.text
    return elapsed


async def sse_first_event(client: httpx.AsyncClient, url: str) -> float:
    cid = await new_conversation(client, url)
    body = {"text": QUESTION, "conversation_id": cid}
    start = time.perf_counter()
    first = None
    async with client.stream("POST", url + "stream/", json=body, headers=AUTH) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and first is None:
                first = time.perf_counter() - start
    assert first is not None
    return first


async def ws_turn(ws: Any, cid: str) -> float:
    start = time.perf_counter()
    await ws.send(json.dumps({"type": "message", "text": QUESTION, "conversation_id": cid}))
    while json.loads(await ws.recv())["type"] not in ("done", "error"):
        pass
    return time.perf_counter() - start


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


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(len(values) * 0.95) - 1)]


async def bench(url: str, runs: int, clients: int) -> dict[str, float]:
    async with httpx.AsyncClient(timeout=30) as client:
        for _ in range(3):  # warm-up: connect the project, import, fill caches
            await post_turn(client, url)
        posts = [await post_turn(client, url) for _ in range(runs)]
        firsts = [await sse_first_event(client, url) for _ in range(runs)]
        ws_url = url.replace("http://", "ws://") + "ws"
        async with websockets.connect(ws_url, additional_headers=AUTH) as ws:
            ws_times = []
            for _ in range(runs):
                ws_times.append(await ws_turn(ws, await new_conversation(client, url)))
        conversations = [await new_conversation(client, url) for _ in range(clients * 5)]

    async def worker(ids: list[str]) -> None:
        async with httpx.AsyncClient(timeout=60) as own:
            for cid in ids:
                r = await own.post(
                    url, json={"text": QUESTION, "conversation_id": cid}, headers=AUTH
                )
                assert r.json()["events"][-1]["type"] == "done", r.text

    start = time.perf_counter()
    await asyncio.gather(*(worker(conversations[i::clients]) for i in range(clients)))
    throughput = len(conversations) / (time.perf_counter() - start)
    return {
        "post": statistics.median(posts) * 1000,
        "post95": p95(posts) * 1000,
        "first": statistics.median(firsts) * 1000,
        "first95": p95(firsts) * 1000,
        "ws": statistics.median(ws_times) * 1000,
        "ws95": p95(ws_times) * 1000,
        "throughput": throughput,
    }


BIG_QUESTION = ("Which projects use parts made of steel or cobalt, and who supplies them? " * 900)[
    : 64 * 1024 - 200
]  # just under the default 64 KiB body limit, JSON envelope included


async def status_latencies(client: httpx.AsyncClient, base: str, busy: Any) -> list[float]:
    """``/api/status`` latencies (ms), polled every 2 ms while ``busy`` (a task) runs."""
    latencies = []
    while not busy.done():
        start = time.perf_counter()
        response = await client.get(base + "api/status", headers=AUTH)
        latencies.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200
        await asyncio.sleep(0.002)
    await busy
    return latencies


async def ws_big_turn(url: str) -> None:
    ws_url = url.replace("http://", "ws://") + "ws"
    async with websockets.connect(ws_url, additional_headers=AUTH) as ws:
        await ws.send(json.dumps({"type": "message", "text": BIG_QUESTION}))
        while json.loads(await ws.recv())["type"] not in ("done", "error"):
            pass


async def responsiveness(url: str, reps: int) -> dict[str, list[float]]:
    """Status latencies while idle, and during 64 KiB questions over HTTP and WebSocket."""
    base = url.removesuffix("gmchat/chat/")
    async with httpx.AsyncClient(timeout=120) as client:
        await client.post(url, json={"text": "warm up"}, headers=AUTH)
        idle = []
        for _ in range(reps * 20):
            start = time.perf_counter()
            await client.get(base + "api/status", headers=AUTH)
            idle.append((time.perf_counter() - start) * 1000)
        http: list[float] = []
        ws: list[float] = []
        for _ in range(reps):
            asking = client.post(url, json={"text": BIG_QUESTION}, headers=AUTH)
            http += await status_latencies(client, base, asyncio.ensure_future(asking))
            ws += await status_latencies(client, base, asyncio.ensure_future(ws_big_turn(url)))
    return {"idle": idle, "http": http, "ws": ws}


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


LIMITER_ON = {"requests": 10**9, "tokens": 10**12}
LIMITER_BLOCK = 500


async def turns_per_second(url: str, turns: int, clients: int) -> float:
    """Throughput of ``turns`` turns (each in a new conversation) from concurrent clients."""

    async def worker(count: int) -> None:
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(count):
                cid = await new_conversation(client, url)
                body = {"text": QUESTION, "conversation_id": cid}
                response = await client.post(url, json=body, headers=AUTH)
                assert response.json()["events"][-1]["type"] == "done", response.text

    start = time.perf_counter()
    await asyncio.gather(*(worker(turns // clients) for _ in range(clients)))
    return (turns // clients * clients) / (time.perf_counter() - start)


async def limiter_blocks(on_url: str, off_url: str, total: int) -> list[tuple[float, float]]:
    """(on, off) turns/s per block, alternating which server goes first."""
    blocks = []
    for number in range(total // LIMITER_BLOCK):
        order = [(on_url, 0), (off_url, 1)] if number % 2 == 0 else [(off_url, 1), (on_url, 0)]
        pair = [0.0, 0.0]
        for url, slot in order:
            pair[slot] = await turns_per_second(url, LIMITER_BLOCK, 20)
        blocks.append((pair[0], pair[1]))
        print(f"block {number + 1}: on {pair[0]:.0f}, off {pair[1]:.0f} turns/s", file=sys.stderr)
    return blocks


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


def limiter_run(total: int) -> list[tuple[float, float]]:
    with tempfile.TemporaryDirectory() as on_dir, tempfile.TemporaryDirectory() as off_dir:
        on, on_url = start_server(Path(on_dir), rate_limit=LIMITER_ON)
        off, off_url = start_server(Path(off_dir))
        try:
            return asyncio.run(limiter_blocks(on_url, off_url, total))
        finally:
            for process in (on, off):
                process.terminate()
                process.wait(timeout=15)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run")
    parser.add_argument("--limiter", action="store_true", help="also 10,000 turns, limiter on/off")
    args = parser.parse_args()
    runs = 10 if args.quick else 60
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())}\n")
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp))
        try:
            result = asyncio.run(bench(url, runs, 20))
            rss = peak_rss_mib(process.pid)
        finally:
            process.terminate()
            process.wait(timeout=15)
    with tempfile.TemporaryDirectory() as tmp:
        process, url = start_server(Path(tmp), provider="offline")
        try:
            latencies = asyncio.run(responsiveness(url, 2 if args.quick else 5))
        finally:
            process.terminate()
            process.wait(timeout=15)
    raw = direct_ms(runs)
    print(f"Jupyter server extension, {runs} turns per row, 20 clients for throughput\n")
    print("| measure | gmchat_nb | GeneralManager 0.87.1 | target |")
    print("|---|---|---|---|")
    print(
        f"| POST turn, median / p95 | {result['post']:.1f} / {result['post95']:.1f} ms "
        f"| {GM['post']:.0f} ms | < {TARGET['post']:.0f} ms |"
    )
    print(
        f"| SSE first event, median / p95 | {result['first']:.1f} / {result['first95']:.1f} ms "
        f"| {GM['first']:.0f} ms | < {TARGET['first']:.0f} ms |"
    )
    print(f"| WebSocket turn, median / p95 | {result['ws']:.1f} / {result['ws95']:.1f} ms | | |")
    print(
        f"| throughput, 20 clients | {result['throughput']:.0f} turns/s "
        f"| {GM['throughput']:.0f} turns/s | > {TARGET['throughput']:.0f} turns/s |"
    )
    print(f"| server peak RSS | {rss:.0f} MiB | {GM['rss']:.0f} MiB | |")
    print(f"| raw GraphQL (same queries, direct) | {raw:.2f} ms | | |")
    print(f"| POST turn / raw GraphQL | {result['post'] / raw:.1f}x | | |")
    print_responsiveness(latencies)
    if args.limiter:
        print_limiter(limiter_run(1_000 if args.quick else 10_000))
    print(f"\nload average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()

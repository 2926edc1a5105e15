"""Two checkouts' server extensions side by side: paired turn latencies and throughput.

Run from the repository root, with a second checkout of another commit (``git worktree add``)::

    .venv/bin/python bench/server_pair.py --baseline ../main-before        # ~2 minutes
    .venv/bin/python bench/server_pair.py --baseline ../main-before --runs 20

Each checkout's gmchat_nb runs in its own `jupyter server` subprocess (imported from that
checkout), both with the zero-latency scripted "small" turn of ``bench/turn.py`` over the
in-process demo and a file store. Turns alternate between the two servers (the order flips every
run), so the machine's noise falls on both alike: a POST turn, a WebSocket turn and SSE time to
the first event, each in a fresh conversation; then throughput with 20 concurrent clients, three
rounds each, alternating. Printed: medians and this checkout / baseline ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import websockets
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from machine import load
from turn import QUESTION, WORKLOADS, rounds

TOKEN = "pair-token"
AUTH = {"Authorization": f"token {TOKEN}"}
HERE = Path(__file__).resolve().parents[1]


def start(checkout: Path, tmp: Path) -> tuple[subprocess.Popen[bytes], str]:
    """A `jupyter server` importing gmchat_nb from ``checkout``; (process, chat URL)."""
    script = tmp / "rounds.yaml"
    script.write_text(yaml.safe_dump(rounds(WORKLOADS["small"])))
    config = {
        "ServerApp": {"jpserver_extensions": {"gmchat_nb.server_ext": True}},
        "GMChat": {
            "provider": f"scripted:{script}",
            "project": "demo",
            "store": str(tmp / "chat.sqlite3"),
            "chat_settings": {"rate_limit": {"requests": None}},
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
        "PYTHONPATH": str(checkout),
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
        cwd=checkout,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(base + "api/status", headers=AUTH).status_code == 200:
                return process, base + "gmchat/chat/"
        except httpx.TransportError:
            time.sleep(0.1)
    process.terminate()
    raise RuntimeError(f"the server of {checkout} did not start")


async def conversation(client: httpx.AsyncClient, url: str) -> str:
    response = await client.post(url + "conversations/", json={}, headers=AUTH)
    return str(response.json()["conversation"]["id"])


async def post_turn(client: httpx.AsyncClient, url: str) -> float:
    body = {"text": QUESTION, "conversation_id": await conversation(client, url)}
    start = time.perf_counter()
    response = await client.post(url, json=body, headers=AUTH)
    elapsed = time.perf_counter() - start
    assert response.json()["events"][-1]["type"] == "done", response.text
    return elapsed


async def ws_turn(client: httpx.AsyncClient, url: str, ws: Any) -> float:
    body = {"type": "message", "text": QUESTION, "conversation_id": await conversation(client, url)}
    start = time.perf_counter()
    await ws.send(json.dumps(body))
    while json.loads(await ws.recv())["type"] not in ("done", "error"):
        pass
    return time.perf_counter() - start


async def sse_first(client: httpx.AsyncClient, url: str) -> float:
    body = {"text": QUESTION, "conversation_id": await conversation(client, url)}
    start = time.perf_counter()
    first: float | None = None
    async with client.stream("POST", url + "stream/", json=body, headers=AUTH) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: ") and first is None:
                first = time.perf_counter() - start
    assert first is not None
    return first


async def throughput(url: str, turns: int = 200, clients: int = 20) -> float:
    async def worker(count: int) -> None:
        async with httpx.AsyncClient(timeout=60) as client:
            for _ in range(count):
                await post_turn(client, url)

    start = time.perf_counter()
    await asyncio.gather(*(worker(turns // clients) for _ in range(clients)))
    return turns / (time.perf_counter() - start)


async def measure(urls: dict[str, str], runs: int) -> dict[str, dict[str, list[float]]]:
    results: dict[str, dict[str, list[float]]] = {
        name: {"post": [], "ws": [], "sse": [], "throughput": []} for name in urls
    }
    async with httpx.AsyncClient(timeout=60) as client:
        sockets = {
            name: await websockets.connect(
                url.replace("http://", "ws://") + "ws", additional_headers=AUTH
            )
            for name, url in urls.items()
        }
        for url in urls.values():  # warm-up: connect the project, fill caches
            for _ in range(5):
                await post_turn(client, url)
        for run in range(runs):
            order = list(urls.items()) if run % 2 == 0 else list(reversed(urls.items()))
            for name, url in order:
                results[name]["post"].append(await post_turn(client, url) * 1000)
                results[name]["ws"].append(await ws_turn(client, url, sockets[name]) * 1000)
                results[name]["sse"].append(await sse_first(client, url) * 1000)
        for _ in range(3):
            for name, url in urls.items():
                results[name]["throughput"].append(await throughput(url))
        for ws in sockets.values():
            await ws.close()
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="the other checkout")
    parser.add_argument("--runs", type=int, default=100, help="turns of each kind per server")
    args = parser.parse_args()
    checkouts = {"this": HERE, "baseline": args.baseline.resolve()}
    print(f"load average before: {load()}")
    processes = []
    with tempfile.TemporaryDirectory() as this_dir, tempfile.TemporaryDirectory() as base_dir:
        urls = {}
        for (name, checkout), tmp in zip(checkouts.items(), (this_dir, base_dir), strict=True):
            process, urls[name] = start(checkout, Path(tmp))
            processes.append(process)
        try:
            results = asyncio.run(measure(urls, args.runs))
        finally:
            for process in processes:
                process.terminate()
                process.wait(timeout=15)
    print(f"load average after: {load()}\n")
    print(f"this checkout vs {args.baseline}, {args.runs} turns of each kind, alternating\n")
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

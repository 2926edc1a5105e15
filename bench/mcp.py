"""Benchmark of the MCP server: a query call over stdio and HTTP against the chat's tool path.

One ``query`` call over stdio and over Streamable HTTP against the same call on the chat's tool
path in process, in the same run.

Run from the repository root (needs the ``[mcp]`` extra)::

    .venv/bin/python bench/mcp.py            # ~30 seconds on 2 cores
    .venv/bin/python bench/mcp.py --quick    # a smoke run
    .venv/bin/python bench/mcp.py --calls 500 --repeats 7
    .venv/bin/python bench/mcp.py --no-http  # without the jupyter server

The call is ``query`` of 20 parts' names and quantities on the in-process inventory demo
(:data:`ARGS`, with a filter every part passes that differs at each call: an agent's identical
calls are the loop guard's to answer), on every path:

1. In process: :func:`gmchat_nb.core.project.tools.run_tool` (what a chat turn runs for a tool
   call: the baseline every ratio is against) and :meth:`AgentToolbox.call` (what the MCP
   server runs for it: the tool-call pipeline in the agent's scope -- the request budget's check
   and count in the store, hidden managers, the loop guard, the scan, audit and hooks, a span --
   the structured result and its text), once with a budget that never refuses (counted,
   as every server below is configured) and once with none.
2. stdio: one ``gmchat mcp --project demo`` process, one SDK ``ClientSession``, the calls one
   after another; the same session's ``ping`` (the protocol's round trip without a tool). The
   client's own work is in the times, as an agent's host pays it (the SDK's client checks each
   result's structured content against the tool's output schema).
3. Streamable HTTP: a real ``jupyter server`` with the gmchat extension (``bench/server.py``'s),
   the SDK's ``streamable_http_client`` on ``{base_url}gmchat/mcp`` with the server's token; the
   same session's ``ping``, and ``GET {base_url}api/status`` through the same HTTP client (the
   Jupyter server's own floor: routing, token check, one small JSON answer). The route is
   stateless: every call is one POST, answered by the SDK on the extension's engine thread.

The chat has no HTTP route that runs a single tool call (a chat turn over HTTP does more: a
conversation, the model's rounds, the journal), so no chat-over-HTTP row is compared.

Every path gets ``--calls`` sequential calls per repeat, after a warm-up (whose results are
checked: every path returns the same rows); the paths take turns within each repeat, the order
rotating, so the machine's noise falls on all alike. Per path: the median and p90 latency over
all calls of all repeats, calls/s (the median of the repeats' calls / wall time) and the ratio of
the median to ``run_tool``'s. Timed once: the stdio session's start (the process spawned,
``initialize``), the HTTP route's first request (the actor's toolbox and MCP server built in the
server) and the HTTP session's ``initialize``. When the route does not answer (a server without
it, 404), the HTTP rows are left out and a line says so.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack, ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2  # the SDK's HTTP client
import yaml

# This script is bench/mcp.py: with bench/ on sys.path, `import mcp` would find it, not the SDK.
BENCH = Path(__file__).resolve().parent
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != BENCH]
from mcp import ClientSession, StdioServerParameters  # noqa: E402  (the [mcp] extra)
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

sys.path[:0] = [str(BENCH), str(BENCH.parent)]
from machine import describe, load  # noqa: E402
from server import AUTH, jupyter_server  # noqa: E402  (bench/server.py: a real jupyter server)

from gmchat_nb.core.agent import AgentToolbox  # noqa: E402
from gmchat_nb.core.project import Project  # noqa: E402
from gmchat_nb.core.project.tools import run_tool  # noqa: E402
from gmchat_nb.core.session.actor import Actor  # noqa: E402
from gmchat_nb.core.session.compose import connect_project  # noqa: E402
from gmchat_nb.core.settings import load_settings  # noqa: E402
from gmchat_nb.core.store import ChatStore  # noqa: E402

ARGS: dict[str, Any] = {"manager": "Part", "fields": ["name", "quantity"], "limit": 20}
_CALLS = itertools.count(1)


def args() -> dict[str, Any]:
    """:data:`ARGS` with a filter every part passes (``id > -n``), another ``n`` each call: the
    same call again would be the loop guard's to answer (a repeat, then a refusal), on every
    path but run_tool, so every path makes distinct calls."""
    return {**ARGS, "filters": {"id__gt": -next(_CALLS)}}


COUNTED = {"requests": 10**9}  # a request budget that never refuses: every check and count runs
UNCOUNTED = {"requests": None}
ROUTE = "gmchat/mcp"
TIMEOUT = httpx2.Timeout(30, read=300)  # the SDK's defaults for its own clients
WARMUP = 10
BASELINE = "run_tool (chat's tool path), in process"


@dataclass
class CallPath:
    """One way of making the call: ``call()`` does it once and returns its rows."""

    label: str
    call: Callable[[], Awaitable[list[dict[str, Any]] | None]]
    times: list[float] = field(default_factory=list)  # ms, every timed call
    rates: list[float] = field(default_factory=list)  # calls/s, one per repeat


def rows_of_tool(result: dict[str, Any]) -> list[dict[str, Any]]:
    assert result.get("status") != "error", result
    return list(result["data"])


def rows_of_mcp(result: Any) -> list[dict[str, Any]]:
    assert not result.is_error, result
    return list(result.structured_content["rows"])


async def in_process_paths(
    directory: Path,
) -> tuple[list[CallPath], Project, list[ChatStore]]:
    """run_tool and the toolbox (counted and not) over one demo project in this process."""
    settings = load_settings({"project": "demo", "rate_limit": COUNTED})
    project: Project = await connect_project(settings)
    stores = [ChatStore(str(directory / f"in-process-{n}.sqlite3")) for n in range(2)]
    counted = AgentToolbox(project, settings, store=stores[0], actor=Actor.local())
    free = AgentToolbox(
        project,
        load_settings({"project": "demo", "rate_limit": UNCOUNTED}),
        store=stores[1],
        actor=Actor.local(),
    )

    async def tool() -> list[dict[str, Any]]:
        return rows_of_tool((await run_tool(project, "query", args())).result)

    def toolbox_call(box: AgentToolbox) -> Callable[[], Awaitable[list[dict[str, Any]]]]:
        async def call() -> list[dict[str, Any]]:
            result = await box.call("query", args())
            assert not result.is_error, result.structured
            return list(result.structured["rows"])

        return call

    paths = [
        CallPath(BASELINE, tool),
        CallPath("AgentToolbox.call, in process (budget counted)", toolbox_call(counted)),
        CallPath("AgentToolbox.call, in process (no budget)", toolbox_call(free)),
    ]
    return paths, project, stores


def session_paths(session: ClientSession, transport: str) -> list[CallPath]:
    async def query() -> list[dict[str, Any]]:
        return rows_of_mcp(await session.call_tool("query", args()))

    async def ping() -> None:
        await session.send_ping()

    return [
        CallPath(f"MCP ping over {transport} (no tool)", ping),
        CallPath(f"MCP `query` over {transport}", query),
    ]


async def open_stdio(stack: AsyncExitStack, directory: Path) -> tuple[ClientSession, float]:
    """A ``gmchat mcp`` process and an initialized session: (session, seconds to start)."""
    config = directory / "gmchat.yaml"
    config.write_text(yaml.safe_dump({"rate_limit": COUNTED}))
    command = ["-m", "gmchat_nb.cli", "mcp", "--project", "demo", "--config", str(config)]
    command += ["--store", str(directory / "stdio.sqlite3")]
    parameters = StdioServerParameters(command=sys.executable, args=command)
    started = time.perf_counter()
    read, write = await stack.enter_async_context(stdio_client(parameters))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    return session, time.perf_counter() - started


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "bench", "version": "0"},
    },
}


async def route_answers(client: httpx2.AsyncClient, url: str) -> str | None:
    """Why ``url`` cannot serve MCP (``None`` when it answers an ``initialize``)."""
    accept = {"Accept": "application/json, text/event-stream"}
    try:
        response = await client.post(url, json=INITIALIZE, headers=accept)
    except Exception as error:  # the route hangs up, or the server is gone
        return f"{type(error).__name__}: {error}"
    if response.status_code != 200:  # 404: no such route (yet)
        return f"POST {url} answered {response.status_code}"
    return None


async def open_http(
    stack: AsyncExitStack, port: int, starts: dict[str, float]
) -> list[CallPath] | str:
    """The HTTP paths (status, ping, query), or why there are none; the first request's and the
    session's start into ``starts``."""
    base = f"http://127.0.0.1:{port}/"
    url = base + ROUTE
    client = await stack.enter_async_context(httpx2.AsyncClient(headers=AUTH, timeout=TIMEOUT))
    started = time.perf_counter()
    reason = await route_answers(client, url)
    if reason is not None:
        return f"HTTP: route not available ({reason})"
    starts["HTTP: the server's first MCP request (builds the actor's toolbox and server)"] = (
        time.perf_counter() - started
    )
    started = time.perf_counter()
    read, write = await stack.enter_async_context(streamable_http_client(url, http_client=client))
    session = await stack.enter_async_context(ClientSession(read, write))
    await session.initialize()
    starts["HTTP: a session (`initialize`, after the first request)"] = (
        time.perf_counter() - started
    )

    async def status() -> None:
        response = await client.get(base + "api/status")
        assert response.status_code == 200, response.status_code

    paths = [CallPath("GET /api/status over HTTP (Jupyter's floor)", status)]
    return paths + session_paths(session, "HTTP")


async def measure(paths: list[CallPath], calls: int, repeats: int) -> None:
    """Warm every path up (checking its rows), then ``repeats`` rounds of ``calls`` calls each."""
    expected = None
    for path in paths:
        for _ in range(WARMUP):
            rows = await path.call()
        if rows is not None:
            expected = rows if expected is None else expected
            assert rows == expected, f"{path.label} returned other rows"
    for repeat in range(repeats):
        shift = repeat % len(paths)
        for path in paths[shift:] + paths[:shift]:
            began = time.perf_counter()
            for _ in range(calls):
                started = time.perf_counter()
                await path.call()
                path.times.append((time.perf_counter() - started) * 1000)
            path.rates.append(calls / (time.perf_counter() - began))


async def run(port: int | None, calls: int, repeats: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        async with AsyncExitStack() as stack:
            paths, project, stores = await in_process_paths(directory)
            starts: dict[str, float] = {}
            http: list[CallPath] | str = "HTTP: skipped (--no-http)"
            if port is not None:
                http = await open_http(stack, port, starts)
            stdio, start = await open_stdio(stack, directory)
            starts["stdio: a session (spawn `gmchat mcp`, `initialize`)"] = start
            paths += session_paths(stdio, "stdio")
            if isinstance(http, str):
                print(f"{http}\n")
            else:
                paths += http
            try:
                await measure(paths, calls, repeats)
            finally:
                for store in stores:
                    store.close()
                await project.aclose()
    return {"paths": paths, "starts": starts, "http": http if isinstance(http, str) else None}


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def report(result: dict[str, Any], calls: int, repeats: int, before: str) -> None:
    paths: list[CallPath] = result["paths"]
    base = statistics.median(next(p for p in paths if p.label == BASELINE).times)
    print(f"## One `query` call, {repeats} repeats of {calls} sequential calls per path\n")
    print(f"Arguments: `{ARGS}` on the in-process demo project; request budget counted")
    print(f"(`rate_limit.requests: {COUNTED['requests']}`) unless the row says otherwise.\n")
    print("| path | median ms/call | p90 ms | calls/s | median / run_tool |")
    print("|---|---:|---:|---:|---:|")
    for path in paths:
        median = statistics.median(path.times)
        rate = statistics.median(path.rates)
        print(
            f"| {path.label} | {median:.3f} | {p90(path.times):.3f} | {rate:,.0f} "
            f"| {median / base:.2f} |"
        )
    print(
        "\nNot compared: the chat over HTTP. It has no route that runs a single tool call; a chat "
        "turn (`POST {base_url}gmchat/chat/`) does other work besides (a conversation, the "
        "model's rounds, the journal)."
    )
    if result["http"] is not None:
        print(f"{result['http']}: the Streamable HTTP rows are missing.")
    print("\n## Session start (once)\n")
    print("| session | seconds |")
    print("|---|---:|")
    for label, seconds in result["starts"].items():
        print(f"| {label} | {seconds:.2f} |")
    print(f"\nload average before: {before}, after: {load()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run (50 calls, 2 repeats)")
    parser.add_argument("--calls", type=int, default=200, help="sequential calls per repeat")
    parser.add_argument("--repeats", type=int, default=5, help="repeats per path (medians)")
    parser.add_argument("--no-http", action="store_true", help="skip the jupyter server")
    args = parser.parse_args()
    calls, repeats = (50, 2) if args.quick else (args.calls, args.repeats)
    print("# gmchat_nb MCP benchmark\n")
    print(f"{describe()} (before)\n")
    before = load()
    with ExitStack() as stack:
        port = None
        if not args.no_http:
            _, port = stack.enter_context(jupyter_server(rate_limit=COUNTED))
        result = asyncio.run(run(port, calls, repeats))
    report(result, calls, repeats, before)


if __name__ == "__main__":
    main()

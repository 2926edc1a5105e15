"""The in-checkout half of ``bench/turn_weight.py``: run by each checkout's own Python with that
checkout first on ``sys.path``, so the gmchat_nb measured is that checkout's. Not run by hand.

Reads one JSON job on stdin, writes one JSON result on stdout:

* ``{"kind": "prompt", "vendor": "openai"|"anthropic", "question": ..., "replies": [...],
  "vendor_server": PATH, "settings": {...}}`` -- one ``Chat.ask`` through the vendor's SDK
  adapter against ``tests/vendor_server.py`` (the file at PATH: the measuring checkout's, so both
  checkouts talk to the same peer) scripted with ``replies`` (``{"text": ...}`` or
  ``{"tool_calls": [{"name", "arguments"}]}``); the result is every HTTP request body the server
  received (parsed, and as the text that came over the wire), the turn's event types and its
  answer.
* ``{"kind": "profile", "rounds": [...], "question": ..., "warmup": N, "turns": N, "out": PATH,
  "settings": {...}}`` -- ``turns`` in-process ``Chat.ask`` turns with the scripted provider
  playing ``rounds`` (each in a new conversation, after ``warmup``), timed; with ``"py_spy":
  [command...]`` and ``"spy_out": PATH`` the same turns again with that py-spy command attached to
  this process (its raw stacks written to PATH); then again under cProfile, whose stats are
  dumped to PATH (pstats). The result is the unprofiled median ms per turn (wall, thread CPU).

Only the standard library, gmchat_nb and (for prompts) aiohttp are imported, so the file runs
under an older checkout's environment as well.
"""

from __future__ import annotations

import asyncio
import cProfile
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def _vendor_server(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("bench_vendor_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


async def prompt(job: dict[str, Any]) -> dict[str, Any]:
    from gmchat_nb import Chat

    wire = _vendor_server(job["vendor_server"])
    vendor = job["vendor"]
    replies = [
        wire.Reply(
            text=reply.get("text", ""),
            tool_calls=[
                wire.ToolCallSpec(call["name"], call["arguments"])
                for call in reply.get("tool_calls", [])
            ],
            usage=(1000, 50),
        )
        for reply in job["replies"]
    ]
    raw: list[str] = []

    class Recording(wire.VendorServer):  # type: ignore[misc,name-defined]
        """Also keeps each request body as it came over the wire."""

        async def _take(self, vendor: str, request: Any) -> Any:
            raw.append(await request.text())  # aiohttp keeps the body: _take reads it again
            return await super()._take(vendor, request)

    async with Recording() as server:
        server.script(vendor, replies)
        where = {
            "openai": {"base_url": server.openai_base_url, "api_key": "bench"},
            "anthropic": {"base_url": server.anthropic_base_url, "api_key": "bench"},
        }[vendor]
        chat = Chat(
            provider=f"{vendor}:bench-model",
            provider_config=where,
            store=":memory:",
            **{"rate_limit": {"requests": None}, **job.get("settings", {})},
        )
        try:
            turn = await chat.ask(job["question"])
        finally:
            await chat.aclose()
        return {
            "requests": server.requests[vendor],
            "raw": raw,
            "events": [event["type"] for event in turn.events],
            "answer": turn.answer,
            "left": server.remaining(vendor),
            "tool_results": [
                event.get("result") for event in turn.events if event["type"] == "tool_result"
            ],
        }


async def profile(job: dict[str, Any]) -> dict[str, Any]:
    from gmchat_nb import Chat
    from gmchat_nb.core.providers.scripted import ScriptedProvider

    warmup, turns = job["warmup"], job["turns"]
    rounds = job["rounds"]
    provider = ScriptedProvider({"rounds": rounds * (warmup + 3 * turns + 1)})
    chat = Chat(
        provider=provider, store=":memory:", **{"rate_limit": {"requests": None}, **job["settings"]}
    )
    session = await chat.session()

    async def one() -> None:
        session.new_conversation()  # the same context every time
        turn = await chat.ask(job["question"])
        assert turn.events[-1]["type"] == "done", turn.events[-1]
        chat.turns.clear()

    for _ in range(warmup):
        await one()
    wall: list[float] = []
    cpu: list[float] = []
    for _ in range(turns):
        start, start_cpu = time.perf_counter(), time.thread_time()
        await one()
        wall.append(time.perf_counter() - start)
        cpu.append(time.thread_time() - start_cpu)
    if job.get("py_spy"):  # sampled from outside: py-spy attached to this process
        spy = subprocess.Popen(  # noqa: ASYNC220 (starting it does not wait)
            [*job["py_spy"], "--pid", str(os.getpid()), "--output", job["spy_out"]],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        await asyncio.sleep(1.5)  # until it samples
        for _ in range(turns):
            await one()
        spy.send_signal(signal.SIGINT)  # it writes its file and exits
        spy.wait(timeout=60)
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(turns):
        await one()
    profiler.disable()
    profiler.dump_stats(job["out"])
    await chat.aclose()
    return {"wall_ms": statistics.median(wall) * 1000, "cpu_ms": statistics.median(cpu) * 1000}


def main() -> None:
    job = json.loads(sys.stdin.read())
    sys.path.insert(0, job["checkout"])
    import gmchat_nb

    assert Path(gmchat_nb.__file__).resolve().is_relative_to(Path(job["checkout"]).resolve()), (
        gmchat_nb.__file__
    )
    result = asyncio.run({"prompt": prompt, "profile": profile}[job["kind"]](job))
    result["gmchat_nb"] = str(Path(gmchat_nb.__file__).parent)
    json.dump(result, sys.stdout, default=str)


if __name__ == "__main__":
    main()

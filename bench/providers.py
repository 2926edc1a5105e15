"""Benchmark of the provider adapters: their cost per streamed event over the SDK alone.

Run from the repository root::

    .venv/bin/python bench/providers.py            # ~30 s
    .venv/bin/python bench/providers.py --quick

For each vendor, a local server (tests/vendor_server.py) streams one response of N text chunks
in that vendor's wire format. Baseline, in the same run: reading the stream with the SDK alone
(``async for`` over the SDK's stream, touching each chunk's text). Ours: the same stream read
through the gmchat_nb adapter (``provider.complete``), which turns each chunk into a
TextChunkEvent and assembles tool calls and usage. Runs of the two alternate, medians reported.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from machine import describe  # bench/ is on sys.path when run

from gmchat_nb.core.providers.base import Message
from gmchat_nb.core.providers.registry import create_provider
from tests.vendor_server import Reply, VendorServer

VENDORS = ("openai", "anthropic", "ollama")


async def raw_openai(server: VendorServer) -> int:
    import openai

    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="bench", max_retries=0)
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], stream=True
    )
    count = 0
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                count += 1
    await client.close()
    return count


async def raw_anthropic(server: VendorServer) -> int:
    import anthropic

    client = anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="bench", max_retries=0
    )
    stream = await client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "go"}], stream=True
    )
    count = 0
    async for event in stream:
        if event.type == "content_block_delta" and event.delta.type == "text_delta":
            count += 1
    await client.close()
    return count


async def raw_ollama(server: VendorServer) -> int:
    import ollama

    client = ollama.AsyncClient(host=server.ollama_host)
    count = 0
    async for part in await client.chat(
        model="m", messages=[{"role": "user", "content": "go"}], stream=True
    ):
        if part.message and part.message.content:
            count += 1
    return count


RAW: dict[str, Callable[[VendorServer], Awaitable[int]]] = {
    "openai": raw_openai,
    "anthropic": raw_anthropic,
    "ollama": raw_ollama,
}


async def adapter(server: VendorServer, vendor: str) -> int:
    where: dict[str, Any] = {
        "openai": {"base_url": server.openai_base_url, "api_key": "bench"},
        "anthropic": {"base_url": server.anthropic_base_url, "api_key": "bench"},
        "ollama": {"base_url": server.ollama_host},
    }[vendor]
    provider = create_provider(f"{vendor}:m", where)
    count = 0
    async for event in provider.complete([Message("user", "go")], []):
        count += getattr(event, "content", None) is not None
    close = getattr(getattr(provider, "_client", None), "close", None)
    if close is not None:
        result = close()
        if hasattr(result, "__await__"):
            await result
    return count


async def main(quick: bool) -> None:
    chunks, runs = (200, 5) if quick else (2000, 15)
    reply = [f"w{i} " for i in range(chunks)]
    print("# gmchat_nb provider adapter benchmark\n")
    print(f"{describe()} (before)\n")
    print(f"One response of {chunks} text chunks per run, {runs} runs of each, alternating.\n")
    print("| vendor | SDK alone: events/s | through the adapter: events/s | adapter / SDK time |")
    print("|---|---:|---:|---:|")
    async with VendorServer() as server:
        for vendor in VENDORS:
            raw_times: list[float] = []
            ours_times: list[float] = []
            for _ in range(runs + 1):  # the first pair warms up
                server.script(vendor, [Reply(text=reply), Reply(text=reply)])  # type: ignore[arg-type]
                start = time.perf_counter()
                counted_raw = await RAW[vendor](server)
                middle = time.perf_counter()
                counted_ours = await adapter(server, vendor)
                end = time.perf_counter()
                assert counted_raw == counted_ours == chunks, (vendor, counted_raw, counted_ours)
                raw_times.append(middle - start)
                ours_times.append(end - middle)
            raw, ours = statistics.median(raw_times[1:]), statistics.median(ours_times[1:])
            print(f"| {vendor} | {chunks / raw:,.0f} | {chunks / ours:,.0f} | {ours / raw:.2f}x |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true")
    asyncio.run(main(parser.parse_args().quick))

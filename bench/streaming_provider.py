"""A provider for the benchmarks that streams a long answer slowly, as a model does: 120 chunks,
10 ms apart (``GMCHAT_BENCH_CHUNKS`` and ``GMCHAT_BENCH_PAUSE`` change them). A dotted class
path (``streaming_provider.StreamingProvider``) every gmchat_nb version's server accepts, so a
baseline checkout is measured on the same stream."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    TextChunkEvent,
    TokenUsage,
    ToolDefinition,
)

CHUNKS = int(os.environ.get("GMCHAT_BENCH_CHUNKS", "120"))
PAUSE = float(os.environ.get("GMCHAT_BENCH_PAUSE", "0.01"))


class StreamingProvider(BaseLLMProvider):
    """Every request answers ``CHUNKS`` words, ``PAUSE`` seconds apart."""

    name = "streaming"

    async def complete(  # type: ignore[override]
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[TextChunkEvent | DoneEvent]:
        for number in range(CHUNKS):
            await asyncio.sleep(PAUSE)
            yield TextChunkEvent(f"w{number} ")
        yield DoneEvent(TokenUsage(10, CHUNKS), "stop")

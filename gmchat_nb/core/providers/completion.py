"""The protocol every provider stream is held to, for the tool loop and planned roles alike.

A provider's events arrive within its timeouts, then exactly one Done; model text and tool calls
are made storable on the way (lone surrogates become U+FFFD, arguments nested past any use become
a tool error the model sees), so nothing a model writes can break a store, a socket or a turn.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

from ..text import MAX_JSON_DEPTH, clean_json, clean_text, json_depth_exceeds
from .base import (
    BaseLLMProvider,
    DoneEvent,
    ProviderCompletionError,
    ProviderEvent,
    TextChunkEvent,
    ToolCallEvent,
)

__all__ = ["completed_events"]


async def completed_events(
    provider: BaseLLMProvider, stream: AsyncIterator[ProviderEvent]
) -> AsyncIterator[ProviderEvent]:
    """Enforce the provider's timeouts and the protocol: events, then exactly one Done.

    ``TimeoutError`` when the first event (``timeout_seconds``) or a later one
    (``stream_timeout_seconds``) is late; :class:`ProviderCompletionError` for a stream that ends
    without Done or sends anything after it.
    """
    iterator = stream.__aiter__()
    first = True
    done: DoneEvent | None = None
    try:
        while True:
            wait = provider.timeout_seconds if first else provider.stream_timeout_seconds
            try:
                async with asyncio.timeout(wait):  # no task per event, unlike wait_for
                    event = await iterator.__anext__()
            except StopAsyncIteration:
                break
            first = False
            if done is not None:
                raise ProviderCompletionError("events_after_completion")
            if isinstance(event, DoneEvent):
                done = event
                continue
            if isinstance(event, TextChunkEvent):
                yield _clean_chunk(event)
            elif isinstance(event, ToolCallEvent):
                yield _clean_call(event)
            else:
                raise ProviderCompletionError("unsupported_provider_event", type(event).__name__)
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            with contextlib.suppress(Exception):
                await aclose()
    if done is None:
        raise ProviderCompletionError("stream_without_completion")
    yield done


def _clean_chunk(event: TextChunkEvent) -> TextChunkEvent:
    """Model text as it can be stored and sent: lone surrogates become U+FFFD."""
    content = clean_text(event.content)
    return event if content is event.content else TextChunkEvent(content)


def _clean_call(call: ToolCallEvent) -> ToolCallEvent:
    """A tool call whose id, name, arguments and error can be stored and sent; arguments nested
    past any use (from any provider, a custom one too) become a tool error the model sees."""
    if json_depth_exceeds(call.args):
        return ToolCallEvent(
            clean_text(call.id),
            clean_text(call.name),
            {},
            error=f"the arguments nest JSON more than {MAX_JSON_DEPTH} levels deep",
        )
    cleaned = ToolCallEvent(
        clean_text(call.id),
        clean_text(call.name),
        clean_json(call.args),
        None if call.error is None else clean_text(call.error),
    )
    return call if cleaned == call else cleaned

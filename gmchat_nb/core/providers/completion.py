"""The protocol every provider stream is held to, for the tool loop and planned roles alike.

A provider's events arrive within its timeouts, then exactly one Done; model text and tool calls
are made storable on the way (lone surrogates become U+FFFD, arguments nested past any use become
a tool error the model sees), so nothing a model writes can break a store, a socket or a turn.

The between-event timeout is a timeout between *received data*: an adapter that assembles tool
calls until its stream ends (hundreds of argument fragments over a minute from a local server)
calls :func:`stream_progress` for every chunk it reads, which restarts the timer. A stream that
stalls ends in :class:`ProviderTimeout`, whose message says how long it waited, after how many
chunks and how far into the response.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import time
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

__all__ = ["ProviderTimeout", "completed_events", "stream_progress"]


class ProviderTimeout(TimeoutError):
    """A provider response was late: the message says which wait ran out and what had arrived."""


class _Progress:
    """The timer of the response being read, restarted by every chunk the adapter receives."""

    def __init__(self, between: float) -> None:
        self.between = between
        self.timer: asyncio.Timeout | None = None
        self.chunks = 0
        self.started = time.monotonic()

    def touch(self) -> None:
        self.chunks += 1
        if self.timer is not None and not self.timer.expired():
            self.timer.reschedule(asyncio.get_running_loop().time() + self.between)

    def late(self, first: bool, wait: float, events: int) -> ProviderTimeout:
        elapsed = time.monotonic() - self.started
        if first and self.chunks == 0:
            return ProviderTimeout(f"no response within {wait:g} s (timeout_seconds)")
        received = f"{self.chunks} chunk(s)" if self.chunks else f"{events} event(s)"
        return ProviderTimeout(
            f"the stream stalled: nothing received for {self.between:g} s "
            f"(stream_timeout_seconds) after {received}, {elapsed:.1f} s into the response"
        )


_PROGRESS: contextvars.ContextVar[_Progress | None] = contextvars.ContextVar(
    "gmchat_stream_progress", default=None
)


def stream_progress() -> None:
    """Tell the reader of this response that a chunk arrived (restarts its between-event
    timeout). Adapters call it for every chunk, including ones that yield no event yet."""
    progress = _PROGRESS.get()
    if progress is not None:
        progress.touch()


async def completed_events(
    provider: BaseLLMProvider, stream: AsyncIterator[ProviderEvent]
) -> AsyncIterator[ProviderEvent]:
    """Enforce the provider's timeouts and the protocol: events, then exactly one Done.

    :class:`ProviderTimeout` (a ``TimeoutError``) when nothing arrives for ``timeout_seconds``
    after the request, or for ``stream_timeout_seconds`` after a received chunk;
    :class:`ProviderCompletionError` for a stream that ends without Done or sends anything after
    it.
    """
    iterator = stream.__aiter__()
    first = True
    done: DoneEvent | None = None
    progress = _Progress(provider.stream_timeout_seconds)
    events = 0
    try:
        while True:
            wait = (
                provider.timeout_seconds
                if first and progress.chunks == 0
                else provider.stream_timeout_seconds
            )
            # the adapter's generator runs in this task's context, so it finds ``progress``
            token = _PROGRESS.set(progress)
            try:
                async with asyncio.timeout(wait) as timer:  # no task per event, unlike wait_for
                    progress.timer = timer
                    event = await iterator.__anext__()
            except StopAsyncIteration:
                break
            except TimeoutError:
                if progress.timer is not None and progress.timer.expired():
                    raise progress.late(first, wait, events) from None
                raise
            finally:
                progress.timer = None
                _PROGRESS.reset(token)
            first = False
            events += 1
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

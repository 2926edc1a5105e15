"""A turn's model requests and their attempts: retries, withdrawn streams and fallbacks.

:class:`ProviderRetries` is the one owner of asking a model again (the SDKs never retry). Every
model request of a turn goes through it: the tool loop's rounds, planned roles' requests and
structured answers, summaries. What may be asked again is decided by
:func:`.retries.transient_failure`; how long to wait by :class:`.retries.RetryPolicy` and the
vendor's ``Retry-After`` (tenacity computes the waits and counts the attempts).

* **Before the first event** a transient failure is asked again, invisibly but for a ``retry``
  notice.
* **After output began** (a connection cut mid-stream, an in-band ``overloaded_error`` after some
  text) the whole request is asked again as well: the stream first yields a
  :class:`StreamResetEvent`, and whoever consumes it withdraws what that request had streamed
  (the loop drops its text and calls, and tells every surface with a ``stream_reset`` event), so
  the partial text never enters history. Tools never ran for it: they run after a request's stream
  has ended, so the unit of retry is one model request and no tool runs twice.
* **Fallbacks** (``provider_fallbacks``): when a request still fails (its attempts are spent, or
  its context is too small, or the vendor refused it outright: a bad key, an unknown model), the
  turn goes on with the next provider of the chain, which stays the turn's provider from then on
  (sticky). Messages are provider-neutral, so the history carries over whole; a fallback is built
  only when it is first needed.

Each retry and switch is yielded as a :class:`NoticeEvent` while it happens, and counted for
``done`` (:meth:`ProviderRetries.summary`, :attr:`ProviderRetries.fallbacks`).

Over 400 lines: streamed and structured requests share one retry owner, its waits, its counts
and its fallback chain; split, the counts of one turn would live in two places.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    stop_any,
    wait_exponential,
    wait_random,
)
from tenacity.stop import stop_base

from .base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolDefinition,
    Transient,
)
from .completion import completed_events
from .pricing import ServedRequest
from .retries import RetryPolicy, mentions_context_length, transient_failure

__all__ = [
    "AttemptEvent",
    "FallbackChain",
    "NoticeEvent",
    "ProviderRetries",
    "StreamResetEvent",
    "complete_text",
]

log = logging.getLogger(__name__)

_T = TypeVar("_T")


@dataclass(frozen=True, slots=True)
class StreamResetEvent:
    """The request failed after it had begun to answer and is asked again: everything it has
    yielded so far (text and tool calls) is withdrawn."""

    reason: str


@dataclass(frozen=True, slots=True)
class NoticeEvent:
    """Something the person waiting should know while it happens: ``kind`` is ``"retry"`` (the
    request is asked again after ``details["wait_seconds"]``) or ``"fallback"`` (the turn goes on
    with another provider)."""

    kind: str
    message: str
    details: Mapping[str, Any] = field(default_factory=dict)


AttemptEvent = ProviderEvent | StreamResetEvent | NoticeEvent


@dataclass(slots=True)
class FallbackChain:
    """The providers a turn falls back to, in order; ``build`` makes one from its entry (only
    when it is needed: a chain that is never used costs nothing)."""

    entries: Sequence[Any] = ()
    build: Callable[[Any], BaseLLMProvider] | None = None
    _built: dict[int, BaseLLMProvider] = field(default_factory=dict)

    def provider(self, position: int) -> BaseLLMProvider | None:
        """The ``position``-th fallback (0-based), built on first use; ``None`` past the end."""
        if position >= len(self.entries):
            return None
        if position not in self._built:
            entry = self.entries[position]
            self._built[position] = (
                entry
                if isinstance(entry, BaseLLMProvider) or self.build is None
                else self.build(entry)
            )
        return self._built[position]


def _label(provider: BaseLLMProvider) -> str:
    return str(getattr(provider, "label", None) or type(provider).__name__)


def _falls_back(error: BaseException) -> bool:
    """Whether another provider may succeed where this one failed: any failure of the provider
    (its attempts spent, a context too small, a refused key or model, a deadline) -- but not a
    refusal of the content, which another model would be asked to repeat."""
    if isinstance(error, TimeoutError):
        return True
    if isinstance(error, ProviderError):
        # the adapters' own words for a refusal (a vendor's error body may say "refused" too)
        return not str(error).startswith("the model refused") or mentions_context_length(error)
    return transient_failure(error) is not None or mentions_context_length(error)


class ProviderRetries:
    """The one retry owner of a turn: its model requests, their retries and its fallbacks.

    The counters say what happened over the turn: ``requests`` made through it, ``retried`` of
    them asked again at least once, ``retries`` made in all (the vendors saw ``requests +
    retries`` requests, a fallback's first request included); ``fallbacks`` lists each switch as
    ``{"from", "to", "reason"}``. Without a policy nothing is retried; without a chain nothing
    falls back.
    """

    def __init__(
        self, policy: RetryPolicy | None = None, fallbacks: FallbackChain | None = None
    ) -> None:
        self.policy = policy or RetryPolicy(attempts=1)
        self.chain = fallbacks or FallbackChain()
        self.requests = 0
        self.retried = 0
        self.retries = 0
        self.fallbacks: list[dict[str, str]] = []
        self.served: list[ServedRequest] = []  # every answered request, in order
        self._switched: BaseLLMProvider | None = None  # sticky for the rest of the turn
        self._position = 0
        self._ahead = 0.0  # the wait tenacity decided before the next attempt
        # when the turn must be over (time.monotonic()): no retry waits past it
        self.deadline: float | None = None
        self._backoff: Any = None  # made when a request is first asked again (most turns: never)

    def _served(self, provider: BaseLLMProvider, usage: TokenUsage, started: float) -> None:
        """Keep one answered request for the turn's usage records and cost (the provider that
        answered it, a fallback once switched; the time from the request to its end)."""
        latency = round((time.perf_counter() - started) * 1000, 3)
        self.served.append(ServedRequest(_label(provider), provider.name, usage, latency))

    def summary(self) -> dict[str, int] | None:
        """``{"requests", "retried", "retries"}`` when the turn retried at least once, else
        ``None`` (the ``done`` event's ``attempts``)."""
        if not self.retries:
            return None
        return {"requests": self.requests, "retried": self.retried, "retries": self.retries}

    def serving(self, provider: BaseLLMProvider) -> BaseLLMProvider:
        """The provider that answers for ``provider`` in this turn (a fallback once switched)."""
        return self._switched or provider

    # -- streamed requests -----------------------------------------------------------------------

    async def events(
        self, provider: BaseLLMProvider, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[AttemptEvent]:
        """One streamed request held to the protocol (:func:`~.completion.completed_events`,
        whose timeouts bound each attempt), asked again while it fails transiently and then
        continued on the fallbacks. A request that fails after it yielded output first yields a
        :class:`StreamResetEvent`."""
        self.requests += 1
        current = self.serving(provider)
        started = time.perf_counter()
        while True:
            emitted = False
            try:
                async for event in self._attempts(current, messages, tools):
                    emitted = not isinstance(event, StreamResetEvent | NoticeEvent)
                    if isinstance(event, DoneEvent):
                        self._served(current, event.usage, started)
                    yield event
                return
            except Exception as error:
                following = self._fall_back(current, error)
                if following is None:
                    raise
                if emitted:
                    yield StreamResetEvent(f"{_label(current)} failed during its answer")
                yield self._switch_notice(current, following, error)
                current = following

    async def _attempts(
        self, provider: BaseLLMProvider, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[AttemptEvent]:
        """``provider``'s attempts at one request: the first without a retry loop's cost, the
        others under tenacity, each after a reset (when output had begun) and a notice."""
        emitted = False
        try:
            async for event in self._stream(provider, messages, tools):
                emitted = True
                yield event
            return
        except Exception as error:
            if self.policy.attempts < 2 or transient_failure(error) is None:
                raise
            failure: Exception = error
        first = True
        async for attempt in self._retrying(provider):
            with attempt:
                if first:  # the failed first attempt, replayed so tenacity waits and counts it
                    first = False
                    raise failure
                if emitted:
                    emitted = False
                    yield StreamResetEvent(f"the answer broke off ({_reason(failure)})")
                yield self._retry_notice(provider, failure)
                await asyncio.sleep(self._ahead)
                try:
                    async for event in self._stream(provider, messages, tools):
                        emitted = True
                        yield event
                except Exception as error:
                    failure = error
                    raise
                return
        raise AssertionError("tenacity either returns an attempt's answer or raises")

    @staticmethod
    def _stream(
        provider: BaseLLMProvider, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        return completed_events(provider, provider.complete(messages, tools))

    # -- structured answers ----------------------------------------------------------------------

    async def structured(
        self,
        provider: BaseLLMProvider,
        messages: list[Message],
        schema: Mapping[str, Any],
        *,
        name: str,
        within: float | None = None,
    ) -> StructuredReply:
        """One structured answer (nothing of it reaches anyone before it is whole), asked again
        while it fails transiently, then on the fallbacks; ``within`` bounds each attempt (a
        ``TimeoutError``, never retried)."""
        self.requests += 1
        current = self.serving(provider)
        started = time.perf_counter()
        while True:
            try:
                reply = await self._structured(current, messages, schema, name, within)
                self._served(current, reply.usage, started)
                return reply
            except Exception as error:
                following = self._fall_back(current, error)
                if following is None:
                    raise
                self._switch_notice(current, following, error)
                current = following

    async def _structured(
        self,
        provider: BaseLLMProvider,
        messages: list[Message],
        schema: Mapping[str, Any],
        name: str,
        within: float | None,
    ) -> StructuredReply:
        async def answer() -> StructuredReply:
            async with asyncio.timeout(within):
                return await provider.complete_structured(messages, schema, name=name)

        try:  # the common case, without a retry loop's cost
            return await answer()
        except Exception as error:
            if self.policy.attempts < 2 or transient_failure(error) is None:
                raise
            return await self._again(provider, answer, error)

    async def _again(
        self, provider: BaseLLMProvider, request: Callable[[], Awaitable[_T]], failure: Exception
    ) -> _T:
        first = True
        async for attempt in self._retrying(provider):
            with attempt:
                if first:
                    first = False
                    raise failure
                await asyncio.sleep(self._ahead)
                return await request()
        raise AssertionError("tenacity either returns an attempt's answer or raises")

    # -- retrying and falling back ---------------------------------------------------------------

    def _retrying(self, provider: BaseLLMProvider) -> AsyncRetrying:
        def before_sleep(state: RetryCallState) -> None:
            self._retrying_soon(provider, state)

        async def later(seconds: float) -> None:
            # the attempt's body waits itself, after it told the person why (a notice)
            self._ahead = seconds

        return AsyncRetrying(
            stop=stop_any(stop_after_attempt(self.policy.attempts), _PastDeadline(self)),
            wait=self._wait,
            retry=retry_if_exception(lambda error: transient_failure(error) is not None),
            before_sleep=before_sleep,
            sleep=later,
            reraise=True,
        )

    def _wait(self, state: RetryCallState) -> float:
        """The vendor's ``Retry-After`` when it gave one, else backoff; at most the cap."""
        hint = _hint(state)
        if hint is not None and hint.retry_after is not None:
            return min(hint.retry_after, self.policy.max_wait_seconds)
        if self._backoff is None:
            self._backoff = wait_exponential(
                multiplier=self.policy.first_wait_seconds, max=self.policy.max_wait_seconds
            ) + wait_random(0, self.policy.jitter_seconds)
        return min(float(self._backoff(state)), self.policy.max_wait_seconds)

    def _retrying_soon(self, provider: BaseLLMProvider, state: RetryCallState) -> None:
        if state.attempt_number == 1:
            self.retried += 1
        self.retries += 1
        hint = _hint(state)
        wait = state.next_action.sleep if state.next_action is not None else 0.0
        asked = (
            f", Retry-After {hint.retry_after:g} s"
            if hint is not None and hint.retry_after is not None
            else ""
        )
        log.warning(
            "%s: the model request failed (%s%s); asking again in %.2f s (attempt %d of %d)",
            _label(provider),
            hint.reason if hint is not None else "transient failure",
            asked,
            wait,
            state.attempt_number + 1,
            self.policy.attempts,
        )

    def _retry_notice(self, provider: BaseLLMProvider, failure: BaseException) -> NoticeEvent:
        wait = round(self._ahead, 3)
        return NoticeEvent(
            "retry",
            f"The model did not answer ({_reason(failure)}); asking again in {wait:g} s.",
            {"provider": _label(provider), "reason": _reason(failure), "wait_seconds": wait},
        )

    def _fall_back(self, current: BaseLLMProvider, error: BaseException) -> BaseLLMProvider | None:
        """The next provider of the chain when ``error`` is one another provider may not have;
        ``None`` when the failure stands."""
        if not _falls_back(error):
            return None
        try:
            following = self.chain.provider(self._position)
        except Exception as broken:  # a fallback that cannot be built is skipped, and said
            log.warning("provider_fallbacks[%d] cannot be used: %s", self._position, broken)
            self._position += 1
            return self._fall_back(current, error)
        if following is None:
            return None
        self._position += 1
        self._switched = following
        self.retries += 1  # the vendors see one more request: the fallback's
        self.fallbacks.append(
            {"from": _label(current), "to": _label(following), "reason": _reason(error)}
        )
        log.warning(
            "%s failed (%s: %s); the turn goes on with %s",
            _label(current),
            _reason(error),
            error,
            _label(following),
        )
        return following

    def _switch_notice(
        self, current: BaseLLMProvider, following: BaseLLMProvider, error: BaseException
    ) -> NoticeEvent:
        return NoticeEvent(
            "fallback",
            f"{_label(current)} could not answer ({_reason(error)}); continuing with "
            f"{_label(following)}.",
            {"from": _label(current), "to": _label(following), "reason": _reason(error)},
        )


class _PastDeadline(stop_base):
    """Stops retrying when waiting before the next attempt would run past the turn's deadline
    (``ProviderRetries.deadline``: its loop guard's ``seconds`` budget): a retry's wait counts
    against the turn's time."""

    def __init__(self, retries: ProviderRetries) -> None:
        self.retries = retries

    def __call__(self, retry_state: RetryCallState) -> bool:
        deadline = self.retries.deadline
        if deadline is None:
            return False
        return time.monotonic() + float(retry_state.upcoming_sleep) >= deadline


def _reason(error: BaseException) -> str:
    """A short, public reason for a failure (a status or a kind, never the vendor's text)."""
    hint = transient_failure(error)
    if hint is not None:
        return hint.reason
    if mentions_context_length(error):
        return "context too long"
    if isinstance(error, TimeoutError):
        return "no answer in time"
    return "request failed"


def _hint(state: RetryCallState) -> Transient | None:
    error = state.outcome.exception() if state.outcome is not None else None
    return transient_failure(error) if error is not None else None


async def complete_text(
    provider: BaseLLMProvider, messages: list[Message], retries: ProviderRetries | None = None
) -> tuple[str, TokenUsage]:
    """One tool-free request (summaries): its text and usage, retried at its start as
    ``retries`` (the turn's) says; without it, never."""
    parts: list[str] = []
    usage = TokenUsage()
    async for event in (retries or ProviderRetries()).events(provider, messages, []):
        if isinstance(event, TextChunkEvent):
            parts.append(event.content)
        elif isinstance(event, DoneEvent):
            usage = event.usage
        elif isinstance(event, StreamResetEvent):
            parts.clear()
    return "".join(parts), usage

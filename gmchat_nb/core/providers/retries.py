"""Provider retries at request start: the one owner of asking a model again.

A model request that fails *before its stream has yielded anything* is asked again, up to
``attempts`` requests in all (the ``provider_retries`` setting; ``attempts: 1`` never asks again).
The SDKs never retry (``max_retries=0``): this module is the only place that does. What may be
asked again is decided in one function, :func:`transient_failure`, by status code and exception
type:

* HTTP 408, 409, 429 and every 5xx (529 is Anthropic's "overloaded");
* connection and read errors and the SDKs' own timeouts (openai's and anthropic's
  ``APIConnectionError``/``APITimeoutError``, httpx's network, timeout and remote-protocol errors,
  the ``ConnectionError`` Ollama's SDK raises);
* a vendor's in-band error before any output: Anthropic's SSE ``error`` event
  (``overloaded_error``, ``rate_limit_error``, ``api_error``, ``timeout_error``), an
  OpenAI-compatible error chunk (``server_error``, ``rate_limit_exceeded``, a 5xx ``code``), an
  Ollama error line that says the server is busy or overloaded.

Never asked again: any other 4xx (400, 401, 403, 404, 413, 422, ...), a context-length error
whatever its status, an answer whose vendor says not to (``x-should-retry: false``) or whose
error kind no wait cures (OpenAI's 429 ``insufficient_quota``), a refusal or a malformed answer (a :class:`~.base.ProviderError` without
:class:`~.base.Transient`), the turn's own deadlines (:class:`~.completion.ProviderTimeout`:
``timeout_seconds`` bounds each attempt's first event and still ends the turn with
``deadline_exceeded``), and **anything after the first event was yielded**: a failure once output
has begun keeps its behaviour exactly (the partial text stays shown and the turn ends with
``provider_failed`` or ``deadline_exceeded``; withdrawing partial output is for a later change).

The unit of retry is one model request, never a round: tools run in the loop after a request's
stream has ended, so a retry never runs a tool again.

The wait before asking again is what the vendor asked for (``retry-after-ms``, then
``Retry-After`` in seconds or as an HTTP date), else exponential backoff with jitter (0.5 s, 1 s,
2 s, ... plus up to 0.5 s), never more than ``max_wait_seconds``. Each retry is logged at WARNING
with its reason (the status) and its wait; a turn's :class:`ProviderRetries` counts them for its
``done`` event (``attempts``).

Over 400 lines: the classification (statuses, in-band kinds, headers, connection errors of each
SDK) and the retry owner that reads it are one decision; split, each would import the other.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import math
import re
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC
from types import MappingProxyType
from typing import Any, TypeVar

from tenacity import (
    AsyncRetrying,
    RetryCallState,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
    wait_random,
)

from .base import (
    BaseLLMProvider,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    ToolDefinition,
    Transient,
)
from .completion import completed_events

__all__ = ["RETRIED_STATUSES", "ProviderRetries", "RetryPolicy", "retry_after", "transient_failure"]

log = logging.getLogger(__name__)

_T = TypeVar("_T")

# The 4xx statuses worth asking again (a timeout, a conflict, a rate limit); every 5xx is too.
RETRIED_STATUSES = frozenset({408, 409, 429})

# In-band error types and codes (Anthropic's SSE error event, OpenAI-compatible error chunks) ->
# the HTTP status each stands for, so they are judged like the status.
_IN_BAND_STATUS: Mapping[str, int] = MappingProxyType(
    {
        "invalid_request_error": 400,
        "authentication_error": 401,
        "permission_error": 403,
        "not_found_error": 404,
        "request_too_large": 413,
        "context_length_exceeded": 400,
        "rate_limit_error": 429,
        "rate_limit_exceeded": 429,
        "api_error": 500,
        "server_error": 500,
        "internal_server_error": 500,
        "service_unavailable": 503,
        "timeout_error": 504,
        "overloaded_error": 529,
    }
)
# Error kinds that come with a retryable status but that no wait cures.
_NEVER_KINDS = frozenset({"insufficient_quota"})
_CONTEXT_LENGTH = re.compile(
    r"context[ _-]?(?:length|window)|maximum context|prompt is too long",
    re.IGNORECASE,
)
# What an Ollama error line (text only, no status) says when asking again may help.
_BUSY = re.compile(
    r"overload|rate[ _-]?limit|too many requests|server busy|temporarily unavailable",
    re.IGNORECASE,
)
# Exception classes of modules that may not be installed (or imported): looked up only in
# modules already loaded, since an error of a module never imported cannot have been raised.
_CONNECTION_ERRORS = (
    ("openai", "APIConnectionError"),  # and its APITimeoutError
    ("anthropic", "APIConnectionError"),
    ("httpx", "TimeoutException"),
    ("httpx", "NetworkError"),
    ("httpx", "RemoteProtocolError"),
    ("httpx2", "TimeoutException"),
    ("httpx2", "NetworkError"),
    ("httpx2", "RemoteProtocolError"),
)


def transient_failure(
    error: BaseException, headers: Mapping[str, str] | None = None
) -> Transient | None:
    """Why ``error`` may pass if the request is made again, or ``None`` when it would not.

    A :class:`ProviderError` says so itself (its adapter classified the SDK's error with this
    function). An SDK error is judged by its status code (``status_code``: openai's and
    anthropic's ``APIStatusError``, ollama's ``ResponseError``), else by the in-band error type
    its body names, else by its type (connection errors). ``headers`` are the error answer's
    response headers when the error does not carry them (Ollama's); ``Retry-After`` is read from
    them or from ``error.response.headers``.
    """
    if isinstance(error, ProviderError):
        return error.transient
    if isinstance(error, TimeoutError) or _mentions_context_length(error):
        return None  # our own deadlines; a prompt too long stays too long
    headers = headers or _headers(error)
    if _vendor_declines(error, headers):
        return None
    status = _status(error)
    if status is not None and 400 <= status <= 599:
        return _judged(status, f"HTTP {status}", retry_after(headers))
    in_band = _in_band(error)
    if in_band is not None:
        kind, status = in_band
        return _judged(status, f"in-band {kind}", None)
    if _is_connection_error(error):
        return Transient(f"connection error ({type(error).__name__})")
    if _is_ollama_error(error) and _BUSY.search(str(error)):
        return Transient("in-band error (server busy)")
    return None


def retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """The seconds an error answer's headers ask to wait: ``retry-after-ms`` (OpenAI's), else
    ``Retry-After`` in seconds (fractions allowed) or as an HTTP date; ``None`` when neither is
    there or readable. A date in the past is 0."""
    if not headers:
        return None
    lowered = {str(name).lower(): str(value) for name, value in headers.items()}
    millis = _seconds(lowered.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = lowered.get("retry-after")
    if value is None:
        return None
    seconds = _seconds(value)
    if seconds is not None:
        return seconds
    try:
        when = email.utils.parsedate_to_datetime(value.strip())
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a failed request is asked again: ``attempts`` requests at most (1: never again), each
    wait at most ``max_wait_seconds``; without a ``Retry-After`` the backoff starts at
    ``first_wait_seconds``, doubles, and adds up to ``jitter_seconds`` at random."""

    attempts: int = 3
    max_wait_seconds: float = 30.0
    first_wait_seconds: float = 0.5
    jitter_seconds: float = 0.5


class ProviderRetries:
    """The one retry owner: one turn's model requests, each retried before its first event.

    Every model request of a turn goes through :meth:`events` (streamed: the tool loop's rounds,
    planned roles' requests, summaries) or :meth:`structured` (a planned role's structured
    answer). The counters say what happened over the turn: ``requests`` made through it,
    ``retried`` of them asked again at least once, ``retries`` made in all (the vendor saw
    ``requests + retries`` requests). Without a policy nothing is retried.
    """

    def __init__(self, policy: RetryPolicy | None = None) -> None:
        self.policy = policy or RetryPolicy(attempts=1)
        self.requests = 0
        self.retried = 0
        self.retries = 0
        self._backoff = wait_exponential(
            multiplier=self.policy.first_wait_seconds, max=self.policy.max_wait_seconds
        ) + wait_random(0, self.policy.jitter_seconds)

    def summary(self) -> dict[str, int] | None:
        """``{"requests", "retried", "retries"}`` when the turn retried at least once, else
        ``None`` (the ``done`` event's ``attempts``)."""
        if not self.retries:
            return None
        return {"requests": self.requests, "retried": self.retried, "retries": self.retries}

    async def events(
        self, provider: BaseLLMProvider, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """One streamed request held to the protocol (:func:`~.completion.completed_events`,
        whose timeouts bound each attempt), asked again while it fails before its first event.
        Once an event was yielded a failure propagates as it is: never retried."""
        self.requests += 1

        async def opened() -> tuple[AsyncIterator[ProviderEvent], ProviderEvent | None]:
            stream = completed_events(provider, provider.complete(messages, tools))
            return stream, await anext(stream, None)

        try:  # the common case, without a retry loop's cost
            stream, first = await opened()
        except Exception as error:
            if self.policy.attempts < 2 or transient_failure(error) is None:
                raise
            stream, first = await self._again(provider, opened, error)
        if first is None:
            return
        try:
            yield first
            async for event in stream:
                yield event
        finally:
            aclose = getattr(stream, "aclose", None)
            if aclose is not None:
                await aclose()

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
        while it fails transiently; ``within`` bounds each attempt (a ``TimeoutError``, never
        retried)."""
        self.requests += 1

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
        """``request`` asked again after its first attempt failed with ``failure`` (transient):
        the rest of the attempts, with their waits, under tenacity."""
        first = True
        async for attempt in self._retrying(provider):
            with attempt:
                if first:  # the failed first attempt, replayed so tenacity waits and counts it
                    first = False
                    raise failure
                return await request()
        raise AssertionError("tenacity either returns an attempt's answer or raises")

    def _retrying(self, provider: BaseLLMProvider) -> AsyncRetrying:
        def before_sleep(state: RetryCallState) -> None:
            self._retrying_soon(provider, state)

        return AsyncRetrying(
            stop=stop_after_attempt(self.policy.attempts),
            wait=self._wait,
            retry=retry_if_exception(lambda error: transient_failure(error) is not None),
            before_sleep=before_sleep,
            reraise=True,
        )

    def _wait(self, state: RetryCallState) -> float:
        """The vendor's ``Retry-After`` when it gave one, else backoff; at most the cap."""
        hint = _hint(state)
        if hint is not None and hint.retry_after is not None:
            return min(hint.retry_after, self.policy.max_wait_seconds)
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
            "%s: the model request failed before its answer began (%s%s); asking again in "
            "%.2f s (attempt %d of %d)",
            getattr(provider, "label", type(provider).__name__),
            hint.reason if hint is not None else "transient failure",
            asked,
            wait,
            state.attempt_number + 1,
            self.policy.attempts,
        )


def _hint(state: RetryCallState) -> Transient | None:
    error = state.outcome.exception() if state.outcome is not None else None
    return transient_failure(error) if error is not None else None


def _judged(status: int, reason: str, after: float | None) -> Transient | None:
    if status in RETRIED_STATUSES or 500 <= status <= 599:
        return Transient(reason, status, after)
    return None


def _status(error: BaseException) -> int | None:
    status = getattr(error, "status_code", None)
    return status if isinstance(status, int) and not isinstance(status, bool) else None


def _headers(error: BaseException) -> Mapping[str, str] | None:
    headers = getattr(getattr(error, "response", None), "headers", None)
    return headers if isinstance(headers, Mapping) else None


def _vendor_declines(error: BaseException, headers: Mapping[str, str] | None) -> bool:
    """Whether the vendor said asking again will not help: OpenAI's ``x-should-retry: false``
    header (which its own SDK obeys), or an error kind no wait cures (OpenAI's 429
    ``insufficient_quota``: the account's balance, not its rate)."""
    lowered = {str(name).lower(): str(value) for name, value in (headers or {}).items()}
    if lowered.get("x-should-retry", "").strip().lower() == "false":
        return True
    return any(kind in _NEVER_KINDS for kind in _error_kinds(error))


def _error_kinds(error: BaseException) -> list[Any]:
    """The error types and codes an SDK error names, on itself and in its body (only errors
    with a ``body``: the SDKs' ``APIError``)."""
    if not hasattr(error, "body"):
        return []
    body = getattr(error, "body", None)
    inner = body.get("error") if isinstance(body, Mapping) else None
    kinds = [getattr(error, "type", None), getattr(error, "code", None)]
    for holder in (body, inner):
        if isinstance(holder, Mapping):
            kinds += [holder.get("type"), holder.get("code")]
    return kinds


def _in_band(error: BaseException) -> tuple[str, int] | None:
    """The in-band error type (or code) an SDK error's body names and the status it stands
    for."""
    for candidate in _error_kinds(error):
        if isinstance(candidate, str) and candidate in _IN_BAND_STATUS:
            return candidate, _IN_BAND_STATUS[candidate]
        number = candidate if isinstance(candidate, int) else None
        if isinstance(candidate, str) and candidate.isdigit():
            number = int(candidate)
        if number is not None and not isinstance(number, bool) and 400 <= number <= 599:
            return f"code {number}", number
    return None


def _mentions_context_length(error: BaseException) -> bool:
    body = getattr(error, "body", None)
    return bool(_CONTEXT_LENGTH.search(f"{error} {body if body is not None else ''}"))


def _is_connection_error(error: BaseException) -> bool:
    if isinstance(error, ConnectionError):  # Ollama's SDK, sockets
        return True
    for module_name, class_name in _CONNECTION_ERRORS:
        cls = getattr(sys.modules.get(module_name), class_name, None)
        if isinstance(cls, type) and isinstance(error, cls):
            return True
    return False


def _is_ollama_error(error: BaseException) -> bool:
    cls = getattr(sys.modules.get("ollama"), "ResponseError", None)
    return isinstance(cls, type) and isinstance(error, cls)


def _seconds(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) and value >= 0 else None

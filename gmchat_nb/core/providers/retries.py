"""What is worth asking a model again, and how long to wait: the classification behind retries.

:class:`~.attempts.ProviderRetries` asks; this module decides, in one function,
:func:`transient_failure`, by status code and exception type, what may pass when asked again:

* HTTP 408, 409, 429 and every 5xx (529 is Anthropic's "overloaded");
* connection and read errors and the SDKs' own timeouts (openai's and anthropic's
  ``APIConnectionError``/``APITimeoutError``, httpx's network, timeout and remote-protocol errors,
  the ``ConnectionError`` Ollama's SDK raises) -- also a connection cut in the middle of an answer;
* a vendor's in-band error: Anthropic's SSE ``error`` event (``overloaded_error``,
  ``rate_limit_error``, ``api_error``, ``timeout_error``), an OpenAI-compatible error chunk
  (``server_error``, ``rate_limit_exceeded``, a 5xx ``code``), an Ollama error line that says the
  server is busy or overloaded.

Never asked again: any other 4xx (400, 401, 403, 404, 413, 422, ...), a context-length error
whatever its status (:func:`mentions_context_length`: a fallback with a larger window may take
it), an answer whose vendor says not to (``x-should-retry: false``) or whose error kind no wait
cures (OpenAI's 429 ``insufficient_quota``), a refusal or a malformed answer (a
:class:`~.base.ProviderError` without :class:`~.base.Transient`), and the turn's own deadlines
(:class:`~.completion.ProviderTimeout`).

The wait before asking again (:class:`RetryPolicy`) is what the vendor asked for
(``retry-after-ms``, then ``Retry-After`` in seconds or as an HTTP date, :func:`retry_after`),
else exponential backoff with jitter (0.5 s, 1 s, 2 s, ... plus up to 0.5 s), never more than
``max_wait_seconds``.
"""

from __future__ import annotations

import email.utils
import math
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC
from types import MappingProxyType
from typing import Any

from .base import ProviderError, Transient

__all__ = [
    "RETRIED_STATUSES",
    "RetryPolicy",
    "mentions_context_length",
    "retry_after",
    "transient_failure",
]

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
    if isinstance(error, TimeoutError) or mentions_context_length(error):
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


def mentions_context_length(error: BaseException) -> bool:
    """Whether ``error`` says the prompt is longer than the model's context window."""
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

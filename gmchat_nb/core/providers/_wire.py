"""Pieces the SDK adapters share: decoding tool arguments, stable fallback ids, result text, and
the one way an SDK's error becomes a :class:`ProviderError` (marked transient or not)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..guards.envelope import tool_result_text
from .base import BaseLLMProvider, Message, ProviderError, ToolCallEvent
from .retries import transient_failure

__all__ = [
    "SDKProvider",
    "check_config",
    "close_stream",
    "decode_arguments",
    "describe_error",
    "next_call_number",
    "request_failed",
    "result_text",
    "token_count",
    "tool_call",
]


def decode_arguments(raw: Any) -> tuple[dict[str, Any], str | None]:
    """Arguments as a mapping, or ``({}, why)`` when the model's JSON is not usable.

    An empty string is an empty mapping (a call without arguments); anything else must be a JSON
    object. A call whose arguments cannot be read is reported to the model as a tool error.
    """
    if isinstance(raw, dict):
        return raw, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None
    if not isinstance(raw, str):
        return {}, f"the arguments must be a JSON object, got {type(raw).__name__}"
    try:
        decoded = json.loads(raw)
    except json.JSONDecodeError as error:
        preview = raw if len(raw) <= 80 else raw[:77] + "..."
        return {}, f"the arguments are not valid JSON ({error.msg} at {error.pos}): {preview}"
    except RecursionError:
        return {}, "the arguments nest JSON too deeply to read"
    if not isinstance(decoded, dict):
        return {}, f"the arguments must be a JSON object, got {type(decoded).__name__}"
    return decoded, None


async def close_stream(stream: Any) -> None:
    """Close an SDK stream, so an abandoned response (a timeout, a cancelled turn) does not keep
    its connection open."""
    for name in ("aclose", "close"):
        closer = getattr(stream, name, None)
        if closer is not None:
            try:
                result = closer()
                if hasattr(result, "__await__"):
                    await result
            except Exception:  # closing is best effort: the request already failed or ended
                pass
            return


def token_count(source: Any, name: str) -> int | None:
    """The token count ``source`` (an SDK object or a mapping) reports as ``name``; None when the
    field is missing, null or not a count (a server's usage may leave any of them out)."""
    value = source.get(name) if isinstance(source, Mapping) else getattr(source, name, None)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def next_call_number(messages: list[Message]) -> int:
    """How many tool calls the history already has: fallback ids continue from there, so they are
    unique in the conversation and the same on every replay."""
    return sum(len(message.tool_calls) for message in messages)


def tool_call(call_id: str | None, fallback: str, name: str, raw: Any) -> ToolCallEvent:
    """A ToolCallEvent with decoded arguments (or the reason they could not be decoded)."""
    args, error = decode_arguments(raw)
    return ToolCallEvent(call_id or fallback, name, args, error=error)


def result_text(message: Message) -> str:
    """A tool result message as the text a model reads: a JSON envelope whose ``data`` is the
    result, kept as data (:func:`~gmchat_nb.core.guards.envelope.tool_result_text`)."""
    if message.envelope is not None:
        return message.envelope.text
    return tool_result_text(
        message.tool_name or "", message.tool_call_id or "", message.tool_result
    )


def check_config(config: Mapping[str, Any], name: str) -> None:
    """Raise ProviderSpecError for config values of the wrong type (before any request)."""
    from .registry import ProviderSpecError

    model = config.get("model")
    if model is not None and (not isinstance(model, str) or not model.strip()):
        raise ProviderSpecError(f"{name}: model must be a model name string, got {model!r}")
    base_url = config.get("base_url") or config.get("host")
    if base_url is not None and (
        not isinstance(base_url, str) or not base_url.startswith(("http://", "https://"))
    ):
        raise ProviderSpecError(f"{name}: base_url must be an http(s) URL, got {base_url!r}")
    for key in ("timeout_seconds", "stream_timeout_seconds", "max_tokens"):
        value = config.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
        ):
            raise ProviderSpecError(f"{name}: {key} must be a positive number, got {value!r}")


def describe_error(error: Exception) -> str:
    """An SDK error as one line: status and message (kept server-side, never shown to clients)."""
    status = getattr(error, "status_code", None)
    message = getattr(error, "message", None) or str(error)
    return f"HTTP {status}: {message}" if status else message


def request_failed(
    what: str, error: Exception, headers: Mapping[str, str] | None = None
) -> ProviderError:
    """The :class:`ProviderError` for an SDK's ``error``: ``"{what}: HTTP 429: ..."``, marked
    :class:`~.base.Transient` when :func:`~.retries.transient_failure` says asking again may
    help (``headers``: the error answer's, when the error does not carry them)."""
    return ProviderError(
        f"{what}: {describe_error(error)}", transient=transient_failure(error, headers)
    )


class SDKProvider(BaseLLMProvider):
    """What the SDK adapters share: config checks before any request, one client per instance."""

    def __init__(self, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(config)
        self._client: Any = None

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """The SDK is installed and the config's values have the right types."""
        super().check_configuration(config)
        check_config(config or {}, cls.name)

    def client(self) -> Any:
        """The SDK client, made on first use (importing the adapter needs no SDK).

        The SDK refusing to build one (no credentials in the config or its environment
        variables) is a :class:`ProviderError` naming the SDK's reason.
        """
        if self._client is None:
            try:
                self._client = self.make_client()
            except Exception as error:  # the SDKs raise their own base error types here
                raise ProviderError(
                    f"{self.label}: the {self.name} client cannot be created: "
                    f"{describe_error(error)}"
                ) from error
        return self._client

    def check_ready(self) -> None:
        """Build the client now, so missing credentials surface before any request."""
        self.client()

    def make_client(self) -> Any:
        """Build the SDK's async client from ``provider_config`` (SDK retries off)."""
        raise NotImplementedError

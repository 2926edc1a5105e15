"""Anthropic messages, streamed.

Config: ``model`` (claude-3-5-haiku-latest), ``api_key`` (else ``ANTHROPIC_API_KEY``),
``base_url`` (else ``ANTHROPIC_BASE_URL``), ``max_tokens`` (1024), ``timeout_seconds`` (60),
``stream_timeout_seconds`` (30). The SDK never retries (``max_retries=0``): :mod:`.retries` owns
retries.

Two things GeneralManager's adapter gets wrong (weakness 13) are done right here: system messages
keep their place — the leading ones become ``system``, a later one (a recovery note, a budget
notice) stays where it was as a note in the user turn — and ``max_tokens`` is a truncated answer,
not a failure.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from ._wire import (
    SDKProvider,
    close_stream,
    next_call_number,
    request_failed,
    result_text,
    token_count,
    tool_call,
)
from .base import (
    DoneEvent,
    Message,
    ProviderCompletionError,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolDefinition,
    clip,
    structured_object,
    structured_text,
)
from .completion import stream_progress

__all__ = ["AnthropicProvider", "to_anthropic_messages"]

_STOP = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "tool_use": "tool_calls",
    "max_tokens": "length",
    "pause_turn": "stop",
}


class AnthropicProvider(SDKProvider):
    """Streams Anthropic messages with tool_use blocks."""

    name: ClassVar[str] = "anthropic"
    required_extra: ClassVar[str | None] = "anthropic"
    sdk_module: ClassVar[str | None] = "anthropic"
    default_config: ClassVar[Mapping[str, Any]] = {
        "model": "claude-3-5-haiku-latest",
        "max_tokens": 1024,
    }

    def make_client(self) -> Any:
        """``anthropic.AsyncAnthropic`` for ``api_key``/``base_url`` (else the SDK's environment)."""
        import anthropic

        client = anthropic.AsyncAnthropic(
            api_key=self.provider_config.get("api_key"),
            base_url=self.provider_config.get("base_url"),
            timeout=self.timeout_seconds,
            max_retries=0,
        )
        # The SDK accepts a client without credentials and fails each request with a TypeError;
        # say so once, here, in the words the openai SDK uses.
        if not any(
            getattr(client, name, None) for name in ("api_key", "auth_token", "credentials")
        ):
            raise ValueError(
                "Missing credentials. Pass `api_key` or set the `ANTHROPIC_API_KEY` (or "
                "`ANTHROPIC_AUTH_TOKEN`) environment variable."
            )
        return client

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream text deltas; assemble each tool_use block from its JSON fragments."""
        import anthropic

        request = self._request(messages)
        request["stream"] = True
        if tools:
            request["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        blocks: dict[int, dict[str, Any]] = {}
        counts: dict[str, int] = {}
        stop: str | None = None
        numbered = next_call_number(messages)
        emitted = 0
        stream: Any = None
        try:
            stream = await self.client().messages.create(**request)
            async for event in stream:
                stream_progress()
                kind = event.type
                if kind == "message_start":
                    _take_counts(getattr(event.message, "usage", None), counts)
                elif kind == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        blocks[event.index] = {"id": block.id, "name": block.name, "json": []}
                    elif block.type == "text" and block.text:
                        yield TextChunkEvent(block.text)
                elif kind == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        yield TextChunkEvent(delta.text)
                    elif delta.type == "input_json_delta" and event.index in blocks:
                        blocks[event.index]["json"].append(delta.partial_json)
                elif kind == "content_block_stop" and event.index in blocks:
                    block = blocks.pop(event.index)
                    emitted += 1
                    yield tool_call(
                        block["id"],
                        f"toolu_{numbered + emitted}",
                        block["name"],
                        "".join(block["json"]),
                    )
                elif kind == "message_delta":
                    stop = event.delta.stop_reason or stop
                    _take_counts(getattr(event, "usage", None), counts)
        except anthropic.APIError as error:
            raise request_failed("Anthropic request failed", error) from None
        finally:
            await close_stream(stream)
        if stop == "refusal":
            raise ProviderError("the model refused to answer")
        if stop is None:
            raise ProviderCompletionError(
                "incomplete_provider_response", "no stop_reason in the stream"
            )
        if blocks:
            raise ProviderCompletionError(
                "incomplete_provider_response", "a tool_use block never ended"
            )
        yield DoneEvent(_token_usage(counts), _STOP.get(stop, stop))

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """One answer that is a JSON object following ``response_schema``: Anthropic has no
        response format, so the schema is a tool the model is forced to call (``tool_choice``),
        not streamed, and the call's ``input`` is the answer."""
        import anthropic

        request = self._request(messages)
        request["tools"] = [
            {
                "name": name,
                "description": "Give your answer by calling this tool; its input is the answer.",
                "input_schema": dict(response_schema),
            }
        ]
        request["tool_choice"] = {"type": "tool", "name": name}
        try:
            response = await self.client().messages.create(**request)
        except anthropic.APIError as error:
            raise request_failed("Anthropic request failed", error) from None
        counts: dict[str, int] = {}
        _take_counts(getattr(response, "usage", None), counts)
        usage = _token_usage(counts)
        stop = getattr(response, "stop_reason", None)
        if stop == "refusal":
            raise ProviderError("the model refused to answer")
        blocks = list(getattr(response, "content", None) or ())
        if stop == "max_tokens":
            # The tool input of a cut answer is incomplete, though the API still parses it.
            raise ProviderError(
                f"the structured answer was cut short at max_tokens "
                f"({self.provider_config['max_tokens']})"
            )
        for block in blocks:
            if getattr(block, "type", None) == "tool_use" and block.name == name:
                return StructuredReply(structured_object(block.input), usage)
        # A forced tool makes this rare; a proxy or an older model may still answer in text.
        text = "".join(block.text for block in blocks if getattr(block, "type", None) == "text")
        if text.strip():
            return StructuredReply(structured_text(text), usage)
        kinds = ", ".join(str(getattr(block, "type", "?")) for block in blocks) or "no content"
        raise ProviderError(
            f"the structured answer is missing: no {name!r} tool_use block ({clip(kinds)})"
        )

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        """What every request carries: the model, ``max_tokens``, the history and the leading
        system messages as ``system``."""
        system, converted = to_anthropic_messages(messages)
        request: dict[str, Any] = {
            "model": self.provider_config["model"],
            "max_tokens": int(self.provider_config["max_tokens"]),
            "messages": converted,
        }
        if system:
            request["system"] = system
        return request


_COUNTS = (
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "output_tokens",
)


def _take_counts(usage: Any, counts: dict[str, int]) -> None:
    """Keep every count ``usage`` reports over the ones before it: ``message_start`` has the
    input and cache counts, ``message_delta`` the final (cumulative) output count and, in newer
    APIs, the input and cache counts again; the latest non-null count wins."""
    if usage is None:
        return
    for name in _COUNTS:
        value = token_count(usage, name)
        if value is not None:
            counts[name] = value
    details = (
        usage.get("output_tokens_details")
        if isinstance(usage, Mapping)
        else getattr(usage, "output_tokens_details", None)
    )
    thinking = token_count(details, "thinking_tokens")
    if thinking is not None:
        counts["thinking_tokens"] = thinking


def _token_usage(counts: Mapping[str, int]) -> TokenUsage:
    """Anthropic's counts as a :class:`TokenUsage`: its ``input_tokens`` are the uncached part
    only, so the input is that plus the tokens read from and written to the cache."""
    read = counts.get("cache_read_input_tokens", 0)
    write = counts.get("cache_creation_input_tokens", 0)
    return TokenUsage(
        input_tokens=counts.get("input_tokens", 0) + read + write,
        output_tokens=counts.get("output_tokens", 0),
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=counts.get("thinking_tokens", 0),
    )


def to_anthropic_messages(messages: list[Message]) -> tuple[str, list[dict[str, Any]]]:
    """``(system, messages)``: leading system messages joined as ``system``; later ones stay in
    place as notes in the user turn; consecutive tool results share one user turn."""
    leading: list[str] = []
    position = 0
    while position < len(messages) and messages[position].role == "system":
        leading.append(messages[position].content)
        position += 1
    converted: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if converted and converted[-1]["role"] == role:
            converted[-1]["content"].extend(blocks)  # the API wants alternating roles
        else:
            converted.append({"role": role, "content": blocks})

    for message in messages[position:]:
        if message.role == "system":
            add("user", [{"type": "text", "text": f"[System note] {message.content}"}])
        elif message.role == "user":
            add("user", [{"type": "text", "text": message.content}])
        elif message.role == "tool":
            add(
                "user",
                [
                    {
                        "type": "tool_result",
                        "tool_use_id": message.tool_call_id,
                        "content": result_text(message),
                    }
                ],
            )
        else:
            blocks: list[dict[str, Any]] = []
            if message.content:
                blocks.append({"type": "text", "text": message.content})
            blocks.extend(
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.args}
                for call in message.tool_calls
            )
            add("assistant", blocks or [{"type": "text", "text": "(no answer)"}])
    return "\n\n".join(leading), converted

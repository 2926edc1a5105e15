"""OpenAI chat completions, streamed — also any OpenAI-compatible server (vLLM, llama.cpp's
server, LM Studio, Ollama's /v1) through ``base_url``.

Config: ``model`` (gpt-4.1-mini), ``api_key`` (else ``OPENAI_API_KEY``), ``base_url`` (else
``OPENAI_BASE_URL``), ``max_tokens``, ``timeout_seconds`` (60, also the SDK's timeout),
``stream_timeout_seconds`` (30). The SDK never retries (``max_retries=0``): the loop owns retries.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, ClassVar

from ._wire import (
    SDKProvider,
    close_stream,
    describe_error,
    next_call_number,
    result_text,
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
    structured_text,
)

__all__ = ["OpenAIProvider", "to_openai_messages"]

_FINISH = {
    "stop": "stop",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "length": "length",
}


class OpenAIProvider(SDKProvider):
    """Streams OpenAI (or OpenAI-compatible) chat completions with tool calls."""

    name: ClassVar[str] = "openai"
    required_extra: ClassVar[str | None] = "openai"
    sdk_module: ClassVar[str | None] = "openai"
    default_config: ClassVar[Mapping[str, Any]] = {"model": "gpt-4.1-mini"}

    def make_client(self) -> Any:
        """``openai.AsyncOpenAI`` for ``api_key``/``base_url`` (else the SDK's environment)."""
        import openai

        return openai.AsyncOpenAI(
            api_key=self.provider_config.get("api_key"),
            base_url=self.provider_config.get("base_url"),
            timeout=self.timeout_seconds,
            max_retries=0,
        )

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream text; assemble indexed tool-call fragments; end with one Done."""
        import openai

        request = self._request(messages)
        request["stream"] = True
        request["stream_options"] = {"include_usage": True}
        if tools:
            request["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    },
                }
                for tool in tools
            ]
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage = TokenUsage()
        stream: Any = None
        try:
            stream = await self.client().chat.completions.create(**request)
            async for chunk in stream:
                if getattr(chunk, "usage", None) is not None:
                    usage = TokenUsage(
                        int(chunk.usage.prompt_tokens or 0), int(chunk.usage.completion_tokens or 0)
                    )
                for choice in chunk.choices or ():
                    delta = choice.delta
                    refusal = getattr(delta, "refusal", None) if delta is not None else None
                    if refusal:
                        raise ProviderError(f"the model refused: {refusal}")
                    if delta is not None and delta.content:
                        yield TextChunkEvent(delta.content)
                    for fragment in (delta.tool_calls if delta is not None else None) or ():
                        call = calls.setdefault(
                            fragment.index, {"id": None, "name": "", "arguments": []}
                        )
                        if fragment.id:
                            call["id"] = fragment.id
                        function = fragment.function
                        if function is not None and function.name:
                            call["name"] = function.name
                        if function is not None and function.arguments:
                            call["arguments"].append(function.arguments)
                    if choice.finish_reason:
                        finish = choice.finish_reason
        except openai.APIError as error:
            raise ProviderError(f"OpenAI request failed: {describe_error(error)}") from None
        finally:
            await close_stream(stream)
        if finish == "content_filter":
            raise ProviderError("the response was stopped by the provider's content filter")
        if finish is None:
            raise ProviderCompletionError(
                "incomplete_provider_response", "no finish_reason in the stream"
            )
        numbered = next_call_number(messages)
        for position, index in enumerate(sorted(calls)):
            call = calls[index]
            if not call["name"]:
                raise ProviderCompletionError(
                    "incomplete_provider_response", f"tool call {index} has no name"
                )
            yield tool_call(
                call["id"],
                f"call_{numbered + position + 1}",
                call["name"],
                "".join(call["arguments"]),
            )
        yield DoneEvent(usage, _FINISH.get(finish, finish))

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """One answer that is a JSON object following ``response_schema``: OpenAI's structured
        outputs (``response_format: json_schema``), not streamed. ``strict`` stays off: strict mode
        accepts only a subset of JSON Schema (every property required, no open objects), which a
        caller's schema need not keep to."""
        import openai

        request = self._request(messages)
        request["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": name, "schema": dict(response_schema), "strict": False},
        }
        try:
            response = await self.client().chat.completions.create(**request)
        except openai.APIError as error:
            raise ProviderError(f"OpenAI request failed: {describe_error(error)}") from None
        counted = getattr(response, "usage", None)
        usage = TokenUsage(
            int(getattr(counted, "prompt_tokens", 0) or 0),
            int(getattr(counted, "completion_tokens", 0) or 0),
        )
        if not response.choices:
            raise ProviderError("the structured answer is missing: the response has no choices")
        choice = response.choices[0]
        refusal = getattr(choice.message, "refusal", None)
        if refusal:
            raise ProviderError(f"the model refused: {clip(str(refusal))}")
        content = choice.message.content
        if choice.finish_reason in ("length", "content_filter"):
            # A cut answer is broken JSON: say why rather than quote the parse error.
            raise ProviderError(
                f"the structured answer was cut short ({choice.finish_reason}): "
                f"{clip(content or '')}"
            )
        return StructuredReply(structured_text(content), usage)

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        """What every request carries: the model, the history and ``max_tokens`` when set."""
        request: dict[str, Any] = {
            "model": self.provider_config["model"],
            "messages": to_openai_messages(messages),
        }
        if self.provider_config.get("max_tokens"):
            request["max_tokens"] = int(self.provider_config["max_tokens"])
        return request


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Provider-neutral history as OpenAI chat messages (tool calls and results native)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            converted.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": result_text(message.tool_result),
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            converted.append(
                {
                    "role": "assistant",
                    "content": message.content or None,
                    "tool_calls": [
                        {
                            "id": call.id,
                            "type": "function",
                            "function": {
                                "name": call.name,
                                "arguments": json.dumps(call.args, ensure_ascii=False),
                            },
                        }
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            converted.append({"role": message.role, "content": message.content})
    return converted

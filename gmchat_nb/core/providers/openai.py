"""OpenAI chat completions, streamed — also any OpenAI-compatible server (vLLM, llama.cpp's
server, LM Studio, Ollama's /v1) through ``base_url``.

Config: ``model`` (gpt-4.1-mini), ``api_key`` (else ``OPENAI_API_KEY``), ``base_url`` (else
``OPENAI_BASE_URL``), ``max_tokens``, ``timeout_seconds`` (60, also the SDK's timeout),
``stream_timeout_seconds`` (30), ``temperature`` (the server's default when unset). The SDK never
retries (``max_retries=0``): :mod:`.retries` owns retries.

OpenAI-compatible servers differ in what they accept (``gmchat doctor`` tells in seconds), so:

* ``max_tokens`` defaults to 1024 when ``base_url`` points anywhere but api.openai.com: a local
  server without a limit generates to its context size, long after the turn gave up;
* ``tool_choice`` (``auto``, ``required`` or ``none``) is sent with tools when set; without it,
  nothing is sent (llama-cpp-python's server then drops the tools entirely);
* ``stream: false`` asks for whole responses (llama-cpp-python's server refuses a streamed
  ``tool_choice: auto``);
* ``structured_output`` says how a structured answer is asked for: ``json_schema`` (default,
  ``response_format`` with the schema), ``json_object`` (``response_format: json_object`` with the
  schema beside it, which llama-cpp-python's server turns into a grammar; a large typed schema in
  the prompt would not fit a small model's context),
  ``tool`` (one function whose arguments are the answer, forced by ``tool_choice``) or ``prompt``
  (the schema in the prompt; the text is parsed).

An assistant message with tool calls is sent with ``content: ""``, never ``null``: the official
API accepts either, llama-cpp-python's server answers ``null`` with HTTP 500.
"""

from __future__ import annotations

import json
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
    STRUCTURED_MIN_TOKENS,
    BaseLLMProvider,
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
from .completion import stream_progress
from .registry import ProviderSpecError

__all__ = ["LOCAL_MAX_TOKENS", "OpenAIProvider", "to_openai_messages"]

LOCAL_MAX_TOKENS = 1024
TOOL_CHOICES = ("auto", "required", "none")
STRUCTURED_STYLES = ("json_schema", "json_object", "tool", "prompt")
OPENAI_HOST = "api.openai.com"

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
    _force: str | None = None  # a function every request forces (structured_output: tool)

    @classmethod
    def check_configuration(cls, config: Mapping[str, Any] | None = None) -> None:
        """The shared checks, then this adapter's own keys (each error names its key)."""
        super().check_configuration(config)
        config = config or {}
        _check_choice(config, "tool_choice", TOOL_CHOICES)
        _check_choice(config, "structured_output", STRUCTURED_STYLES)
        temperature = config.get("temperature")
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not 0 <= temperature <= 2
        ):
            raise ProviderSpecError(
                f"openai: temperature must be a number from 0 to 2, got {temperature!r}"
            )
        stream = config.get("stream")
        if stream is not None and not isinstance(stream, bool):
            raise ProviderSpecError(f"openai: stream must be true or false, got {stream!r}")

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
            if self.provider_config.get("tool_choice"):
                request["tool_choice"] = self.provider_config["tool_choice"]
        calls: dict[int, dict[str, Any]] = {}
        finish: str | None = None
        usage = TokenUsage()
        stream: Any = None
        try:
            if self.provider_config.get("stream") is False:
                response = await self.client().chat.completions.create(**request)
                stream_progress()
                usage = _usage(response)
                for choice in (response.choices or ())[:1]:
                    refusal = getattr(choice.message, "refusal", None)
                    if refusal:
                        raise ProviderError(f"the model refused: {refusal}")
                    if choice.message.content:
                        yield TextChunkEvent(choice.message.content)
                    for index, whole in enumerate(choice.message.tool_calls or ()):
                        function = getattr(whole, "function", None)
                        calls[index] = {
                            "id": whole.id,
                            "name": getattr(function, "name", "") or "",
                            "arguments": [getattr(function, "arguments", "") or ""],
                        }
                    finish = choice.finish_reason
            else:
                request["stream"] = True
                request["stream_options"] = {"include_usage": True}
                stream = await self.client().chat.completions.create(**request)
                async for chunk in stream:
                    stream_progress()  # fragments of a tool call count as progress
                    if getattr(chunk, "usage", None) is not None:
                        usage = _usage(chunk)
                    for choice in chunk.choices or ():
                        delta = choice.delta
                        refusal = getattr(delta, "refusal", None) if delta is not None else None
                        if refusal:
                            raise ProviderError(f"the model refused: {refusal}")
                        if delta is not None and delta.content:
                            yield TextChunkEvent(delta.content)
                        for fragment in (delta.tool_calls if delta is not None else None) or ():
                            _add_fragment(calls, fragment)
                        if choice.finish_reason:
                            finish = choice.finish_reason
        except openai.APIError as error:
            raise request_failed("OpenAI request failed", error) from None
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

        style = self.provider_config.get("structured_output") or "json_schema"
        if style == "tool":
            return await self._structured_by_tool(messages, response_schema, name=name)
        if style == "prompt":
            messages = _with_schema(messages, response_schema)
        elif style == "json_object":  # the schema travels as a grammar, not as prompt tokens
            messages = [*messages, Message("system", "Answer with one JSON object.")]
        request = self._request(messages)
        if "max_tokens" in request:
            request["max_tokens"] = max(request["max_tokens"], STRUCTURED_MIN_TOKENS)
        if style == "json_schema":
            request["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": name, "schema": dict(response_schema), "strict": False},
            }
        elif style == "json_object":
            # ``schema`` is llama-cpp-python's extension (a grammar); other servers ignore it
            request["response_format"] = {"type": "json_object", "schema": dict(response_schema)}
        try:
            response = await self.client().chat.completions.create(**request)
        except openai.APIError as error:
            raise request_failed("OpenAI request failed", error) from None
        usage = _usage(response)
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

    async def _structured_by_tool(
        self, messages: list[Message], response_schema: Mapping[str, Any], *, name: str
    ) -> StructuredReply:
        """The answer as the arguments of one function the request forces."""
        forced = OpenAIProvider(
            {**self.provider_config, "tool_choice": None, "structured_output": None}
        )
        forced._client = self._client
        forced._force = name
        try:
            return await BaseLLMProvider.complete_structured(
                forced, messages, response_schema, name=name
            )
        finally:
            self._client = forced._client

    @property
    def max_tokens(self) -> int | None:
        """``max_tokens`` as configured; 1024 for a server other than OpenAI's own."""
        configured = self.provider_config.get("max_tokens")
        if configured:
            return int(configured)
        base_url = self.provider_config.get("base_url")
        if base_url and OPENAI_HOST not in str(base_url):
            return LOCAL_MAX_TOKENS
        return None

    def _request(self, messages: list[Message]) -> dict[str, Any]:
        """What every request carries: the model, the history and ``max_tokens``."""
        request: dict[str, Any] = {
            "model": self.provider_config["model"],
            "messages": to_openai_messages(messages),
        }
        if self.max_tokens is not None:
            request["max_tokens"] = self.max_tokens
        if self.provider_config.get("temperature") is not None:
            request["temperature"] = float(self.provider_config["temperature"])
        if self._force is not None:
            request["tool_choice"] = {"type": "function", "function": {"name": self._force}}
        return request


def _check_choice(config: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> None:
    value = config.get(key)
    if value is not None and value not in allowed:
        raise ProviderSpecError(f"openai: {key} must be one of {', '.join(allowed)}, got {value!r}")


def _usage(response: Any) -> TokenUsage:
    """A response's or a chunk's usage: ``prompt_tokens`` (every input token, cached ones
    included), ``completion_tokens`` (reasoning included), ``prompt_tokens_details``'
    ``cached_tokens`` and ``cache_write_tokens``, ``completion_tokens_details``'
    ``reasoning_tokens``. A count the server leaves out or sends as null is 0; a server that
    reports no usage at all gives zeros (not estimated: nothing was counted)."""
    counted = getattr(response, "usage", None)
    if counted is None:
        return TokenUsage()
    prompt = getattr(counted, "prompt_tokens_details", None)
    completion = getattr(counted, "completion_tokens_details", None)
    return TokenUsage(
        input_tokens=token_count(counted, "prompt_tokens") or 0,
        output_tokens=token_count(counted, "completion_tokens") or 0,
        cache_read_tokens=token_count(prompt, "cached_tokens") or 0,
        cache_write_tokens=token_count(prompt, "cache_write_tokens") or 0,
        reasoning_tokens=token_count(completion, "reasoning_tokens") or 0,
    )


def _add_fragment(calls: dict[int, dict[str, Any]], fragment: Any) -> None:
    """One streamed piece of a tool call, appended to the call at its index."""
    call = calls.setdefault(fragment.index, {"id": None, "name": "", "arguments": []})
    if fragment.id:
        call["id"] = fragment.id
    function = fragment.function
    if function is not None and function.name:
        call["name"] = function.name
    if function is not None and function.arguments:
        call["arguments"].append(function.arguments)


def _with_schema(messages: list[Message], schema: Mapping[str, Any]) -> list[Message]:
    """The history with the answer's JSON schema in a final system message, for servers that
    cannot take it as ``response_format``."""
    note = (
        "Answer with one JSON object and nothing else. It must follow this JSON schema: "
        + json.dumps(schema, ensure_ascii=False, separators=(",", ":"))
    )
    return [*messages, Message("system", note)]


def to_openai_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Provider-neutral history as OpenAI chat messages (tool calls and results native)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            converted.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": result_text(message),
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            converted.append(
                {
                    "role": "assistant",
                    # "" rather than null: llama-cpp-python's server answers null with HTTP 500
                    "content": message.content or "",
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

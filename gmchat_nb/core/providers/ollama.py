"""Ollama's /api/chat, streamed, through the public ``ollama.AsyncClient.chat`` API.

Config: ``model`` (gemma4:e4b), ``base_url`` or ``host`` (else ``OLLAMA_HOST``, else
http://127.0.0.1:11434), ``timeout_seconds`` (60), ``stream_timeout_seconds`` (30). Ollama sends
tool calls whole, with object arguments and no ids; ids are made deterministic here.

The SDK never retries: :mod:`.retries` owns retries. Its ``ResponseError`` keeps only an error
answer's status and body, so the client's response hook keeps the headers of this task's latest
HTTP answer (for a ``Retry-After`` from a proxy in front of Ollama).
"""

from __future__ import annotations

import contextvars
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
    structured_text,
)
from .completion import stream_progress

__all__ = ["OllamaProvider", "to_ollama_messages"]

# The headers of the latest HTTP answer in this task when it was an error (else None): set by the
# client's response hook, which runs in the task that made the request.
_ERROR_HEADERS: contextvars.ContextVar[dict[str, str] | None] = contextvars.ContextVar(
    "gmchat_ollama_error_headers", default=None
)


async def _keep_error_headers(response: Any) -> None:
    """httpx response hook: remember an error answer's headers for :func:`_failed`."""
    failed = response.status_code >= 400
    _ERROR_HEADERS.set(dict(response.headers) if failed else None)


def _failed(error: Any) -> ProviderError:
    """The ProviderError for an ``ollama.ResponseError``; an HTTP one (a status above zero) with
    the headers its answer had, an in-band error line (status -1) without."""
    headers = _ERROR_HEADERS.get() if int(getattr(error, "status_code", -1)) > 0 else None
    return request_failed("Ollama request failed", error, headers)


class OllamaProvider(SDKProvider):
    """Streams a local (or remote) Ollama model with tool calls."""

    name: ClassVar[str] = "ollama"
    required_extra: ClassVar[str | None] = "ollama"
    sdk_module: ClassVar[str | None] = "ollama"
    default_config: ClassVar[Mapping[str, Any]] = {"model": "gemma4:e4b"}

    def make_client(self) -> Any:
        """``ollama.AsyncClient`` for ``base_url``/``host`` (else ``OLLAMA_HOST``)."""
        import ollama

        host = self.provider_config.get("base_url") or self.provider_config.get("host")
        return ollama.AsyncClient(
            host=host,
            timeout=self.timeout_seconds,
            event_hooks={"response": [_keep_error_headers]},
        )

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        """Stream text; take whole tool calls; end with one Done."""
        import ollama
        import pydantic

        done_reason: str | None = None
        finished = False
        usage = TokenUsage()
        numbered = next_call_number(messages)
        calls = 0
        stream: Any = None
        try:
            stream = await self.client().chat(
                model=self.provider_config["model"],
                messages=to_ollama_messages(messages),
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": t.name,
                            "description": t.description,
                            "parameters": t.input_schema,
                        },
                    }
                    for t in tools
                ]
                or None,
                stream=True,
            )
            async for chunk in stream:
                stream_progress()
                message = chunk.message
                if message is not None and message.content:
                    yield TextChunkEvent(message.content)
                for call in (message.tool_calls if message is not None else None) or ():
                    calls += 1
                    yield tool_call(
                        None,
                        f"ollama-call-{numbered + calls}",
                        call.function.name,
                        call.function.arguments,
                    )
                if chunk.done:
                    finished = True
                    done_reason = chunk.done_reason
                    usage = _usage(chunk)
        except ollama.ResponseError as error:
            raise _failed(error) from None
        except pydantic.ValidationError as error:
            raise ProviderError(f"Ollama sent a malformed response: {error}") from None
        except ConnectionError as error:
            raise request_failed("cannot reach Ollama", error) from None
        finally:
            await close_stream(stream)
        if not finished:
            raise ProviderCompletionError("incomplete_provider_response", "no final done line")
        truncated = done_reason == "length"
        yield DoneEvent(usage, "length" if truncated else ("tool_calls" if calls else "stop"))

    async def complete_structured(
        self,
        messages: list[Message],
        response_schema: Mapping[str, Any],
        *,
        name: str = "response",
    ) -> StructuredReply:
        """One answer that is a JSON object following ``response_schema``: Ollama constrains the
        output to the schema given as ``format``, not streamed. ``name`` has no place in Ollama's
        request (it names the answer for the vendors that need a name)."""
        import ollama
        import pydantic

        try:
            response = await self.client().chat(
                model=self.provider_config["model"],
                messages=to_ollama_messages(messages),
                format=dict(response_schema),
                stream=False,
            )
        except ollama.ResponseError as error:
            raise _failed(error) from None
        except pydantic.ValidationError as error:
            raise ProviderError(f"Ollama sent a malformed response: {error}") from None
        except ConnectionError as error:
            raise request_failed("cannot reach Ollama", error) from None
        usage = _usage(response)
        content = response.message.content if response.message is not None else None
        if response.done_reason == "length":
            # A cut answer is broken JSON: say why rather than quote the parse error.
            raise ProviderError(
                f"the structured answer was cut short (length): {clip(content or '')}"
            )
        return StructuredReply(structured_text(content), usage)


def _usage(response: Any) -> TokenUsage:
    """The final line's ``prompt_eval_count`` (the whole prompt, cached part included) and
    ``eval_count``; a count the line leaves out is 0. The SDK's response has no field for a cache
    or reasoning count, so none is read."""
    return TokenUsage(
        input_tokens=token_count(response, "prompt_eval_count") or 0,
        output_tokens=token_count(response, "eval_count") or 0,
    )


def to_ollama_messages(messages: list[Message]) -> list[dict[str, Any]]:
    """Provider-neutral history as Ollama chat messages (tool calls with object arguments,
    results as ``role: tool`` with ``tool_name``)."""
    converted: list[dict[str, Any]] = []
    for message in messages:
        if message.role == "tool":
            converted.append(
                {
                    "role": "tool",
                    "content": result_text(message),
                    "tool_name": message.tool_name,
                }
            )
        elif message.role == "assistant" and message.tool_calls:
            converted.append(
                {
                    "role": "assistant",
                    "content": message.content,
                    "tool_calls": [
                        {"function": {"name": call.name, "arguments": call.args}}
                        for call in message.tool_calls
                    ],
                }
            )
        else:
            converted.append({"role": message.role, "content": message.content})
    return converted

"""The fake vendor server speaks each vendor's format: proven by driving the real SDKs against it."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import anthropic
import ollama
import openai
import pydantic
import pytest

from tests.vendor_server import Reply, ToolCallSpec, VendorServer

MESSAGES: Any = [{"role": "user", "content": "How many materials?"}]
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "run_query",
            "description": "Run a GraphQL query",
            "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
        },
    }
]
ANTHROPIC_TOOLS = [
    {
        "name": "run_query",
        "description": "Run a GraphQL query",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
]
TWO_CALLS = [
    ToolCallSpec("run_query", {"query": "{ materials { totalCount } }"}, fragments=4),
    ToolCallSpec("describe", '{"type": "Material", "fields": [1, 2]}', id="custom-id", fragments=3),
]
STALL = 0.1  # how long a test waits to see that a stalled stream sends nothing more


@pytest.fixture
async def server() -> AsyncIterator[VendorServer]:
    async with VendorServer() as running:
        yield running


@pytest.fixture
async def oai(server: VendorServer) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(
        base_url=server.openai_base_url, api_key="test", max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def claude(server: VendorServer) -> AsyncIterator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="test", max_retries=0
    ) as client:
        yield client


@pytest.fixture
async def llama(server: VendorServer) -> AsyncIterator[ollama.AsyncClient]:
    async with ollama.AsyncClient(host=server.ollama_host) as client:
        yield client


async def collect(stream: Any) -> list[Any]:
    return [item async for item in stream]


async def drain_into(stream: Any, seen: list[Any]) -> None:
    """Iterate `stream` to its end (or its error), keeping each item in `seen`."""
    async for item in stream:
        seen.append(item)


async def assert_stalls_after_one(stream: Any) -> Any:
    """The first item arrives at once; the next never does (within STALL seconds)."""
    iterator = stream.__aiter__()
    first = await asyncio.wait_for(iterator.__anext__(), 2)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(iterator.__anext__(), STALL)
    return first


# -- openai ---------------------------------------------------------------------------------------


async def openai_stream(client: openai.AsyncOpenAI, **kwargs: Any) -> Any:
    return await client.chat.completions.create(
        model="gpt-test", messages=MESSAGES, stream=True, **kwargs
    )


async def test_openai_text_streams_chunks_in_order(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    server.script("openai", [Reply(text=["Hel", "lo ", "world"])])
    chunks = await collect(await openai_stream(oai))
    assert chunks[0].choices[0].delta.role == "assistant"
    texts = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert texts == ["Hel", "lo ", "world"]
    assert chunks[-1].choices[0].finish_reason == "stop"
    assert all(c.usage is None for c in chunks)  # no usage chunk unless asked for
    [body] = server.requests["openai"]
    assert body["model"] == "gpt-test"
    assert body["messages"] == MESSAGES
    assert body["stream"] is True
    assert server.headers["openai"][0]["authorization"] == "Bearer test"


async def test_openai_tool_calls_are_reassembled_by_index_with_usage(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    server.script("openai", [Reply(text="Let me look.", tool_calls=TWO_CALLS, usage=(12, 7))])
    stream = await openai_stream(oai, tools=OPENAI_TOOLS, stream_options={"include_usage": True})
    calls: dict[int, dict[str, str]] = {}
    finish, usage, fragments = None, None, 0
    async for chunk in stream:
        if chunk.usage is not None:
            assert chunk.choices == []
            usage = chunk.usage
        for choice in chunk.choices:
            finish = choice.finish_reason or finish
            for delta in choice.delta.tool_calls or []:
                call = calls.setdefault(delta.index, {"id": "", "name": "", "arguments": ""})
                if delta.id:
                    call["id"] = delta.id
                if delta.function and delta.function.name:
                    call["name"] = delta.function.name
                if delta.function and delta.function.arguments:
                    call["arguments"] += delta.function.arguments
                    fragments += 1
    assert fragments == 4 + 3
    assert {i: (c["id"], c["name"], json.loads(c["arguments"])) for i, c in calls.items()} == {
        0: ("call_1", "run_query", {"query": "{ materials { totalCount } }"}),
        1: ("custom-id", "describe", {"type": "Material", "fields": [1, 2]}),
    }
    assert finish == "tool_calls"
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 7, 19)
    body = server.requests["openai"][0]
    assert body["tools"] == OPENAI_TOOLS
    assert body["stream_options"] == {"include_usage": True}


async def test_openai_length_finish(server: VendorServer, oai: openai.AsyncOpenAI) -> None:
    server.script("openai", [Reply(text="truncat", finish="length")])
    chunks = await collect(await openai_stream(oai))
    assert chunks[-1].choices[0].finish_reason == "length"


async def test_openai_error_mid_stream_raises_api_error(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    server.script("openai", [Reply(text=["a", "b", "c"], error_after=2, error_message="boom")])
    stream = await openai_stream(oai)
    seen: list[Any] = []
    with pytest.raises(openai.APIError, match="boom") as caught:
        await drain_into(stream, seen)
    assert not isinstance(caught.value, openai.APIStatusError)  # a plain APIError: HTTP said 200
    assert len(seen) == 2
    assert caught.value.body == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": None,
    }


@pytest.mark.parametrize(
    ("status", "error_class"),
    [(500, openai.InternalServerError), (429, openai.RateLimitError)],
)
async def test_openai_http_status_raises(
    server: VendorServer, oai: openai.AsyncOpenAI, status: int, error_class: type[Exception]
) -> None:
    server.script("openai", [Reply(status=status, error_message="nope")])
    with pytest.raises(error_class) as caught:
        await openai_stream(oai)
    assert isinstance(caught.value, openai.APIStatusError)
    assert caught.value.status_code == status
    assert caught.value.message == f"Error code: {status} - nope"


async def test_openai_stall_yields_one_chunk_then_blocks(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    server.script("openai", [Reply(text=["first", "never"], stall_after=1)])
    stream = await openai_stream(oai)
    first = await assert_stalls_after_one(stream)
    assert first.choices[0].delta.role == "assistant"
    await stream.close()


async def test_openai_non_streaming(server: VendorServer, oai: openai.AsyncOpenAI) -> None:
    server.script("openai", [Reply(text=["4", "2"], tool_calls=TWO_CALLS[:1], usage=(5, 2))])
    completion = await oai.chat.completions.create(model="gpt-test", messages=MESSAGES)
    [choice] = completion.choices
    assert choice.message.content == "42"
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls or []
    assert call.type == "function"
    assert call.id == "call_1"
    assert call.function.name == "run_query"
    assert json.loads(call.function.arguments) == {"query": "{ materials { totalCount } }"}
    assert completion.usage is not None
    assert completion.usage.prompt_tokens == 5


# -- anthropic ------------------------------------------------------------------------------------


def anthropic_stream(client: anthropic.AsyncAnthropic, **kwargs: Any) -> Any:
    return client.messages.stream(model="claude-test", max_tokens=100, messages=MESSAGES, **kwargs)


async def test_anthropic_text_streams_chunks_in_order(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text=["Hel", "lo ", "world"], usage=(9, 3))])
    async with anthropic_stream(claude, system="be brief") as stream:
        texts = [text async for text in stream.text_stream]
        message = await stream.get_final_message()
    assert texts == ["Hel", "lo ", "world"]
    assert message.stop_reason == "end_turn"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 3)
    [body] = server.requests["anthropic"]
    assert (body["model"], body["max_tokens"], body["system"]) == ("claude-test", 100, "be brief")
    assert body["messages"] == MESSAGES
    headers = server.headers["anthropic"][0]
    assert "test" in (headers.get("x-api-key") or headers.get("authorization", ""))
    assert "anthropic-version" in headers


async def test_anthropic_tool_use_blocks_are_rebuilt_by_the_stream_helper(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text="Let me look.", tool_calls=TWO_CALLS, usage=(20, 8))])
    async with anthropic_stream(claude, tools=ANTHROPIC_TOOLS) as stream:
        events = [event async for event in stream]
        message = await stream.get_final_message()
    partial = [
        e for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert len(partial) == 4 + 3
    assert [block.type for block in message.content] == ["text", "tool_use", "tool_use"]
    assert [(b.id, b.name, b.input) for b in message.content if b.type == "tool_use"] == [
        ("toolu_1", "run_query", {"query": "{ materials { totalCount } }"}),
        ("custom-id", "describe", {"type": "Material", "fields": [1, 2]}),
    ]
    assert message.stop_reason == "tool_use"
    assert (message.usage.input_tokens, message.usage.output_tokens) == (20, 8)
    assert server.requests["anthropic"][0]["tools"] == ANTHROPIC_TOOLS


async def test_anthropic_length_is_max_tokens(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text="truncat", finish="length")])
    async with anthropic_stream(claude) as stream:
        message = await stream.get_final_message()
    assert message.stop_reason == "max_tokens"


async def test_anthropic_error_event_raises_api_status_error(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text=["a", "b"], error_after=3, error_message="busy")])
    stream = await claude.messages.create(
        model="claude-test", max_tokens=100, messages=MESSAGES, stream=True
    )
    seen: list[Any] = []
    with pytest.raises(anthropic.APIStatusError, match="busy") as caught:
        await drain_into(stream, seen)
    assert [event.type for event in seen] == [
        "message_start",
        "content_block_start",
        "content_block_delta",
    ]
    # The HTTP status was 200, so the SDK picks the generic class, not OverloadedError.
    assert type(caught.value) is anthropic.APIStatusError
    assert caught.value.status_code == 200
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "busy"},
    }


@pytest.mark.parametrize(
    ("status", "error_class"),
    [
        (500, anthropic.InternalServerError),
        (429, anthropic.RateLimitError),
        (529, anthropic.OverloadedError),
    ],
)
async def test_anthropic_http_status_raises(
    server: VendorServer,
    claude: anthropic.AsyncAnthropic,
    status: int,
    error_class: type[Exception],
) -> None:
    server.script("anthropic", [Reply(status=status, error_message="nope")])
    with pytest.raises(error_class) as caught:
        await claude.messages.create(model="claude-test", max_tokens=10, messages=MESSAGES)
    assert isinstance(caught.value, anthropic.APIStatusError)
    assert caught.value.status_code == status
    assert isinstance(caught.value.body, dict)
    assert caught.value.body["error"]["message"] == "nope"


async def test_anthropic_stall_yields_one_event_then_blocks(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text=["first", "never"], stall_after=1)])
    stream = await claude.messages.create(
        model="claude-test", max_tokens=100, messages=MESSAGES, stream=True
    )
    first = await assert_stalls_after_one(stream)
    assert first.type == "message_start"
    await stream.close()


async def test_anthropic_invalid_tool_json_fails_in_the_stream_helper(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(tool_calls=[ToolCallSpec("run_query", '{"query": oops')])])
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        async with anthropic_stream(claude) as stream:
            await stream.get_final_message()


async def test_anthropic_non_streaming(
    server: VendorServer, claude: anthropic.AsyncAnthropic
) -> None:
    server.script("anthropic", [Reply(text=["4", "2"], tool_calls=TWO_CALLS[:1], usage=(5, 2))])
    message = await claude.messages.create(model="claude-test", max_tokens=10, messages=MESSAGES)
    text, tool = message.content
    assert text.type == "text"
    assert text.text == "42"
    assert tool.type == "tool_use"
    assert (tool.id, tool.name, tool.input) == (
        "toolu_1",
        "run_query",
        {"query": "{ materials { totalCount } }"},
    )
    assert message.stop_reason == "tool_use"
    assert message.usage.output_tokens == 2
    assert "stream" not in server.requests["anthropic"][0]


# -- ollama ---------------------------------------------------------------------------------------


async def ollama_stream(client: ollama.AsyncClient, **kwargs: Any) -> Any:
    return await client.chat(model="llama-test", messages=MESSAGES, stream=True, **kwargs)


async def test_ollama_text_streams_chunks_in_order(
    server: VendorServer, llama: ollama.AsyncClient
) -> None:
    server.script("ollama", [Reply(text=["Hel", "lo ", "world"], usage=(9, 3))])
    parts = await collect(await ollama_stream(llama))
    assert [p.message.content for p in parts if not p.done] == ["Hel", "lo ", "world"]
    last = parts[-1]
    assert (last.done, last.done_reason) == (True, "stop")
    assert (last.prompt_eval_count, last.eval_count) == (9, 3)
    [body] = server.requests["ollama"]
    assert (body["model"], body["messages"], body["stream"]) == ("llama-test", MESSAGES, True)


async def test_ollama_tool_calls_come_whole(
    server: VendorServer, llama: ollama.AsyncClient
) -> None:
    server.script("ollama", [Reply(text="Let me look.", tool_calls=TWO_CALLS)])
    parts = await collect(await ollama_stream(llama, tools=OPENAI_TOOLS))
    calls = [
        (c.function.name, c.function.arguments) for p in parts for c in p.message.tool_calls or []
    ]
    assert calls == [
        ("run_query", {"query": "{ materials { totalCount } }"}),
        ("describe", {"type": "Material", "fields": [1, 2]}),
    ]
    assert parts[-1].done_reason == "stop"  # ollama has no tool-call finish reason
    assert server.requests["ollama"][0]["tools"] == OPENAI_TOOLS


async def test_ollama_invalid_json_arguments_are_sent_as_a_string(
    server: VendorServer, llama: ollama.AsyncClient
) -> None:
    server.script("ollama", [Reply(tool_calls=[ToolCallSpec("run_query", '{"query": oops')])])
    # ollama 0.6.3 types `arguments` as a mapping, so the SDK itself rejects the line.
    with pytest.raises(pydantic.ValidationError, match="arguments"):
        await collect(await ollama_stream(llama))


async def test_ollama_length_finish(server: VendorServer, llama: ollama.AsyncClient) -> None:
    server.script("ollama", [Reply(text="truncat", finish="length")])
    parts = await collect(await ollama_stream(llama))
    assert parts[-1].done_reason == "length"


async def test_ollama_error_line_raises_response_error(
    server: VendorServer, llama: ollama.AsyncClient
) -> None:
    server.script("ollama", [Reply(text=["a", "b", "c"], error_after=2, error_message="oom")])
    stream = await ollama_stream(llama)
    seen: list[Any] = []
    with pytest.raises(ollama.ResponseError) as caught:
        await drain_into(stream, seen)
    assert [part.message.content for part in seen] == ["a", "b"]
    assert caught.value.error == "oom"
    assert caught.value.status_code == -1  # the SDK does not know a status mid-stream


@pytest.mark.parametrize("status", [500, 429])
async def test_ollama_http_status_raises_response_error(
    server: VendorServer, llama: ollama.AsyncClient, status: int
) -> None:
    server.script("ollama", [Reply(status=status, error_message="nope"), Reply(status=status)])
    with pytest.raises(ollama.ResponseError) as caught:
        await collect(await ollama_stream(llama))
    assert (caught.value.error, caught.value.status_code) == ("nope", status)
    with pytest.raises(ollama.ResponseError) as caught:
        await llama.chat(model="llama-test", messages=MESSAGES)
    assert caught.value.status_code == status


async def test_ollama_stall_yields_one_chunk_then_blocks(
    server: VendorServer, llama: ollama.AsyncClient
) -> None:
    server.script("ollama", [Reply(text=["first", "never"], stall_after=1)])
    first = await assert_stalls_after_one(await ollama_stream(llama))
    assert first.message.content == "first"


async def test_ollama_non_streaming(server: VendorServer, llama: ollama.AsyncClient) -> None:
    server.script("ollama", [Reply(text=["4", "2"], tool_calls=TWO_CALLS[:1], usage=(5, 2))])
    response = await llama.chat(model="llama-test", messages=MESSAGES)
    assert response.done is True
    assert response.message.content == "42"
    [call] = response.message.tool_calls or []
    assert call.function.arguments == {"query": "{ materials { totalCount } }"}
    assert (response.prompt_eval_count, response.eval_count) == (5, 2)
    assert server.requests["ollama"][0]["stream"] is False


# -- the server itself ----------------------------------------------------------------------------


async def test_replies_are_served_in_order_and_ids_keep_counting(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    call = ToolCallSpec("run_query", {"query": "{ a }"})
    server.script("openai", [Reply(tool_calls=[call])])
    server.script("openai", [Reply(tool_calls=[call]), Reply(text="done")])
    assert server.remaining("openai") == 3
    first = await oai.chat.completions.create(model="m", messages=MESSAGES)
    second = await oai.chat.completions.create(model="m", messages=MESSAGES)
    third = await oai.chat.completions.create(model="m", messages=MESSAGES)
    ids = [(c.message.tool_calls or [])[0].id for c in (first.choices[0], second.choices[0])]
    assert ids == ["call_1", "call_2"]
    assert third.choices[0].message.content == "done"
    assert server.remaining("openai") == 0
    assert len(server.requests["openai"]) == 3
    assert server.requests["anthropic"] == []


async def test_running_out_of_replies_is_a_clear_500(
    server: VendorServer, oai: openai.AsyncOpenAI
) -> None:
    with pytest.raises(openai.InternalServerError, match="no scripted reply left for openai"):
        await oai.chat.completions.create(model="m", messages=MESSAGES)
    assert server.requests["openai"][0]["model"] == "m"  # still recorded


async def test_first_chunk_arrives_before_the_rest_is_sent(server: VendorServer) -> None:
    """Raw bytes: the first NDJSON line is readable while the server holds back the rest."""
    server.script("ollama", [Reply(text=["one", "two"], stall_after=1)])
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.url}/api/chat", json={"model": "m"}) as response,
    ):
        assert response.headers["Content-Type"] == "application/x-ndjson"
        line = await asyncio.wait_for(response.content.readline(), 2)
        assert json.loads(line)["message"]["content"] == "one"
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(response.content.readline(), STALL)


async def test_anthropic_events_carry_event_lines(server: VendorServer) -> None:
    server.script("anthropic", [Reply(text="hi")])
    async with aiohttp.ClientSession() as session:
        body = {"model": "m", "max_tokens": 5, "messages": MESSAGES, "stream": True}
        async with session.post(f"{server.url}/v1/messages", json=body) as response:
            raw = await response.text()
    blocks = [block.split("\n") for block in raw.strip().split("\n\n")]
    kinds = [lines[0].removeprefix("event: ") for lines in blocks]
    assert kinds == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    for kind, lines in zip(kinds, blocks, strict=True):
        assert json.loads(lines[1].removeprefix("data: "))["type"] == kind


async def test_delay_holds_the_headers_and_stop_releases_it() -> None:
    server = VendorServer()
    await server.start()
    server.script("openai", [Reply(text="late", delay=0.1), Reply(text="never", delay=60)])
    async with openai.AsyncOpenAI(
        base_url=server.openai_base_url, api_key="test", max_retries=0
    ) as client:
        started = time.monotonic()
        late = await client.chat.completions.create(model="m", messages=MESSAGES)
        assert late.choices[0].message.content == "late"
        assert time.monotonic() - started >= 0.1
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(
                client.chat.completions.create(model="m", messages=MESSAGES), STALL
            )
    started = time.monotonic()
    await server.stop()
    assert time.monotonic() - started < 2


def test_reply_defaults_and_argument_fragments() -> None:
    assert Reply().finish == "stop"
    assert Reply(tool_calls=[ToolCallSpec("f")]).finish == "tool_calls"
    assert Reply(tool_calls=[ToolCallSpec("f")], finish="length").finish == "length"
    with pytest.raises(ValueError, match="finish must be one of"):
        Reply(finish="done")  # type: ignore[arg-type]
    spec = ToolCallSpec("f", {"query": "{ materials }"}, fragments=4)
    pieces = spec.argument_pieces()
    assert len(pieces) == 4
    assert all(pieces)
    assert json.loads("".join(pieces)) == {"query": "{ materials }"}
    assert ToolCallSpec("f", "{}", fragments=5).argument_pieces() == ["{", "}"]
    assert ToolCallSpec("f", "{bad").arguments_value() == "{bad"


def test_url_needs_a_started_server_and_vendors_are_checked() -> None:
    server = VendorServer()
    with pytest.raises(RuntimeError, match="not started"):
        _ = server.url
    with pytest.raises(ValueError, match="unknown vendor"):
        server.script("mistral", [])  # type: ignore[arg-type]

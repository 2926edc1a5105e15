"""Token usage read from each vendor's real wire format: the OpenAI, Anthropic and Ollama adapters
drive their real SDKs against tests/vendor_server.py, streamed and whole, with and without cached
and reasoning tokens, with detail fields null or missing, and from a server that reports nothing.

``TokenUsage.input_tokens`` is every input token (cache reads and writes included): OpenAI's
``prompt_tokens`` already is; Anthropic's ``input_tokens`` is the uncached part only, so the
adapter adds its two cache counts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolDefinition,
)
from gmchat_nb.core.providers.replay import RecordingProvider, ReplayProvider

from ...vendor_server import Reply, ToolCallSpec, VendorServer
from .test_adapters import TOOLS, provider

ASK = [Message("system", "You answer questions about parts."), Message("user", "Which parts?")]
SCHEMA: dict[str, Any] = {"type": "object", "properties": {"ok": {"type": "boolean"}}}


async def streamed(adapter: BaseLLMProvider) -> TokenUsage:
    """The usage of the one Done a streamed request ends with."""
    events = [event async for event in adapter.complete(ASK, TOOLS)]
    dones = [event for event in events if isinstance(event, DoneEvent)]
    assert len(dones) == 1 and events[-1] is dones[0]
    return dones[0].usage


async def whole(server: VendorServer, vendor: str, how: str) -> TokenUsage:
    """The usage of a request answered whole: ``structured`` (``complete_structured``) or, for
    OpenAI, ``stream_false`` (a ``complete`` with ``stream: false``)."""
    if how == "stream_false":
        return await streamed(provider(server, vendor, stream=False))
    reply = await provider(server, vendor).complete_structured(ASK, SCHEMA)
    assert reply.value == {"ok": True}
    return reply.usage


def answer(**usage: Any) -> list[Reply]:
    """One reply for each way of asking: a streamed text, a whole text, a structured value."""
    return [
        Reply(text=["Bolt ", "and Gear."], **usage),
        Reply(text="Bolt and Gear.", **usage),
        Reply(structured={"ok": True}, **usage),
    ]


async def every_way(server: VendorServer, vendor: str) -> list[TokenUsage]:
    """The usage of the three replies :func:`answer` scripted: streamed, whole, structured."""
    usages = [await streamed(provider(server, vendor))]
    if vendor == "openai":
        usages.append(await whole(server, vendor, "stream_false"))
    else:  # Anthropic and Ollama adapters always stream ``complete``
        usages.append(await streamed(provider(server, vendor)))
    usages.append(await whole(server, vendor, "structured"))
    assert server.remaining(vendor) == 0  # type: ignore[arg-type]
    return usages


# -- OpenAI ----------------------------------------------------------------------------------------


async def test_openai_plain_counts_streamed_and_whole(server: VendorServer) -> None:
    server.script("openai", answer(usage=(120, 30)))
    assert await every_way(server, "openai") == [TokenUsage(120, 30)] * 3
    assert server.requests["openai"][0]["stream_options"] == {"include_usage": True}


async def test_openai_cached_and_reasoning_tokens_streamed_and_whole(server: VendorServer) -> None:
    server.script("openai", answer(usage=(1500, 80), cache_read=1024, reasoning=48))
    expected = TokenUsage(
        input_tokens=1500, output_tokens=80, cache_read_tokens=1024, reasoning_tokens=48
    )
    assert await every_way(server, "openai") == [expected] * 3


async def test_openai_the_wire_carries_the_details_the_adapter_reads(server: VendorServer) -> None:
    """What the vendor server sends is OpenAI's shape: the counts sit in the two details objects,
    and ``prompt_tokens`` already includes the cached ones."""
    server.script("openai", [Reply(text="ok", usage=(900, 40), cache_read=512, reasoning=16)])
    import openai

    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="k", max_retries=0)
    completion = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.usage is not None
    assert completion.usage.model_dump(exclude_none=True) == {
        "prompt_tokens": 900,
        "completion_tokens": 40,
        "total_tokens": 940,
        "prompt_tokens_details": {"cached_tokens": 512},
        "completion_tokens_details": {"reasoning_tokens": 16},
    }
    await client.close()


async def test_openai_cache_writes_reported_by_a_compatible_server(server: VendorServer) -> None:
    """Some OpenAI-compatible gateways report the tokens written to the cache as
    ``prompt_tokens_details.cache_write_tokens`` (part of ``prompt_tokens``)."""
    server.script("openai", answer(usage=(2000, 10), cache_read=300, cache_write=1200))
    expected = TokenUsage(2000, 10, cache_read_tokens=300, cache_write_tokens=1200)
    assert await every_way(server, "openai") == [expected] * 3


@pytest.mark.parametrize(
    "fields",
    [
        {"prompt_tokens_details": None, "completion_tokens_details": None},
        {
            "prompt_tokens_details": {"cached_tokens": None, "audio_tokens": None},
            "completion_tokens_details": {"reasoning_tokens": None},
        },
        {"prompt_tokens_details": {}, "completion_tokens_details": {}},
    ],
    ids=["details-null", "counts-null", "details-empty"],
)
async def test_openai_null_or_missing_detail_fields_count_as_zero(
    server: VendorServer, fields: dict[str, Any]
) -> None:
    server.script("openai", answer(usage=(100, 10), usage_fields=fields))
    assert await every_way(server, "openai") == [TokenUsage(100, 10)] * 3


async def test_openai_null_top_level_counts_count_as_zero(server: VendorServer) -> None:
    fields = {"prompt_tokens": None, "completion_tokens": None, "total_tokens": None}
    server.script("openai", answer(usage=(100, 10), cache_read=64, usage_fields=fields))
    assert await every_way(server, "openai") == [TokenUsage(cache_read_tokens=64)] * 3


async def test_openai_a_server_that_reports_no_usage_gives_zeros_not_estimates(
    server: VendorServer,
) -> None:
    """No usage chunk (the server ignored ``include_usage``) and no ``usage`` in a whole answer:
    nothing was counted, so the usage is zeros and not marked estimated."""
    server.script("openai", answer(usage=(100, 10), no_usage=True))
    usages = await every_way(server, "openai")
    assert usages == [TokenUsage()] * 3 and not any(usage.estimated for usage in usages)


async def test_openai_usage_after_tool_calls_in_the_stream(server: VendorServer) -> None:
    """The usage chunk comes after the finish chunk of a tool round; it is the round's usage."""
    calls = [ToolCallSpec("query", {"manager": "Part"}, fragments=4)]
    server.script("openai", [Reply(tool_calls=calls, usage=(700, 25), cache_read=640)])
    events = [event async for event in provider(server, "openai").complete(ASK, TOOLS)]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "tool_calls"
    assert done.usage == TokenUsage(700, 25, cache_read_tokens=640)


# -- Anthropic -------------------------------------------------------------------------------------


async def test_anthropic_plain_counts_streamed_and_whole(server: VendorServer) -> None:
    server.script("anthropic", answer(usage=(120, 30)))
    assert await every_way(server, "anthropic") == [TokenUsage(120, 30)] * 3


async def test_anthropic_input_is_the_total_with_cache_reads_and_writes(
    server: VendorServer,
) -> None:
    """Anthropic's ``input_tokens`` (50) leaves out the tokens read from (1000) and written to
    (200) the cache; the usage's input is all of them."""
    server.script("anthropic", answer(usage=(50, 40), cache_read=1000, cache_write=200))
    expected = TokenUsage(
        input_tokens=1250, output_tokens=40, cache_read_tokens=1000, cache_write_tokens=200
    )
    assert await every_way(server, "anthropic") == [expected] * 3


async def test_anthropic_thinking_tokens_are_the_reasoning_tokens(server: VendorServer) -> None:
    server.script("anthropic", answer(usage=(30, 90), cache_read=500, reasoning=64))
    expected = TokenUsage(530, 90, cache_read_tokens=500, reasoning_tokens=64)
    assert await every_way(server, "anthropic") == [expected] * 3


async def test_anthropic_the_wire_splits_the_counts_over_start_and_delta(
    server: VendorServer,
) -> None:
    """The streamed shape the adapter reads: input and cache counts in ``message_start``, the
    output count and its thinking part in ``message_delta``."""
    server.script("anthropic", [Reply(text="ok", usage=(7, 9), cache_write=300, reasoning=4)])
    import anthropic

    client = anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="k", max_retries=0
    )
    stream = await client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}], stream=True
    )
    seen = {}
    async for event in stream:
        if event.type == "message_start":
            seen["start"] = event.message.usage.model_dump(exclude_none=True)
        elif event.type == "message_delta":
            seen["delta"] = event.usage.model_dump(exclude_none=True)
    await client.close()
    assert seen == {
        "start": {"input_tokens": 7, "output_tokens": 0, "cache_creation_input_tokens": 300},
        "delta": {"output_tokens": 9, "output_tokens_details": {"thinking_tokens": 4}},
    }


async def test_anthropic_a_delta_repeating_the_counts_wins(server: VendorServer) -> None:
    """Newer APIs repeat the cumulative input and cache counts in ``message_delta`` (a server
    tool may have added to them): the latest count of each kind is the one kept."""
    delta = {"input_tokens": 60, "cache_read_input_tokens": 1100, "cache_creation_input_tokens": 0}
    server.script(
        "anthropic",
        [Reply(text="ok", usage=(50, 20), cache_read=1000, cache_write=200, delta_usage=delta)],
    )
    assert await streamed(provider(server, "anthropic")) == TokenUsage(
        input_tokens=1160, output_tokens=20, cache_read_tokens=1100, cache_write_tokens=0
    )


async def test_anthropic_null_counts_in_the_delta_keep_the_starts(server: VendorServer) -> None:
    delta = {"input_tokens": None, "cache_read_input_tokens": None, "output_tokens_details": None}
    server.script(
        "anthropic",
        [Reply(text="ok", usage=(50, 20), cache_read=1000, reasoning=5, delta_usage=delta)],
    )
    assert await streamed(provider(server, "anthropic")) == TokenUsage(
        1050, 20, cache_read_tokens=1000
    )


async def test_anthropic_null_cache_fields_count_as_zero(server: VendorServer) -> None:
    fields = {
        "cache_read_input_tokens": None,
        "cache_creation_input_tokens": None,
        "output_tokens_details": None,
    }
    server.script("anthropic", answer(usage=(80, 12), reasoning=3, usage_fields=fields))
    usages = await every_way(server, "anthropic")
    # the streamed thinking count travels in message_delta, which usage_fields does not touch
    assert usages == [TokenUsage(80, 12, reasoning_tokens=3)] * 2 + [TokenUsage(80, 12)]


async def test_anthropic_a_server_that_reports_no_usage_gives_zeros_not_estimates(
    server: VendorServer,
) -> None:
    server.script("anthropic", answer(usage=(100, 10), no_usage=True))
    usages = await every_way(server, "anthropic")
    assert usages == [TokenUsage()] * 3 and not any(usage.estimated for usage in usages)


# -- Ollama ----------------------------------------------------------------------------------------


async def test_ollama_counts_streamed_and_whole(server: VendorServer) -> None:
    server.script("ollama", answer(usage=(400, 37)))
    assert await every_way(server, "ollama") == [TokenUsage(400, 37)] * 3


async def test_ollama_left_out_or_null_counts_are_zero(server: VendorServer) -> None:
    """Ollama leaves a count out of the done line when it is 0 (``omitempty``)."""
    server.script("ollama", answer(usage=(400, 37), no_usage=True))
    assert await every_way(server, "ollama") == [TokenUsage()] * 3
    server.script("ollama", answer(usage=(400, 37), usage_fields={"prompt_eval_count": None}))
    assert await every_way(server, "ollama") == [TokenUsage(0, 37)] * 3


# -- cassettes -------------------------------------------------------------------------------------


async def test_a_cassette_keeps_the_cache_and_reasoning_counts(
    server: VendorServer, tmp_path: Path
) -> None:
    cassette = tmp_path / "usage.jsonl"
    server.script(
        "anthropic",
        [
            Reply(text="Bolt.", usage=(50, 40), cache_read=1000, cache_write=200, reasoning=8),
            Reply(structured={"ok": True}, usage=(20, 5), cache_read=300),
            Reply(text="Gear.", usage=(12, 3)),
        ],
    )
    recorder = RecordingProvider(provider(server, "anthropic"), cassette)
    first = await streamed(recorder)
    structured = (await recorder.complete_structured(ASK, SCHEMA)).usage
    plain = await streamed(recorder)
    lines = [json.loads(line) for line in cassette.read_text().splitlines()[1:]]
    assert lines[0]["events"][-1]["usage"] == {
        "input_tokens": 1250,
        "output_tokens": 40,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 200,
        "reasoning_tokens": 8,
    }
    assert lines[1]["structured"]["usage"] == {
        "input_tokens": 320,
        "output_tokens": 5,
        "cache_read_tokens": 300,
    }
    # zero extras are left out: a cassette without them reads as it always did
    assert lines[2]["events"][-1]["usage"] == {"input_tokens": 12, "output_tokens": 3}

    replay = ReplayProvider({"path": str(cassette)})
    assert await streamed(replay) == first
    assert await replay.complete_structured(ASK, SCHEMA) == StructuredReply(
        {"ok": True}, structured
    )
    assert await streamed(replay) == plain == TokenUsage(12, 3)


class _Counting(BaseLLMProvider):
    """A provider that counted its tokens itself (``estimated``)."""

    name: ClassVar[str] = "counting"

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        yield TextChunkEvent("Bolt.")
        yield DoneEvent(TokenUsage(9, 2, estimated=True), "stop")


async def test_a_cassette_keeps_estimated(tmp_path: Path) -> None:
    cassette = tmp_path / "estimated.jsonl"
    await streamed(RecordingProvider(_Counting(), cassette))
    line = json.loads(cassette.read_text().splitlines()[1])
    assert line["events"][-1]["usage"] == {"input_tokens": 9, "output_tokens": 2, "estimated": True}
    assert await streamed(ReplayProvider({"path": str(cassette)})) == TokenUsage(
        9, 2, estimated=True
    )

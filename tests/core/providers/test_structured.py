"""Structured output (``complete_structured``) for every provider: the real SDKs against the local
wire-format server (tests/vendor_server.py), the scripted and replay providers, and the default
that a provider implementing only ``complete`` inherits."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    StructuredReply,
    TextChunkEvent,
    TokenUsage,
    ToolCallEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.replay import RecordingProvider, ReplayProvider
from gmchat_nb.core.providers.scripted import ScriptedProvider, load_rounds

from ...vendor_server import Reply, VendorServer
from .test_adapters import VENDORS, provider

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"tool": {"type": "string"}, "args": {"type": "object"}},
                "required": ["tool"],
            },
        }
    },
    "required": ["steps"],
}
PLAN: dict[str, Any] = {
    "steps": [{"tool": "query", "args": {"manager": "Part", "fields": ["name"]}}],
}
ASK = [Message("system", "You plan queries."), Message("user", "Which parts?")]


# -- the SDK adapters against the vendor server ----------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS)
async def test_the_schema_goes_out_the_vendors_way_and_the_value_and_usage_come_back(
    server: VendorServer, vendor: str
) -> None:
    server.script(vendor, [Reply(structured=PLAN, usage=(40, 12))])  # type: ignore[arg-type]
    reply = await provider(server, vendor).complete_structured(ASK, SCHEMA, name="plan")
    assert reply == StructuredReply(PLAN, TokenUsage(40, 12))
    sent = server.requests[vendor][0]
    assert not sent.get("stream")  # one JSON answer: nothing to stream
    if vendor == "openai":
        assert sent["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "plan", "schema": SCHEMA, "strict": False},
        }
        assert [m["role"] for m in sent["messages"]] == ["system", "user"]
        assert "tools" not in sent
    elif vendor == "anthropic":
        [tool] = sent["tools"]
        assert (tool["name"], tool["input_schema"]) == ("plan", SCHEMA)
        assert sent["tool_choice"] == {"type": "tool", "name": "plan"}
        assert sent["system"] == "You plan queries." and sent["max_tokens"] == 1024
        assert sent["messages"] == [
            {"role": "user", "content": [{"type": "text", "text": "Which parts?"}]}
        ]
    else:
        assert sent["format"] == SCHEMA and sent["stream"] is False
        assert "tools" not in sent or not sent["tools"]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_the_default_name_is_response(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(structured={"ok": True})])  # type: ignore[arg-type]
    reply = await provider(server, vendor).complete_structured(ASK, SCHEMA)
    assert reply.value == {"ok": True} and reply.usage == TokenUsage()
    sent = server.requests[vendor][0]
    if vendor == "openai":
        assert sent["response_format"]["json_schema"]["name"] == "response"
    elif vendor == "anthropic":
        assert sent["tool_choice"]["name"] == "response"


async def test_openai_sends_max_tokens_when_configured(server: VendorServer) -> None:
    server.script("openai", [Reply(structured=PLAN)])
    await provider(server, "openai", max_tokens=300).complete_structured(ASK, SCHEMA)
    assert server.requests["openai"][0]["max_tokens"] == 300


@pytest.mark.parametrize("vendor", ["openai", "ollama"])
async def test_fenced_json_text_is_read(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(text='```json\n{"steps": []}\n```')])  # type: ignore[arg-type]
    reply = await provider(server, vendor).complete_structured(ASK, SCHEMA)
    assert reply.value == {"steps": []}


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Reply(text="Sure! Here is your plan."), r"not JSON \(.*\): Sure! Here is your plan\."),
        (
            Reply(structured=["query", "Part"]),
            r'is an array, not a JSON object: \["query", "Part"\]',
        ),
        (Reply(structured="just a string"), "is a string, not a JSON object"),
        (Reply(text=""), "empty|missing"),
    ],
)
async def test_an_answer_that_is_not_a_json_object_is_a_clear_provider_error(
    server: VendorServer, vendor: str, answer: Reply, message: str
) -> None:
    server.script(vendor, [answer])  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match=message):
        await provider(server, vendor).complete_structured(ASK, SCHEMA)


@pytest.mark.parametrize("vendor", ["openai", "ollama"])
async def test_what_came_back_is_quoted_clipped(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(text="x" * 5000)])  # type: ignore[arg-type]
    with pytest.raises(ProviderError) as failure:
        await provider(server, vendor).complete_structured(ASK, SCHEMA)
    assert str(failure.value).endswith("x" * 197 + "...")
    assert len(str(failure.value)) < 300


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_cut_answer_says_so(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(structured=PLAN, finish="length")])  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match="cut short"):
        await provider(server, vendor).complete_structured(ASK, SCHEMA)


async def test_anthropic_answering_in_text_is_read_as_json(server: VendorServer) -> None:
    """A forced tool makes a text answer rare, but a proxy in front of Claude may send one."""
    server.script("anthropic", [Reply(text='{"steps": []}'), Reply(text="no plan")])
    adapter = provider(server, "anthropic")
    assert (await adapter.complete_structured(ASK, SCHEMA)).value == {"steps": []}
    with pytest.raises(ProviderError, match="not JSON"):
        await adapter.complete_structured(ASK, SCHEMA)


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("status", [500, 429, 400])
async def test_an_http_error_is_a_provider_error(
    server: VendorServer, vendor: str, status: int
) -> None:
    server.script(vendor, [Reply(status=status, error_message="quota of team X exhausted")])  # type: ignore[arg-type]
    with pytest.raises(ProviderError, match=f"request failed: HTTP {status}"):
        await provider(server, vendor).complete_structured(ASK, SCHEMA)


@pytest.mark.parametrize("vendor", VENDORS)
async def test_an_unreachable_server_is_a_provider_error(server: VendorServer, vendor: str) -> None:
    adapter = provider(server, vendor)
    await server.stop()
    with pytest.raises(ProviderError):
        await adapter.complete_structured(ASK, SCHEMA)


# -- scripted ---------------------------------------------------------------------------------------


async def test_scripted_rounds_serve_structured_and_streamed_requests_in_order() -> None:
    scripted = ScriptedProvider(
        {
            "rounds": [
                {"structured": PLAN, "usage": {"input_tokens": 30, "output_tokens": 9}},
                {"text": "Bolt and Gear.", "usage": {"input_tokens": 50, "output_tokens": 4}},
                {"text": '```json\n{"steps": []}\n```'},
                {"error": "quota of team X exhausted"},
            ]
        }
    )
    first = await scripted.complete_structured(ASK, SCHEMA, name="plan")
    assert first == StructuredReply(PLAN, TokenUsage(30, 9))
    first.value["steps"].clear()  # the caller's copy: the script stays as written
    assert scripted.rounds[0]["structured"] == PLAN
    events = [event async for event in scripted.complete(ASK, [])]
    assert events == [TextChunkEvent("Bolt and Gear."), DoneEvent(TokenUsage(50, 4), "stop")]
    assert (await scripted.complete_structured(ASK, SCHEMA)).value == {"steps": []}
    with pytest.raises(ProviderError, match="quota of team X exhausted"):
        await scripted.complete_structured(ASK, SCHEMA)
    with pytest.raises(ProviderError, match="no round 5"):
        await scripted.complete_structured(ASK, SCHEMA)
    assert scripted.remaining == 0
    assert [(len(m), s, n) for m, s, n in scripted.structured_requests] == [
        (2, SCHEMA, "plan"),
        (2, SCHEMA, "response"),
        (2, SCHEMA, "response"),
        (2, SCHEMA, "response"),
    ]
    assert len(scripted.requests) == 1


async def test_scripted_rounds_out_of_step_with_the_requests_fail_clearly() -> None:
    scripted = ScriptedProvider(
        {"rounds": [{"structured": PLAN}, {"text": "Not a plan."}, {"tool_calls": [{"name": "q"}]}]}
    )
    with pytest.raises(ProviderError, match="round 1 of the script is a structured answer"):
        [event async for event in scripted.complete(ASK, [])]
    with pytest.raises(ProviderError, match=r"not JSON .*: Not a plan\."):
        await scripted.complete_structured(ASK, SCHEMA)
    with pytest.raises(ProviderError, match="round 3 of the script has no structured answer"):
        await scripted.complete_structured(ASK, SCHEMA)


async def test_scripted_structured_rounds_honour_delay_and_stall() -> None:
    scripted = ScriptedProvider(
        {
            "rounds": [
                {"structured": PLAN, "delay_seconds": 0.05},
                {"structured": PLAN, "stall_after": 0},
            ]
        }
    )
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await scripted.complete_structured(ASK, SCHEMA)).value == PLAN
    assert loop.time() - started >= 0.05
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(scripted.complete_structured(ASK, SCHEMA), 0.1)


@pytest.mark.parametrize(
    ("round_", "message"),
    [
        ({"structured": ["not", "a", "mapping"]}, "'structured' must be a mapping"),
        ({"structured": PLAN, "text": "and text"}, r"cannot have \['text'\]"),
        ({"structured": PLAN, "tool_calls": [{"name": "q"}]}, r"cannot have \['tool_calls'\]"),
    ],
)
def test_malformed_structured_rounds_are_refused(round_: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        load_rounds([round_])


def test_a_structured_round_loads_from_yaml(tmp_path: Path) -> None:
    script = tmp_path / "plan.yaml"
    script.write_text(
        "- structured: {steps: [{tool: query, args: {manager: Part, fields: [name]}}]}\n"
        "  usage: {input_tokens: 1, output_tokens: 2}\n"
    )
    assert load_rounds(script) == [
        {"structured": PLAN, "usage": {"input_tokens": 1, "output_tokens": 2}}
    ]


# -- record and replay ------------------------------------------------------------------------------


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_recorded_structured_request_replays_without_a_server(
    server: VendorServer, vendor: str, tmp_path: Path
) -> None:
    cassette = tmp_path / f"{vendor}.jsonl"
    server.script(vendor, [Reply(structured=PLAN, usage=(40, 12)), Reply(text="Bolt.")])  # type: ignore[arg-type]
    recorder = RecordingProvider(provider(server, vendor), cassette)
    recorded = await recorder.complete_structured(ASK, SCHEMA, name="plan")
    streamed = [event async for event in recorder.complete(ASK, [])]
    await server.stop()  # replay needs no server at all
    header, plan_line, text_line = [json.loads(line) for line in cassette.read_text().splitlines()]
    assert header["cassette"]["label"] == f"{vendor}:test-model"
    assert plan_line["structured"] == {
        "value": PLAN,
        "usage": {"input_tokens": 40, "output_tokens": 12},
    }
    assert "events" in text_line and plan_line["request_hash"] != text_line["request_hash"]

    replay = ReplayProvider({"path": str(cassette)})
    assert await replay.complete_structured(ASK, SCHEMA, name="plan") == recorded
    assert recorded == StructuredReply(PLAN, TokenUsage(40, 12))
    assert [event async for event in replay.complete(ASK, [])] == streamed
    with pytest.raises(ProviderError, match="no more responses"):
        await replay.complete_structured(ASK, SCHEMA, name="plan")


async def test_replay_tells_a_changed_structured_request_apart(tmp_path: Path) -> None:
    cassette = tmp_path / "plan.jsonl"
    inner = ScriptedProvider({"rounds": [{"structured": PLAN}]})
    await RecordingProvider(inner, cassette).complete_structured(ASK, SCHEMA, name="plan")
    replay = ReplayProvider({"path": str(cassette)})
    other_schema = {**SCHEMA, "required": []}
    for schema, name in [(other_schema, "plan"), (SCHEMA, "response")]:
        with pytest.raises(ProviderError, match="differs from the cassette"):
            await replay.complete_structured(ASK, schema, name=name)
    with pytest.raises(ProviderError, match="differs from the cassette"):
        [event async for event in replay.complete(ASK, [])]  # same messages, streamed
    assert (await replay.complete_structured(ASK, SCHEMA, name="plan")).value == PLAN


async def test_a_failed_structured_request_is_not_recorded(tmp_path: Path) -> None:
    cassette = tmp_path / "plan.jsonl"
    inner = ScriptedProvider({"rounds": [{"text": "no plan"}]})
    with pytest.raises(ProviderError):
        await RecordingProvider(inner, cassette).complete_structured(ASK, SCHEMA)
    assert not cassette.exists()


# -- the default, for providers that only implement complete -------------------------------------


class StreamOnly(BaseLLMProvider):
    """A custom provider as a team writes one: ``complete`` only, streaming what it was given."""

    name: ClassVar[str] = "stream-only"

    def __init__(self, events: list[ProviderEvent]) -> None:
        super().__init__()
        self.events = events
        self.offered: list[list[ToolDefinition]] = []

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        self.offered.append(list(tools))
        for event in self.events:
            yield event


async def test_the_default_offers_the_schema_as_one_tool_and_reads_its_call() -> None:
    custom = StreamOnly(
        [
            TextChunkEvent("Planning."),
            ToolCallEvent("c1", "plan", PLAN),
            ToolCallEvent("c2", "plan", {"steps": []}),  # only the first call counts
            DoneEvent(TokenUsage(20, 6), "tool_calls"),
        ]
    )
    reply = await custom.complete_structured(ASK, SCHEMA, name="plan")
    assert reply == StructuredReply(PLAN, TokenUsage(20, 6))
    [[tool]] = custom.offered
    assert (tool.name, tool.input_schema) == ("plan", SCHEMA)


async def test_the_default_reads_a_json_text_answer_and_sums_the_usage() -> None:
    custom = StreamOnly(
        [
            TextChunkEvent('```json\n{"steps": '),
            TextChunkEvent("[]}\n```"),
            DoneEvent(TokenUsage(20, 6), "stop"),
            DoneEvent(TokenUsage(1, 1), "stop"),
        ]
    )
    assert await custom.complete_structured(ASK, SCHEMA) == StructuredReply(
        {"steps": []}, TokenUsage(21, 7)
    )


@pytest.mark.parametrize(
    ("events", "message"),
    [
        ([TextChunkEvent("I would query Part.")], r"not JSON .*: I would query Part\."),
        ([TextChunkEvent("[1, 2]")], r"is an array, not a JSON object: \[1, 2\]"),
        ([ToolCallEvent("c1", "query", {"manager": "Part"})], "called query instead"),
        ([], "sent nothing"),
        (
            [ToolCallEvent("c1", "response", {}, error="the arguments are not valid JSON")],
            "'response' call\\) is unusable: the arguments are not valid JSON",
        ),
        ([TextChunkEvent("[" * 40 + "]" * 40)], "is an array"),
        ([TextChunkEvent('{"a": ' * 40 + "1" + "}" * 40)], "nests deeper than 32 levels"),
        ([TextChunkEvent("[" * 5000 + "]" * 5000)], "too deeply to read"),
    ],
)
async def test_the_default_fails_clearly_on_anything_else(
    events: list[ProviderEvent], message: str
) -> None:
    custom = StreamOnly([*events, DoneEvent(TokenUsage(3, 1), "stop")])
    with pytest.raises(ProviderError, match=message):
        await custom.complete_structured(ASK, SCHEMA)

"""The OpenAI, Anthropic and Ollama adapters, driving the real SDKs against a local server that
speaks each vendor's streaming wire format (tests/vendor_server.py)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    TextChunkEvent,
    ToolCallEvent,
    ToolDefinition,
)
from gmchat_nb.core.providers.registry import create_provider
from gmchat_nb.core.providers.replay import RecordingProvider, ReplayProvider

from ...vendor_server import Reply, ToolCallSpec, VendorServer
from .test_registry_and_replay import untimed

VENDORS = ["openai", "anthropic", "ollama"]
TOOLS = [
    ToolDefinition(
        "query", "Read rows.", {"type": "object", "properties": {"manager": {"type": "string"}}}
    )
]


def provider(server: VendorServer, vendor: str, **config: Any) -> BaseLLMProvider:
    where = {
        "openai": {"base_url": server.openai_base_url, "api_key": "test-key"},
        "anthropic": {"base_url": server.anthropic_base_url, "api_key": "test-key"},
        "ollama": {"base_url": server.ollama_host},
    }[vendor]
    return create_provider(f"{vendor}:test-model", {**where, **config})


async def collect(adapter: BaseLLMProvider, messages: list[Message] | None = None) -> list[Any]:
    return [event async for event in adapter.complete(messages or [Message("user", "hi")], TOOLS)]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_text_streams_in_its_chunks_with_usage(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(text=["Bolt, ", "Bearing ", "and Gear."], usage=(12, 5))])  # type: ignore[arg-type]
    events = await collect(provider(server, vendor))
    assert [e.content for e in events if isinstance(e, TextChunkEvent)] == [
        "Bolt, ",
        "Bearing ",
        "and Gear.",
    ]
    assert events[-1] == DoneEvent(usage=events[-1].usage, finish_reason="stop")
    assert (events[-1].usage.input_tokens, events[-1].usage.output_tokens) == (12, 5)
    assert sum(isinstance(e, DoneEvent) for e in events) == 1


@pytest.mark.parametrize("vendor", VENDORS)
async def test_several_fragmented_tool_calls_in_one_round(
    server: VendorServer, vendor: str
) -> None:
    server.script(
        vendor,  # type: ignore[arg-type]
        [
            Reply(
                text="Looking.",
                tool_calls=[
                    ToolCallSpec("query", {"manager": "Part", "fields": ["name"]}, fragments=5),
                    ToolCallSpec("search_managers", {"query": "orders"}, fragments=3),
                ],
            )
        ],
    )
    events = await collect(
        provider(server, vendor), [Message("system", "s"), Message("user", "hi")]
    )
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    assert [(c.name, c.args) for c in calls] == [
        ("query", {"manager": "Part", "fields": ["name"]}),
        ("search_managers", {"query": "orders"}),
    ]
    assert len({c.id for c in calls}) == 2 and all(c.id for c in calls)
    assert all(c.error is None for c in calls)
    assert events[-1].finish_reason == "tool_calls"


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_invalid_argument_json_is_reported_not_guessed(
    server: VendorServer, vendor: str
) -> None:
    server.script(
        vendor, [Reply(tool_calls=[ToolCallSpec("query", '{"manager": "Part", "fields": [')])]
    )  # type: ignore[arg-type]
    [call] = [e for e in await collect(provider(server, vendor)) if isinstance(e, ToolCallEvent)]
    assert call.args == {} and call.error is not None and "not valid JSON" in call.error


async def test_ollama_arguments_that_are_not_an_object_fail_clearly(server: VendorServer) -> None:
    server.script("ollama", [Reply(tool_calls=[ToolCallSpec("query", "[not an object")])])
    with pytest.raises(ProviderError, match="malformed"):
        await collect(provider(server, "ollama"))


@pytest.mark.parametrize("vendor", VENDORS)
async def test_truncation_is_reported_as_such(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(text="The answer is cut", finish="length")])  # type: ignore[arg-type]
    events = await collect(provider(server, vendor))
    assert events[-1].finish_reason == "length"


@pytest.mark.parametrize("vendor", VENDORS)
@pytest.mark.parametrize("failure", [{"error_after": 2}, {"status": 500}, {"status": 429}])
async def test_errors_become_provider_errors(
    server: VendorServer, vendor: str, failure: dict[str, Any]
) -> None:
    server.script(
        vendor, [Reply(text=["a", "b", "c"], error_message="quota of team X exhausted", **failure)]
    )  # type: ignore[arg-type]
    with pytest.raises(ProviderError):
        await collect(provider(server, vendor))


@pytest.mark.parametrize("vendor", VENDORS)
async def test_history_goes_back_in_the_native_shape(server: VendorServer, vendor: str) -> None:
    server.script(vendor, [Reply(text="ok")])  # type: ignore[arg-type]
    history = [
        Message("system", "You answer from data."),
        Message("system", "Summary of the earlier conversation: none."),
        Message("user", "Parts?"),
        Message(
            "assistant",
            "",
            tool_calls=(
                ToolCallEvent("c1", "query", {"manager": "Part"}),
                ToolCallEvent("c2", "find_path", {"from_manager": "Part"}),
            ),
        ),
        Message(
            "tool", tool_call_id="c1", tool_name="query", tool_result={"data": [{"name": "Bolt"}]}
        ),
        Message("tool", tool_call_id="c2", tool_name="find_path", tool_result={"path": []}),
        Message("system", "The tool budget is used up."),
        Message("assistant", "Bolt."),
        Message("user", "Thanks"),
    ]
    await collect(provider(server, vendor), history)
    sent = server.requests[vendor][-1]  # type: ignore[index]
    if vendor == "openai":
        roles = [m["role"] for m in sent["messages"]]
        assert roles == [
            "system",
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "system",
            "assistant",
            "user",
        ]
        assistant = sent["messages"][3]
        assert [c["id"] for c in assistant["tool_calls"]] == ["c1", "c2"]
        assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
            "manager": "Part"
        }
        assert sent["messages"][4] == {
            "role": "tool",
            "tool_call_id": "c1",
            # the result inside the envelope the model reads (data kept as data)
            "content": '{"tool":"query","call_id":"c1","data":{"data":[{"name":"Bolt"}]}}',
        }
        assert sent["stream_options"] == {"include_usage": True}
    elif vendor == "anthropic":
        assert (
            sent["system"] == "You answer from data.\n\nSummary of the earlier conversation: none."
        )
        roles = [m["role"] for m in sent["messages"]]
        assert roles == ["user", "assistant", "user", "assistant", "user"]
        uses = sent["messages"][1]["content"]
        assert [(b["type"], b["id"], b["input"]) for b in uses] == [
            ("tool_use", "c1", {"manager": "Part"}),
            ("tool_use", "c2", {"from_manager": "Part"}),
        ]
        results = sent["messages"][2][
            "content"
        ]  # both results and the later note, in one user turn
        assert [b["type"] for b in results] == ["tool_result", "tool_result", "text"]
        assert (
            results[0]["tool_use_id"] == "c1"
            and results[2]["text"] == "[System note] The tool budget is used up."
        )
        assert sent["max_tokens"] == 1024
    else:
        roles = [m["role"] for m in sent["messages"]]
        assert roles == [
            "system",
            "system",
            "user",
            "assistant",
            "tool",
            "tool",
            "system",
            "assistant",
            "user",
        ]
        assert sent["messages"][3]["tool_calls"][0]["function"] == {
            "name": "query",
            "arguments": {"manager": "Part"},
        }
        assert sent["messages"][4]["tool_name"] == "query"
    assert sent["tools"][0]["function" if vendor != "anthropic" else "name"] in (
        "query",
        {"name": "query", "description": "Read rows.", "parameters": TOOLS[0].input_schema},
    )


async def ask(
    server: VendorServer, vendor: str, replies: list[Reply], question: str, **settings: Any
) -> Any:
    server.script(vendor, replies)  # type: ignore[arg-type]
    chat = Chat(
        provider=provider(server, vendor, **settings.pop("provider_config", {})),
        store=":memory:",
        **settings,
    )
    try:
        return await chat.ask(question)
    finally:
        await chat.aclose()


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_full_turn_against_the_demo_project(server: VendorServer, vendor: str) -> None:
    query = {
        "manager": "Project",
        "filters": {"parts__material__name": "Cobalt"},
        "fields": ["name"],
    }
    turn = await ask(
        server,
        vendor,
        [
            Reply(tool_calls=[ToolCallSpec("query", query)], usage=(100, 10)),
            Reply(text="Apollo uses cobalt parts.", usage=(150, 8)),
        ],
        "Which projects use cobalt parts?",
    )
    assert [e["type"] for e in turn.events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert turn.events[1]["result"]["data"] == [{"name": "Apollo"}]
    assert turn.answer == "Apollo uses cobalt parts." and turn.usage == {
        "input_tokens": 250,
        "output_tokens": 18,
    }
    second = json.dumps(server.requests[vendor][1])  # type: ignore[index]
    assert '\\"name\\":\\"Apollo\\"' in second  # the tool result went back to the model


# Wire events before the first text delta: openai's role chunk; anthropic's message_start and
# content_block_start; ollama's first line already carries text.
FIRST_TEXT_AFTER = {"openai": 2, "anthropic": 3, "ollama": 1}


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_stalled_stream_and_a_silent_server_hit_the_loop_timeouts(
    server: VendorServer, vendor: str
) -> None:
    stalled = await ask(
        server,
        vendor,
        [Reply(text=["streamed ", "never"], stall_after=FIRST_TEXT_AFTER[vendor])],
        "hi",
        provider_config={"stream_timeout_seconds": 0.3},
    )
    assert [e["type"] for e in stalled.events] == ["text_chunk", "error"]
    assert stalled.answer == "streamed " and stalled.events[-1]["code"] == "deadline_exceeded"
    silent = await ask(
        server,
        vendor,
        [Reply(text="late", delay=30)],
        "hi",
        provider_config={"timeout_seconds": 0.3},
    )
    assert silent.events == [
        {
            "type": "error",
            "message": "The request reached its time limit.",
            "code": "deadline_exceeded",
            "sequence": 1,
        }
    ]


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_recorded_turn_replays_identically(
    server: VendorServer, vendor: str, tmp_path: Path
) -> None:
    cassette = tmp_path / f"{vendor}.jsonl"
    server.script(
        vendor,
        [
            Reply(
                tool_calls=[
                    ToolCallSpec("query", {"manager": "Material", "fields": ["name"], "limit": 2})
                ]
            ),
            Reply(text=["Steel ", "and Aluminum."]),
        ],
    )  # type: ignore[arg-type]
    recording = Chat(
        provider=RecordingProvider(provider(server, vendor), cassette), store=":memory:"
    )
    recorded = (await recording.ask("Two materials?")).events
    await recording.aclose()
    await server.stop()  # replay needs no server at all
    replaying = Chat(provider=ReplayProvider({"path": str(cassette)}), store=":memory:")
    replayed = (await replaying.ask("Two materials?")).events
    await replaying.aclose()
    assert untimed(replayed) == untimed(recorded) and recorded[-2]["content"] == "and Aluminum."


async def test_gmchat_ask_with_any_openai_compatible_server(server: VendorServer) -> None:
    query = {"manager": "Material", "fields": ["name"], "filters": {"density__gt": 10}}
    server.script(
        "openai",
        [Reply(tool_calls=[ToolCallSpec("query", query)]), Reply(text="Lead is the only one.")],
    )
    environment = {
        **os.environ,
        "OPENAI_BASE_URL": server.openai_base_url,
        "OPENAI_API_KEY": "local",
        "GMCHAT_STORE": ":memory:",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gmchat_nb.cli",
        "ask",
        "Which materials are denser than 10?",
        "--provider",
        "openai:test-model",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=environment,
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, stderr.decode()
    assert "Lead" in stdout.decode() and "Lead is the only one." in stdout.decode()
    assert server.requests["openai"][0]["model"] == "test-model"
    headers = {key.lower(): value for key, value in server.headers["openai"][0].items()}
    assert headers["authorization"] == "Bearer local"


async def test_structured_output_through_openai(server: VendorServer) -> None:
    server.script(
        "openai", [Reply(text='{"intent": "read", "managers": ["Part"]}'), Reply(text="not json")]
    )
    adapter = provider(server, "openai")
    schema = {"type": "object", "properties": {"intent": {"type": "string"}}}
    answer = (await adapter.complete_structured([Message("user", "plan it")], schema)).value
    assert answer == {"intent": "read", "managers": ["Part"]}
    assert server.requests["openai"][0]["response_format"]["json_schema"]["schema"] == schema
    with pytest.raises(ProviderError, match="not JSON"):
        await adapter.complete_structured([Message("user", "again")], schema)


@pytest.mark.parametrize(
    ("vendor", "config", "message"),
    [
        ("openai", {"base_url": "ftp://example"}, "base_url must be an http"),
        ("anthropic", {"max_tokens": 0}, "max_tokens must be a positive number"),
        ("ollama", {"timeout_seconds": "soon"}, "timeout_seconds must be a positive number"),
    ],
)
def test_bad_adapter_config_is_refused_before_any_request(
    vendor: str, config: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        create_provider(f"{vendor}:m", config)


@pytest.mark.parametrize(
    ("spec", "variable"), [("openai:m", "OPENAI_API_KEY"), ("anthropic:m", "ANTHROPIC_API_KEY")]
)
async def test_missing_credentials_are_a_provider_error_before_any_request(
    monkeypatch: pytest.MonkeyPatch, spec: str, variable: str
) -> None:
    for name in list(os.environ):
        if name.startswith(("OPENAI_", "ANTHROPIC_")):
            monkeypatch.delenv(name)
    adapter = create_provider(spec)
    with pytest.raises(ProviderError, match=variable):
        adapter.check_ready()
    chat = Chat(provider=adapter, store=":memory:")
    try:
        turn = await chat.ask("Which materials do we have?")
    finally:
        await chat.aclose()
    assert turn.error is not None and turn.error["code"] == "provider_failed"

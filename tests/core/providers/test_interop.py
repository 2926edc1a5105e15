"""What real OpenAI-compatible servers taught the adapters: every fix is driven through the real
SDKs against the local vendor wire server (tests/vendor_server.py). The same behaviours against a
real llama.cpp server are in tests/local/ (marked ``local_model``)."""

from __future__ import annotations

import asyncio
import logging
import sys
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.cli import main
from gmchat_nb.core.providers.base import Message, ToolDefinition
from gmchat_nb.core.providers.doctor import diagnose, format_diagnosis
from gmchat_nb.core.providers.openai import LOCAL_MAX_TOKENS
from gmchat_nb.core.providers.registry import ProviderSpecError, create_provider

from ...vendor_server import Reply, ToolCallSpec, VendorServer
from .test_adapters import provider

VENDORS = ["openai", "anthropic", "ollama"]
QUERY = {"manager": "Project", "filters": {"parts__material__name": "Cobalt"}, "fields": ["name"]}
PLAN_SCHEMA = {"type": "object", "properties": {"intent": {"type": "string"}}}


async def ask(
    server: VendorServer, vendor: str, replies: list[Reply], question: str, **config: Any
) -> Any:
    server.script(vendor, replies)  # type: ignore[arg-type]
    chat = Chat(provider=provider(server, vendor, **config), store=":memory:")
    try:
        return await chat.ask(question)
    finally:
        await chat.aclose()


async def test_tool_history_is_sent_with_empty_string_content(server: VendorServer) -> None:
    """llama-cpp-python's server answers ``"content": null`` with HTTP 500 (and a missing key
    too): the second round of every tool loop failed there."""
    turn = await ask(
        server,
        "openai",
        [Reply(tool_calls=[ToolCallSpec("query", QUERY)]), Reply(text="Apollo.")],
        "Which projects use cobalt parts?",
    )
    assert turn.events[-1]["type"] == "done"
    second = server.requests["openai"][1]["messages"]
    [assistant] = [m for m in second if m["role"] == "assistant"]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "query"


@pytest.mark.parametrize("vendor", VENDORS)
async def test_a_slow_steady_tool_call_stream_is_not_cut(server: VendorServer, vendor: str) -> None:
    """40 argument fragments, one every 0.03 s (1.2 s in all), with a 0.3 s between-event
    timeout: every chunk restarts the timer, though the call is emitted only at the end."""
    slow = Reply(tool_calls=[ToolCallSpec("query", QUERY, fragments=40)], pace=0.03)
    turn = await ask(
        server,
        vendor,
        [slow, Reply(text="Apollo uses cobalt parts.")],
        "Which projects use cobalt parts?",
        stream_timeout_seconds=0.3,
    )
    assert [e["type"] for e in turn.events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert turn.events[0]["args"] == QUERY


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_a_stall_is_logged_with_its_reason(
    server: VendorServer, vendor: str, caplog: pytest.LogCaptureFixture
) -> None:
    stalled = Reply(tool_calls=[ToolCallSpec("query", QUERY, fragments=10)], stall_after=6)
    with caplog.at_level(logging.WARNING):
        turn = await ask(server, vendor, [stalled], "hi", stream_timeout_seconds=0.3)
    assert turn.events[-1]["code"] == "deadline_exceeded"
    [line] = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert "ProviderTimeout: the stream stalled: nothing received for 0.3 s" in line
    assert "after 6 chunk(s)" in line


async def test_a_silent_server_is_logged_as_no_response(
    server: VendorServer, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        turn = await ask(
            server, "openai", [Reply(text="late", delay=30)], "hi", timeout_seconds=0.3
        )
    assert turn.events[-1]["code"] == "deadline_exceeded"
    assert any(
        "no response within 0.3 s (timeout_seconds)" in r.getMessage() for r in caplog.records
    )


async def test_a_custom_server_gets_a_default_max_tokens(server: VendorServer) -> None:
    await ask(server, "openai", [Reply(text="Hi.")], "hi")
    assert server.requests["openai"][0]["max_tokens"] == LOCAL_MAX_TOKENS
    await ask(server, "openai", [Reply(text="Hi.")], "hi", max_tokens=64)
    assert server.requests["openai"][1]["max_tokens"] == 64


def test_openai_itself_gets_no_default_max_tokens() -> None:
    official = create_provider("openai:gpt-4.1-mini", {"api_key": "k"})
    assert official.max_tokens is None  # type: ignore[attr-defined]
    pinned = create_provider(
        "openai:gpt-4.1-mini", {"api_key": "k", "base_url": "https://api.openai.com/v1"}
    )
    assert pinned.max_tokens is None  # type: ignore[attr-defined]


async def test_tool_choice_is_sent_only_when_configured(server: VendorServer) -> None:
    await ask(server, "openai", [Reply(text="Hi.")], "Which parts are there?")
    assert "tool_choice" not in server.requests["openai"][0]
    await ask(server, "openai", [Reply(text="Hi.")], "Which parts are there?", tool_choice="auto")
    assert server.requests["openai"][1]["tool_choice"] == "auto"


async def test_whole_responses_drive_the_same_tool_loop(server: VendorServer) -> None:
    """``stream: false``: llama-cpp-python's server refuses a streamed ``tool_choice: auto``."""
    turn = await ask(
        server,
        "openai",
        [
            Reply(tool_calls=[ToolCallSpec("query", QUERY)], usage=(100, 10)),
            Reply(text="Apollo uses cobalt parts.", usage=(150, 8)),
        ],
        "Which projects use cobalt parts?",
        stream=False,
        tool_choice="auto",
    )
    assert [e["type"] for e in turn.events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert turn.events[1]["result"]["data"] == [{"name": "Apollo"}]
    assert turn.usage == {"input_tokens": 250, "output_tokens": 18}
    assert all("stream" not in body for body in server.requests["openai"])


@pytest.mark.parametrize(
    ("style", "response_format", "schema_in_prompt"),
    [
        ("json_schema", "json_schema", False),
        ("json_object", "json_object", False),
        ("prompt", None, True),
    ],
)
async def test_structured_output_styles(
    server: VendorServer, style: str, response_format: str | None, schema_in_prompt: bool
) -> None:
    server.script("openai", [Reply(structured={"intent": "read"})])
    adapter = provider(server, "openai", structured_output=style)
    reply = await adapter.complete_structured([Message("user", "plan")], PLAN_SCHEMA, name="plan")
    assert reply.value == {"intent": "read"}
    body = server.requests["openai"][0]
    assert (body.get("response_format") or {}).get("type") == response_format
    if style == "json_object":
        assert body["response_format"]["schema"] == PLAN_SCHEMA  # llama-cpp-python's grammar
    last = body["messages"][-1]
    assert (last["role"] == "system" and '"intent"' in last["content"]) is schema_in_prompt
    if style == "json_object":
        assert last == {"role": "system", "content": "Answer with one JSON object."}


async def test_structured_output_as_a_forced_tool(server: VendorServer) -> None:
    server.script("openai", [Reply(tool_calls=[ToolCallSpec("plan", {"intent": "read"})])])
    adapter = provider(server, "openai", structured_output="tool", tool_choice="auto")
    reply = await adapter.complete_structured([Message("user", "plan")], PLAN_SCHEMA, name="plan")
    assert reply.value == {"intent": "read"}
    body = server.requests["openai"][0]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "plan"}}
    assert [tool["function"]["name"] for tool in body["tools"]] == ["plan"]
    assert "response_format" not in body


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tool_choice", "sometimes"),
        ("structured_output", "xml"),
        ("stream", "no"),
        ("max_tokens", -5),
        ("temperature", 3),
    ],
)
def test_bad_interop_settings_name_their_key(key: str, value: Any) -> None:
    with pytest.raises(ProviderSpecError, match=key):
        create_provider("openai:m", {"api_key": "k", key: value})


@pytest.mark.parametrize("vendor", VENDORS)
async def test_an_empty_final_answer_is_an_error_not_a_silent_done(
    server: VendorServer, vendor: str, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        turn = await ask(server, vendor, [Reply(text="")], "hello")
    assert [e["type"] for e in turn.events] == ["error"]
    assert turn.events[0]["code"] == "provider_failed"
    assert any("final answer was empty" in r.getMessage() for r in caplog.records)


async def test_no_tools_no_tool_choice(server: VendorServer) -> None:
    adapter = provider(server, "openai", tool_choice="required")
    server.script("openai", [Reply(text="Hi.")])
    events = [e async for e in adapter.complete([Message("user", "hi")], list[ToolDefinition]())]
    assert events[-1].finish_reason == "stop"  # type: ignore[union-attr]
    assert "tool_choice" not in server.requests["openai"][0]


async def test_doctor_passes_a_server_that_does_everything(server: VendorServer) -> None:
    server.script(
        "openai",
        [
            Reply(text=["Hello ", "there."], usage=(9, 3)),
            Reply(tool_calls=[ToolCallSpec("echo", {"word": "ping"})], usage=(30, 5)),
            Reply(text="It returned ping.", usage=(50, 4)),
            Reply(structured={"color": "red"}, usage=(20, 4)),
        ],
    )
    diagnosis = await diagnose(provider(server, "openai"), timeout=5)
    assert [(p.name, p.passed) for p in diagnosis.probes] == [
        ("text", True),
        ("tool call", True),
        ("tool history", True),
        ("usage", True),
        ("structured", True),
    ]
    assert diagnosis.ok and "2 chunk(s)" in diagnosis.probes[0].detail
    history = server.requests["openai"][2]["messages"]
    assert history[1]["tool_calls"][0]["function"]["name"] == "echo"  # the call it made
    assert history[2] == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": '{"tool":"echo","call_id":"call_1","data":{"echo":"ping"}}',
    }


async def test_doctor_names_the_fix_for_a_server_that_ignores_tools(server: VendorServer) -> None:
    server.script(
        "openai",
        [
            Reply(text="Hello."),
            Reply(text='Call the echo tool with the word "ping".'),  # the tools never reached it
            Reply(text="ping"),
            Reply(status=500, error_message="response_format is not supported"),
        ],
    )
    diagnosis = await diagnose(provider(server, "openai"), timeout=5)
    failed = {p.name: p.detail for p in diagnosis.probes if not p.passed}
    assert set(failed) == {"tool call", "usage", "structured"} and not diagnosis.ok
    assert "answered in text instead" in failed["tool call"]
    assert "tool_choice: auto" in failed["tool call"]
    assert "response_format is not supported" in failed["structured"]
    assert "structured_output: json_object" in failed["structured"]
    text = format_diagnosis(diagnosis)
    assert "FAIL tool call" in text and text.endswith("as configured (see FAIL above).")


async def test_doctor_reports_a_stalled_probe_and_goes_on(server: VendorServer) -> None:
    server.script(
        "openai",
        [
            Reply(text="Hi.", delay=30),
            Reply(tool_calls=[ToolCallSpec("echo", {"word": "ping"})]),
            Reply(text="ping"),
            Reply(structured={"color": "red"}),
        ],
    )
    diagnosis = await diagnose(provider(server, "openai", timeout_seconds=0.3), timeout=5)
    assert diagnosis.probes[0].passed is False
    assert "no response within 0.3 s" in diagnosis.probes[0].detail
    assert [p.passed for p in diagnosis.probes[1:3]] == [True, True]


def test_doctor_refuses_a_malformed_setting(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["doctor", "--provider-config", "max_tokens"]) == 2
    assert "--provider-config takes KEY=VALUE, got 'max_tokens'" in capsys.readouterr().err


async def test_gmchat_doctor_on_the_command_line(server: VendorServer) -> None:
    server.script(
        "openai",
        [
            Reply(text="Hello."),
            Reply(tool_calls=[ToolCallSpec("echo", {"word": "ping"})]),
            Reply(text="ping"),
            Reply(structured={"color": "red"}),
        ],
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "gmchat_nb.cli",
        "doctor",
        "--provider",
        "openai:test-model",
        "--provider-config",
        f"base_url={server.openai_base_url}",
        "--provider-config",
        "api_key=test-key",
        "--provider-config",
        "max_tokens=32",
        stdout=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    assert process.returncode == 0, out.decode()
    assert out.decode().startswith("gmchat doctor: openai:test-model")
    assert "ok   tool call" in out.decode()
    sent = [body["max_tokens"] for body in server.requests["openai"]]
    assert sent == [32, 32, 32, 256]  # a structured answer gets at least 256: cut JSON is useless

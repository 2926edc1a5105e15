"""The OpenAI adapter against a real inference server: llama-cpp-python's, started on 127.0.0.1
with PyPI's Gemma 3 270M. Each test pins a behaviour this server showed that the vendor wire
server in tests/vendor_server.py does not."""

from __future__ import annotations

import time
from typing import Any

import httpx
import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.doctor import diagnose
from gmchat_nb.core.providers.registry import create_provider

pytestmark = pytest.mark.local_model
# what `gmchat doctor` recommends for this server
WORKING = {"stream": False, "tool_choice": "auto", "structured_output": "json_object"}
QUERY = {"manager": "Part", "fields": ["name"]}


def config(server: str, **extra: Any) -> dict[str, Any]:
    return {"base_url": server, "api_key": "none", "max_tokens": 32, "temperature": 0, **extra}


def test_the_server_rejects_null_content_in_tool_history(llama_server: str) -> None:
    """Why the adapter sends ``"content": ""``: the same history with null is an HTTP 500."""

    def second_round(content: Any) -> int:
        body = {
            "model": "gemma",
            "max_tokens": 4,
            "messages": [
                {"role": "user", "content": "List parts."},
                {
                    "role": "assistant",
                    "content": content,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "query", "arguments": '{"manager": "Part"}'},
                        }
                    ],
                },
                {"role": "tool", "tool_call_id": "call_1", "content": '{"data": []}'},
            ],
        }
        return httpx.post(f"{llama_server}/chat/completions", json=body, timeout=60).status_code

    assert second_round(None) == 500
    assert second_round("") == 200


async def test_a_tool_loop_gets_past_its_first_call(llama_server: str) -> None:
    """A scripted first call (the model need not make it) and the model's second round over the
    tool history: before the fix, every second round was an HTTP 500."""
    chat = Chat(
        project="demo",
        provider="openai:gemma",
        provider_config=config(llama_server, **WORKING, constrained=True),
        store=":memory:",
    )
    try:
        turn = await chat.ask("Which materials are hazardous?")
    finally:
        await chat.aclose()
    assert [e["type"] for e in turn.events if e["type"] in ("done", "error")] == ["done"]
    queries = [e for e in turn.events if e["type"] == "tool_call" and e["name"] == "query"]
    results = [e["result"] for e in turn.events if e["type"] == "tool_result"]
    assert queries and all("status" not in result for result in results)
    assert turn.usage["input_tokens"] > 0  # whole responses carry usage on this server


async def test_the_doctor_finds_what_this_server_needs(llama_server: str) -> None:
    default = await diagnose(create_provider("openai:gemma", config(llama_server)), timeout=60)
    failed = {probe.name: probe.detail for probe in default.probes if not probe.passed}
    assert not default.ok
    assert "tool call" in failed and "tool_choice: auto" in failed["tool call"]
    assert "usage" in failed  # stream_options.include_usage is ignored
    assert "structured" in failed and "HTTP 500" in failed["structured"]  # json_schema refused
    tuned = await diagnose(
        create_provider("openai:gemma", config(llama_server, **WORKING)), timeout=60
    )
    passed = {probe.name for probe in tuned.probes if probe.passed}
    assert {"text", "tool history", "usage", "structured"} <= passed, tuned.probes


async def test_a_steady_stream_outlives_a_short_between_chunk_timeout(llama_server: str) -> None:
    provider = create_provider(
        "openai:gemma", config(llama_server, max_tokens=60, stream_timeout_seconds=1.5)
    )
    chat = Chat(provider=provider, store=":memory:")
    started = time.perf_counter()
    try:
        turn = await chat.ask("Write a long sentence about the sea.")
    finally:
        await chat.aclose()
    elapsed = time.perf_counter() - started
    assert turn.events[-1]["type"] in ("done", "error")
    if turn.events[-1]["type"] == "error":  # the pretrained model may say nothing at all
        assert turn.events[-1]["code"] == "provider_failed"
    else:
        assert elapsed > 0 and turn.answer

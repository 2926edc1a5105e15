"""``local:PATH.gguf``: PyPI's Gemma 3 270M (pretrained, Q4_K_M) run in process by llama.cpp.

The model is a real token source, not a judge of answers: it echoes its prompt. What is tested is
what gmchat_nb promises around it -- streaming off the event loop, cancellation between tokens,
outputs that follow a grammar, calls the project accepts, one terminal event per turn.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import DoneEvent, Message, ProviderError, TextChunkEvent
from gmchat_nb.core.providers.local import LocalProvider
from gmchat_nb.core.providers.registry import create_provider
from gmchat_nb.core.settings import ChatConfigurationError

pytestmark = pytest.mark.local_model
FAST = {"max_tokens": 24}
QUESTIONS = [
    "Which parts are made of steel?",
    "Which projects are active?",
    "Which materials are hazardous?",
    "Which purchase orders are urgent?",
]


def free(gguf: Path, **config: Any) -> LocalProvider:
    provider = create_provider(f"local:{gguf}", {**FAST, "constrained": False, **config})
    assert isinstance(provider, LocalProvider)
    return provider


async def test_a_missing_or_foreign_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ChatConfigurationError, match="no GGUF file at"):
        await Chat(provider=f"local:{tmp_path / 'none.gguf'}", store=":memory:").ask("hi")
    text = tmp_path / "model.gguf"
    text.write_text("not a model")
    with pytest.raises(ChatConfigurationError, match="is not a GGUF model"):
        await Chat(provider=f"local:{text}", store=":memory:").ask("hi")


async def test_tokens_stream_while_the_event_loop_runs(gguf: Path) -> None:
    provider = free(gguf)
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    beat = asyncio.create_task(ticker())
    started = time.perf_counter()
    events = [e async for e in provider.complete([Message("user", "Name three colors.")], [])]
    elapsed = time.perf_counter() - started
    beat.cancel()
    chunks = [e for e in events if isinstance(e, TextChunkEvent)]
    done = events[-1]
    assert isinstance(done, DoneEvent) and len(chunks) > 3
    assert done.usage.input_tokens > 0 and done.usage.output_tokens == FAST["max_tokens"]
    assert ticks > elapsed / 0.01 / 4  # the loop kept running while the model generated


async def test_a_consumer_that_stops_stops_generation(gguf: Path) -> None:
    provider = free(gguf, max_tokens=400)
    stream = provider.complete([Message("user", "Count from one to one hundred.")], [])
    async for _ in stream:
        break
    await stream.aclose()  # what a cancelled turn does
    started = time.perf_counter()
    events = [e async for e in free(gguf, max_tokens=4).complete([Message("user", "Hi")], [])]
    waited = time.perf_counter() - started
    assert isinstance(events[-1], DoneEvent)
    # The next request got the model at once: the first had stopped at its next token, not
    # after its 400 (tens of seconds here). Measured against the same small request on a free
    # model in this run, so a loaded machine slows both alike.
    started = time.perf_counter()
    [e async for e in free(gguf, max_tokens=4).complete([Message("user", "Hi")], [])]
    alone = time.perf_counter() - started
    assert waited < 3 * alone + 3, (waited, alone)


async def test_structured_answers_follow_their_schema(gguf: Path) -> None:
    provider = free(gguf, max_tokens=80)
    schemas = [
        {
            "type": "object",
            "properties": {"color": {"enum": ["red", "green"]}},
            "required": ["color"],
        },
        {
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "when": {
                    "type": "string",
                    "pattern": "^(19|20)[0-9]{2}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])$",
                },
                "price": {"type": "string", "pattern": "^[0-9]{1,4}([.][0-9]{1,2})? EUR$"},
            },
            "required": ["count", "when", "price"],
            "additionalProperties": False,
        },
    ]
    for schema in schemas:
        reply = await provider.complete_structured([Message("user", "Fill it in.")], schema)
        jsonschema.validate(reply.value, schema)


async def test_a_grammar_llama_cpp_cannot_parse_is_refused_not_fatal(gguf: Path) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": "^1\\.5$"}}}
    with pytest.raises(ProviderError, match="could not parse the grammar"):
        await free(gguf).complete_structured([Message("user", "v?")], schema)
    reply = await free(gguf).complete_structured(
        [Message("user", "v?")],
        {"type": "object", "properties": {"v": {"type": "boolean"}}, "required": ["v"]},
    )
    assert isinstance(reply.value["v"], bool)  # the process and the model are fine


async def test_constrained_turns_make_calls_the_project_accepts(gguf: Path) -> None:
    chat = Chat(
        project="demo",
        provider=f"local:{gguf}",
        provider_config={"max_tokens": 40},
        store=":memory:",
    )
    try:
        for question in QUESTIONS:
            turn = await chat.ask(question)
            terminal = [e for e in turn.events if e["type"] in ("done", "error")]
            assert [e["type"] for e in terminal] == ["done"], (question, terminal)
            results = [e["result"] for e in turn.events if e["type"] == "tool_result"]
            queries = [e for e in turn.events if e["type"] == "tool_call" and e["name"] == "query"]
            assert queries and all("status" not in result for result in results), results
            assert turn.answer.strip()
    finally:
        await chat.aclose()


async def test_free_form_tool_loop_ends_in_one_terminal_event(gguf: Path) -> None:
    """Without constraints the pretrained model rarely writes a usable call; whatever it writes,
    the loop ends in exactly one terminal event."""
    chat = Chat(
        project="demo",
        provider=f"local:{gguf}",
        provider_config={"max_tokens": 40, "constrained": False},
        store=":memory:",
    )
    try:
        turn = await chat.ask(QUESTIONS[0])
        assert [e["type"] for e in turn.events if e["type"] in ("done", "error")] in (
            ["done"],
            ["error"],
        )
    finally:
        await chat.aclose()

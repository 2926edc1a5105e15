"""Chat turns end to end: scripted providers, the real loop and session, the demo project, SQLite."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.events import ConfirmMutation
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.session import Actor

from ..graphql_server import graphql_server
from .conftest import chat_with

WRITES = ["createPart", "updatePart", "deletePart"]
QUERY_PARTS = {"name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 3}}


def types(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


def tool_steps(events: list[dict[str, Any]]) -> str:
    """The tool events in order, e.g. ``call 1, result 1``."""
    names = {"tool_call": "call", "tool_result": "result"}
    return ", ".join(
        f"{names[e['type']]} {e['id'].removeprefix('call-')}" for e in events if e["type"] in names
    )


async def ask(
    closing: list[Chat],
    rounds: list[dict[str, Any]],
    question: str = "Which parts?",
    **settings: Any,
) -> tuple[Chat, ScriptedProvider, Any]:
    chat, provider = chat_with(rounds, **settings)
    closing.append(chat)
    return chat, provider, await chat.ask(question)


# -- the happy paths -----------------------------------------------------------------------------


async def test_two_read_tools_in_one_round_then_an_answer(closing: list[Chat]) -> None:
    started = time.perf_counter()
    _, provider, turn = await ask(
        closing,
        [
            {
                "tool_calls": [
                    {"name": "search_managers", "args": {"query": "parts"}},
                    QUERY_PARTS,
                ],
                "usage": {"input_tokens": 7, "output_tokens": 2},
            },
            {
                "chunks": ["Bolt, ", "Bearing, Gear."],
                "usage": {"input_tokens": 9, "output_tokens": 4},
            },
        ],
    )
    wall_ms = (time.perf_counter() - started) * 1000
    # In process the calls run one after another: each is announced as it starts.
    assert tool_steps(turn.events) == "call 1, result 1, call 2, result 2"
    assert types(turn.events[4:]) == ["text_chunk", "text_chunk", "done"]
    assert [e["sequence"] for e in turn.events] == list(range(1, 8))
    # Each result says how long its own tool ran, measured in the kernel.
    durations = [e["duration_ms"] for e in turn.events if e["type"] == "tool_result"]
    assert all(isinstance(d, float) and 0 < d < wall_ms for d in durations), (durations, wall_ms)
    assert turn.events[3]["frame"] == {"rows": 3, "columns": ["name"]}
    assert turn.answer == "Bolt, Bearing, Gear."
    assert turn.usage == {"input_tokens": 16, "output_tokens": 6}
    assert list(turn.frames[0]["name"]) == ["Bolt", "Bearing", "Gear"]
    assert (
        turn.evidence.loc[0, "manager"] == "Part" and "partList" in turn.evidence.loc[0, "document"]
    )
    second_request, _ = provider.requests[1]
    results = [m for m in second_request if m.role == "tool"]
    assert [m.tool_call_id for m in results] == [
        "call-1",
        "call-2",
    ]  # native tool results, in order
    assert results[1].tool_result["total_count"] == 28
    assert "duration_ms" not in repr(provider.requests)  # a display field: the model never sees it


async def test_a_failing_tool_is_a_result_the_model_corrects(closing: list[Chat]) -> None:
    _, provider, turn = await ask(
        closing,
        [
            {"tool_calls": [{"name": "query", "args": {"manager": "Part", "fields": ["nme"]}}]},
            {"tool_calls": [QUERY_PARTS]},
            {"text": "Bolt, Bearing and Gear."},
        ],
    )
    assert types(turn.events) == [
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "text_chunk",
        "done",
    ]
    assert turn.events[1]["result"]["code"] == "unknown_field"
    corrected, _ = provider.requests[1]
    assert "Did you mean 'name'" in corrected[-1].tool_result["message"]


async def test_bad_argument_json_is_reported_to_the_model(closing: list[Chat]) -> None:
    _, _, turn = await ask(
        closing,
        [
            {"tool_calls": [{"name": "query", "args": '{"manager": "Part", "fields": ['}]},
            {"text": "Sorry."},
        ],
    )
    assert turn.events[1]["result"]["code"] == "invalid_arguments"
    assert "not valid JSON" in turn.events[1]["result"]["message"]


async def test_bad_messages_are_refused(closing: list[Chat]) -> None:
    chat, provider = chat_with([])
    closing.append(chat)
    for text, message in [
        ("", "Message text is required."),
        ("   ", "Message text is required."),
        (None, "Message text is required."),
        (42, "Message text must be a string, not a number."),
        ("tea \ud800 time", "Message text has a lone surrogate (U+D800) at character 4,"),
    ]:
        turn = await chat.ask(text)  # type: ignore[arg-type]
        assert [(e["type"], e["code"]) for e in turn.events] == [("error", "bad_message")]
        assert turn.events[0]["message"].startswith(message)
    assert provider.requests == []
    assert await chat.conversations() == []  # nothing was stored


async def test_remote_reads_are_announced_together_and_each_result_has_its_own_duration(
    closing: list[Chat],
) -> None:
    """Over HTTP a round's reads run concurrently, so all are announced before they run; a
    mutation the server holds for 200 ms reports at least that long."""
    with graphql_server() as server:
        server.hold_seconds = 0.2
        chat, provider = chat_with(
            [
                {
                    "tool_calls": [
                        {"name": "search_managers", "args": {"query": "parts"}},
                        QUERY_PARTS,
                    ]
                },
                {"tool_calls": [CREATE]},
                {"text": "Added Spring."},
            ],
            project=server.url,
            allowed_mutations=["createPart"],
        )
        closing.append(chat)
        started = time.perf_counter()
        turn = await chat.ask("Add a part called Spring")
        wall_ms = (time.perf_counter() - started) * 1000
    assert tool_steps(turn.events) == "call 1, call 2, result 1, result 2, call 3, result 3"
    search, query, mutate = (e for e in turn.events if e["type"] == "tool_result")
    assert mutate["result"]["status"] == "executed"
    assert 200 <= mutate["duration_ms"] < wall_ms
    assert 0 < search["duration_ms"] < wall_ms and 0 < query["duration_ms"] < wall_ms
    assert "duration_ms" not in repr(provider.requests)


# -- guardrails ----------------------------------------------------------------------------------


async def test_turn_limit(closing: list[Chat]) -> None:
    # GeneralManager's round cap alone (with the loop guard on, it ends the turn first: below)
    _, _, turn = await ask(
        closing,
        [{"tool_calls": [QUERY_PARTS]}] * 3,
        max_total_rounds_per_message=2,
        loop_guard={"enabled": False},
    )
    assert turn.events[-1]["code"] == "turn_limit"
    assert types(turn.events).count("tool_result") == 2


async def test_the_loop_guard_answers_before_the_round_cap(closing: list[Chat]) -> None:
    # max_rounds and the loop guard's model_requests budget agree: the guard stops one round
    # before the cap, so the forced final request is the turn's last round, and a model that
    # still calls tools then gets the answer its evidence gives -- never turn_limit
    _, provider, turn = await ask(
        closing, [{"tool_calls": [QUERY_PARTS]}] * 3, max_total_rounds_per_message=3
    )
    assert [e["type"] for e in turn.events if e["type"] in ("done", "error")] == ["done"]
    assert turn.events[-1]["guards"]["stopped_by"] == "budget_model_requests"
    assert len(provider.requests) == 3 and provider.requests[-1][1] == []  # tools off, last
    assert "because the turn used all its model requests" in turn.answer
    assert "Part: " in turn.answer  # what its one query found


async def test_tool_retry_limit_counts_failures_not_lookups(closing: list[Chat]) -> None:
    # GeneralManager's budget alone (the loop guard would end the same failing call sooner:
    # tests/core/guards/test_guarded_turns.py)
    off = {"loop_guard": {"enabled": False}}
    failing = {"tool_calls": [{"name": "query", "args": {"manager": "Nope", "fields": ["x"]}}]}
    # Three successful lookups leave the budget untouched (GeneralManager would stop here).
    _, _, fine = await ask(
        closing,
        [{"tool_calls": [QUERY_PARTS]}] * 4 + [{"text": "ok"}],
        max_retries_per_message=3,
        **off,
    )
    assert fine.events[-1]["type"] == "done"
    _, provider, turn = await ask(
        closing,
        [failing, failing, failing, {"tool_calls": [QUERY_PARTS]}],
        max_retries_per_message=3,
        **off,
    )
    assert turn.events[-1]["code"] == "tool_retry_limit"
    last_messages, last_tools = provider.requests[-1]
    assert last_tools == [] and "budget" in last_messages[-1].content
    _, _, answered = await ask(
        closing,
        [failing, failing, failing, {"text": "I could not find it."}],
        max_retries_per_message=3,
        **off,
    )
    assert answered.events[-1]["type"] == "done" and answered.answer == "I could not find it."


async def test_mutation_limit_and_batches(closing: list[Chat]) -> None:
    create = {"name": "mutate", "args": {"mutation": "createPart", "input": {"name": "Spring"}}}
    chat, _, limited = await ask(
        closing, [{"tool_calls": [create]}], allowed_mutations=WRITES, max_mutations_per_message=0
    )
    assert (
        types(limited.events) == ["tool_call", "error"]
        and limited.events[-1]["code"] == "mutation_limit"
    )
    _, _, batch = await ask(
        closing, [{"tool_calls": [QUERY_PARTS, create]}], allowed_mutations=WRITES
    )
    assert (
        types(batch.events) == ["error"] and batch.events[0]["code"] == "mutation_batch_unsupported"
    )
    session = await chat.session()
    parts = await session.project.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "filters": {"name": "Spring"}}
    )
    assert parts["data"] == []  # nothing ran


async def test_recovery_prompts_are_bounded(closing: list[Chat]) -> None:
    _, provider, turn = await ask(
        closing,
        [
            {"text": "Probably Bolt."},
            {"tool_calls": [QUERY_PARTS]},
            {"text": "Bolt, Bearing, Gear."},
        ],
        recover_missing_tool_calls=True,
    )
    assert turn.answer == "Bolt, Bearing, Gear."  # the unfounded first answer was never shown
    nudged, _ = provider.requests[1]
    assert nudged[-1].role == "system" and "tools" in nudged[-1].content
    _, _, once = await ask(
        closing,
        [{"text": "Probably Bolt."}, {"text": "Still Bolt."}],
        recover_missing_tool_calls=True,
    )
    assert once.answer == "Still Bolt." and once.events[-1]["type"] == "done"


@pytest.mark.parametrize(
    ("round_", "config", "code"),
    [
        ({"text": "late", "delay_seconds": 1}, {"timeout_seconds": 0.1}, "deadline_exceeded"),
        (
            {"chunks": ["a", "b", "c"], "stall_after": 1},
            {"stream_timeout_seconds": 0.1},
            "deadline_exceeded",
        ),
        ({"error": "HTTP 500 from the vendor: secret details"}, {}, "provider_failed"),
        ({"text": "no end", "done": False}, {}, "provider_failed"),
    ],
)
async def test_provider_failures(
    closing: list[Chat], round_: dict[str, Any], config: dict[str, Any], code: str
) -> None:
    chat, _, turn = await ask(closing, [round_], provider_config=config)
    assert turn.events[-1]["code"] == code
    assert "secret" not in str(turn.events)
    history = (await chat.session()).history()
    assert history[-1].role == "assistant" and code in history[-1].content  # no dangling question


async def test_running_out_of_script_is_a_provider_failure(closing: list[Chat]) -> None:
    _, _, turn = await ask(closing, [{"tool_calls": [QUERY_PARTS]}])
    assert turn.events[-1]["code"] == "provider_failed"


async def test_rate_limits_say_when_to_retry(closing: list[Chat]) -> None:
    chat, _, first = await ask(
        closing,
        [{"text": "one"}, {"text": "two"}],
        rate_limit={"requests": 1, "window_seconds": 600},
    )
    assert first.events[-1]["type"] == "done"
    second = await chat.ask("again")
    assert second.events[-1]["code"] == "rate_limited"
    assert 595 <= second.events[-1]["retry_after_seconds"] <= 600
    _, _, tokens = await ask(
        closing,
        [
            {"tool_calls": [QUERY_PARTS], "usage": {"input_tokens": 60, "output_tokens": 60}},
            {"text": "never"},
        ],
        rate_limit={"tokens": 100},
    )
    assert (
        tokens.events[-1]["code"] == "rate_limited"
        and tokens.events[-1]["retry_after_seconds"] >= 1
    )


# -- confirmations -------------------------------------------------------------------------------


CREATE = {
    "name": "mutate",
    "args": {"mutation": "createPart", "input": {"name": "Spring", "quantity": 4}},
}


async def stream_deciding(chat: Chat, question: str, decision: bool | None) -> list[dict[str, Any]]:
    events = []
    async for event in chat.stream(question):
        events.append(event.to_dict())
        if isinstance(event, ConfirmMutation) and decision is not None:
            assert chat.confirm(event.id, decision)
    return events


async def spring_count(chat: Chat) -> int:
    session = await chat.session()
    result = await session.project.call_tool(
        "query", {"manager": "Part", "fields": ["name"], "filters": {"name": "Spring"}}
    )
    return int(result["total_count"])


@pytest.mark.parametrize(
    ("decision", "result", "springs"),
    [
        (True, {"status": "executed"}, 1),
        (False, {"status": "cancelled", "reason": "user_rejected"}, 0),
        (None, {"status": "cancelled", "reason": "confirmation_timed_out"}, 0),
    ],
)
async def test_the_three_confirmation_outcomes(
    closing: list[Chat], decision: bool | None, result: dict[str, Any], springs: int
) -> None:
    chat, _ = chat_with(
        [{"tool_calls": [CREATE]}, {"text": "See the result of your request above."}],
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
        confirm_timeout_seconds=0.2,
    )
    closing.append(chat)
    events = await stream_deciding(chat, "Add a part Spring", decision)
    assert types(events) == ["tool_call", "confirm_mutation", "tool_result", "text_chunk", "done"]
    assert (
        events[1]["input"] == {"name": "Spring", "quantity": 4}
        and events[1]["mutation"] == "createPart"
    )
    assert {k: events[2]["result"][k] for k in result} == result
    assert ("duration_ms" in events[2]) is (decision is True)  # a rejected mutation never ran
    assert await spring_count(chat) == springs


async def test_a_mutations_duration_leaves_out_the_wait_for_the_human(
    closing: list[Chat],
) -> None:
    chat, _ = chat_with(
        [{"tool_calls": [CREATE]}, {"text": "Done."}],
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
    )
    closing.append(chat)
    events = []
    async for event in chat.stream("Add a part Spring"):
        events.append(event.to_dict())
        if isinstance(event, ConfirmMutation):
            await asyncio.sleep(0.3)  # the human reads the input before pressing Confirm
            assert chat.confirm(event.id, True)
    [result] = [e for e in events if e["type"] == "tool_result"]
    assert result["result"]["status"] == "executed"
    assert 0 < result["duration_ms"] < 300


async def test_invalid_input_is_refused_before_anyone_is_asked(closing: list[Chat]) -> None:
    bad = {"name": "mutate", "args": {"mutation": "createPart", "input": {"nme": "Spring"}}}
    _, _, turn = await ask(
        closing,
        [{"tool_calls": [bad]}, {"text": "It failed."}],
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
    )
    assert "confirm_mutation" not in types(turn.events)
    assert turn.events[1]["result"]["code"] == "invalid_mutation_input"


async def test_anonymous_actors_may_read_but_not_write(closing: list[Chat]) -> None:
    chat, _ = chat_with(
        [{"tool_calls": [CREATE]}, {"text": "No."}],
        allowed_mutations=WRITES,
        actor=Actor("anon", authenticated=False),
    )
    closing.append(chat)
    turn = await chat.ask("Add a part")
    assert turn.events[1]["result"]["code"] == "authentication_required"
    assert await spring_count(chat) == 0


async def test_http_transport_cannot_confirm(closing: list[Chat]) -> None:
    chat, _ = chat_with(
        [{"tool_calls": [CREATE]}], allowed_mutations=WRITES, confirm_mutations=["createPart"]
    )
    closing.append(chat)
    session = await chat.session()
    events = [e.to_dict() async for e in session.run_turn("Add a part", transport="http")]
    assert (
        types(events) == ["tool_call", "error"]
        and events[-1]["code"] == "confirmation_required_transport"
    )


async def test_sse_confirmation_resumes_once_across_processes(
    closing: list[Chat], tmp_path: Path
) -> None:
    """The stream ends at confirm_mutation; a confirm request resumes it; a second claim fails."""
    store = str(tmp_path / "chat.sqlite3")
    rounds = [{"tool_calls": [CREATE]}, {"text": "Created Spring."}]
    first, _ = chat_with(
        rounds, store=store, allowed_mutations=WRITES, confirm_mutations=["createPart"]
    )
    closing.append(first)
    session = await first.session()
    events = [e.to_dict() async for e in session.run_turn("Add a part Spring", transport="sse")]
    assert types(events) == ["tool_call", "confirm_mutation"]
    pending = events[-1]["id"]
    # A new message while the confirmation is pending is refused.
    refused = [e.to_dict() async for e in session.run_turn("And another thing")]
    assert refused[-1]["code"] == "confirmation_pending"
    # A second "process": another Chat on the same store file, same user and conversation.
    other, _ = chat_with(
        rounds[1:],
        store=store,
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
        conversation_id=session.conversation_id,
    )
    closing.append(other)
    other_session = await other.session()
    other_session.project = session.project  # one database behind both, as with a real server
    resumed = [e.to_dict() async for e in other_session.resume(pending, True)]
    assert types(resumed) == ["tool_result", "text_chunk", "done"]
    assert resumed[0]["sequence"] == 3  # the turn's numbering goes on
    again = [e.to_dict() async for e in session.resume(pending, True)]
    assert [(e["type"], e["code"]) for e in again] == [("error", "bad_event")]
    assert "already decided" in again[0]["message"]
    assert await spring_count(first) == 1  # executed exactly once


async def test_a_foreign_user_cannot_open_or_claim(closing: list[Chat], tmp_path: Path) -> None:
    store = str(tmp_path / "chat.sqlite3")
    owner, _ = chat_with(
        [{"tool_calls": [CREATE]}],
        store=store,
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
    )
    closing.append(owner)
    session = await owner.session()
    events = [e.to_dict() async for e in session.run_turn("Add", transport="sse")]
    intruder, _ = chat_with(
        [], store=store, actor=Actor("mallory"), conversation_id=session.conversation_id
    )
    closing.append(intruder)
    with pytest.raises(KeyError):
        await intruder.session()
    own, _ = chat_with([], store=store, actor=Actor("mallory"), allowed_mutations=WRITES)
    closing.append(own)
    mallory = await own.session()
    mallory.new_conversation()
    claimed = [e.to_dict() async for e in mallory.resume(events[-1]["id"], True)]
    assert claimed[-1]["code"] == "bad_event"
    assert await spring_count(owner) == 0


# -- conversations -------------------------------------------------------------------------------


async def test_a_conversation_continues_in_a_new_chat_on_the_same_store(
    closing: list[Chat], tmp_path: Path
) -> None:
    store = str(tmp_path / "chat.sqlite3")
    first, _ = chat_with(
        [{"tool_calls": [QUERY_PARTS]}, {"text": "Bolt, Bearing, Gear."}], store=store
    )
    closing.append(first)
    await first.ask("Which parts?")
    conversation = first.conversation_id
    await first.aclose()
    second, provider = chat_with(
        [{"text": "They are made of steel, aluminum and cobalt."}],
        store=store,
        conversation_id=conversation,
    )
    closing.append(second)
    await second.ask("What are they made of?")
    sent, _ = provider.requests[0]
    roles = [m.role for m in sent]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert sent[3].tool_result["total_count"] == 28 and sent[4].content == "Bolt, Bearing, Gear."
    listed = await second.conversations()
    assert listed[0]["id"] == conversation and listed[0]["title"] == "Which parts?"


async def test_older_messages_are_summarised_with_their_coverage(closing: list[Chat]) -> None:
    rounds = [
        {"text": "A1"},
        {"text": "A2"},
        {"text": "Earlier: the user asked Q1 and Q2."},  # the summary request of turn 3
        {"text": "A3"},
    ]
    chat, provider = chat_with(rounds, summarize_after=3, max_recent_messages=2)
    closing.append(chat)
    for question in ("Q1", "Q2", "Q3"):
        turn = await chat.ask(question)
        assert turn.events[-1]["type"] == "done"
    summary_request, tools = provider.requests[2]
    assert tools == [] and "user: Q1" in summary_request[-1].content
    third, _ = provider.requests[3]
    assert (
        third[1].content
        == "Summary of the earlier conversation: Earlier: the user asked Q1 and Q2."
    )
    assert [m.content for m in third[2:]] == ["A2", "Q3"]
    session = await chat.session()
    record = session.store.conversation(session.conversation_id or "")
    covered = next(m for m in session.history() if m.content == "Q2")
    assert record is not None and record.summarized_through == covered.id


async def test_audit_and_hooks(closing: list[Chat]) -> None:
    audit: list[dict[str, Any]] = []
    seen: list[str] = []

    def broken_hook(**payload: Any) -> None:
        raise RuntimeError("a broken hook must not break the turn")

    _, _, turn = await ask(
        closing,
        [
            {"tool_calls": [QUERY_PARTS], "usage": {"input_tokens": 5, "output_tokens": 1}},
            {"text": "Three parts."},
        ],
        audit={"enabled": True, "level": "tool_calls", "logger": audit.append},
        hooks={
            "tool_called": [broken_hook, lambda **p: seen.append(p["tool_name"])],
            "message_received": lambda **p: seen.append(p["message"]),
        },
    )
    assert turn.events[-1]["type"] == "done"
    assert seen == ["Which parts?", "query"]
    kinds = [entry["event_type"] for entry in audit]
    assert kinds == ["user_message", "tool_call", "tool_result", "assistant_message"]
    assert audit[0]["session_key"] != "[REDACTED]"
    assert '"total_count": 28' in audit[2]["result"]


# -- the edges -----------------------------------------------------------------------------------


class ExplodingProvider(ScriptedProvider):
    """A provider with a bug (not a provider failure): the turn must survive it."""

    async def complete(self, messages: Any, tools: Any) -> AsyncIterator[Any]:  # type: ignore[override]
        raise RuntimeError("bug in a custom provider")
        yield  # pragma: no cover


async def test_an_unexpected_exception_is_chat_error_and_reaches_the_error_hook(
    closing: list[Chat],
) -> None:
    errors: list[BaseException] = []
    chat = Chat(
        provider=ExplodingProvider({"rounds": []}),
        store=":memory:",
        hooks={"error": lambda **p: errors.append(p["error"])},
    )
    closing.append(chat)
    turn = await chat.ask("Which parts?")
    assert turn.events[-1] == {
        "type": "error",
        "message": "Chat request failed.",
        "code": "chat_error",
        "sequence": 1,
    }
    assert [str(error) for error in errors] == ["bug in a custom provider"]
    again = await chat.ask("And now?")  # the session is usable afterwards
    assert again.events[-1]["code"] == "chat_error"


async def test_a_consumer_that_goes_away_cancels_the_turn(closing: list[Chat]) -> None:
    chat, provider = chat_with([{"text": "slow", "delay_seconds": 30}, {"text": "next"}])
    closing.append(chat)
    task = asyncio.create_task(chat.ask("Which parts?"))
    await asyncio.sleep(0.2)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    session = await chat.session()
    assert not session.busy
    turn = await chat.ask("Still there?")
    assert turn.answer == "next" and len(provider.requests) == 2


async def test_the_direct_strategy_offers_a_query_tool_per_manager(closing: list[Chat]) -> None:
    _, provider, turn = await ask(
        closing,
        [
            {"tool_calls": [{"name": "query_material", "args": {"fields": ["name"], "limit": 2}}]},
            {"text": "Steel, Aluminum."},
        ],
        tool_strategy="direct",
    )
    _, tools = provider.requests[0]
    names = [tool.name for tool in tools]
    assert "query_purchaseorder" in names and "search_managers" in names and "mutate" not in names
    assert turn.events[1]["result"]["data"] == [{"name": "Steel"}, {"name": "Aluminum"}]


async def test_conversations_can_be_deleted_and_cleaned_up(
    closing: list[Chat], tmp_path: Path
) -> None:
    chat, _ = chat_with(
        [{"text": "one"}, {"text": "two"}], store=str(tmp_path / "chat.sqlite3"), ttl_hours=1
    )
    closing.append(chat)
    await chat.ask("first")
    first = chat.conversation_id
    await chat.new_conversation()
    await chat.ask("second")
    assert await chat.delete_conversation(first or "") is True
    assert [c["title"] for c in await chat.conversations()] == ["second"]
    assert await chat.cleanup() == {
        "conversations": 0,
        "messages": 0,
        "events": 0,
        "confirmations": 0,
        "usage": 0,
        "usage_records": 0,
    }

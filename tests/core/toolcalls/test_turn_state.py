"""What a turn's defences know survives the turn being resumed or taken over, the loop guard's
budgets agree with the spec's round cap, a retry's wait counts against the turn's time, and a
planned turn's executors stop when the loop guard says so -- each through the real ``Chat``."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from gmchat_nb import Chat
from gmchat_nb.core.providers.attempts import ProviderRetries
from gmchat_nb.core.providers.base import (
    BaseLLMProvider,
    DoneEvent,
    Message,
    ProviderError,
    ProviderEvent,
    TextChunkEvent,
    ToolDefinition,
    Transient,
)
from gmchat_nb.core.providers.retries import RetryPolicy

PARTS: dict[str, Any] = {"manager": "Part", "fields": ["name"], "limit": 3}
WRITES = ["createPart", "updatePart", "deletePart"]


def write(tmp_path: Path, rounds: list[dict[str, Any]]) -> str:
    path = tmp_path / "rounds.yaml"
    path.write_text(yaml.safe_dump(rounds))
    return f"scripted:{path}"


# -- a retry's wait and the turn's time -----------------------------------------------------------


class Overloaded(BaseLLMProvider):
    """Answers 429 with ``Retry-After: wait`` until ``failures`` are spent, then text."""

    name = "overloaded"

    def __init__(self, failures: int, wait: float) -> None:
        super().__init__({})
        self.failures, self.wait, self.asked = failures, wait, 0

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        self.asked += 1
        if self.asked <= self.failures:
            raise ProviderError("HTTP 429", transient=Transient("HTTP 429", 429, self.wait))
        yield TextChunkEvent("ok")
        yield DoneEvent()


async def answer(retries: ProviderRetries, provider: BaseLLMProvider) -> list[Any]:
    return [event async for event in retries.events(provider, [Message("user", "hi")], [])]


async def test_a_retry_s_wait_counts_against_the_turn_s_deadline() -> None:
    policy = RetryPolicy(attempts=3, max_wait_seconds=30.0)
    patient = ProviderRetries(policy)
    events = await answer(patient, Overloaded(1, 0.2))
    assert any(isinstance(e, TextChunkEvent) for e in events) and patient.retries == 1
    hurried = ProviderRetries(policy)
    hurried.deadline = time.monotonic() + 0.5  # waiting 5 s would run past it
    started = time.monotonic()
    with pytest.raises(ProviderError, match="429"):
        await answer(hurried, Overloaded(1, 5.0))
    assert time.monotonic() - started < 0.5 and hurried.retries == 0


# -- a turn's defences across a resume ------------------------------------------------------------

SPRING = {"mutation": "createPart", "input": {"name": "Spring"}}


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args}


async def test_a_turn_resumed_after_its_confirmation_keeps_its_loop_guard(
    tmp_path: Path,
) -> None:
    # a read, a change the user rejects, then (resumed, as another process would: its
    # defences rebuilt from the turn's own messages) the same read and the same change again
    rounds = [
        {"tool_calls": [call("query", PARTS)]},
        {"tool_calls": [call("mutate", SPRING)]},
        {"tool_calls": [call("query", PARTS)]},
        {"tool_calls": [call("mutate", SPRING)]},
        {"text": "You kept the parts as they are."},
    ]
    chat = Chat(
        provider=write(tmp_path, rounds),
        store=":memory:",
        allowed_mutations=WRITES,
        confirm_mutations=["createPart"],
        max_mutations_per_message=2,
    )
    try:
        session = await chat.session()
        question = "Please add a part Spring"
        first = [e.to_dict() async for e in session.run_turn(question, transport="sse")]
        assert [e["type"] for e in first][-1] == "confirm_mutation"
        resumed = [e.to_dict() async for e in session.resume(first[-1]["id"], False)]
        results = [e for e in resumed if e["type"] == "tool_result"]
        assert results[0]["result"] == {"status": "cancelled", "reason": "user_rejected"}
        assert results[1]["result"]["repeat"] is True  # from the rebuilt cache: not run again
        assert results[2]["result"]["code"] == "rejected_change"
        done = resumed[-1]
        assert done["type"] == "done"
        # the calls before the suspension are counted with those after it
        assert done["guards"]["tool_calls"] == 4 and done["guards"]["repeats"] == 1
    finally:
        await chat.aclose()


async def test_a_turn_taken_over_after_a_crash_keeps_its_loop_guard(
    store_location: str, tmp_path: Path
) -> None:
    from gmchat_nb.core.store import ChatStore, input_hash
    from gmchat_nb.core.turns import TurnOwner

    rounds = [{"tool_calls": [call("query", PARTS)]}, {"text": "Bolt, Bearing and Gear."}]
    chat = Chat(project="demo", provider=write(tmp_path, rounds), store=store_location)
    try:
        session = await chat.session()
        store: ChatStore = session.store
        actor = "local:crashed"
        cid = store.create_conversation(actor).id
        dead = "nowhere.invalid:1:0"  # another host's owner whose lease ran out
        store.admit_turn(
            actor,
            "t1",
            input_hash=input_hash("Which parts?"),
            owner=dead,
            conversation_id=cid,
            text="Which parts?",
            lease_until=time.time() - 1,
        )
        rows = await (await chat.session()).project.call_tool("query", PARTS)
        store.record_turn(
            cid,
            "t1",
            [
                {"role": "user", "content": "Which parts?"},
                {
                    "role": "assistant",
                    "content": "",
                    "tool_calls": [{"id": "c1", **call("query", PARTS)}],
                },
                {
                    "role": "tool",
                    "content": "",
                    "tool_call_id": "c1",
                    "tool_name": "query",
                    "tool_result": rows,
                },
            ],
            [
                (1, {"type": "tool_call", "sequence": 1, "id": "c1", **call("query", PARTS)}),
                (
                    2,
                    {
                        "type": "tool_result",
                        "sequence": 2,
                        "id": "c1",
                        "name": "query",
                        "result": rows,
                    },
                ),
            ],
            state="running",
            owner=dead,
        )
        [turn] = TurnOwner.of(store, scope="").sweep()
        events = [e.to_dict() async for e in session.continue_turn(turn)]
        [result] = [e for e in events if e["type"] == "tool_result"]
        assert result["result"]["repeat"] is True  # the crashed process's read, not run again
        assert events[-1]["guards"]["tool_calls"] == 2
    finally:
        await chat.aclose()


# -- a planned turn stopped by the loop guard ------------------------------------------------------


async def test_the_loop_guard_stops_a_planned_turn_s_executors_and_it_answers(
    tmp_path: Path,
) -> None:
    open_task = {
        "task_id": "task_1",
        "objective": "the parts",
        "requirements": [{"requirement_id": "rows", "kind": "query"}],
    }
    looping = [{"tool_calls": [call("query", {**PARTS, "limit": n})]} for n in range(1, 9)]
    rounds = [{"structured": {"intent": "read", "tasks": [open_task]}}, *looping]
    rounds += [{"text": "Bolt is a part [task_1:query:1]."}]
    chat = Chat(
        provider=write(tmp_path, rounds),
        planned={"enabled": True, "max_rounds_per_task": 8},
        loop_guard={"model_requests": 3},
        store=":memory:",
    )
    try:
        turn = await chat.ask("Which parts?")
        notices = [e for e in turn.events if e["type"] == "notice"]
        assert [n["details"] for n in notices] == [{"stopped_by": "budget_model_requests"}]
        assert len([e for e in turn.events if e["type"] == "tool_result"]) == 3
        done = turn.events[-1]
        assert done["type"] == "done" and done["guards"]["stopped_by"] == "budget_model_requests"
        # the task stands on the evidence it had when the guard stopped it
        assert done["orchestration"]["tasks"][0]["status"] == "resolved"
        # the scripted model still calls tools when asked to write: the answer is the evidence's
        assert "[task_1:query:1]" in turn.answer and "Bolt" in turn.answer
    finally:
        await chat.aclose()

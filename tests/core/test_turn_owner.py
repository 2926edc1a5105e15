"""The turn owner on both stores: a turn's writes are fenced by its lease (a process that lost a
turn writes nothing more of it), a lapsed lease is taken over once, and a streaming turn's
events reach the journal while it streams, not at its end."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.base import Message, ProviderEvent, ToolDefinition
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore, TurnCancelRequested, TurnLost, TurnStart
from gmchat_nb.core.turns import TurnOwner


def owner_on(store: ChatStore, name: str, lease: float) -> TurnOwner:
    """A turn owner named as a process on another host would be (a lease is all it shows)."""
    owner = TurnOwner(store, scope="", lease_seconds=lease)
    owner.owner = f"{name}:1:1"
    return owner


def test_a_process_that_lost_its_turn_writes_nothing_more_of_it(store_location: str) -> None:
    with ChatStore(store_location) as first_store, ChatStore(store_location) as second_store:
        first = owner_on(first_store, "host-a", lease=0.2)
        second = owner_on(second_store, "host-b", lease=30.0)
        admission = first.admit(
            "local:ada", "List parts", turn_id="t1", start=TurnStart(text="List parts")
        )
        assert admission.created and admission.state == "running"
        writer = first.writer(admission.conversation_id, "t1", "local:ada")
        writer.event(1, {"type": "tool_call", "sequence": 1, "id": "c1", "name": "query"})
        writer.flush()
        first.let_go(admission.conversation_id, "t1")  # host-a stops renewing (it froze)
        time.sleep(0.3)
        record = second_store.turn(admission.conversation_id, "t1")
        assert record is not None and record.lease_expires_at is not None
        assert record.lease_expires_at < second_store.now()  # lapsed
        taken = second.take_over(record)
        assert taken is not None and taken.owner == "host-b:1:1"
        assert second.take_over(record) is None  # taken once
        writer.event(2, {"type": "text_chunk", "sequence": 2, "content": "late"})
        with pytest.raises(TurnLost):
            writer.flush("done", end=(3, {"type": "done", "sequence": 3}))
        with pytest.raises(TurnLost):  # and never again
            writer.flush()
        journal = second_store.events(admission.conversation_id, turn_id="t1")
        assert [event["type"] for event in journal] == ["tool_call"]
        second_writer = second.writer(admission.conversation_id, "t1", "local:ada")
        second_writer.flush("done", end=(2, {"type": "done", "sequence": 2}))
        ended = second_store.turn(admission.conversation_id, "t1")
        assert ended is not None and ended.state == "done"


class HeldProvider(ScriptedProvider):
    """A scripted provider that stops mid-answer, after ``hold_after`` events, until the test
    lets it go: "while it streams" is then a state the test holds, not a moment it guesses."""

    def __init__(self, config: dict[str, Any], *, hold_after: int) -> None:
        super().__init__(config)
        self.hold_after = hold_after
        self.go_on = asyncio.Event()

    async def complete(
        self, messages: list[Message], tools: list[ToolDefinition]
    ) -> AsyncIterator[ProviderEvent]:
        count = 0
        async for event in super().complete(messages, tools):
            if count == self.hold_after:
                await self.go_on.wait()
            yield event
            count += 1


async def test_a_streaming_turn_is_in_the_journal_while_it_streams(store_location: str) -> None:
    """Half the answer has streamed and the provider holds the rest: those chunks are in the
    journal (committed as they stream) while the turn is still running, its end is not."""
    chunks = [f"w{i} " for i in range(30)]
    provider = HeldProvider({"rounds": [{"chunks": chunks}]}, hold_after=15)
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        asking = asyncio.create_task(chat.ask("Tell me slowly", turn_id="slow"))
        so_far: list[dict[str, Any]] = []
        with ChatStore(store_location) as reader:
            deadline = time.monotonic() + 60  # catches a hang only: the group commit is 50 ms
            while len(so_far) < 15 and time.monotonic() < deadline and not asking.done():
                await asyncio.sleep(0.02)
                turn = reader.admitted_turn(chat.actor.id, "slow")
                if turn is not None:
                    so_far = reader.events(turn.conversation_id, turn_id="slow")
        assert not asking.done(), "the turn ended while its provider held the answer"
        assert [event["type"] for event in so_far] == ["text_chunk"] * 15
        assert "".join(event["content"] for event in so_far) == "".join(chunks[:15])
        provider.go_on.set()
        done = await asyncio.wait_for(asking, 60)
        assert done.answer == "".join(chunks)
        assert sorted(done.positions) == list(range(1, 32))  # every event's journal position
    finally:
        provider.go_on.set()
        await chat.aclose()


def test_a_cancel_recorded_before_a_turn_s_end_wins_over_it(store_location: str) -> None:
    """Another process records a cancel while the turn runs: the turn's driver still writes what
    streamed (and its store tells this process's cancel listeners, which a SQLite file's other
    process cannot notify), but its ``done`` — or its suspension — is refused: the turn can only
    end ``interrupted``, so the cancel's ``cancelled`` is true."""
    with ChatStore(store_location) as here, ChatStore(store_location) as elsewhere:
        owner = owner_on(here, "host-a", lease=30.0)
        heard: list[tuple[str, str]] = []
        here.on_cancel(lambda conversation_id, turn_id: heard.append((conversation_id, turn_id)))
        admission = owner.admit(
            "local:ada", "List parts", turn_id="t1", start=TurnStart(text="List parts")
        )
        conversation = admission.conversation_id
        writer = owner.writer(conversation, "t1", "local:ada")
        assert elsewhere.request_cancel(conversation, "t1", "stop-1") == "cancelled"
        writer.event(1, {"type": "text_chunk", "sequence": 1, "content": "Parts"})
        writer.flush(step=False)  # what streamed is written, and the command is heard here
        assert (conversation, "t1") in heard
        for state in ("suspended", "done", "failed"):
            with pytest.raises(TurnCancelRequested) as refused:
                writer.flush(state, end=(2, {"type": "done", "sequence": 2}))
            assert refused.value.command == "stop-1"
        assert [e["type"] for e in elsewhere.events(conversation, turn_id="t1")] == ["text_chunk"]
        record = elsewhere.turn(conversation, "t1")
        assert record is not None and record.state == "running"
        assert elsewhere.request_cancel(conversation, "t1", "stop-1") == "duplicate"


async def test_a_chat_turn_cancelled_during_its_last_answer_ends_interrupted(
    store_location: str,
) -> None:
    """A kernel's turn streams its one answer; another process records a cancel meanwhile. The
    kernel hears no notification (it listens to none), so the turn streams on — and its end is
    refused and written as ``interrupted``, never ``done``."""
    chunks = [f"w{i} " for i in range(20)]
    provider = ScriptedProvider({"rounds": [{"chunks": chunks, "chunk_delay_seconds": 0.05}]})
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        with ChatStore(store_location) as elsewhere:
            asking = asyncio.create_task(chat.ask("Tell me slowly", turn_id="slow"))
            for _ in range(500):  # until part of the answer is journaled
                turn = elsewhere.admitted_turn(chat.actor.id, "slow")
                if turn is not None and elsewhere.events(turn.conversation_id, turn_id="slow"):
                    break
                await asyncio.sleep(0.01)
            assert turn is not None
            assert elsewhere.request_cancel(turn.conversation_id, "slow", "stop-1") == "cancelled"
            asked = await asyncio.wait_for(asking, 10)
            assert asked.events[-1]["type"] == "error"
            assert asked.events[-1]["code"] == "interrupted"
            assert "cancelled (command stop-1)" in asked.events[-1]["message"]
            journal = elsewhere.events(turn.conversation_id, turn_id="slow")
            assert [e["type"] for e in journal if e["type"] in ("done", "error")] == ["error"]
            record = elsewhere.turn(turn.conversation_id, "slow")
            assert record is not None and record.state == "interrupted"
    finally:
        await chat.aclose()

"""Admitted turns a dead process cut off: which are run again (reads only) and which closed, and
how a continued turn goes on from its last committed step. On both stores."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.recovery import OWNER, recover, resumable, take_over_resumable
from gmchat_nb.core.store import ChatStore
from gmchat_nb.core.store.turns import input_hash

QUERY = {"id": "c1", "name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 2}}
MUTATE = {"id": "m1", "name": "mutate", "args": {"mutation": "createPart", "input": {}}}


@pytest.fixture(scope="module")
def dead() -> str:
    """The owner string of a process of this host that has exited."""
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    return f"{socket.gethostname()}:{finished.pid}:0"


def cut_off(
    store: ChatStore,
    owner: str,
    call: dict[str, Any] | None,
    actor: str = "local:ada",
    **admission: Any,
) -> str:
    """A conversation whose admitted turn ``t1`` died after its first tool round (or, with no
    ``call``, right after its admission)."""
    cid = store.create_conversation(actor).id
    store.admit_turn(cid, "t1", input_hash("List two parts"), owner=owner, **admission)
    if call is not None:
        store.record_turn(
            cid,
            "t1",
            [
                {"role": "user", "content": "List two parts"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
            ],
            [(1, {"type": "tool_call", "sequence": 1, **call})],
            state="running",
            owner=owner,
        )
    return cid


def test_only_admitted_turns_that_only_read_are_run_again(store_location: str, dead: str) -> None:
    with ChatStore(store_location) as store:
        reading = cut_off(store, dead, QUERY, text="List two parts")
        never_started = cut_off(store, dead, None, text="List two parts")
        mutating = cut_off(store, dead, MUTATE, text="List two parts")
        textless = cut_off(store, dead, QUERY)  # admitted before turns kept their text
        cancelled = cut_off(store, dead, QUERY, text="List two parts")
        store.request_cancel(cancelled, "t1", "stop")
        alive = cut_off(store, f"elsewhere:{1}:0", QUERY, text="List two parts")  # not ours

        taken = take_over_resumable(store)
        assert {turn.conversation_id for turn in taken} == {reading, never_started}
        assert all(store.turn(t.conversation_id, "t1").owner == OWNER for t in taken)  # type: ignore[union-attr]
        assert take_over_resumable(store) == []  # held by this process now: taken once
        assert recover(store, now=time.time()) == 3  # the mutating, textless, cancelled ones
        states = {
            cid: store.turn(cid, "t1").state  # type: ignore[union-attr]
            for cid in (reading, never_started, mutating, textless, cancelled, alive)
        }
        assert states == {
            reading: "running",
            never_started: "accepted",
            mutating: "interrupted",
            textless: "interrupted",
            cancelled: "interrupted",
            alive: "running",
        }
        assert not resumable(store, store.turn(alive, "t1"))  # type: ignore[arg-type]


@pytest.mark.parametrize("started", [True, False])
async def test_a_continued_turn_goes_on_from_its_last_committed_step(
    store_location: str, dead: str, started: bool
) -> None:
    provider = ScriptedProvider({"rounds": [{"tool_calls": [QUERY]}, {"text": "Two parts."}]})
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        session = await chat.session()
        cid = cut_off(session.store, dead, QUERY if started else None, text="List two parts")
        [turn] = take_over_resumable(session.store)
        events = [event.to_dict() async for event in session.continue_turn(turn)]
        journal = session.store.journal_after(cid, 0)
        assert [entry.position for entry in journal] == list(range(1, len(journal) + 1))
        types = [entry.payload["type"] for entry in journal]
        before = ["tool_call"] if started else []
        assert types == [*before, "tool_call", "tool_result", "text_chunk", "done"]
        assert [event["sequence"] for event in events] == list(
            range(len(before) + 1, len(journal) + 1)
        )
        messages = session.store.messages(cid, turn_id="t1")
        assert [m.content for m in messages if m.role == "user"] == ["List two parts"]
        assert messages[-1].content == "Two parts."
        if started:  # the unanswered call reached the model as text, not as a dangling call
            first_request = provider.requests[0]
            assert "Unfinished tool call: query" in str(first_request)
        assert session.store.turn(cid, "t1").state == "done"  # type: ignore[union-attr]
    finally:
        await chat.aclose()


async def test_asking_again_after_the_kernel_died_replays_and_then_goes_on(
    store_location: str, dead: str
) -> None:
    provider = ScriptedProvider({"rounds": [{"text": "Two parts."}]})
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        session = await chat.session()
        cid = cut_off(session.store, dead, QUERY, actor=chat.actor.id, text="List two parts")
        turn = await chat.ask("List two parts", turn_id="t1")  # the notebook's retry
        assert [event["type"] for event in turn.events] == ["tool_call", "text_chunk", "done"]
        assert [event["sequence"] for event in turn.events] == [1, 2, 3]
        assert turn.answer == "Two parts."
        again = await chat.ask("List two parts", turn_id="t1")  # ended: a replay, no request
        assert [event["type"] for event in again.events] == ["tool_call", "text_chunk", "done"]
        assert len(provider.requests) == 1
        assert session.store.turn(cid, "t1").state == "done"  # type: ignore[union-attr]
    finally:
        await chat.aclose()

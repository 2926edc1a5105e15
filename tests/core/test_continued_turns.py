"""Admitted turns a dead process cut off: which are run again (reads only) and which closed, and
how a continued turn goes on from its last committed step. On both stores."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
import uuid
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore, input_hash
from gmchat_nb.core.turns import OWNER, TurnOwner

QUERY = {"id": "c1", "name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 2}}
RESULT = {"type": "tool_result", "sequence": 2, "id": "c1", "name": "query", "result": {}}
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
    actor: str | None = None,
    scope: str = "",
    **admission: Any,
) -> str:
    """A conversation whose admitted turn ``t1`` died after its first tool round (or, with no
    ``call``, right after its admission), in take-over ``scope`` (a server's, off a hub). A turn
    id names one turn per actor: each conversation here is another actor's unless named."""
    actor = actor or f"local:{uuid.uuid4().hex[:8]}"
    cid = store.create_conversation(actor).id
    store.admit_turn(
        actor,
        "t1",
        input_hash=input_hash("List two parts"),
        owner=owner,
        conversation_id=cid,
        scope=scope,
        **admission,
    )
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
        # another host's server whose lease runs: alive, not ours
        alive = cut_off(
            store, "elsewhere:1:0", QUERY, text="List two parts", lease_until=time.time() + 60
        )
        kernels = cut_off(store, dead, QUERY, text="List two parts", scope="kernel:")

        owner = TurnOwner.of(store, scope="")
        taken = owner.sweep()  # the mutating, textless and cancelled ones are closed
        assert {turn.conversation_id for turn in taken} == {reading, never_started}
        assert all(store.turn(t.conversation_id, "t1").owner == OWNER for t in taken)  # type: ignore[union-attr]
        assert owner.sweep() == []  # held by this process now: taken once
        states = {
            cid: store.turn(cid, "t1").state  # type: ignore[union-attr]
            for cid in (reading, never_started, mutating, textless, cancelled, alive, kernels)
        }
        assert states == {
            reading: "running",
            never_started: "accepted",
            mutating: "interrupted",
            textless: "interrupted",
            cancelled: "interrupted",
            alive: "running",
            kernels: "running",  # a kernel's turn: no server runs it or closes it
        }
        assert owner.take_over(store.turn(alive, "t1")) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("started", [True, False])
async def test_a_continued_turn_goes_on_from_its_last_committed_step(
    store_location: str, dead: str, started: bool
) -> None:
    provider = ScriptedProvider({"rounds": [{"tool_calls": [QUERY]}, {"text": "Two parts."}]})
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        session = await chat.session()
        cid = cut_off(session.store, dead, QUERY if started else None, text="List two parts")
        [turn] = TurnOwner.of(session.store, scope="").sweep()
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


async def test_a_partial_answer_a_crash_cut_off_is_dropped_by_readers(
    store_location: str, dead: str
) -> None:
    """Events are committed while a turn streams (every <=50 ms), so a crash can leave part of an
    answer journaled past the turn's last complete step. The continuation's first event says so
    (``continues_after``: the last sequence the steps cover) and a reader — ``Turn`` here —
    drops the cut-off part: the answer is the new run's alone."""
    provider = ScriptedProvider({"rounds": [{"text": "Two parts: Bolt, Gear."}]})
    chat = Chat(project="demo", provider=provider, store=store_location)
    try:
        session = await chat.session()
        store = session.store
        cid = store.create_conversation(chat.actor.id).id
        store.admit_turn(chat.actor.id, "t1", input_hash=input_hash("List two parts"),
                         owner=dead, conversation_id=cid, text="List two parts")  # fmt: skip
        store.record_turn(
            cid,
            "t1",
            [
                {"role": "user", "content": "List two parts"},
                {"role": "assistant", "content": "", "tool_calls": [QUERY]},
                {"role": "tool", "tool_call_id": "c1", "tool_name": "query", "tool_result": {}},
            ],
            [(1, {"type": "tool_call", "sequence": 1, **QUERY}), (2, RESULT)],
            state="running",
            owner=dead,
            committed_sequence=2,
            fenced=True,
        )
        partial = {"type": "text_chunk", "sequence": 3, "content": "Two pa"}
        store.record_turn(cid, "t1", [], [(3, partial)], owner=dead, fenced=True)

        turn = await chat.ask("List two parts", turn_id="t1")
        continued = next(e for e in turn.events if e.get("continues_after") is not None)
        assert continued["sequence"] == 4 and continued["continues_after"] == 2
        assert turn.answer == "Two parts: Bolt, Gear."  # not "Two paTwo parts: ..."
        journal = store.events(cid, turn_id="t1")
        assert [e["sequence"] for e in journal] == [1, 2, 3, 4, 5]  # the journal keeps it all
        assert journal[2]["content"] == "Two pa" and journal[-1]["type"] == "done"
    finally:
        await chat.aclose()

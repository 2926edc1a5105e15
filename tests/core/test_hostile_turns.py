"""Turns that meet broken text, a failing store or a cancellation: each ends with exactly one
terminal event, keeps what can be kept, and never poisons the next turn (real Chat, real SQLite,
the demo project, a scripted provider playing the model)."""

from __future__ import annotations

import asyncio
import socket
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from gmchat_nb import Chat
from gmchat_nb.core.store import ChatStore
from gmchat_nb.core.turns import TurnOwner

from ..graphql_server import graphql_server
from .conftest import chat_with

TERMINAL = ("done", "error")
QUERY_PARTS = {"name": "query", "args": {"manager": "Part", "fields": ["name"], "limit": 2}}


def terminals(events: list[dict[str, Any]]) -> list[str]:
    return [e.get("code", e["type"]) for e in events if e["type"] in TERMINAL]


# -- lone surrogates in the model's own text -----------------------------------------------------


async def test_model_text_with_a_lone_surrogate_is_stored_and_later_turns_work(
    closing: list[Chat],
) -> None:
    chat, _ = chat_with(
        [
            {"tool_calls": [{**QUERY_PARTS, "id": "c\ud800"}]},
            {"text": "answer \ud83d"},
            {"text": "second answer"},
        ]
    )
    closing.append(chat)
    first = await chat.ask("Which parts?")
    assert terminals(first.events) == ["done"]
    assert first.answer == "answer \ufffd"  # only the unrepresentable half is replaced
    assert first.events[0]["id"] == "c\ufffd"
    second = await chat.ask("And then?")
    assert terminals(second.events) == ["done"]
    assert second.answer == "second answer"
    session = await chat.session()
    contents = [m.content for m in session.history()]
    assert contents == ["Which parts?", "", "", "answer \ufffd", "And then?", "second answer"]
    assert session.store.events(session.conversation_id or "")[-1]["type"] == "done"


# -- a store write that fails --------------------------------------------------------------------


def _fill_up(store: ChatStore) -> None:
    """Make every further write fail as a full disk would: SQLite's own page limit."""
    with store._lock:
        pages = store._backend._connection.execute("PRAGMA page_count").fetchone()[0]
        store._backend._connection.execute(f"PRAGMA max_page_count = {pages}")


def _make_room(store: ChatStore) -> None:
    with store._lock:
        store._backend._connection.execute("PRAGMA max_page_count = 1073741823")


async def test_a_failed_write_ends_the_turn_once_and_never_poisons_the_next(
    closing: list[Chat], tmp_path: Path
) -> None:
    store = ChatStore(tmp_path / "chat.sqlite3")
    chat, _ = chat_with(
        [{"text": "x" * 50_000}, {"text": "fine again"}], store=store, summarize_after=1000
    )
    closing.append(chat)
    session = await chat.session()
    session.new_conversation("full")
    _fill_up(store)
    failed = await chat.ask("Which parts?")
    assert terminals(failed.events) == ["chat_error"]  # exactly one terminal event
    _make_room(store)
    after = await chat.ask("Which parts now?")
    assert terminals(after.events) == ["done"]
    assert after.answer == "fine again"
    stored = [m.content for m in session.history()]
    assert "Which parts now?" in stored and "fine again" in stored


# -- a turn cancelled from outside ---------------------------------------------------------------


async def test_a_cancelled_turn_is_closed_as_interrupted_and_the_model_is_told(
    closing: list[Chat],
) -> None:
    chat, provider = chat_with(
        [
            {"tool_calls": [QUERY_PARTS]},
            {"text": "never seen", "delay_seconds": 30},
            {"text": "Ready."},
        ]
    )
    closing.append(chat)
    answered = asyncio.Event()

    async def consume() -> None:
        async for event in chat.stream("Which parts?"):
            if event.type == "tool_result":
                answered.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(answered.wait(), 10)
    await asyncio.sleep(0.05)  # the second provider round is waiting now
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task

    session = await chat.session()
    cid = session.conversation_id or ""
    journal = session.store.events(cid)
    assert [e["type"] for e in journal][-1] == "error"
    assert journal[-1]["code"] == "interrupted"
    assert [e["sequence"] for e in journal] == list(range(1, len(journal) + 1))
    notes = [m.content for m in session.history() if m.role == "assistant" and m.content]
    assert notes and notes[-1].startswith("(This request was interrupted before it finished")
    turn = session.store.turns(state="interrupted", conversation_id=cid)
    assert len(turn) == 1

    after = await chat.ask("Try again?")
    assert after.answer == "Ready."
    messages, _ = provider.requests[-1]
    told = [m.content for m in messages if m.role == "assistant"]
    assert any("interrupted" in text for text in told)


async def test_a_mutation_under_way_when_the_turn_is_cancelled_finishes_and_is_recorded(
    closing: list[Chat],
) -> None:
    with graphql_server() as server:
        server.hold_seconds = 0.5  # the reply is still on its way when the client goes away
        chat, _ = chat_with(
            [
                {
                    "tool_calls": [
                        {
                            "name": "mutate",
                            "args": {"mutation": "createPart", "input": {"name": "Cog"}},
                        }
                    ]
                },
                {"text": "never asked for"},
            ],
            project=server.url,
            allowed_mutations=["createPart"],
        )
        closing.append(chat)
        task = asyncio.create_task(chat.ask("Add a part called Cog"))
        assert await asyncio.to_thread(server.mutation_ran.wait, 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        session = await chat.session()
        results = [m.tool_result for m in session.history() if m.role == "tool"]
        assert [r["status"] for r in results] == ["executed"]  # what happened, not "unknown"
        assert server.count("Cog") == 1
        journal = session.store.events(session.conversation_id or "")
        assert [e["type"] for e in journal][-2:] == ["tool_result", "error"]
        assert journal[-1]["code"] == "interrupted"


# -- the store upgrades in place -----------------------------------------------------------------


def test_a_version_1_store_gains_the_turns_table_when_opened(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with ChatStore(path) as store:
        cid = store.create_conversation("local:ada", "old").id
    with sqlite3.connect(path) as raw:  # as version 1 left it: no turns table
        raw.execute("DROP TABLE turns")
        raw.execute("PRAGMA user_version = 1")
    with ChatStore(path) as store:
        assert store.conversation(cid) is not None
        assert store.turns(state="running") == []


def test_recovery_journals_every_answered_call_after_its_announcement(tmp_path: Path) -> None:
    """A process that died between two in-process reads had announced only the first: the
    closing journal announces the second before answering it, so every result follows its call."""
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    dead = f"{socket.gethostname()}:{finished.pid}:0"
    with ChatStore(tmp_path / "chat.sqlite3") as store:
        cid = store.create_conversation("local:ada").id
        calls = [{"id": f"c{n}", "name": "query", "args": {"manager": "Part"}} for n in (1, 2)]
        store.record_turn(
            cid,
            "t1",
            [
                {"role": "user", "content": "Which parts?"},
                {"role": "assistant", "content": "", "tool_calls": calls},
                {"role": "tool", "tool_call_id": "c1", "tool_name": "query", "tool_result": {}},
            ],
            [
                (1, {"type": "tool_call", "id": "c1", "name": "query", "args": {}}),
                (2, {"type": "tool_result", "id": "c1", "name": "query", "result": {}}),
            ],
            state="running",
            owner=dead,
        )
        assert TurnOwner.of(store, scope="").sweep() == []  # not run again: closed
        assert store.turn(cid, "t1").state == "interrupted"  # type: ignore[union-attr]
        journal = store.events(cid)
    assert [(e["type"], e.get("id")) for e in journal] == [
        ("tool_call", "c1"),
        ("tool_result", "c1"),
        ("tool_call", "c2"),
        ("tool_result", "c2"),
        ("error", None),
    ]
    assert journal[3]["result"]["code"] == "interrupted"


@pytest.mark.parametrize("depth", [40, 500, 950])
async def test_arguments_nested_past_any_use_are_a_tool_error_not_a_failed_turn(
    closing: list[Chat], depth: int
) -> None:
    deep = "[" * depth + "]" * depth  # 500 parses, then broke every recursive walk after it
    args = '{"manager": "Part", "fields": ["name"], "filters": ' + deep + "}"
    chat, _ = chat_with([{"tool_calls": [{"name": "query", "args": args}]}, {"text": "Sorry."}])
    closing.append(chat)
    turn = await chat.ask("Which parts?")
    assert [e["type"] for e in turn.events] == ["tool_call", "tool_result", "text_chunk", "done"]
    assert turn.events[1]["result"]["code"] == "invalid_arguments"
    assert "nest JSON" in turn.events[1]["result"]["message"]

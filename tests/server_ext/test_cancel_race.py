"""A cancel tells the truth (issue 38): two real `jupyter server`s on one store — a SQLite file
both share, or a PostgreSQL database — a turn admitted on the first, and its cancel sent after
0, 50, 100, … ms to the server that runs it and to the other one. For every instant the answer
agrees with the turn's one terminal event in the journal: ``cancelled`` only when the turn ended
``interrupted``, ``too_late`` when it ended otherwise, ``pending`` (202) only while the turn had
not ended yet — and then it ends ``interrupted``.

Before, a cancel sent to the server that did not run the turn answered ``cancelled`` as soon as
the command was stored, while the turn ran on to ``done`` (on SQLite no cancel reached the other
process at all during a turn's last model request; on PostgreSQL a turn's end written just after
the command still won)."""

from __future__ import annotations

import asyncio
import os
import signal
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gmchat_nb.core.store import ChatStore

from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server
from .test_durable import chat
from .test_openapi import CANCEL, validated

SEARCH = {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]}
# A model that streams slowly: six chunks, 0.1 s apart, after a search (~0.7 s a turn).
ANSWER = {"chunks": [f"part{i} " for i in range(6)], "chunk_delay_seconds": 0.1}
ROUNDS = [SEARCH, ANSWER] * 200
INSTANTS_MS = range(0, 1000, 50)  # from at once to well after the turn's end
FINAL = ("done", "failed", "interrupted")


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[list[Server]]:
    home = tmp_path_factory.mktemp("cancel-race")
    store = store_for(home)
    servers: list[Server] = []
    try:
        for name in ("a", "b"):
            servers.append(Server(home / name, ROUNDS, store=store, keepalive_seconds=0.3))
        yield servers
    finally:
        for server in servers:
            server.stop()


async def terminal_events(store: str, conversation_id: str, turn_id: str) -> list[dict[str, Any]]:
    """The turn's terminal events once the store has it ended (a deadline of 30 s)."""
    with ChatStore(store) as stored:
        for _ in range(600):
            turn = stored.turn(conversation_id, turn_id)
            if turn is not None and turn.state in FINAL:
                events = stored.events(conversation_id, turn_id=turn_id)
                return [event for event in events if event["type"] in ("done", "error")]
            await asyncio.sleep(0.05)
    raise AssertionError(f"turn {turn_id} never ended")


async def cancel_at(
    client: httpx.AsyncClient, runner: Server, canceller: Server, delay_ms: int
) -> tuple[int, dict[str, Any], list[dict[str, Any]], str]:
    """Admit a turn on ``runner``, cancel it on ``canceller`` ``delay_ms`` after the admission
    answered; the cancel's status and body, the turn's terminal events, its final state."""
    created = await client.post(chat(runner) + "conversations/", json={})
    conversation = created.json()["conversation"]["id"]
    turn_id = f"race-{uuid.uuid4().hex[:8]}"
    body = {"conversation_id": conversation, "turn_id": turn_id, "text": "List parts"}
    admitted = await client.post(chat(runner) + "turns/", json=body)
    assert admitted.status_code == 202, admitted.text
    await asyncio.sleep(delay_ms / 1000)  # the instant under test, not a wait for a condition
    url = chat(canceller) + f"conversations/{conversation}/turns/{turn_id}/cancel"
    answer = await client.post(url, json={"command_id": f"stop-{delay_ms}"})
    ends = await terminal_events(runner.store, conversation, turn_id)
    with ChatStore(runner.store) as stored:
        record = stored.turn(conversation, turn_id)
    assert record is not None
    return answer.status_code, answer.json(), ends, record.state


def agrees(status: int, answer: dict[str, Any], ends: list[dict[str, Any]], state: str) -> bool:
    """Whether the cancel's answer says what the journal says."""
    if len(ends) != 1:
        return False
    interrupted = ends[0]["type"] == "error" and ends[0]["code"] == "interrupted"
    if answer["result"] == "pending":
        return status == 202 and answer["state"] not in FINAL and interrupted
    if status != 200 or answer["state"] != state:
        return False
    if answer["result"] == "cancelled":
        return interrupted and state == "interrupted"
    return answer["result"] == "too_late" and not interrupted and state != "interrupted"


@pytest.mark.parametrize("where", ["same server", "other server"])
async def test_a_cancel_answers_what_the_journal_says_at_every_instant(
    pair: list[Server], where: str
) -> None:
    runner = pair[0]
    canceller = pair[0] if where == "same server" else pair[1]
    seen: list[tuple[int, str, str]] = []
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as client:
        for delay_ms in INSTANTS_MS:
            status, answer, ends, state = await cancel_at(client, runner, canceller, delay_ms)
            outcome = (delay_ms, answer["result"], state)
            assert agrees(status, answer, ends, state), (outcome, status, answer, ends)
            seen.append(outcome)
    print(f"{where}: " + ", ".join(f"{ms} ms {result}" for ms, result, _ in seen))
    results = [result for _, result, _ in seen]
    # the race was run on both sides of the turn's end: early cancels stop it, late ones are late
    assert results[0] == "cancelled" and results[-1] == "too_late", seen


async def test_a_cancel_whose_turn_outlives_the_wait_is_pending_then_interrupted(
    pair: list[Server],
) -> None:
    """The server running the turn is frozen (SIGSTOP) while another one is asked to cancel it:
    the answer waits its 5 s, then says ``pending`` (202) with the turn still ``running`` — not
    ``cancelled``. Thawed, the turn's server finds the command and ends it ``interrupted``;
    the same command again answers ``duplicate`` with that end."""
    runner, canceller = pair
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as client:
        created = await client.post(chat(runner) + "conversations/", json={})
        conversation = created.json()["conversation"]["id"]
        body = {"conversation_id": conversation, "turn_id": "frozen", "text": "List parts"}
        assert (await client.post(chat(runner) + "turns/", json=body)).status_code == 202
        with ChatStore(runner.store) as stored:
            for _ in range(600):  # until its answer streams
                if any(e["type"] == "text_chunk" for e in stored.events(conversation)):
                    break
                await asyncio.sleep(0.05)
        url = chat(canceller) + f"conversations/{conversation}/turns/frozen/cancel"
        os.kill(runner.process.pid, signal.SIGSTOP)
        try:
            answer = await client.post(url, json={"command_id": "stop-frozen"})
        finally:
            os.kill(runner.process.pid, signal.SIGCONT)
        pending = validated(answer, CANCEL, valid_request=True)
        assert answer.status_code == 202
        assert (pending["result"], pending["state"]) == ("pending", "running")
        ends = await terminal_events(runner.store, conversation, "frozen")
        assert [(end["type"], end.get("code")) for end in ends] == [("error", "interrupted")]
        assert "cancelled (command stop-frozen)" in ends[0]["message"]
        again = await client.post(url, json={"command_id": "stop-frozen"})
        assert again.status_code == 200
        assert (again.json()["result"], again.json()["state"]) == ("duplicate", "interrupted")

"""Two real `jupyter server`s on one store — a hub's PostgreSQL database, or a SQLite file two
servers of one machine share — as an outside tester tried them (issue 22): a turn runs once
whichever server its retries reach, a turn id names one turn of a user whatever conversation a
retry names, every turn ends once, followers see a turn while it streams, and a dead server's
turn is taken over by the survivor (run on when it only read, closed after a data change).

Clients are httpx; "another host" is a server in a UTS namespace of its own (``unshare``), so the
survivor cannot see its process and must go by its lease."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from gmchat_nb.core.store import ChatStore

from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server
from .test_durable import chat, http, new_conversation, read_frames

SEARCH = {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]}
ANSWER = {"chunks": ["Parts ", "are ", "listed."], "delay_seconds": 0.5}
ROUNDS = [SEARCH, ANSWER] * 40
LEASE = 2.0  # the servers' lease: a dead one's turn is taken over within ~3 s
# How long the survivor may stay silent before the take-over counts as never happening: only a
# hang, never a loaded machine, fails it (how soon it happens is a measure, not an assertion).
TAKEOVER_DEADLINE = 30 * LEASE


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[list[Server]]:
    """Two servers of one user on one store."""
    home = tmp_path_factory.mktemp("pair")
    store = store_for(home)
    servers: list[Server] = []
    try:
        for name in ("a", "b"):
            options = {"store": store, "lease_seconds": LEASE, "keepalive_seconds": 0.3}
            servers.append(Server(home / name, ROUNDS, **options))
        yield servers
    finally:
        for server in servers:
            server.stop()


def turns_url(server: Server) -> str:
    return chat(server) + "turns/"


async def admit_many(
    servers: list[Server], bodies: list[dict[str, Any]], times: int
) -> list[httpx.Response]:
    """``times`` admissions at once, spread over the servers and bodies in turn."""
    async with httpx.AsyncClient(timeout=30, headers=AUTH) as client:
        return list(
            await asyncio.gather(
                *(
                    client.post(turns_url(servers[i % len(servers)]), json=bodies[i % len(bodies)])
                    for i in range(times)
                )
            )
        )


def journal(server: Server, conversation_id: str) -> list[dict[str, Any]]:
    with ChatStore(server.store) as store:
        return [
            {**entry.payload, "position": entry.position, "turn_id": entry.turn_id}
            for entry in store.journal_after(conversation_id, 0, limit=10_000)
        ]


def one_run(events: list[dict[str, Any]]) -> list[str]:
    return [event["type"] for event in events]


async def test_fifty_admissions_over_two_servers_run_the_turn_once(pair: list[Server]) -> None:
    conversation = new_conversation(pair[0])
    body = {"conversation_id": conversation, "turn_id": f"hub-{uuid.uuid4().hex}", "text": "Hi"}
    answers = await admit_many(pair, [body], 50)
    assert {response.status_code for response in answers} == {202}
    assert {response.json()["conversation_id"] for response in answers} == {conversation}
    assert {response.json()["sequence"] for response in answers} == {0}
    frames = await read_frames(pair[1], conversation, after=0)
    assert one_run([event for _, event in frames]) == [
        "tool_call", "tool_result", "text_chunk", "text_chunk", "text_chunk", "done",
    ]  # fmt: skip
    await asyncio.sleep(1.0)  # a second run would have journaled by now
    assert len(journal(pair[0], conversation)) == 6
    with ChatStore(pair[0].store) as store:
        questions = [m for m in store.messages(conversation) if m.role == "user"]
        assert len(questions) == 1
    for server in pair:
        assert "already journaled a different event" not in server.log.read_text()


async def test_a_turn_id_names_one_turn_of_a_user_in_whichever_conversation(
    pair: list[Server],
) -> None:
    first, second = new_conversation(pair[0]), new_conversation(pair[1])
    turn_id = f"one-{uuid.uuid4().hex}"
    bodies = [{"conversation_id": cid, "turn_id": turn_id, "text": "Hi"} for cid in (first, second)]
    answers = await admit_many(pair, bodies, 20)
    admitted = [response for response in answers if response.status_code == 202]
    refused = [response for response in answers if response.status_code != 202]
    assert len({response.json()["conversation_id"] for response in admitted}) == 1
    assert {(r.status_code, r.json()["error"]) for r in refused} == {(409, "turn_conflict")}
    assert len(admitted) == len(refused) == 10  # each conversation's retries agree
    winner = admitted[0].json()["conversation_id"]
    loser = second if winner == first else first
    frames = await read_frames(pair[0], winner, after=0)
    assert frames[-1][1]["type"] == "done"
    assert journal(pair[0], loser) == []
    body = {"turn_id": turn_id, "text": "Hi"}
    retried = await http("POST", turns_url(pair[1]), json=body, headers=AUTH)
    assert retried.status_code == 202 and retried.json()["conversation_id"] == winner


def test_a_fresh_user_s_first_turn_makes_one_conversation_on_a_hub(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """No conversation named, on a store where this user has none: both servers admit the turn
    into the one conversation the first admission made."""
    home = tmp_path_factory.mktemp("fresh")
    store = store_for(home)
    servers = [Server(home / name, ROUNDS, store=store, owner="newcomer") for name in "ab"]
    try:
        body = {"turn_id": "first-question", "text": "Which parts are there?"}
        answers = asyncio.run(admit_many(servers, [body], 20))
        assert {response.status_code for response in answers} == {202}
        conversations = {response.json()["conversation_id"] for response in answers}
        assert len(conversations) == 1
        listed = httpx.get(chat(servers[1]) + "conversations/", headers=AUTH).json()
        assert [item["id"] for item in listed["conversations"]] == list(conversations)
        assert listed["conversations"][0]["title"] == "Which parts are there?"
    finally:
        for server in servers:
            server.stop()


async def ended(store: str, conversation_id: str, turn_id: str) -> None:
    """Wait until the turn is in a final state in the store."""
    with ChatStore(store) as stored:
        for _ in range(300):
            turn = stored.turn(conversation_id, turn_id)
            if turn is not None and turn.state in ("done", "failed", "interrupted"):
                return
            await asyncio.sleep(0.05)
    raise AssertionError(f"turn {turn_id} never ended")


async def test_every_turn_ends_once_after_admissions_raced(pair: list[Server]) -> None:
    """The outside tester's race left a loser's row running, which the next turn on that
    server closed again (a second terminal event). After racing admissions and a next turn on
    each server, each turn of the conversation has exactly one terminal event."""
    conversation = new_conversation(pair[0])
    for round_ in range(2):
        body = {"conversation_id": conversation, "turn_id": f"race-{round_}", "text": "Hi"}
        await admit_many(pair, [body], 20)
        await ended(pair[0].store, conversation, f"race-{round_}")
    for server in pair:
        body = {"conversation_id": conversation, "text": "And now?"}
        answered = await http("POST", chat(server), json=body, headers=AUTH)
        assert answered.json()["events"][-1]["type"] == "done"
    events = journal(pair[0], conversation)
    ends: dict[str, int] = {}
    for event in events:
        if event["type"] in ("done", "error"):
            ends[event["turn_id"]] = ends.get(event["turn_id"], 0) + 1
    assert len(ends) == 4 and set(ends.values()) == {1}
    with ChatStore(pair[0].store) as store:
        assert store.turns(state="running", conversation_id=conversation) == []


SLOW_ANSWER = {"chunks": [f"w{i} " for i in range(120)], "chunk_delay_seconds": 0.05}


async def test_followers_see_a_turn_while_it_streams_on_either_server(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """A 120-chunk answer streamed over ~6 s: its first chunks reach a reader of the events
    route — on the server running it and on the other one — seconds before its end, not all
    at once when it ended."""
    home = tmp_path_factory.mktemp("followers")
    store = store_for(home)
    pair = [Server(home / name, [SLOW_ANSWER], store=store, keepalive_seconds=0.3)
            for name in "ab"]  # fmt: skip
    try:
        conversation = new_conversation(pair[0])
        slow = {"conversation_id": conversation, "turn_id": "slow", "text": "Tell me slowly"}
        arrivals: dict[str, list[tuple[float, str]]] = {}
        following = {name: asyncio.Event() for name in "ab"}

        async def follow(server: Server, name: str) -> None:
            url = chat(server) + f"conversations/{conversation}/events"
            seen = arrivals.setdefault(name, [])
            async with (
                httpx.AsyncClient(timeout=60, headers=AUTH) as client,
                client.stream("GET", url, params={"after": "0"}) as response,
            ):
                following[name].set()  # (the stream is open: its headers came with a keepalive)
                async for line in response.aiter_lines():
                    if line.startswith("event: "):
                        seen.append((time.monotonic(), line[len("event: ") :]))
                        if seen[-1][1] in ("done", "error"):
                            return

        readers = [
            asyncio.create_task(follow(server, name))
            for server, name in zip(pair, "ab", strict=True)
        ]
        # both readers are following before the turn starts (a deadline only for a hang)
        await asyncio.wait_for(asyncio.gather(*(event.wait() for event in following.values())), 60)
        admitted = await http("POST", turns_url(pair[0]), json=slow, headers=AUTH)
        assert admitted.status_code == 202
        await asyncio.wait_for(asyncio.gather(*readers), 60)
        for name, seen in arrivals.items():
            chunks = [at for at, kind in seen if kind == "text_chunk"]
            assert seen[-1][1] == "done" and len(chunks) == 120, name
            assert seen[-1][0] - chunks[0] > 4.0, f"{name}: the answer arrived all at once"
            assert chunks[60] - chunks[0] > 2.0, name
    finally:
        for server in pair:
            server.stop()


CREATE = {"name": "mutate", "args": {"mutation": "createPart", "input": {"name": "Hub"}}}


@pytest.mark.parametrize("effect", [False, True], ids=["reads", "after a mutation"])
async def test_a_dead_server_s_turn_is_taken_over_by_the_survivor(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor, effect: bool
) -> None:
    """A server on another host dies (kill -9) in a turn's pause; the survivor cannot see its
    process, so it waits for its lease to lapse (never for ever), then runs on a turn that only
    read — one terminal event, the retry on the survivor is that turn — or closes one that may
    have changed data, its outcome unknown."""
    home = tmp_path_factory.mktemp("takeover")
    store = store_for(home)
    first_rounds = [{"tool_calls": [CREATE]} if effect else SEARCH, {**ANSWER, "delay_seconds": 30}]
    settings: dict[str, Any] = {"store": store, "lease_seconds": LEASE, "keepalive_seconds": 0.3}
    if effect:
        settings["chat_settings"] = {"allowed_mutations": ["createPart"]}
    dying = Server(home / "a", first_rounds, hostname="other-host", **settings)
    survivor = Server(home / "b", [SEARCH, ANSWER], **settings)
    try:
        conversation = new_conversation(dying)
        body = {"conversation_id": conversation, "turn_id": "orphan", "text": "List parts"}
        assert (await http("POST", turns_url(dying), json=body, headers=AUTH)).status_code == 202
        early = await read_frames(survivor, conversation, after=0, stop_after=2)
        assert [event["type"] for _, event in early] == ["tool_call", "tool_result"]
        dying.kill()
        retried = await http("POST", turns_url(survivor), json=body, headers=AUTH)
        assert retried.status_code == 202 and retried.json()["state"] == "running"
        rest = await read_frames(survivor, conversation, after=2, idle_seconds=TAKEOVER_DEADLINE)
        ends = [event for _, event in rest if event["type"] in ("done", "error")]
        assert ends, f"the survivor never took the dead server's turn over: {rest}"
        assert len(ends) == 1
        if effect:
            assert ends[0]["code"] == "interrupted"
            with ChatStore(store) as stored:
                assert stored.turn(conversation, "orphan").state == "interrupted"  # type: ignore[union-attr]
        else:
            assert [event["type"] for _, event in rest][-4:] == [
                "text_chunk", "text_chunk", "text_chunk", "done",
            ]  # fmt: skip
            assert [frame_id for frame_id, _ in early + rest] == list(range(1, 3 + len(rest)))
        again = await http("POST", turns_url(survivor), json=body, headers=AUTH)
        assert again.json()["state"] == ("interrupted" if effect else "done")
        assert (
            await read_frames(survivor, conversation, after=2 + len(rest), idle_seconds=1.5) == []
        )
    finally:
        dying.stop()
        survivor.stop()


TITANIUM = {"manager": "Part", "fields": ["name"], "filters": {"material__name": "Titanium"}}
KNOWING = [{"tool_calls": [{"name": "query", "args": TITANIUM}]}, {"text": "Titanium parts."}] * 5


def test_two_users_servers_on_one_store_never_see_each_other_s_personal_knowledge(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """A hub's two users, each on their own server over the one store: each sees the project's
    shared knowledge and only their own personal entries — listed, read, changed, deleted,
    recalled — and "delete all mine" deletes only the caller's."""
    home = tmp_path_factory.mktemp("knowledge")
    store = store_for(home)
    alice, bob = (
        Server(home / name, KNOWING, store=store, owner=name) for name in ("alice", "bob")
    )
    try:

        def call(server: Server, method: str, route: str, body: Any = None) -> httpx.Response:
            url = chat(server) + route
            return httpx.request(method, url, json=body, headers=AUTH, timeout=60)

        note = call(alice, "POST", "knowledge/", {"kind": "note", "text": "titanium in EUR"})
        verified = call(alice, "POST", "knowledge/", {
            "kind": "verified_query", "name": "my titanium", "question": "Titanium parts?",
            "calls": [{"tool": "query", "arguments": TITANIUM}], "scope": "personal",
        })  # fmt: skip
        shared = call(alice, "POST", "knowledge/", {"kind": "definition", "term": "titanium parts",
                      "text": "parts whose material is titanium"})  # fmt: skip
        assert [r.status_code for r in (note, verified, shared)] == [201, 201, 201]
        ids = {name: r.json()["id"] for name, r in zip(("note", "vq", "def"), (note, verified, shared),
                                                       strict=True)}  # fmt: skip
        assert note.json()["owner"] == "alice"

        listed = call(bob, "GET", "knowledge/").json()["items"]
        assert [item["id"] for item in listed] == [ids["def"]]
        for entry_id in (ids["note"], ids["vq"]):
            for method, body in (("GET", None), ("PATCH", {"text": "bob's now"}), ("DELETE", None)):
                refused = call(bob, method, f"knowledge/{entry_id}", body)
                assert (refused.status_code, refused.json()["code"]) == (404, "not_found")
        mine = call(bob, "POST", "knowledge/", {"kind": "note", "text": "titanium parts in USD"})
        assert mine.status_code == 201 and mine.json()["owner"] == "bob"

        bob_turn = call(bob, "POST", "", {"text": "Which titanium parts are there, in EUR?"})
        recalled = [item["id"] for item in bob_turn.json()["events"][0]["items"]]
        assert ids["note"] not in recalled and ids["vq"] not in recalled
        assert mine.json()["id"] in recalled and ids["def"] in recalled
        alice_turn = call(alice, "POST", "", {"text": "Which titanium parts are there, in EUR?"})
        recalled = [item["id"] for item in alice_turn.json()["events"][0]["items"]]
        assert ids["note"] in recalled and mine.json()["id"] not in recalled
        assert alice_turn.json()["events"][-1]["trusted"] == {
            "id": ids["vq"],
            "name": "my titanium",
        }
        assert "trusted" not in bob_turn.json()["events"][-1]

        assert call(bob, "DELETE", "knowledge/?mine=true").json() == {"removed": 1}
        left = [item["id"] for item in call(alice, "GET", "knowledge/").json()["items"]]
        assert left == [ids["note"], ids["vq"], ids["def"]]
    finally:
        alice.stop()
        bob.stop()

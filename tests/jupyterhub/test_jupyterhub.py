"""gmchat_nb on a real JupyterHub: two users whose single-user servers load the extension on one
PostgreSQL store. Through the hub's proxy each user sees only their own conversations and
personal knowledge; a user's turn survives the hub stopping that user's server — handed over,
and taken over by that user's next server exactly once — and the other user's server, sweeping
the same store all along, never touches it."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from gmchat_nb.core.store import ChatStore

from ..postgresql import fresh_schema
from ..test_readme import README, README_DATABASE
from .hub import Hub

SEARCH = {"tool_calls": [{"name": "search_managers", "args": {"query": "parts"}}]}
ANSWER = {"chunks": ["Parts ", "are ", "listed."], "delay_seconds": 6.0}
LEASE = 2.0


README_LEASE = "--GMChat.lease_seconds=15"


def readme_hub_config(store: str) -> str:
    """The documentation's ``jupyterhub_config.py`` lines (docs/server.md), on the tests' store
    and with the tests' shorter lease (a trait given twice on a command line is not taken)."""
    blocks = re.findall(r"^```python\n(# jupyterhub_config\.py.*?)^```", README, re.M | re.S)
    assert len(blocks) == 1, "the documentation shows one jupyterhub_config.py"
    assert README_DATABASE in blocks[0] and README_LEASE in blocks[0]
    config = str(blocks[0]).replace(README_DATABASE, store)
    return config.replace(README_LEASE, f"--GMChat.lease_seconds={LEASE}")


@pytest.fixture
def hub(tmp_path: Path, postgresql_server: str) -> Iterator[tuple[Hub, str]]:
    """A hub configured as the README says, whose users' servers share one PostgreSQL store
    (the README's store is the tests' server); (hub, store URL)."""
    rounds = tmp_path / "rounds.yaml"
    rounds.write_text(yaml.safe_dump([SEARCH, ANSWER] * 5))
    with fresh_schema(postgresql_server) as store:
        running = Hub(
            tmp_path / "hub",
            config=readme_hub_config(store),
            server_args=[
                f"--GMChat.provider=scripted:{rounds}",
                "--GMChat.project=demo",
                "--GMChat.keepalive_seconds=0.3",
            ],
            environment={},
        )
        try:
            yield running, store
        finally:
            running.stop()


class User:
    """One hub user's client: their token, their server's chat routes through the proxy."""

    def __init__(self, hub: Hub, name: str) -> None:
        self.name = name
        self.headers = {"Authorization": f"token {hub.add_user(name)}"}
        self.chat = f"{hub.url}user/{name}/gmchat/chat/"

    def call(self, method: str, route: str, body: Any = None) -> httpx.Response:
        return httpx.request(method, self.chat + route, json=body, headers=self.headers, timeout=30)

    def frames(self, conversation: str, after: int, seconds: float = 30.0) -> list[dict[str, Any]]:
        """The conversation's journal after ``after`` until a terminal event."""
        found: list[dict[str, Any]] = []
        url = self.chat + f"conversations/{conversation}/events"
        with httpx.stream(
            "GET", url, params={"after": str(after)}, headers=self.headers, timeout=seconds
        ) as response:
            assert response.status_code == 200, response.read()
            for line in response.iter_lines():
                if line.startswith("data: "):
                    found.append(json.loads(line[len("data: ") :]))
                    if found[-1]["type"] in ("done", "error"):
                        return found
        return found


def test_each_user_s_turn_lives_on_their_own_servers_only(hub: tuple[Hub, str]) -> None:
    running, store = hub
    alice, bob = User(running, "alice"), User(running, "bob")
    running.start("alice")
    running.start("bob")

    created = alice.call("POST", "conversations/", {"title": "Alice's"})
    assert created.status_code == 201
    conversation = created.json()["conversation"]["id"]
    assert bob.call("GET", "conversations/").json()["conversations"] == []
    foreign = bob.call("GET", f"conversations/{conversation}/events")
    assert foreign.status_code == 404  # bob's server does not know it exists
    stolen = httpx.get(alice.chat + "conversations/", headers=bob.headers, timeout=30)
    assert stolen.status_code == 403  # the hub keeps bob's token off alice's server

    body = {"conversation_id": conversation, "turn_id": "alice-1", "text": "List parts"}
    assert alice.call("POST", "turns/", body).status_code == 202
    early = _first(alice, conversation, 2)
    assert [event["type"] for event in early] == ["tool_call", "tool_result"]

    running.stop_server("alice")  # in the turn's pause: the hub stops alice's server
    with ChatStore(store) as stored:
        handed = stored.turn(conversation, "alice-1")
        assert handed is not None and handed.state == "running"  # not closed: handed over
        assert handed.lease_expires_at == 0 and handed.scope == "hub:alice"
    time.sleep(3 * LEASE)  # bob's server sweeps the store meanwhile: never alice's turns
    with ChatStore(store) as stored:
        assert stored.turn(conversation, "alice-1") == handed

    running.start("alice")  # her next server takes the turn over and runs it on
    rest = alice.frames(conversation, 2)
    assert [event["type"] for event in rest][-4:] == [
        "text_chunk", "text_chunk", "text_chunk", "done",
    ]  # fmt: skip
    assert [event["sequence"] for event in early + rest] == list(range(1, 3 + len(rest)))
    again = alice.call("POST", "turns/", body)
    assert again.status_code == 202 and again.json()["state"] == "done"
    with ChatStore(store) as stored:
        journal = stored.events(conversation, turn_id="alice-1")
        assert [event["type"] for event in journal].count("done") == 1
        assert not any(event["type"] == "error" for event in journal)
        taken = stored.turn(conversation, "alice-1")
        assert taken is not None and ":alice/" in taken.owner  # the owner names the hub user
    assert bob.call("GET", "conversations/").json()["conversations"] == []
    _personal_knowledge_is_each_user_s_own(alice, bob)


def _personal_knowledge_is_each_user_s_own(alice: User, bob: User) -> None:
    """Through the hub's proxy, on the one store: bob sees alice's shared definition but not
    her personal note — listed, read, changed or deleted, her note's id is as unknown to him as
    an id that never existed — and his "delete all mine" deletes his note only."""
    note = alice.call("POST", "knowledge/", {"kind": "note", "text": "amounts in EUR"})
    definition = alice.call(
        "POST", "knowledge/", {"kind": "definition", "term": "active", "text": "status active"}
    )
    assert (note.status_code, definition.status_code) == (201, 201)
    assert note.json()["owner"] == "alice"  # the hub user, whichever surface she uses
    listed = bob.call("GET", "knowledge/").json()["items"]
    assert [item["id"] for item in listed] == [definition.json()["id"]]
    for method, body in (("GET", None), ("PATCH", {"text": "mine"}), ("DELETE", None)):
        answer = bob.call(method, f"knowledge/{note.json()['id']}", body)
        assert (answer.status_code, answer.json()["code"]) == (404, "not_found")
    assert bob.call("POST", "knowledge/", {"kind": "note", "text": "in USD"}).status_code == 201
    assert bob.call("DELETE", "knowledge/?mine=true").json() == {"removed": 1}
    left = alice.call("GET", "knowledge/").json()["items"]
    assert [item["id"] for item in left] == [note.json()["id"], definition.json()["id"]]


def _first(user: User, conversation: str, count: int) -> list[dict[str, Any]]:
    """The first ``count`` events of the conversation, read as they are written."""
    found: list[dict[str, Any]] = []
    url = user.chat + f"conversations/{conversation}/events"
    with httpx.stream(
        "GET", url, params={"after": "0"}, headers=user.headers, timeout=30
    ) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                found.append(json.loads(line[len("data: ") :]))
                if len(found) >= count:
                    return found
    return found

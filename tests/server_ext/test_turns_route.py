"""A conversation's turns over HTTP, against real `jupyter server` processes (httpx and the
`websockets` library as clients), on a SQLite file and on PostgreSQL:
``GET {url}conversations/{id}/turns/``.

Every route that runs a turn — ``POST turns/``, ``POST {url}``, ``stream/``, the WebSocket, and
``confirm/`` resuming a suspended turn — leaves one turn in the list, with its question, under
the turn id its events carry in the journal, in the journal's order (what the side panel groups
by); ``latest_sequence`` is the journal's last position. Refusals: an unknown or foreign
conversation (exactly the events route's answer), ids no store could hold (a 404, never a 5xx),
no credentials. A turn an old store journaled without a turns row is listed from its events.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from websockets.sync.client import connect

from gmchat_nb.core.store import ChatStore

from .conftest import CREATE, StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

# One conversation's model, turn by turn: four plain answers, then a mutation to confirm and
# the answer after it.
ROUNDS: list[dict[str, Any]] = [
    {"text": "One."},
    {"text": "Two."},
    {"text": "Three."},
    {"text": "Four."},
    {"tool_calls": [CREATE]},
    {"text": "Added Spring."},
] * 3
SETTINGS = {"allowed_mutations": ["createPart"], "confirm_mutations": ["createPart"]}
BAD_IDS = ["x" * 5000, "has space", "%", "..%2F", "\ud800", "\udfff-tail", "\x00", "'; --", "ü"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("turns-route")
    running = Server(
        home, ROUNDS, keepalive_seconds=0.3, store=store_for(home), chat_settings=SETTINGS
    )
    yield running
    running.stop()


def new_conversation(server: Server) -> str:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    assert created.status_code == 201
    return str(created.json()["conversation"]["id"])


def turns(server: Server, conversation_id: str) -> httpx.Response:
    url = server.chat_url + f"conversations/{conversation_id}/turns/"
    return httpx.get(url, headers=AUTH, timeout=30)


def journal(server: Server, conversation_id: str, *, ends: int) -> list[dict[str, Any]]:
    """The conversation's journal from its start until ``ends`` turns ended (or a pending
    confirmation is the last frame, which counts as an end)."""
    url = server.chat_url + f"conversations/{conversation_id}/events"
    frames: list[dict[str, Any]] = []
    with httpx.stream("GET", url, headers=AUTH, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
                ended = [f for f in frames if f["type"] in ("done", "error", "confirm_mutation")]
                if len(ended) >= ends:
                    return frames
    raise AssertionError(frames)


def grouped(frames: list[dict[str, Any]]) -> list[str]:
    """The turn ids of the journal in the order of their first frame (the panel's turns)."""
    return list(dict.fromkeys(frame["turn_id"] for frame in frames))


def test_every_route_s_turn_is_listed_as_the_journal_groups_it(server: Server) -> None:
    conversation = new_conversation(server)
    assert turns(server, conversation).json() == {
        "conversation_id": conversation,
        "latest_sequence": 0,
        "turns": [],
    }
    admitted = f"first-{uuid.uuid4().hex}"
    body = {"conversation_id": conversation, "turn_id": admitted, "text": "First, durable"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    journal(server, conversation, ends=1)
    plain = {"text": "Second, plain HTTP", "conversation_id": conversation}
    assert httpx.post(server.chat_url, json=plain, headers=AUTH, timeout=30).json()["answer"] == (
        "Two."
    )
    streamed = {"text": "Third, streamed", "conversation_id": conversation}
    answer = httpx.post(server.chat_url + "stream/", json=streamed, headers=AUTH, timeout=30)
    assert answer.status_code == 200 and '"done"' in answer.text
    with connect(server.ws_url, additional_headers=AUTH, open_timeout=10) as ws:
        ws.send(json.dumps({"type": "message", "text": "Fourth, socket",
                            "conversation_id": conversation}))  # fmt: skip
        while json.loads(ws.recv(timeout=30))["type"] != "done":
            pass
    mutating = f"fifth-{uuid.uuid4().hex}"
    body = {"conversation_id": conversation, "turn_id": mutating, "text": "Add a spring"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    frames = journal(server, conversation, ends=5)
    assert frames[-1]["type"] == "confirm_mutation"

    listed = turns(server, conversation)
    assert listed.status_code == 200 and listed.headers["content-type"].startswith(
        "application/json"
    )
    suspended = listed.json()
    assert suspended["latest_sequence"] == frames[-1]["sequence"]
    assert [turn["turn_id"] for turn in suspended["turns"]] == grouped(frames)
    assert [turn["turn_id"] for turn in suspended["turns"]][0::4] == [admitted, mutating]
    assert [(turn["text"], turn["state"]) for turn in suspended["turns"]] == [
        ("First, durable", "done"),
        ("Second, plain HTTP", "done"),
        ("Third, streamed", "done"),
        ("Fourth, socket", "done"),
        ("Add a spring", "suspended"),
    ]
    for turn in suspended["turns"]:
        assert set(turn) == {"turn_id", "text", "state", "started_at", "ended_at",
                             "first_sequence", "last_sequence"}  # fmt: skip
        mine = [f["sequence"] for f in frames if f["turn_id"] == turn["turn_id"]]
        assert (turn["first_sequence"], turn["last_sequence"]) == (mine[0], mine[-1])
        assert turn["started_at"] > 0
        assert (turn["ended_at"] is None) == (turn["state"] == "suspended")
    starts = [turn["started_at"] for turn in suspended["turns"]]
    assert starts == sorted(starts)

    # confirm/ resumes the suspended turn under its own id: still five turns
    decision = {
        "conversation_id": conversation,
        "confirmation_id": "call-1",
        "confirmed": True,
        "expected_sequence": frames[-1]["sequence"],
    }
    confirmed = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH, timeout=30)
    assert confirmed.status_code == 200 and confirmed.json()["answer"] == "Added Spring."
    frames = journal(server, conversation, ends=5 + 1)
    done = turns(server, conversation).json()
    assert [turn["turn_id"] for turn in done["turns"]] == grouped(frames)
    assert done["turns"][:4] == suspended["turns"][:4]
    assert (done["turns"][4]["text"], done["turns"][4]["state"]) == ("Add a spring", "done")
    assert done["turns"][4]["last_sequence"] == done["latest_sequence"] == frames[-1]["sequence"]


def path_segment(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


def test_unknown_foreign_and_malformed_conversations_are_the_events_route_s_404(
    server: Server,
) -> None:
    events_of_unknown = httpx.get(server.chat_url + "conversations/nope/events", headers=AUTH)
    assert events_of_unknown.status_code == 404
    unknown = turns(server, "nope")
    assert unknown.status_code == 404 and unknown.json() == events_of_unknown.json()
    assert set(unknown.json()) == {"error", "message"} and unknown.json()["error"] == "bad_event"
    with ChatStore(server.store) as store:  # another user's conversation, with a turn
        foreign = store.create_conversation("jupyter:someone-else", "theirs").id
        store.append_event(foreign, "their-turn", 1, {"type": "text_chunk", "content": "x"})
        store.append_message(foreign, "user", "their question", turn_id="their-turn")
    foreign_events = httpx.get(server.chat_url + f"conversations/{foreign}/events", headers=AUTH)
    assert foreign_events.status_code == 404
    theirs = turns(server, foreign)
    assert (theirs.status_code, theirs.json()) == (404, foreign_events.json())
    assert "their question" not in theirs.text
    for bad in BAD_IDS:
        segment = path_segment(bad)
        answer = turns(server, segment)
        assert answer.status_code == 404, (bad[:40], answer.text)
        assert answer.json() == events_of_unknown.json()
    anonymous = httpx.get(server.chat_url + "conversations/nope/turns/")
    assert anonymous.status_code == 403
    log = Path(server.log).read_text()
    assert "Uncaught exception" not in log and " 500 GET " not in log


def test_a_turn_journaled_without_a_turns_row_is_listed_from_its_events(server: Server) -> None:
    """What an old store holds (events and messages, no turns row): the turn, its question, the
    state its last event says, next to a turn of today."""
    conversation = new_conversation(server)
    with ChatStore(server.store) as store:
        store.append_message(conversation, "user", "An old question", turn_id="old-1")
        store.append_events(
            conversation,
            "old-1",
            [(1, {"type": "text_chunk", "content": "Old."}), (2, {"type": "done", "usage": {}})],
        )
        store.append_events(conversation, "old-2", [(1, {"type": "text_chunk", "content": "?"})])
    body = turns(server, conversation).json()
    assert body["latest_sequence"] == 3
    assert [
        (t["turn_id"], t["text"], t["state"], t["first_sequence"], t["last_sequence"])
        for t in body["turns"]
    ] == [("old-1", "An old question", "done", 1, 2), ("old-2", None, "unknown", 3, 3)]
    assert body["turns"][0]["ended_at"] is not None and body["turns"][1]["ended_at"] is None

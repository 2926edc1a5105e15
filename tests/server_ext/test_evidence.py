"""A turn's evidence over HTTP, against real `jupyter server` processes (httpx as the client), on
a SQLite file and on PostgreSQL: ``GET {url}conversations/{id}/turns/{turn_id}/evidence``.

A turn admitted with ``POST turns/`` and followed to its end gives one row per query that
returned rows; a row's document and variables, run on the demo project, give the tool_result's
rows, and its ``code`` cell run in an async function returns a DataFrame of them; the row is the
one the widget's evidence panel shows for the same turn. A server that did not run the turn (one
sharing the store) answers the same, leaving out a query of a manager it hides. Refusals: an
unknown or foreign conversation (as the events route answers it), an unknown turn, ids no
store could hold; a running turn shows the queries it finished.
"""

from __future__ import annotations

import json
import socket
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pandas as pd
import pytest

import gmchat_nb
from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore
from gmchat_nb.widget import ChatWidget

from ..adversarial import EXPOSED, leaked
from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

COPPER = {
    "manager": "Part",
    "filters": {"material__name": "Copper"},
    "fields": ["name", "quantity", "unitPrice", {"material": ["name"]}],
    "order_by": ["name"],
}
# A conversation's first turn: a query, a search, a query that fails, the first query again
# (the loop guard answers it from before: nothing ran), a direct query tool; then, after a
# pause long enough to read the evidence of a running turn, the answer. Its second turn only
# answers.
READS = [
    {"name": "query", "id": "copper", "args": COPPER},
    {"name": "search_managers", "id": "search", "args": {"query": "parts"}},
    {"name": "query", "id": "failed", "args": {"manager": "Nope", "fields": ["name"]}},
    {"name": "query", "id": "repeat", "args": COPPER},
    {"name": "query_material", "id": "materials", "args": {"fields": ["name"], "limit": 3}},
]
ROUNDS: list[dict[str, Any]] = [
    {"tool_calls": READS},
    {"chunks": ["Five ", "copper parts."], "delay_seconds": 2.0},
    {"text": "Nothing to look up."},
] * 4
SUPPLIERS = {"manager": "Supplier", "fields": ["name"], "order_by": ["name"]}
PARTS = {"manager": "Part", "fields": ["name"], "order_by": ["name"], "limit": 4}
# A turn on a server that exposes every manager: a query of one that EXPOSED hides, and one not.
MIXED: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"name": "query", "id": "suppliers", "args": SUPPLIERS},
            {"name": "query", "id": "parts", "args": PARTS},
        ]
    },
    {"text": "Listed."},
]
KEYS = ["call_id", "manager", "filters", "rows", "total_count", "complete", "document",
        "variables", "code"]  # fmt: skip


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("evidence")
    running = Server(home, ROUNDS, keepalive_seconds=0.3, store=store_for(home))
    yield running
    running.stop()


def new_conversation(server: Server) -> str:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    assert created.status_code == 201
    return str(created.json()["conversation"]["id"])


def admit(server: Server, conversation_id: str, turn_id: str, text: str) -> None:
    body = {"conversation_id": conversation_id, "turn_id": turn_id, "text": text}
    admitted = httpx.post(server.chat_url + "turns/", json=body, headers=AUTH)
    assert admitted.status_code == 202, admitted.text


def evidence_url(server: Server, conversation_id: str, turn_id: str) -> str:
    return server.chat_url + f"conversations/{conversation_id}/turns/{turn_id}/evidence"


def evidence(server: Server, conversation_id: str, turn_id: str) -> httpx.Response:
    return httpx.get(evidence_url(server, conversation_id, turn_id), headers=AUTH, timeout=30)


def follow(server: Server, conversation_id: str, *, until: str = "done") -> list[dict[str, Any]]:
    """The conversation's journal from the events route, until an event of type ``until``."""
    url = server.chat_url + f"conversations/{conversation_id}/events"
    events: list[dict[str, Any]] = []
    with httpx.stream("GET", url, headers=AUTH, timeout=30) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] in (until, "error"):
                    return events
    raise AssertionError(events)


def plain(value: Any) -> Any:
    """``value`` as JSON gives it back (dates and decimals as text)."""
    return json.loads(json.dumps(value, default=str))


async def run_cell(code: str) -> Any:
    """A "Copy as code" cell run as a notebook would (top-level await): its last line's value."""
    body, last = code.rsplit("\n", 1)
    source = "async def cell():\n" + "".join(f"    {line}\n" for line in body.splitlines())
    scope: dict[str, Any] = {}
    exec(source + f"    return {last}\n", scope)
    return await scope["cell"]()


async def test_a_finished_turn_s_evidence_re_runs_its_queries(server: Server) -> None:
    conversation = new_conversation(server)
    turn_id = f"copper-{uuid.uuid4().hex}"
    admit(server, conversation, turn_id, "Which copper parts are there?")
    events = [event for event in follow(server, conversation) if event["turn_id"] == turn_id]
    results = {event["id"]: event for event in events if event["type"] == "tool_result"}

    answer = evidence(server, conversation, turn_id)
    assert answer.status_code == 200 and answer.headers["content-type"].startswith(
        "application/json"
    )
    body = answer.json()
    assert (body["conversation_id"], body["turn_id"]) == (conversation, turn_id)
    # the queries that returned rows, in order: not the search, the failed query or the repeat
    assert [row["call_id"] for row in body["evidence"]] == ["copper", "materials"]
    project = gmchat_nb.demo_project()
    try:
        for row in body["evidence"]:
            assert list(row) == KEYS
            result = results[row["call_id"]]["result"]
            assert row["rows"] == len(result["data"])
            assert (row["total_count"], row["complete"]) == (
                result["total_count"],
                result["complete"],
            )
            assert row["filters"] == row["variables"].get("filter")
            # the document and variables give the rows the turn got
            rerun = await project.rows(row["document"], row["variables"])
            assert plain(rerun) == result["data"]
            frame = await run_cell(row["code"])
            assert isinstance(frame, pd.DataFrame) and len(frame) == len(result["data"])
            assert list(frame["name"]) == [item["name"] for item in result["data"]]
    finally:
        await project.aclose()
    copper, materials = body["evidence"]
    assert (copper["manager"], copper["rows"]) == ("Part", 5)
    assert copper["filters"] == {"material": {"name": "Copper"}}
    assert "project = gmchat_nb.demo_project()" in copper["code"]
    assert (materials["manager"], materials["rows"]) == ("Material", 3)
    assert evidence(server, conversation, turn_id).json() == body  # the same when read again

    # the same turn in the notebook widget: its evidence panel shows the same rows
    widget_rows = await widget_evidence("Which copper parts are there?")
    assert plain(widget_rows) == body["evidence"]


async def widget_evidence(question: str) -> list[dict[str, Any]]:
    """The evidence rows the widget sends at the end of the same scripted turn."""
    chat = Chat(provider=ScriptedProvider({"rounds": ROUNDS[:2]}), store=":memory:")
    widget = ChatWidget(chat, namespace={})
    widget.send = lambda *args, **kwargs: None  # type: ignore[method-assign]  # no front end
    try:
        record = await widget.run_turn(question)
    finally:
        await chat.aclose()
    return list(record["evidence"])


def test_a_running_turn_shows_the_queries_it_finished_and_a_plain_turn_none(
    server: Server,
) -> None:
    conversation = new_conversation(server)
    turn_id = f"running-{uuid.uuid4().hex}"
    admit(server, conversation, turn_id, "Which copper parts are there?")
    follow(server, conversation, until="tool_result")  # the first result is in; more follow
    with ChatStore(server.store) as store:
        assert store.turn(conversation, turn_id).state == "running"  # type: ignore[union-attr]
    early = evidence(server, conversation, turn_id)
    assert early.status_code == 200
    assert [row["call_id"] for row in early.json()["evidence"]] in (
        ["copper"],
        ["copper", "materials"],  # (the rest of its round may be in already)
    )
    events = follow(server, conversation)
    assert events[-1]["type"] == "done"
    done = evidence(server, conversation, turn_id).json()
    assert [row["call_id"] for row in done["evidence"]] == ["copper", "materials"]
    assert done["evidence"][0] == early.json()["evidence"][0]
    # the conversation's next turn asked nothing of the project: no evidence
    second = f"plain-{uuid.uuid4().hex}"
    admit(server, conversation, second, "Thanks")
    follow_turn(server, conversation, second)
    assert evidence(server, conversation, second).json() == {
        "conversation_id": conversation,
        "turn_id": second,
        "evidence": [],
    }


def follow_turn(server: Server, conversation_id: str, turn_id: str) -> None:
    """Wait until ``turn_id`` ended (its terminal event is journaled)."""
    url = server.chat_url + f"conversations/{conversation_id}/events"
    with httpx.stream("GET", url, headers=AUTH, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                event = json.loads(line[6:])
                if event["turn_id"] == turn_id and event["type"] in ("done", "error"):
                    return
    raise AssertionError(f"{turn_id} did not end")


def path_segment(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


BAD_IDS = ["x" * 5000, "has space", "%", "..%2F", "\ud800", "\udfff-tail", "\x00", "'; --", "ü"]


def test_unknown_foreign_and_malformed_ids_are_404(server: Server) -> None:
    conversation = new_conversation(server)
    turn_id = f"known-{uuid.uuid4().hex}"
    admit(server, conversation, turn_id, "Thanks")
    follow_turn(server, conversation, turn_id)

    def refusal(conversation_id: str, turn: str) -> dict[str, Any]:
        response = evidence(server, conversation_id, turn)
        assert response.status_code == 404, (conversation_id[:40], turn[:40], response.text)
        body: dict[str, Any] = response.json()
        assert set(body) == {"error", "message"} and body["error"] == "bad_event"
        return body

    events_of_unknown = httpx.get(server.chat_url + "conversations/nope/events", headers=AUTH)
    assert events_of_unknown.status_code == 404
    assert refusal("nope", turn_id) == events_of_unknown.json()  # as the events route says
    unknown_turn = refusal(conversation, "nope")
    assert unknown_turn["message"] == "No turn with that id in this conversation."
    # another user's conversation, with a turn of its own: exactly the events route's answer
    with ChatStore(server.store) as store:
        foreign = store.create_conversation("jupyter:someone-else", "theirs").id
        store.append_event(foreign, "their-turn", 1, {"type": "text_chunk", "content": "x"})
    foreign_events = httpx.get(server.chat_url + f"conversations/{foreign}/events", headers=AUTH)
    assert foreign_events.status_code == 404
    assert refusal(foreign, "their-turn") == foreign_events.json()
    for bad in BAD_IDS:
        segment = path_segment(bad)
        assert refusal(segment, turn_id)["message"] == events_of_unknown.json()["message"]
        assert refusal(conversation, segment) == unknown_turn
    anonymous = httpx.get(evidence_url(server, conversation, turn_id))
    assert anonymous.status_code == 403
    log = Path(server.log).read_text()
    assert "Uncaught exception" not in log and " 500 GET " not in log


def test_a_server_that_did_not_run_the_turn_answers_without_hidden_managers(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """One server (every manager exposed) runs a turn; another sharing the store, which only
    exposes EXPOSED and never ran it, answers its evidence from the store: the same row for
    the query it may see, nothing of the one it may not."""
    home = tmp_path_factory.mktemp("evidence-shared")
    store = store_for(home)
    first = Server(home / "a", MIXED, store=store)
    try:
        conversation = new_conversation(first)
        admit(first, conversation, "mixed", "List suppliers and parts")
        follow(first, conversation)
        ran = evidence(first, conversation, "mixed").json()["evidence"]
        assert [(row["call_id"], row["manager"]) for row in ran] == [
            ("suppliers", "Supplier"),
            ("parts", "Part"),
        ]
    finally:
        first.stop()  # the server that ran the turn is gone
    second = Server(home / "b", MIXED, store=store, chat_settings={"exposed_managers": EXPOSED})
    try:
        answer = evidence(second, conversation, "mixed")
        assert answer.status_code == 200
        assert answer.json()["evidence"] == [ran[1]]
        assert leaked(answer.text, "") == []
    finally:
        second.stop()


def test_a_server_whose_project_is_down_answers_from_the_journaled_requests(
    tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor
) -> None:
    """Each query journaled the request it sent: a server sharing the store whose project
    cannot be reached (nothing listens at its URL) answers the turn's evidence as it ran."""
    home = tmp_path_factory.mktemp("evidence-down")
    store = store_for(home)
    first = Server(home / "a", MIXED, store=store)
    try:
        conversation = new_conversation(first)
        admit(first, conversation, "mixed", "List suppliers and parts")
        follow(first, conversation)
        ran = evidence(first, conversation, "mixed").json()["evidence"]
    finally:
        first.stop()
    with socket.socket() as probe:  # a port nothing listens on once the probe is closed
        probe.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{probe.getsockname()[1]}/graphql"
    second = Server(home / "b", MIXED, store=store, project=down)
    try:
        answer = evidence(second, conversation, "mixed")
        assert answer.status_code == 200, answer.text
        assert answer.json()["evidence"] == [
            {**row, "code": row["code"].replace("gmchat_nb.demo_project()", connect)}
            for row in ran
            for connect in [f"await gmchat_nb.connect({down!r}, exposed=None)"]
        ]
    finally:
        second.stop()

"""A query result's chart over HTTP, against a real `jupyter server` process (httpx as the client),
on a SQLite file and on PostgreSQL: ``GET {url}conversations/{id}/turns/{turn_id}/chart``.

A turn admitted with ``POST turns/`` queries the demo's copper parts and charts them (the model's
``chart`` call); the route answers, for that query, the columns a chart may use and the suggested
chart, and with the model's intent exactly the chart the turn journaled; a picker's mistake is
the answer's ``error``, as the model would read it; the widget's ``chart_options`` for the same
table is the same body. Refusals: an unknown or foreign conversation (as the events route), an
unknown turn, no query result with that id, and parameters the route does not take (400).
The chart event itself travels in the plain HTTP envelope and a reconnecting WebSocket's replay.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from gmchat_nb import Chat
from gmchat_nb.core.charts import check_spec
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.store import ChatStore
from gmchat_nb.widget import ChatWidget

from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

COPPER = {
    "manager": "Part",
    "filters": {"material__name": "Copper"},
    "fields": ["name", "quantity", "unitPrice", {"material": ["name"]}],
    "order_by": ["name"],
}
DRAWN = {"query": "copper", "mark": "bar", "x": "name", "y": "quantity"}
ROUNDS: list[dict[str, Any]] = [
    {
        "tool_calls": [
            {"name": "query", "id": "copper", "args": COPPER},
            {"name": "search_managers", "id": "search", "args": {"query": "parts"}},
        ]
    },
    {"tool_calls": [{"name": "chart", "id": "drawn", "args": DRAWN}]},
    {"text": "Charted."},
] * 3
KEYS = ["call_id", "columns", "marks", "aggregates", "intent", "chart", "error"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("charts")
    running = Server(home, ROUNDS, keepalive_seconds=0.3, store=store_for(home))
    yield running
    running.stop()


def charted_turn(server: Server) -> tuple[str, str, list[dict[str, Any]]]:
    """A new conversation's turn that queried and charted, followed to its end: (conversation,
    turn, its journaled events)."""
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    conversation = str(created.json()["conversation"]["id"])
    turn_id = f"chart-{uuid.uuid4().hex}"
    body = {"conversation_id": conversation, "turn_id": turn_id, "text": "Chart copper parts"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    events: list[dict[str, Any]] = []
    url = server.chat_url + f"conversations/{conversation}/events"
    with httpx.stream("GET", url, headers=AUTH, timeout=30) as response:
        for line in response.iter_lines():
            if line.startswith("data: "):
                events.append(json.loads(line[6:]))
                if events[-1]["type"] in ("done", "error"):
                    break
    assert events[-1]["type"] == "done", events[-1]
    return conversation, turn_id, events


def chart(
    server: Server, conversation: str, turn_id: str, query: str = "", **params: str
) -> httpx.Response:
    url = server.chat_url + f"conversations/{conversation}/turns/{turn_id}/chart{query}"
    return httpx.get(url, params=params or None, headers=AUTH, timeout=30)


async def test_a_query_s_chart_is_suggested_drawn_as_asked_and_the_widget_s_the_same(
    server: Server,
) -> None:
    conversation, turn_id, events = charted_turn(server)
    journaled = next(event for event in events if event["type"] == "chart")
    assert journaled["evidence_id"] == "copper"

    suggested = chart(server, conversation, turn_id, call_id="copper")
    assert suggested.status_code == 200
    assert suggested.headers["content-type"].startswith("application/json")
    body = suggested.json()
    assert list(body) == KEYS
    assert body["call_id"] == "copper" and body["error"] is None
    kinds = {column["name"]: column["kind"] for column in body["columns"]}
    assert kinds == {
        "name": "nominal",
        "quantity": "quantitative",
        "unitPrice.value": "quantitative",
        "unitPrice.unit": "nominal",
        "material.name": "nominal",
    }
    assert body["marks"] == ["bar", "line", "point", "area", "arc", "histogram"]
    assert body["aggregates"] == ["count", "sum", "mean", "min", "max"]
    assert body["intent"]["mark"] == "bar" and body["intent"]["query"] == "copper"
    drawn = body["chart"]
    assert (drawn["type"], drawn["id"], drawn["evidence_id"]) == (
        "chart",
        "suggested:copper",
        "copper",
    )
    assert "sequence" not in drawn
    check_spec(drawn["spec"])

    # the model's intent: exactly the chart the turn journaled
    asked = chart(
        server, conversation, turn_id, call_id="copper", mark="bar", x="name", y="quantity"
    )
    assert asked.status_code == 200
    same = asked.json()["chart"]
    assert (same["spec"], same["marks"], same["title"]) == (
        journaled["spec"],
        journaled["marks"],
        journaled["title"],
    )
    assert same["intent"] == journaled["intent"]
    limited = chart(
        server,
        conversation,
        turn_id,
        call_id="copper",
        mark="bar",
        x="name",
        y="quantity",
        limit="2",
    )
    assert limited.json()["chart"]["marks"] == 2

    # the widget's Chart button on the same query's table: the same body
    widget_answer = await widget_chart_options()
    assert widget_answer == {"type": "chart_options", "table": widget_answer["table"], **{
        key: value for key, value in body.items() if key != "call_id"
    }}  # fmt: skip


async def widget_chart_options() -> dict[str, Any]:
    """The widget's answer to its table's Chart button after the same scripted turn."""
    chat = Chat(provider=ScriptedProvider({"rounds": ROUNDS[:3]}), store=":memory:")
    widget = ChatWidget(chat, namespace={})
    sent: list[dict[str, Any]] = []
    widget.send = lambda content, *args, **kwargs: sent.append(content)
    try:
        record = await widget.run_turn("Chart copper parts")
        table = record["tables"][0]["key"]
        widget.dispatch({"type": "chart_request", "table": table})
    finally:
        await chat.aclose()
    return next(message for message in sent if message["type"] == "chart_options")


def test_a_picker_s_mistake_is_the_answer_s_error(server: Server) -> None:
    conversation, turn_id, _ = charted_turn(server)
    cases = {
        ("bar", "nme"): ("unknown_column", "Did you mean 'name'?"),
        ("line", "name"): ("invalid_chart", "dates or numbers on x"),
        ("pie", "name"): ("invalid_arguments", "Unknown mark 'pie'"),
    }
    for (mark, x), (code, words) in cases.items():
        answer = chart(server, conversation, turn_id, call_id="copper", mark=mark, x=x)
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["chart"] is None and body["error"]["code"] == code, body["error"]
        assert words in body["error"]["message"]
        assert body["columns"]  # the pickers stay usable


def test_unknown_ids_are_404_and_bad_parameters_400(server: Server) -> None:
    conversation, turn_id, _ = charted_turn(server)

    def refused(response: httpx.Response, status: int) -> str:
        assert response.status_code == status, response.text
        body = response.json()
        assert set(body) == {"error", "message"} and body["error"] == "bad_event"
        return str(body["message"])

    events_of_unknown = httpx.get(server.chat_url + "conversations/nope/events", headers=AUTH)
    assert (
        refused(chart(server, "nope", turn_id, call_id="copper"), 404)
        == (events_of_unknown.json()["message"])
    )
    with ChatStore(server.store) as store:
        foreign = store.create_conversation("jupyter:someone-else", "theirs").id
        store.append_event(foreign, "their-turn", 1, {"type": "text_chunk", "content": "x"})
    assert (
        refused(chart(server, foreign, "their-turn", call_id="copper"), 404)
        == (events_of_unknown.json()["message"])
    )
    assert refused(chart(server, conversation, "nope", call_id="copper"), 404) == (
        "No turn with that id in this conversation."
    )
    for call_id in ("nope", "search", "drawn"):  # not a query's rows
        assert "No query result" in refused(
            chart(server, conversation, turn_id, call_id=call_id), 404
        )
    assert "'call_id'" in refused(chart(server, conversation, turn_id), 400)
    assert "'call_id'" in refused(chart(server, conversation, turn_id, call_id=" "), 400)
    assert "does not take 'shape'" in refused(
        chart(server, conversation, turn_id, call_id="copper", shape="bar"), 400
    )
    # (JupyterLab's requests carry a cache-buster, a parameter named by digits alone)
    busted = chart(server, conversation, turn_id, "?call_id=copper&1796318499317")
    assert busted.status_code == 200 and busted.json()["chart"] is not None
    assert "give it once" in refused(
        chart(server, conversation, turn_id, "?call_id=copper&mark=bar&mark=line"), 400
    )
    assert "whole number" in refused(
        chart(server, conversation, turn_id, call_id="copper", mark="bar", x="name", limit="-1"),
        400,
    )
    assert "not UTF-8" in refused(chart(server, conversation, turn_id, "?call_id=%ff"), 400)
    anonymous = httpx.get(server.chat_url + f"conversations/{conversation}/turns/{turn_id}/chart")
    assert anonymous.status_code == 403
    log = Path(server.log).read_text()
    assert "Uncaught exception" not in log and " 500 GET " not in log


def envelope_turn(server: Server, text: str) -> tuple[str, dict[str, Any]]:
    """A new conversation and the plain HTTP envelope of one turn in it."""
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    conversation = str(created.json()["conversation"]["id"])
    plain = {"text": text, "conversation_id": conversation}
    return conversation, httpx.post(server.chat_url, json=plain, headers=AUTH, timeout=30).json()


async def test_the_chart_event_travels_in_the_envelope_and_the_websocket_replay(
    server: Server,
) -> None:
    """The plain HTTP envelope carries the turn's chart event; a WebSocket that reconnects
    after the turn replays it from the journal, the same spec."""
    conversation, envelope = envelope_turn(server, "Chart copper parts")
    [drawn] = [event for event in envelope["events"] if event["type"] == "chart"]
    check_spec(drawn["spec"])
    assert drawn["evidence_id"] == "copper" and envelope["answer"] == "Charted."
    url = server.ws_url + f"?conversation_id={conversation}&after=0"
    replayed: list[dict[str, Any]] = []
    async with websockets.connect(url, additional_headers=AUTH) as ws:
        while not replayed or replayed[-1]["type"] != "done":
            replayed.append(json.loads(await asyncio.wait_for(ws.recv(), 10)))
    [again] = [event for event in replayed if event["type"] == "chart"]
    assert again["spec"] == drawn["spec"] and again["intent"] == drawn["intent"]

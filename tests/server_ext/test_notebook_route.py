"""A conversation as a notebook over HTTP, against real `jupyter server` processes (httpx as the
client), on a SQLite file and on PostgreSQL: ``GET {url}conversations/{id}/notebook``.

The answer is the notebook nbformat validates, as an attachment named after the conversation's
title (made a safe file name), the same cells ``Chat.to_notebook`` writes for that conversation.
Refusals: another user's conversation and an unknown one alike (exactly the events route's
404), a conversation with nothing to export yet.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import httpx
import nbformat
import pytest

from gmchat_nb import Chat
from gmchat_nb.core.providers.scripted import ScriptedProvider
from gmchat_nb.core.session import Actor
from gmchat_nb.core.store import ChatStore

from .conftest import StoreFor
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server

STEEL = {
    "manager": "Part",
    "filters": {"material__name": "Steel"},
    "fields": ["name", "quantity"],
    "order_by": ["name"],
}
TURN: list[dict[str, Any]] = [
    {"tool_calls": [{"name": "query", "id": "steel", "args": STEEL}]},
    {"text": "One steel part: Bolt."},
]
QUESTION = "Which parts are made of steel?"
HEADING = "Which parts are made of steel"  # (the Markdown escapes the question mark)
BOB = Actor(id="jupyter:bob", name="bob", authenticated=True)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, store_for: StoreFor) -> Iterator[Server]:
    home = tmp_path_factory.mktemp("notebook")
    running = Server(home, TURN * 10, store=store_for(home))
    yield running
    running.stop()


def new_conversation(server: Server) -> str:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH, timeout=30)
    assert created.status_code == 201, created.text
    return str(created.json()["conversation"]["id"])


def ask(server: Server, text: str) -> str:
    """One whole turn over ``POST {url}`` in a new conversation (which takes its title from
    the question); the conversation."""
    body = {"text": text, "conversation_id": new_conversation(server)}
    answered = httpx.post(server.chat_url, json=body, headers=AUTH, timeout=60)
    assert answered.status_code == 200, answered.text
    return str(answered.json()["conversation_id"])


def notebook_url(server: Server, conversation_id: str) -> str:
    return server.chat_url + f"conversations/{conversation_id}/notebook"


def fetch(server: Server, conversation_id: str, **headers: str) -> httpx.Response:
    return httpx.get(notebook_url(server, conversation_id), headers={**AUTH, **headers}, timeout=60)


def filenames(response: httpx.Response) -> tuple[str, str | None]:
    """``filename`` and ``filename*`` (decoded) of the answer's attachment."""
    header = response.headers["content-disposition"]
    assert header.startswith("attachment; "), header
    plain = re.search(r'; filename="([^"]*)"', header)
    extended = re.search(r"; filename\*=UTF-8''(\S+)$", header)
    assert plain is not None, header
    return plain.group(1), unquote(extended.group(1)) if extended else None


async def test_a_conversation_is_answered_as_a_notebook(server: Server) -> None:
    conversation = ask(server, QUESTION)
    answer = fetch(server, conversation)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == "application/x-ipynb+json"
    assert filenames(answer) == ("Which parts are made of steel.ipynb", None)
    notebook = nbformat.reads(answer.text, as_version=4)
    nbformat.validate(notebook)
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert HEADING in markdown
    assert any("Part" in c.source for c in notebook.cells if c.cell_type == "code")
    # the route and Chat.to_notebook export the same conversation alike (all but the first
    # cell, which names the date it was made)
    with ChatStore(server.store) as store:
        record = store.conversation(conversation)
        assert record is not None
        owner = Actor(id=record.actor_id, name="owner", authenticated=True)
        chat = Chat(store=store, actor=owner, conversation_id=conversation, project="demo")
        here = chat.to_notebook()
    assert [c.source for c in here.cells[1:]] == [c.source for c in notebook.cells[1:]]


async def test_a_title_becomes_a_safe_attachment_name(server: Server) -> None:
    conversation = ask(server, 'Teile aus "Stahl/Eisen" \\ <b>für</b> März?')
    answer = fetch(server, conversation)
    assert answer.status_code == 200, answer.text
    plain, extended = filenames(answer)
    assert extended == "Teile aus Stahl Eisen b für b März.ipynb"
    assert plain == "Teile aus Stahl Eisen b f_r b M_rz.ipynb"  # for clients without filename*


def events_refusal(server: Server, conversation_id: str) -> httpx.Response:
    """The events route's answer for a conversation that is not the caller's."""
    url = server.chat_url + f"conversations/{conversation_id}/events"
    answer = httpx.get(url, headers=AUTH, timeout=30)
    assert answer.status_code == 404
    return answer


async def test_another_user_s_conversation_is_an_unknown_one(server: Server) -> None:
    # bob's conversation, asked through the notebook API on the server's store
    bob = Chat(provider=ScriptedProvider({"rounds": TURN}), store=server.store, actor=BOB)
    try:
        await bob.ask(QUESTION)
        theirs = bob.conversation_id
    finally:
        await bob.aclose()
    assert theirs is not None
    unknown = f"nope-{uuid.uuid4().hex}"
    events = events_refusal(server, unknown)
    for conversation in (theirs, unknown, "%ED%A0%80", "x" * 5000):
        refused = fetch(server, conversation)
        assert refused.status_code == 404, (conversation, refused.text)
        assert refused.json() == events.json()  # exactly the events route's answer
        assert "content-disposition" not in refused.headers


def test_nothing_to_export_yet_is_409(server: Server) -> None:
    empty = fetch(server, new_conversation(server))
    assert empty.status_code == 409, empty.text
    assert empty.json()["error"] == "bad_event" and empty.json()["message"]


def test_without_credentials_it_is_jupyter_s_403(server: Server) -> None:
    refused = httpx.get(notebook_url(server, "any"), timeout=30)
    assert refused.status_code == 403

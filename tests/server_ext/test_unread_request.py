"""A change asked for in a language the mutation intent gate cannot read, over a real `jupyter
server` (httpx as the client): the durable turn (``POST turns/``) suspends on the change's
confirmation although ``createPart`` is not confirm-listed, the journal's ``confirm_mutation``
carries ``provenance.request_unread``, and ``confirm/`` resumes the turn and makes the change.
A question in French in the same conversation makes no change: the gate reads it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from .conftest import CREATE
from .jupyter_process import AUTH
from .jupyter_process import JupyterServer as Server
from .test_turns_route import journal

ROUNDS: list[dict[str, Any]] = [
    {"tool_calls": [CREATE]},
    {"text": "Aggiunto Spring."},
    {"tool_calls": [{**CREATE, "id": "call-2"}]},  # a model proposing it again, unasked
    {"text": "Spring n'est pas en stock."},
]
SETTINGS = {"allowed_mutations": ["createPart"]}  # not confirm-listed


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(tmp_path_factory.mktemp("unread-request"), ROUNDS, chat_settings=SETTINGS)
    yield running
    running.stop()


def test_an_unread_request_is_confirmed_by_the_person_and_a_read_question_changes_nothing(
    server: Server,
) -> None:
    created = httpx.post(server.chat_url + "conversations/", json={}, headers=AUTH)
    conversation = str(created.json()["conversation"]["id"])
    body = {"conversation_id": conversation, "turn_id": "t-it", "text": "Aggiungi il pezzo Spring"}
    assert httpx.post(server.chat_url + "turns/", json=body, headers=AUTH).status_code == 202
    frames = journal(server, conversation, ends=1)
    confirmation = frames[-1]
    assert confirmation["type"] == "confirm_mutation" and confirmation["id"] == "call-1"
    assert confirmation["provenance"]["request_unread"] is True

    decision = {
        "conversation_id": conversation,
        "confirmation_id": "call-1",
        "confirmed": True,
        "expected_sequence": confirmation["sequence"],
    }
    confirmed = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH, timeout=30)
    assert confirmed.status_code == 200, confirmed.text
    results = [e for e in confirmed.json()["events"] if e["type"] == "tool_result"]
    assert [r["result"]["status"] for r in results] == ["executed"]

    question = {"conversation_id": conversation, "text": "Combien de ressorts avons-nous ?"}
    answered = httpx.post(server.chat_url, json=question, headers=AUTH, timeout=30).json()
    kinds = [event["type"] for event in answered["events"]]
    assert "confirm_mutation" not in kinds
    [refused] = [e for e in answered["events"] if e["type"] == "tool_result"]
    assert refused["result"]["code"] == "no_change_requested"

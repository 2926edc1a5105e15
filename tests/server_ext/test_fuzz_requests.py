"""Seeded fuzzing of the chat routes and the WebSocket of a real `jupyter server` (the offline
provider answering, three demo managers hidden) with adversarial bodies and frames: deep nesting,
lone surrogates, oversized and binary bodies, wrong types in every field, and for the durable
routes fuzzed path segments and cursors. Every HTTP answer is a documented status and code (never
a 5xx), every turn ends with exactly one terminal event, a socket survives everything but a frame
far over the limit, and no hidden manager shows. On a SQLite file and on PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from ..adversarial import EXPOSED, Nested, json_values, leaked, text
from .jupyter_process import AUTH, JupyterServer

STATUSES = {200, 201, 400, 404, 409, 413}
CODES = {"bad_message", "bad_event", "turn_in_progress", "confirmation_pending"}
LIMIT = 64 * 1024
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, store_for: Callable[[Path], str]
) -> Iterator[JupyterServer]:
    home = tmp_path_factory.mktemp("fuzz")
    running = JupyterServer(
        home,
        [],
        provider="offline",
        store=store_for(home),
        chat_settings={"exposed_managers": EXPOSED, "rate_limit": {"requests": None}},
    )
    yield running
    running.stop()


def encode(value: Any) -> str:
    """JSON for a fuzzed value; a :class:`Nested` becomes its brackets (too deep for json)."""

    def mark(item: Any) -> Any:
        if isinstance(item, Nested):
            return f"\x00NESTED{item.depth}\x00"
        if isinstance(item, dict):
            return {key: mark(inner) for key, inner in item.items()}
        if isinstance(item, list):
            return [mark(inner) for inner in item]
        return item

    return re.sub(
        r'"\\u0000NESTED(\d+)\\u0000"',
        lambda m: "[" * int(m.group(1)) + "]" * int(m.group(1)),
        json.dumps(mark(value)),
    )


fields = st.fixed_dictionaries(
    {},
    optional={
        "text": st.one_of(text, json_values),
        "conversation_id": st.one_of(text, json_values),
        "confirmation_id": st.one_of(text, json_values),
        "confirmed": st.one_of(st.booleans(), json_values),
        "title": st.one_of(text, json_values),
        "type": st.sampled_from(["message", "confirm", "dance"]) | text,
    },
)
bodies = st.one_of(
    fields.map(encode),
    json_values.map(encode),
    st.binary(max_size=300),
    st.sampled_from([LIMIT - 100, LIMIT + 10, 4 * LIMIT + 10]).map(
        lambda size: json.dumps({"type": "message", "text": "parts " * (size // 6)})
    ),
)
routes = st.sampled_from(["", "stream/", "confirm/", "conversations/"])


def turn_ends_once(events: list[dict[str, Any]]) -> None:
    kinds = [event["type"] for event in events]
    assert kinds.count("done") + kinds.count("error") == 1, kinds
    assert kinds[-1] in ("done", "error"), kinds


@settings(FUZZ, max_examples=80)
@given(route=routes, body=bodies)
def test_routes_answer_every_body_with_a_documented_code(
    server: JupyterServer, route: str, body: str | bytes
) -> None:
    response = httpx.post(server.chat_url + route, content=body, headers=AUTH, timeout=60)
    assert response.status_code in STATUSES, (response.status_code, response.text[:300])
    assert leaked(response.text, body) == []
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        frames = [
            json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
        ]
        turn_ends_once(frames)
        return
    payload = response.json()
    if response.status_code >= 400:
        (refusal,) = payload["events"]
        assert refusal["type"] == "error" and refusal["code"] in CODES, refusal
        assert refusal["message"]
    elif route == "conversations/":
        assert response.status_code == 201 and payload["conversation"]["id"]
    else:
        turn_ends_once(payload["events"])


@settings(FUZZ, max_examples=25)
@given(frames=st.lists(bodies, min_size=1, max_size=3))
def test_the_socket_answers_every_frame_and_stays_open(
    server: JupyterServer, frames: list[str | bytes]
) -> None:
    with connect(server.ws_url, additional_headers=AUTH, max_size=None) as ws:
        for frame in frames:
            size = len(frame if isinstance(frame, bytes) else frame.encode())
            if size > 4 * LIMIT:  # far over the limit: closed unread with 1009
                closed = _closed_by(ws, frame)
                # ... and the close frame can be lost to the reset of the unread rest.
                assert closed.rcvd is None or closed.rcvd.code == 1009
                return
            ws.send(frame)
            events = [json.loads(ws.recv(timeout=60))]
            while events[-1]["type"] not in ("done", "error"):
                events.append(json.loads(ws.recv(timeout=60)))
            turn_ends_once(events)
            assert leaked(events, frame) == []
        ws.send(json.dumps({"type": "message", "text": "Which parts are there?"}))
        events = [json.loads(ws.recv(timeout=60))]
        while events[-1]["type"] not in ("done", "error"):
            events.append(json.loads(ws.recv(timeout=60)))
        assert events[-1]["type"] == "done"  # still usable after everything above


durable_bodies = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "turn_id": st.one_of(
                text, json_values, st.from_regex(r"[a-z0-9.:_-]{1,12}", fullmatch=True)
            ),
            "text": st.one_of(text, json_values),
            "conversation_id": st.one_of(text, json_values),
            "command_id": st.one_of(text, json_values),
        },
    ).map(encode),
    json_values.map(encode),
    st.binary(max_size=300),
)
# (an empty segment, or dots the client resolves away, reach no route of ours: the server's own
# 404; a segment longer than a URL may be is the client's to refuse)
segments = st.one_of(text, st.sampled_from(["%", "a/b", "..%2F", "x" * 5000])).map(
    lambda value: value[:5000] if value.strip(".") else "-"
)
cursors = st.one_of(
    # what an HTTP header can carry (no space at either end)
    st.from_regex(r"[!-~]([ -~]{0,28}[!-~])?", fullmatch=True),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
)
DURABLE_STATUSES = {200, 202, 400, 404, 409, 410, 413}


def path_segment(value: str) -> str:
    return quote(value.encode("utf-8", "surrogatepass"), safe="")


@settings(FUZZ, max_examples=60)
@given(body=durable_bodies, segment=segments, cursor=cursors)
def test_durable_routes_answer_every_body_and_path_with_a_documented_code(
    server: JupyterServer, body: str | bytes, segment: str, cursor: str
) -> None:
    """``turns/``, ``…/cancel``, ``…/evidence`` and ``…/events``: the durable routes'
    ``{"error", "message"}`` envelope with a documented code, or the admission, answer or stream
    they promise."""
    admitted = httpx.post(server.chat_url + "turns/", content=body, headers=AUTH, timeout=60)
    cid = path_segment(segment)
    cancel_url = server.chat_url + f"conversations/{cid}/turns/{cid}/cancel"
    cancelled = httpx.post(cancel_url, content=body, headers=AUTH, timeout=60)
    evidence_url = server.chat_url + f"conversations/{cid}/turns/{cid}/evidence"
    evidence = httpx.get(evidence_url, headers=AUTH, timeout=60)
    events_url = server.chat_url + f"conversations/{cid}/events"
    with httpx.stream(
        "GET", events_url, headers={**AUTH, "Last-Event-ID": cursor}, timeout=60
    ) as events:
        streamed = events.headers.get("content-type", "").startswith("text/event-stream")
        events_status, events_body = events.status_code, b"" if streamed else events.read()
    for status, payload in (
        (admitted.status_code, admitted.content),
        (cancelled.status_code, cancelled.content),
        (evidence.status_code, evidence.content),
        (events_status, events_body),
    ):
        assert status in DURABLE_STATUSES, (status, payload[:300])
        if status >= 400 and payload:
            refusal = json.loads(payload)
            assert refusal["error"] in {*CODES, "turn_conflict", "cursor_ahead", "resync_required"}
            assert refusal.get("message") or refusal["error"] == "resync_required", refusal
        assert leaked(payload.decode("utf-8", "replace"), body) == []
    if admitted.status_code == 202:
        assert admitted.json()["state"] in ("accepted", "running", "done", "failed", "interrupted")


def _closed_by(ws: Any, frame: str | bytes) -> ConnectionClosed:
    """The close a frame far over the limit causes (the server may close mid-send)."""
    try:
        ws.send(frame)
        ws.recv(timeout=30)
    except ConnectionClosed as closed:
        return closed
    raise AssertionError("the socket stayed open")


def test_the_fuzzed_server_logged_no_unhandled_error(server: JupyterServer) -> None:
    """Nothing the fuzzing sent reached tornado's 500 path (runs after the fuzz tests)."""
    log = Path(server.log).read_text()
    assert "Uncaught exception" not in log, log[-3000:]
    assert not re.search(r"\] 5\d\d (GET|POST) ", log), log[-3000:]

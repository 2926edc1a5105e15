"""The server and docs/api/openapi.yaml agree where schemathesis found them apart (issue 38).

Each difference is checked from both sides, on a real `jupyter server` with real clients
(httpx, the `websockets` library): what the server answers, and what the document says of the
same request (its schemas, validated with jsonschema as 2020-12 reads them):

* a 405 names the methods the route takes (``Allow``), on every route, the socket's too;
* an unauthenticated POST to the socket is the 403 of every other route, not a 404 page;
* ``call_id=`` (empty) on the chart route is refused, and the document requires a character;
* blank ``text`` and ``confirmation_id`` are refused, and the document's pattern refuses
  exactly what the server strips away (Python's ``str.strip``, not ECMA-262's ``\\s``);
* ``expected_sequence: 2.0`` is the integer 2 (JSON Schema's integer), ``2.5`` is refused;
* ``?token=`` (Jupyter's credential, in the document on every route) is not refused as an
  unknown parameter;
* the MCP endpoint: an unknown ``MCP-Protocol-Version`` is a 400 naming the supported ones,
  ``"id": 1.0`` is answered as id 1, the ids ``true``, ``[1]``, ``{}``, ``null`` are a 400
  with ``-32600``, a message that is no JSON-RPC message too (and the document's
  ``JsonRpcMessage`` refuses it), and a name of 60,000 characters is answered cut, in the
  answer and in the server's log.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
import yaml
from jsonschema.validators import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012
from websockets.sync.client import connect
from websockets.typing import Origin

from gmchat_nb.mcp_server.screen import SUPPORTED_VERSIONS

from .conftest import CREATE
from .jupyter_process import AUTH, TOKEN, JupyterServer

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT: dict[str, Any] = yaml.safe_load(
    (ROOT / "docs" / "api" / "openapi.yaml").read_text(encoding="utf-8")
)
METHODS = ("get", "post", "put", "patch", "delete")
MCP_HEADERS = {**AUTH, "Accept": "application/json, text/event-stream"}
BLANK = ["\f", "\n", " \t ", "\x1c", "\x1f", "\x85", "\xa0", "\u2028", "\u3000"]
NOT_BLANK = ["\ufeff", "\u200b", " x ", "·"]  # not whitespace to str.strip, nor to the server


def schema(name: str) -> Draft202012Validator:
    """A validator for one of the document's component schemas, its references resolved."""
    resource = Resource.from_contents(DOCUMENT, default_specification=DRAFT202012)
    registry: Registry[Any] = Registry().with_resource("urn:doc", resource)
    return Draft202012Validator(
        {"$ref": f"urn:doc#/components/schemas/{name}"},
        registry=registry,
        format_checker=jsonschema.FormatChecker(),
    )


def parameter_schema(path: str, method: str, name: str) -> Draft202012Validator:
    parameters = DOCUMENT["paths"][path][method]["parameters"]
    (parameter,) = (p for p in parameters if p.get("name") == name)  # ($refs have none)
    return Draft202012Validator(parameter["schema"])


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    """A conversation's first turn asks to create a part, which a person confirms."""
    rounds: list[dict[str, Any]] = [{"tool_calls": [CREATE]}, {"text": "Created."}] * 10
    started = JupyterServer(
        tmp_path_factory.mktemp("agreement"),
        rounds,
        chat_settings={
            "allowed_mutations": ["createPart"],
            "confirm_mutations": ["createPart"],
            "confirm_timeout_seconds": 300,
            "rate_limit": {"requests": None},
        },
    )
    try:
        yield started
    finally:
        started.stop()


def url_of(server: JupyterServer, path: str) -> str:
    return server.url.rstrip("/") + re.sub(r"\{\w+\}", "some-id", path)


def new_conversation(server: JupyterServer) -> str:
    created = httpx.post(server.chat_url + "conversations/", headers=AUTH, json={}, timeout=30)
    return str(created.json()["conversation"]["id"])


# -- methods ---------------------------------------------------------------------------------------


def test_a_method_a_route_does_not_take_is_405_naming_those_it_does(
    server: JupyterServer,
) -> None:
    for path, item in DOCUMENT["paths"].items():
        listed = {method.upper() for method in METHODS if method in item}
        takes = {"POST"} if path == "/gmchat/mcp" else listed  # GET and DELETE: 405 too
        for method in (*(m.upper() for m in METHODS if m not in item), "TRACE"):
            response = httpx.request(method, url_of(server, path), headers=AUTH, timeout=30)
            assert response.status_code == 405, (path, method)
            allow = {value.strip() for value in response.headers["Allow"].split(",")}
            assert allow == takes, (path, method, response.headers["Allow"])


def test_an_unauthenticated_post_to_the_socket_is_403_as_everywhere(
    server: JupyterServer,
) -> None:
    """Jupyter's XSRF check asks the route's Origin rule without an origin; the socket read
    that as a foreign one (a 404 page) where every other route answers 403."""
    socket = server.chat_url + "ws"
    assert httpx.post(socket, timeout=30).status_code == 403
    assert httpx.post(server.chat_url + "conversations/", timeout=30).status_code == 403
    with_token = httpx.post(socket, headers=AUTH, timeout=30)
    assert with_token.status_code == 405 and with_token.headers["Allow"] == "GET"
    # and the socket itself still opens, without an Origin and with its own server's
    # (a foreign one on a cookie socket: test_openapi.py's cookie test)
    for origin in (None, Origin(server.url.rstrip("/"))):
        with connect(server.ws_url + f"?token={TOKEN}", origin=origin, open_timeout=10) as ws:
            ws.send(json.dumps({"type": "nonsense"}))
            assert json.loads(ws.recv(timeout=10))["code"] == "bad_event"


# -- bodies and parameters -------------------------------------------------------------------------


def test_an_empty_call_id_is_refused_as_the_document_says(server: JupyterServer) -> None:
    conversation = new_conversation(server)
    chart = server.chat_url + f"conversations/{conversation}/turns/t-1/chart"
    answer = httpx.get(chart, params={"call_id": ""}, headers=AUTH, timeout=30)
    assert answer.status_code == 400 and "call_id" in answer.json()["message"]
    call_id = parameter_schema(
        "/gmchat/chat/conversations/{conversation_id}/turns/{turn_id}/chart", "get", "call_id"
    )
    assert not call_id.is_valid("") and call_id.is_valid("call-1")


def test_blank_text_is_refused_and_the_document_refuses_exactly_that(
    server: JupyterServer,
) -> None:
    turn, confirm = schema("TurnRequest"), schema("ConfirmRequest")
    for text in BLANK:
        answer = httpx.post(server.chat_url, json={"text": text}, headers=AUTH, timeout=30)
        assert answer.status_code == 400, repr(text)
        assert answer.json()["events"][0]["code"] == "bad_message"
        assert not turn.is_valid({"text": text}), repr(text)
        decision = {"confirmation_id": text, "confirmed": True}
        refused = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH)
        assert refused.status_code == 400 and "blank" in refused.text, repr(text)
        assert not confirm.is_valid(decision), repr(text)
    for text in NOT_BLANK:
        assert turn.is_valid({"text": text}), repr(text)
        decision = {"confirmation_id": text, "confirmed": True}
        unknown = httpx.post(server.chat_url + "confirm/", json=decision, headers=AUTH)
        assert unknown.status_code == 409 and confirm.is_valid(decision), repr(text)


def test_the_not_blank_pattern_is_python_s_whitespace_for_every_character() -> None:
    """The document's class is exactly what ``str.strip`` removes, over all of Unicode (the
    pattern as jsonschema runs it: Python's ``re``, searching)."""
    pattern = re.compile(
        DOCUMENT["components"]["schemas"]["TurnRequest"]["properties"]["text"]["pattern"]
    )
    disagree = [
        hex(code)
        for code in range(0x110000)
        if (pattern.search(chr(code)) is not None) != bool(chr(code).strip())
    ]
    assert disagree == []


def read_events_until(server: JupyterServer, conversation: str, kind: str) -> int:
    """The journal position of the conversation's first event of ``kind`` (its SSE id)."""
    url = server.chat_url + f"conversations/{conversation}/events"
    raw = ""
    with httpx.stream("GET", url, headers=AUTH, timeout=httpx.Timeout(30)) as response:
        for chunk in response.iter_text():
            raw += chunk
            for frame in raw.split("\n\n")[:-1]:
                fields = dict(line.split(": ", 1) for line in frame.splitlines() if ": " in line)
                if fields.get("event") == kind:
                    return int(fields["id"])
    raise AssertionError(f"no {kind} in {raw!r}")


def test_expected_sequence_written_with_a_fraction_is_that_integer(
    server: JupyterServer,
) -> None:
    """JSON Schema 2020-12 counts ``2.0`` as an integer, so the document allows it: the server
    reads it as 2; ``2.5`` is no whole number, a 400."""
    conversation = new_conversation(server)
    asked = httpx.post(
        server.chat_url + "stream/",
        json={"text": "Add Spring", "conversation_id": conversation},
        headers=AUTH,
        timeout=60,
    )
    frames = [json.loads(line[6:]) for line in asked.text.splitlines() if line.startswith("data: ")]
    assert frames[-1]["type"] == "confirm_mutation", asked.text
    position = read_events_until(server, conversation, "confirm_mutation")
    decision = {"confirmation_id": frames[-1]["id"], "confirmed": True}
    request = schema("ConfirmRequest")
    fraction = {**decision, "expected_sequence": position + 0.5}
    assert not request.is_valid(fraction)
    refused = httpx.post(server.chat_url + "confirm/", json=fraction, headers=AUTH, timeout=60)
    assert refused.status_code == 400 and "whole number" in refused.text
    whole = {**decision, "expected_sequence": float(position)}
    assert request.is_valid(whole)
    done = httpx.post(server.chat_url + "confirm/", json=whole, headers=AUTH, timeout=60)
    assert done.status_code == 200, done.text
    assert done.json()["events"][0]["result"]["status"] == "executed"


@pytest.mark.parametrize(
    ("route", "expected"),
    [("usage/", 200), ("knowledge/", 200), ("knowledge/export", 200), ("conversations/", 200)],
)
def test_jupyter_s_token_argument_is_no_unknown_parameter(
    server: JupyterServer, route: str, expected: int
) -> None:
    """``?token=`` authenticates on every route (the document's ``JupyterTokenQuery``); the
    routes that refuse parameters they do not take must not refuse it."""
    answer = httpx.get(server.chat_url + route, params={"token": TOKEN}, timeout=30)
    assert answer.status_code == expected, answer.text


def test_the_chart_route_takes_the_token_argument_too(server: JupyterServer) -> None:
    conversation = new_conversation(server)
    chart = server.chat_url + f"conversations/{conversation}/turns/t-1/chart"
    answer = httpx.get(chart, params={"token": TOKEN, "call_id": "c-1"}, timeout=30)
    assert answer.status_code == 404 and "turn" in answer.json()["message"]  # not a 400


# -- the MCP endpoint ------------------------------------------------------------------------------


def mcp(server: JupyterServer, body: Any, **headers: str) -> httpx.Response:
    content = body if isinstance(body, bytes) else json.dumps(body).encode()
    return httpx.post(
        server.url + "gmchat/mcp",
        content=content,
        headers={**MCP_HEADERS, "Content-Type": "application/json", **headers},
        timeout=60,
    )


def test_an_unknown_protocol_version_is_a_400_naming_the_supported_ones(
    server: JupyterServer,
) -> None:
    ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
    for version in ("1999-01-01", "", "2025-06-18x"):
        answer = mcp(server, ping, **{"MCP-Protocol-Version": version})
        assert answer.status_code == 400, version
        error = answer.json()["error"]
        assert error["code"] == -32022 and answer.json()["id"] == 5
        assert error["data"]["supported"] == list(SUPPORTED_VERSIONS)
        assert "2025-06-18" in error["message"] and "_meta" not in error["message"]
    assert mcp(server, ping, **{"MCP-Protocol-Version": "2025-06-18"}).json()["result"] == {}
    header = DOCUMENT["components"]["parameters"]["McpProtocolVersion"]["schema"]
    assert header["enum"] == list(SUPPORTED_VERSIONS)  # the document names what the SDK speaks


def test_an_id_written_with_a_fraction_is_answered_as_the_integer(
    server: JupyterServer,
) -> None:
    answer = mcp(server, b'{"jsonrpc": "2.0", "id": 1.0, "method": "ping"}')
    assert answer.status_code == 200 and answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert schema("JsonRpcMessage").is_valid({"jsonrpc": "2.0", "id": 1.0, "method": "ping"})


@pytest.mark.parametrize(
    "raw_id", ["true", "[1]", "{}", "null", "1.5", str(2**64), json.dumps("x" * 300)]
)
def test_an_invalid_id_is_a_400_with_32600(server: JupyterServer, raw_id: str) -> None:
    body = f'{{"jsonrpc": "2.0", "id": {raw_id}, "method": "ping"}}'.encode()
    answer = mcp(server, body)
    assert answer.status_code == 400, answer.text
    assert answer.json()["error"]["code"] == -32600 and answer.json()["id"] is None
    assert "x" * 100 not in answer.text  # the id is described, not echoed
    assert not schema("JsonRpcMessage").is_valid(json.loads(body))


def test_what_is_no_json_rpc_message_is_a_400_the_document_refuses_too(
    server: JupyterServer,
) -> None:
    message = schema("JsonRpcMessage")
    for body in ({"jsonrpc": "2.0"}, [{"jsonrpc": "2.0", "id": 1, "method": "ping"}], 7):
        answer = mcp(server, body)
        assert answer.status_code == 400 and answer.json()["error"]["code"] == -32600, body
        assert not message.is_valid(body), body
    parse_error = mcp(server, b"{not json")
    assert parse_error.status_code == 400 and parse_error.json()["error"]["code"] == -32700
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert message.is_valid(notification) and mcp(server, notification).status_code == 202


def test_a_long_name_is_answered_cut_and_never_logged_in_full(server: JupyterServer) -> None:
    name = "n" * 60_000  # within max_body_bytes (65536)
    call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": name}}
    read = {"jsonrpc": "2.0", "id": 10, "method": "resources/read", "params": {"uri": name}}
    method = {"jsonrpc": "2.0", "id": 11, "method": name}
    tool = mcp(server, call)  # as any unknown tool: a result the agent reads, isError
    assert tool.status_code == 200 and len(tool.content) < 400, tool.text[:500]
    result = tool.json()["result"]
    assert result["isError"] is True and "60000 characters" in result["content"][0]["text"]
    for body, code in ((read, -32602), (method, -32601)):
        answer = mcp(server, body)
        assert answer.status_code == 200 and len(answer.content) < 400, answer.text[:500]
        error = answer.json()["error"]
        assert error["code"] == code and answer.json()["id"] == body["id"]
        assert "60000 characters" in error["message"]
    assert mcp(server, {"jsonrpc": "2.0", "method": name}).status_code == 202  # dropped
    assert "n" * 1000 not in server.log.read_text()

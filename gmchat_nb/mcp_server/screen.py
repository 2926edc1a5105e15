"""What an agent sends, checked before the MCP SDK reads it: over stdio (:mod:`.stdio`) and over
Streamable HTTP (``server_ext/mcp.py``) alike.

The SDK alone drops a stdio line that is not JSON without a word, reads a request whose ``id`` is
not a string or an integer (``true``, ``[1]``, ``{}``, ``null``) as a notification that needs
no answer, and echoes a tool's, a prompt's, a resource's or a method's name in full in its
answer and its log -- ten megabytes as readily as ten bytes. So every message is screened first,
and the SDK still answers everything that passes:

* not JSON: ``-32700`` (parse error), ``id`` null;
* not one JSON-RPC 2.0 message (an array -- the SDK takes no batch --, another ``jsonrpc``,
  neither a request, a notification nor a response): ``-32600`` (invalid request);
* an ``id`` that is not a string of at most :data:`MAX_ID_CHARS` characters or an integer of
  64 bits (a boolean, null, an array, an object, ``1.5``, ``2**70``): ``-32600``, ``id`` null.
  An integral number written with a fraction (``1.0``) *is* an integer to JSON Schema 2020-12
  and to MCP's own ``schema.json`` (``"type": ["string", "integer"]``): it is passed on as
  ``1`` and answered so;
* a name longer than anything this server has (a method over :data:`MAX_NAME_CHARS`, a tool's
  or a prompt's name over :data:`MAX_NAME_CHARS` -- the MCP specification's bound for tool
  names --, a resource URI over :data:`MAX_URI_CHARS`): answered here as the SDK answers an
  unknown one (a tool: a result with ``isError``; a prompt or a resource: ``-32602``; a
  method: ``-32601``), with the name cut to
  :data:`~gmchat_nb.core.project.names.ECHO_LENGTH` characters; a notification with such a
  method is dropped, as notifications get no answer.

``MCP-Protocol-Version`` (HTTP only): a revision the SDK does not speak is a ``400`` naming the
ones it does (:func:`unsupported_version`), as the specification asks, instead of the SDK's
answer about a ``params._meta`` envelope that the newest revision needs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import mcp_types as types
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from ..core.project.names import clip_repr
from ..core.text import json_kind

__all__ = [
    "MAX_ID_CHARS",
    "MAX_NAME_CHARS",
    "MAX_URI_CHARS",
    "SUPPORTED_VERSIONS",
    "Screened",
    "screen",
    "screen_http",
    "unsupported_version",
]

MAX_ID_CHARS = 256  # a request id the answer echoes: room for any UUID-based scheme
MAX_NAME_CHARS = 128  # the MCP specification's longest tool name; methods are far shorter
MAX_URI_CHARS = 2048  # a resource URI (this server's are gmchat://managers/<name>/schema)
ID_BITS = 64  # integer ids: what every client's integer type holds
SUPPORTED_VERSIONS: tuple[str, ...] = (*HANDSHAKE_PROTOCOL_VERSIONS, *MODERN_PROTOCOL_VERSIONS)
NAMED = {  # method -> the param naming what it asks for, and how an unknown one is called
    "tools/call": ("name", "tool", MAX_NAME_CHARS),
    "prompts/get": ("name", "prompt", MAX_NAME_CHARS),
    "resources/read": ("uri", "resource", MAX_URI_CHARS),
    "resources/subscribe": ("uri", "resource", MAX_URI_CHARS),
    "resources/unsubscribe": ("uri", "resource", MAX_URI_CHARS),
}

Verdict = Literal["pass", "parse_error", "invalid", "unknown", "dropped"]


@dataclass(frozen=True, slots=True)
class Screened:
    """One message screened: what to hand the SDK (``text``) or what to answer instead
    (``reply``, a JSON-RPC message; none for a dropped notification)."""

    verdict: Verdict
    text: str | None = None  # the message for the SDK (``1.0`` ids written as integers)
    reply: dict[str, Any] | None = None
    request_id: str | int | None = None  # the message's id, when it has a valid one

    @property
    def passes(self) -> bool:
        return self.verdict == "pass"


def screen(raw: str | bytes) -> Screened:
    """Screen one JSON-RPC message (a stdio line, an HTTP body)."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        decoded = json.loads(text)
    except (ValueError, RecursionError) as error:  # not UTF-8, not JSON, nested past Python
        detail = str(error) if isinstance(error, ValueError) else "nested too deep to read"
        return _refused("parse_error", types.PARSE_ERROR, f"Parse error: {detail[:120]}")
    if isinstance(decoded, list):
        message = "Invalid Request: a batch (a JSON array) is not accepted; send one message"
        return _refused("invalid", types.INVALID_REQUEST, message)
    if not isinstance(decoded, dict):
        message = f"Invalid Request: a message is a JSON-RPC object, not {json_kind(decoded)}"
        return _refused("invalid", types.INVALID_REQUEST, message)
    request_id: str | int | None = None
    if "id" in decoded:
        request_id = valid_id(decoded["id"])
        if request_id is None:
            return _refused(
                "invalid",
                types.INVALID_REQUEST,
                f"Invalid Request: 'id' must be a string of at most {MAX_ID_CHARS} characters "
                f"or an integer of {ID_BITS} bits, not {_kind_of_id(decoded['id'])}",
            )
        if decoded["id"] is not request_id:  # 1.0, passed on as the integer it is
            decoded["id"] = request_id
            text = json.dumps(decoded)
    if not _one_message(decoded):
        return _refused(
            "invalid",
            types.INVALID_REQUEST,
            "Invalid Request: not a JSON-RPC 2.0 request, notification or response "
            "('jsonrpc': '2.0' with a string 'method', or an 'id' with one of 'result' and 'error')",
            request_id,
        )
    return _named(decoded, request_id) or Screened("pass", text=text, request_id=request_id)


def screen_http(
    body: bytes, version: str | None
) -> tuple[bytes, tuple[int, dict[str, Any] | None]]:
    """A POST to the Streamable HTTP endpoint: the body for the SDK and ``(0, None)``, or the
    status and JSON-RPC answer to give instead -- ``400`` for a parse error, an invalid message
    or an ``MCP-Protocol-Version`` the SDK does not speak, ``200`` for a name answered as
    unknown, ``202`` (no body) for a notification dropped."""
    screened = screen(body)
    if screened.verdict in ("parse_error", "invalid"):
        return body, (400, screened.reply)
    unsupported = None if version is None else unsupported_version(version, screened.request_id)
    if unsupported is not None:
        return body, (400, unsupported)
    if screened.verdict == "unknown":
        return body, (200, screened.reply)
    if screened.verdict == "dropped":
        return body, (202, None)
    return (screened.text or "").encode(), (0, None)


def _one_message(decoded: dict[str, Any]) -> bool:
    """Whether the SDK reads ``decoded`` as the one JSON-RPC message it is. A response carries
    ``result`` or ``error``, never both (JSON-RPC 2.0; the SDK would silently keep the error)."""
    if "method" not in decoded and "result" in decoded and "error" in decoded:
        return False
    try:  # strict: JSON's types as they are (no `false` for an error's code, no "1" for 1)
        types.jsonrpc_message_adapter.validate_python(decoded, strict=True, by_name=False)
    except ValidationError:
        return False
    return True


def valid_id(value: Any) -> str | int | None:
    """A request id as the answer must carry it, or None when it is no valid id."""
    if isinstance(value, str):
        return value if len(value) <= MAX_ID_CHARS else None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return value if -(2 ** (ID_BITS - 1)) <= value < 2 ** (ID_BITS - 1) else None
    return None


def _kind_of_id(value: Any) -> str:
    """What an invalid id is, without echoing it."""
    if isinstance(value, str):
        return f"a string of {len(value)} characters"
    if isinstance(value, float) and not value.is_integer():
        return "a number with a fraction"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "an integer beyond 64 bits"
    return json_kind(value)


def unsupported_version(version: str, request_id: str | int | None = None) -> dict[str, Any] | None:
    """The answer to an ``MCP-Protocol-Version`` the SDK does not speak (None: it does)."""
    if version in SUPPORTED_VERSIONS:
        return None
    message = (
        f"Unsupported protocol version {clip_repr(version)} in MCP-Protocol-Version: this "
        f"server speaks {', '.join(SUPPORTED_VERSIONS)}"
    )
    data = {"supported": list(SUPPORTED_VERSIONS), "requested": version[:MAX_NAME_CHARS]}
    return _error(types.UNSUPPORTED_PROTOCOL_VERSION, message, request_id, data)


def _named(decoded: dict[str, Any], request_id: str | int | None) -> Screened | None:
    """The answer to a name longer than any this server has (None: the SDK's to answer)."""
    method = decoded.get("method")
    if not isinstance(method, str):
        return None  # a response to the server
    is_request = "id" in decoded
    if len(method) > MAX_NAME_CHARS:
        if not is_request:
            return Screened("dropped")
        message = f"Method not found: {clip_repr(method)} ({len(method)} characters)"
        return _refused("unknown", types.METHOD_NOT_FOUND, message, request_id)
    key, what, limit = NAMED.get(method, (None, "", 0))
    params = decoded.get("params")
    if key is None or not isinstance(params, dict):
        return None
    name = params.get(key)
    if not isinstance(name, str) or len(name) <= limit:
        return None
    if not is_request:
        return Screened("dropped")
    message = f"Unknown {what}: {clip_repr(name)} ({len(name)} characters)"
    if method == "tools/call":  # as the SDK answers any unknown tool: a result the agent reads
        result = {"content": [{"type": "text", "text": message}], "isError": True}
        reply = {"jsonrpc": "2.0", "id": request_id, "result": result}
        return Screened("unknown", reply=reply, request_id=request_id)
    return _refused("unknown", types.INVALID_PARAMS, message, request_id)


def _refused(
    verdict: Verdict, code: int, message: str, request_id: str | int | None = None
) -> Screened:
    return Screened(verdict, reply=_error(code, message, request_id), request_id=request_id)


def _error(
    code: int, message: str, request_id: str | int | None, data: Any = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}

"""Request bodies and WebSocket messages: decoded once, refused precisely.

Every refusal names the public code of the contract (``bad_message`` for a turn's text,
``bad_event`` for confirmations, conversations and socket frames) with a message that says what
was wrong, and the HTTP status the contract gives it. Nothing in a body can make decoding raise
anything else: oversized, not UTF-8, not JSON, nested past any use, or not an object.
"""

from __future__ import annotations

import json
from typing import Any

from ..core.text import MAX_JSON_DEPTH, json_depth_exceeds, json_kind, lone_surrogate_at

__all__ = [
    "Refused",
    "decode_object",
    "journal_cursor",
    "not_a_parameter",
    "optional_string",
    "required_string",
]


class Refused(Exception):
    """A request refused before any turn starts: HTTP status, public code, a precise message."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message


def decode_object(
    raw: bytes | str,
    *,
    max_bytes: int,
    code: str,
    size_code: str | None = None,
    what: str = "Request body",
) -> dict[str, Any]:
    """``raw`` as a JSON object, or :class:`Refused` (413 oversized, with ``size_code`` when
    given; 400 anything else). ``what`` names it in messages ("Request body", "Message")."""
    size = len(raw) if isinstance(raw, bytes) else len(raw.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise Refused(413, size_code or code, f"{what} is {size} bytes; the limit is {max_bytes}.")
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError as error:
            raise Refused(400, code, f"{what} is not valid UTF-8 (byte {error.start}).") from None
    try:
        payload = json.loads(raw) if raw.strip() else None
    except RecursionError:
        raise Refused(400, code, _too_deep(what)) from None
    except ValueError as error:
        raise Refused(400, code, f"{what} is not valid JSON ({error}).") from None
    if payload is None:
        raise Refused(400, code, f"{what} is empty; send a JSON object.")
    if not isinstance(payload, dict):
        raise Refused(400, code, f"{what} must be a JSON object, not {json_kind(payload)}.")
    if json_depth_exceeds(payload):
        raise Refused(400, code, _too_deep(what))
    return payload


def required_string(payload: dict[str, Any], key: str, code: str, *, what: str) -> str:
    """A non-blank string field that can be stored, or :class:`Refused` (400)."""
    value = payload.get(key)
    if value is None:
        raise Refused(400, code, f"{what} is required ('{key}').")
    if not isinstance(value, str):
        raise Refused(400, code, f"{what} ('{key}') must be a string, not {json_kind(value)}.")
    if not value.strip():
        raise Refused(400, code, f"{what} is required ('{key}' is blank).")
    _check_unicode(value, key, code, what)
    return value


def optional_string(payload: dict[str, Any], key: str, code: str, *, what: str) -> str | None:
    """A string field that may be missing or null, or :class:`Refused` (400)."""
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise Refused(400, code, f"{what} ('{key}') must be a string, not {json_kind(value)}.")
    _check_unicode(value, key, code, what)
    return value


def _check_unicode(value: str, key: str, code: str, what: str) -> None:
    position = lone_surrogate_at(value)
    if position is not None:
        raise Refused(
            400,
            code,
            f"{what} ('{key}') has a lone surrogate (U+{ord(value[position]):04X}) at character "
            f"{position}, which is not valid Unicode; send valid UTF-8 text.",
        )


def _too_deep(what: str) -> str:
    return f"{what} nests JSON more than {MAX_JSON_DEPTH} levels deep."


def not_a_parameter(name: str) -> bool:
    """Whether a query argument is no route's own: Jupyter's credential (``?token=``, which
    Jupyter read before the route ran, and which the document allows on every route) or
    JupyterLab's cache-buster (a name of digits alone, ``?1796318499317``)."""
    return name == "token" or name.isdigit()


MAX_CURSOR_DIGITS = 18  # a journal position always fits a 64-bit integer with room to spare


def journal_cursor(raw: str) -> int | None:
    """A journal cursor (``Last-Event-ID``, ``after``) as a whole number >= 0, or None for
    anything else: only ASCII digits (``int`` would also take "١", "1_0" or " +1"), and not so
    many that no store could compare it."""
    text = raw.strip()
    if not text.isascii() or not text.isdigit() or len(text) > MAX_CURSOR_DIGITS:
        return None
    return int(text)

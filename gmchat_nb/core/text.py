"""Text that can be stored and sent: lone surrogates found, refused or replaced.

JSON lets a client (or a model) write ``"\\ud800"``, a UTF-16 half that is not a character.
Python decodes it into a ``str`` that cannot be encoded as UTF-8, so SQLite, a WebSocket frame or
a log file fails on it later, far from where it came in. Input from a person is refused at the
door with a message that says where the bad character is; text a model wrote is kept with each
lone surrogate replaced by U+FFFD, so nothing it said is lost except the unrepresentable half.
"""

from __future__ import annotations

import re
from typing import Any

__all__ = [
    "MAX_JSON_DEPTH",
    "REPLACEMENT",
    "clean_json",
    "clean_text",
    "json_depth_exceeds",
    "json_kind",
    "lone_surrogate_at",
]

MAX_JSON_DEPTH = 32
"""No request and no tool's arguments need deeper JSON; deeper input is refused, not walked."""

REPLACEMENT = "\ufffd"
_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate_at(text: str) -> int | None:
    """The index of the first character UTF-8 cannot encode (a lone surrogate), else None."""
    if text.isascii():  # O(1) in CPython: the common case costs nothing
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        return int(error.start)
    return None


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (the same object when clean)."""
    if lone_surrogate_at(text) is None:
        return text
    return _SURROGATE.sub(REPLACEMENT, text)


def clean_json(value: Any) -> Any:
    """A JSON value with :func:`clean_text` applied to every string, keys included.

    Values already clean come back unchanged (the same objects), so the common case allocates
    nothing. It recurses: give it values no deeper than :data:`MAX_JSON_DEPTH`
    (:func:`json_depth_exceeds` checks that without recursing).
    """
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, dict):
        cleaned = {clean_text(str(k)): clean_json(v) for k, v in value.items()}
        same = all(a is b for a, b in zip(value.values(), cleaned.values(), strict=True))
        return value if same and list(cleaned) == list(value) else cleaned
    if isinstance(value, list | tuple):
        items = [clean_json(item) for item in value]
        if all(a is b for a, b in zip(value, items, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    return value


def json_kind(value: Any) -> str:
    """A decoded JSON value's type as messages name it: ``a number``, ``an array``, ``null``."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else "null"


def json_depth_exceeds(value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether containers nest deeper than ``limit`` (iterative: no recursion to exhaust)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if not isinstance(item, dict | list | tuple):
            continue
        if depth > limit:
            return True
        children = item.values() if isinstance(item, dict) else item
        stack.extend(
            (child, depth + 1) for child in children if isinstance(child, dict | list | tuple)
        )
    return False

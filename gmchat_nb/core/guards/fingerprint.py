"""A tool call's fingerprint: the same for calls that only differ in key order or spacing.

The loop guard (:mod:`.loop_guard`) tells calls apart by it, and the tool-call pipeline's
reference stage matches executed calls against reference calls with it.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import uuid
from collections.abc import Mapping
from typing import Any, Final

__all__ = ["fingerprint"]

_HASH_LENGTH = 16
_MAX_DEPTH = 64  # deeper than any real arguments: beyond it a value is compared by its text


def _canonical(value: Any, depth: int = 0) -> Any:
    """``value`` as plain JSON data that is the same for equivalent arguments. Dicts keep their
    order: :func:`fingerprint` writes them with sorted keys (where two keys the same once their
    spacing is collapsed leave the later one, as a sort by key kept stable would)."""
    if isinstance(value, str):  # first: most arguments are strings
        return " ".join(value.split())
    if depth > _MAX_DEPTH:
        return " ".join(str(value).split())
    if isinstance(value, float) and not math.isfinite(value):
        return f"<float {value}>"  # NaN and infinities: text, the same each time
    if value is None or isinstance(value, bool | int | float):
        return value
    if isinstance(value, dict | Mapping):  # a dict is told without the slower ABC check
        return {_key(key): _canonical(item, depth + 1) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(item, depth + 1) for item in value]
    if isinstance(value, set | frozenset):
        members = [_canonical(item, depth + 1) for item in value]
        return sorted(members, key=lambda item: json.dumps(item, sort_keys=True, default=str))
    return " ".join(str(value).split())


def _key(key: Any) -> str:
    return " ".join((key if isinstance(key, str) else str(key)).split())


# Arguments whose plain JSON text is already their canonical text, judged on that text: no
# string with whitespace other than single inner spaces (compact JSON has none of its own, and a
# string starts and ends at a quote), no escape (a line break, a quote), no key that was a number,
# a boolean or None (JSON writes it as a string, as it does a key that is one: either goes the
# long way).
_NOT_CANONICAL: Final = re.compile(r'[^\S ]|\\| {2}|" | "|"(?:[-\d][^"]*|true|false|null)":')


def _not_json(value: Any) -> Any:
    raise TypeError("not plain JSON")  # a set, a date: written by _canonical


def _text(name: str, args: Mapping[str, Any]) -> str:
    """``[name, args]`` as canonical JSON. Most arguments are plain JSON already canonical: the
    C encoder writes them and the text shows it; the rest go through :func:`_canonical` (a
    Python walk, several times slower), which writes the same text for them."""
    try:
        text = json.dumps(
            [name, args],
            sort_keys=True,
            ensure_ascii=False,
            separators=(",", ":"),
            allow_nan=False,  # NaN and infinities are written as text by _canonical
            default=_not_json,
        )
    except (TypeError, ValueError, RecursionError):  # odd values, a cycle, nesting too deep
        pass
    else:
        # deeper than _MAX_DEPTH, _canonical writes a value as its str(): counted generously
        nested = text.count("[") + text.count("{")
        if nested <= _MAX_DEPTH and _NOT_CANONICAL.search(text) is None:
            return text
    return json.dumps(
        [name, _canonical(args)],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )


def fingerprint(name: str, args: Mapping[str, Any]) -> str:
    """A short sha256 hex of the tool's name and its arguments as canonical JSON: keys sorted,
    strings stripped with their runs of whitespace collapsed, NaN and odd values as text. Equal
    for calls that only differ in key order or spacing; never raises."""
    try:
        text = _text(name, args)
    except RecursionError:  # nested too deep to compare: a call of its own, never a repeat
        return uuid.uuid4().hex[:_HASH_LENGTH]
    # a lone surrogate in the model's arguments is kept as it is, not refused
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:_HASH_LENGTH]

"""Names, filter keys and result values written as prose, for answers and problem texts."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...project.names import split_words

__all__ = ["describe_filter", "format_value", "humanize", "manager_noun", "path_text", "row_text"]

_LOOKUP_WORDS = {
    "exact": "is",
    "icontains": "contains",
    "contains": "contains",
    "in": "is one of",
    "startswith": "starts with",
    "endswith": "ends with",
    "gt": ">",
    "gte": ">=",
    "lt": "<",
    "lte": "<=",
}


def _plural(noun: str) -> str:
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u"):
        return noun[:-1] + "ies"
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def manager_noun(manager: str, count: int) -> str:
    """``PurchaseOrder`` -> ``purchase order`` / ``purchase orders``."""
    words = split_words(manager) or [manager.lower()]
    noun = " ".join(words)
    return noun if count == 1 else _plural(noun)


def humanize(name: str) -> str:
    """A field or relation name as prose: ``unitPrice`` -> ``unit price``, ``partsList`` -> ``parts``."""
    words = split_words(name)
    if len(words) > 1 and words[-1] == "list":
        words = words[:-1]
    return " ".join(words) or name


def _split_key(key: str) -> tuple[list[str], str]:
    """``material__name__icontains`` -> ``(["material", "name"], "icontains")``."""
    parts = key.split("__")
    if len(parts) > 1 and parts[-1] in _LOOKUP_WORDS:
        return parts[:-1], parts[-1]
    return parts, "exact"


def path_text(key: str) -> str:
    """The field a filter key reaches, as prose: ``parts → material → name``."""
    return " → ".join(humanize(part) for part in _split_key(key)[0])


def describe_filter(key: str, value: Any) -> str:
    """``partsList__material__name`` = "Cobalt" -> ``parts → material → name is "Cobalt"``."""
    lookup = _split_key(key)[1]
    path = path_text(key)
    if isinstance(value, list):
        shown = ", ".join(_quote(item) for item in value)
    elif lookup in ("gt", "gte", "lt", "lte"):
        shown = format_value(value)
    else:
        shown = _quote(value)
    return f"{path} {_LOOKUP_WORDS[lookup]} {shown}"


def _quote(value: Any) -> str:
    if isinstance(value, str) and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", value):
        return f'"{value}"'
    return format_value(value)


def format_value(value: Any) -> str:
    """A result value as text, exactly as the server gave it (no rounding)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, dict) and "value" in value and "unit" in value:
        return f"{format_value(value['value'])} {value['unit']}"
    if isinstance(value, list):
        return ", ".join(format_value(item) for item in value)
    return str(value)


def row_text(item: Mapping[str, Any], label: str, shown: Iterable[str]) -> str:
    """One result row: its label, then the ``shown`` fields it has in parentheses."""
    name = item.get(label)
    text = format_value(name) if name is not None else "(unnamed)"
    extras = [f"{humanize(key)} {format_value(item.get(key))}" for key in shown if key in item]
    return f"{text} ({', '.join(extras)})" if extras else text

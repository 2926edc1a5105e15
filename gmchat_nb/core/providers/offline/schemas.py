"""Facts read from a ``get_manager_schema`` result: field kinds, lookups, labels, relations."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "field_kind",
    "filter_lookups",
    "label_field",
    "relation_targets",
    "schema_fields",
    "text_filters",
]

_NUMBER_TYPES = frozenset({"Int", "Float", "Decimal", "BigInt", "Long", "PositiveInt"})


def field_kind(info: Mapping[str, Any]) -> str:
    """``number``, ``measurement``, ``date``, ``boolean``, ``text``, ``id`` or ``other``."""
    kind = str(info.get("type", ""))
    parts = info.get("parts") or ()
    if "value" in parts and "unit" in parts:
        return "measurement"
    if kind in _NUMBER_TYPES:
        return "number"
    if kind in ("Date", "DateTime"):
        return "date"
    if kind == "Boolean":
        return "boolean"
    if kind == "ID":
        return "id"
    if kind == "String":
        return "text"
    return "other"


def schema_fields(schema: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The schema's fields by name (none when it lists none)."""
    fields = schema.get("fields")
    return dict(fields) if isinstance(fields, dict) else {}


def filter_lookups(schema: Mapping[str, Any], name: str) -> tuple[str, ...]:
    """The lookups the schema's filter on ``name`` takes (none when there is no such filter)."""
    filters = schema.get("filters")
    entry = filters.get(name) if isinstance(filters, dict) else None
    if isinstance(entry, dict) and isinstance(entry.get("lookups"), list):
        return tuple(str(item) for item in entry["lookups"])
    return ()


def text_filters(schema: Mapping[str, Any]) -> list[str]:
    """The String fields that take ``icontains``, ``name`` first."""
    names = [
        name
        for name, info in schema_fields(schema).items()
        if field_kind(info) == "text" and "icontains" in filter_lookups(schema, name)
    ]
    return sorted(names, key=lambda name: name != "name")


def label_field(schema: Mapping[str, Any]) -> str:
    """The field that names a row: ``name``, else the first String, else the first plain field."""
    fields = schema_fields(schema)
    if "name" in fields:
        return "name"
    for kinds in (("text",), ("number", "date", "boolean", "other")):
        for name, info in fields.items():
            if field_kind(info) in kinds:
                return name
    return "id"


def relation_targets(schema: Mapping[str, Any]) -> list[tuple[str, str]]:
    """``(relation, target manager)`` for each relation of the schema."""
    relations = schema.get("relations")
    if not isinstance(relations, dict):
        return []
    return [
        (str(name), str(info.get("target")))
        for name, info in relations.items()
        if isinstance(info, dict) and info.get("target")
    ]

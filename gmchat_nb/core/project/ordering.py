"""Resolve ``order_by`` into GeneralManager's ``orderBy: [{field, direction}]`` value."""

from __future__ import annotations

from typing import Any

from graphql import GraphQLEnumType, GraphQLInputObjectType, GraphQLSchema

from .errors import ToolError
from .graphql_types import named
from .index import ArgumentInfo, ManagerInfo
from .names import MAX_NAME_LENGTH, camel_case, clip, clip_repr, did_you_mean, suggestion_hint

__all__ = ["MAX_ORDER_TERMS", "resolve_order"]

# More sort keys than this never change an order a person reads, and each costs the server work.
MAX_ORDER_TERMS = 10

_DIRECTIONS = {"asc": "ASC", "ascending": "ASC", "desc": "DESC", "descending": "DESC"}


def resolve_order(
    schema: GraphQLSchema, manager: ManagerInfo, argument: ArgumentInfo, value: Any
) -> list[dict[str, str]]:
    """Accept ``"name"``, ``"-name"``, ``"name desc"``, ``["material__name", "-quantity"]`` or the
    native ``[{"field": "name", "direction": "DESC"}]``; names in snake_case or camelCase."""
    allowed = _allowed_fields(schema, manager, argument)
    items = value if isinstance(value, list) else [value]
    if not items:
        raise ToolError("invalid_order", "order_by must name at least one field.")
    if len(items) > MAX_ORDER_TERMS:
        raise ToolError(
            "invalid_order",
            f"order_by takes at most {MAX_ORDER_TERMS} fields; got {len(items)}. Sort by the few "
            "that decide the order.",
        )
    resolved: list[dict[str, str]] = []
    for item in items:
        if isinstance(item, str):
            text = item.strip()
            direction = "DESC" if text.startswith("-") else "ASC"
            text = text.lstrip("-+").strip()
            if " " in text:
                text, _, word = text.rpartition(" ")
                direction = _direction(word, item)
        elif isinstance(item, dict) and "field" in item and set(item) <= {"field", "direction"}:
            text = str(item["field"])
            direction = _direction(str(item.get("direction", "ASC")), item)
        else:
            raise ToolError(
                "invalid_order",
                f"order_by entries are field names ('name', '-quantity') or "
                f'{{"field": ..., "direction": "ASC"|"DESC"}}; got {clip_repr(item)}.',
            )
        resolved.append({"field": _field(text, allowed, manager), "direction": direction})
    return resolved


def _allowed_fields(
    schema: GraphQLSchema, manager: ManagerInfo, argument: ArgumentInfo
) -> list[str]:
    order_type = schema.type_map.get(argument.type.strip("[]!"))
    if not isinstance(order_type, GraphQLInputObjectType) or "field" not in order_type.fields:
        return list(manager.order_fields)
    enum = named(order_type.fields["field"].type)
    if not isinstance(enum, GraphQLEnumType):
        return list(manager.order_fields)
    visible = set(manager.order_fields)
    return [name for name in enum.values if not visible or name in visible]


def _direction(word: str, item: Any) -> str:
    direction = _DIRECTIONS.get(word.lower())
    if direction is None:
        raise ToolError(
            "invalid_order", f"Unknown sort direction in {clip_repr(item)}; use ASC or DESC."
        )
    return direction


def _field(text: str, allowed: list[str], manager: ManagerInfo) -> str:
    if text in allowed:
        return text
    if len(text) <= MAX_NAME_LENGTH:  # a longer text names no field; spare the conversions
        wanted = "__".join(camel_case(part) for part in text.replace(".", "__").split("__"))
        found = {name.lower(): name for name in allowed}.get(wanted.lower())
        if found is not None:
            return found
    suggestions = did_you_mean(text, allowed)
    hint = suggestion_hint(suggestions)
    raise ToolError(
        "invalid_order",
        f"{manager.name} cannot be ordered by '{clip(text)}'.{hint} "
        f"Order fields: {', '.join(allowed)}.",
        suggestions=suggestions or None,
    )

"""A root's ``filter`` input read into :class:`FilterInfo` groups: the lookups of each field
(``name_Icontains`` is ``name`` with ``icontains``) and the nested filter of each relation, leaving
out every input that would reveal a hidden manager."""

from __future__ import annotations

import re
from typing import Any

from graphql import GraphQLField, GraphQLObjectType

from .graphql_types import input_object
from .manager_info import FilterInfo
from .visibility import Visibility

__all__ = ["LOOKUPS", "RELATION_MODES", "filter_groups", "filter_key_visible"]

# Django lookups that GeneralManager turns into filter suffixes
# (``name__icontains`` -> ``name_Icontains``).
LOOKUPS = frozenset(
    {
        "exact",
        "iexact",
        "contains",
        "icontains",
        "in",
        "gt",
        "gte",
        "lt",
        "lte",
        "startswith",
        "istartswith",
        "endswith",
        "iendswith",
        "isnull",
        "range",
        "regex",
        "iregex",
        "year",
        "month",
        "day",
        "date",
    }
)
# Keys of a to-many relation filter object (``{"partsList": {"any": {...}}}``).
RELATION_MODES = frozenset({"any", "none", "all", "some", "every"})
_SEGMENT_SPLIT = re.compile(r"_(?=[A-Z])")


def _filter_path(input_name: str) -> tuple[list[str], str]:
    """``(field path, lookup)`` of a native filter input: ``material_Name_Icontains`` ->
    ``(["material", "name"], "icontains")``; no lookup suffix means ``exact``."""
    segments = [s[:1].lower() + s[1:] for s in _SEGMENT_SPLIT.split(input_name)]
    lookup = "exact"
    if len(segments) > 1 and segments[-1] in LOOKUPS:
        lookup = segments.pop()
    return segments, lookup


def filter_key_visible(visibility: Visibility, type_name: str, input_name: str) -> bool:
    """False for a filter input field that reaches a hidden manager (``auditSecretList``)."""
    object_type = visibility.object_type(type_name)
    segments, _ = _filter_path(input_name)
    return visibility.path_visible(object_type, segments, visibility.hidden_relations(object_type))


def filter_groups(
    visibility: Visibility,
    object_type: GraphQLObjectType,
    root_field: GraphQLField,
    hidden_relations: frozenset[str],
) -> list[FilterInfo]:
    """The filters of the root's ``filter`` argument, one :class:`FilterInfo` per field or
    relation, in the input type's order (none when the root takes no filter)."""
    argument = root_field.args.get("filter")
    filter_type = input_object(argument.type) if argument is not None else None
    if filter_type is None:
        return []
    groups: dict[str, dict[str, Any]] = {}
    for input_name, input_field in filter_type.fields.items():
        segments, lookup = _filter_path(input_name)
        if not visibility.path_visible(object_type, segments, hidden_relations):
            continue
        nested = input_object(input_field.type)
        key = ".".join(segments)
        relation = object_type.fields.get(segments[0]) if len(segments) == 1 else None
        if nested is not None and relation is not None:
            _, target = visibility.classify(relation)
            if target is not None:
                modes = tuple(m for m in nested.fields if m in RELATION_MODES)
                many = bool(modes) and len(modes) == len(nested.fields)
                groups[key] = {
                    "relation": target,
                    "many": many,
                    "modes": modes if many else (),
                    "input_name": input_name,
                }
                continue
        group = groups.setdefault(key, {"type": "", "lookups": {}})
        if lookup == "exact" or not group["type"]:
            group["type"] = _value_type(input_field.type, lookup)
        group["lookups"].setdefault(lookup, input_name)
    return [FilterInfo(field=key, **values) for key, values in groups.items()]


def _value_type(type_: Any, lookup: str) -> str:
    text = str(type_)
    if lookup == "in" and text.startswith("["):
        return text[1:].split("]")[0].rstrip("!")
    return text.rstrip("!")

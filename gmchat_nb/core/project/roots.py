"""How managers are found in a schema: the page-shaped query roots that list them
(``partList(...) -> {items: [PartType], pageInfo {totalCount}}``), the name each manager goes by,
and how a root's or field's arguments are read."""

from __future__ import annotations

from typing import Any

from graphql import GraphQLField, GraphQLSchema

from .graphql_types import default_of, has_required_arguments, is_required, page_shape
from .manager_info import ArgumentInfo, RootInfo

__all__ = [
    "argument_info",
    "collapse",
    "find_roots",
    "manager_name",
    "ordered_roots",
    "root_info",
]


def find_roots(schema: GraphQLSchema) -> dict[str, list[tuple[str, GraphQLField]]]:
    """Item type name -> the page-shaped query roots that list it (in schema order)."""
    roots: dict[str, list[tuple[str, GraphQLField]]] = {}
    query = schema.query_type
    if query is None:
        return roots
    for name, root in query.fields.items():
        if has_required_arguments(root):
            continue  # e.g. partGroups(groupBy: [String!]!) lists grouped rows, not the manager
        shape = page_shape(root.type)
        if shape is not None:
            roots.setdefault(shape.item_type.name, []).append((name, root))
    return roots


def manager_name(type_name: str) -> str:
    """The manager an item type lists: ``PartType`` -> ``Part``."""
    if type_name.endswith("Type") and len(type_name) > 4:
        return type_name[:-4]
    return type_name


def ordered_roots(roots: list[tuple[str, GraphQLField]]) -> list[tuple[str, GraphQLField]]:
    """Put the conventional ``xList`` root first, keeping schema order otherwise."""
    return sorted(roots, key=lambda item: (not item[0].endswith("List"), roots.index(item)))


def root_info(name: str, root: GraphQLField) -> RootInfo:
    """The :class:`RootInfo` of a page-shaped root."""
    shape = page_shape(root.type)
    assert shape is not None
    return RootInfo(
        name=name,
        arguments=tuple(argument_info(arg_name, arg) for arg_name, arg in root.args.items()),
        items_field=shape.items_field,
        page_info_field=shape.page_info_field,
        total_field=shape.total_field,
    )


def argument_info(name: str, argument: Any) -> ArgumentInfo:
    """The :class:`ArgumentInfo` of a GraphQL argument."""
    has_default, default = default_of(argument)
    return ArgumentInfo(
        name=name,
        type=str(argument.type),
        required=is_required(argument),
        default=default,
        has_default=has_default,
        description=collapse(argument.description or ""),
    )


def collapse(text: str) -> str:
    """A schema description on one line, runs of whitespace made one space."""
    return " ".join(text.split())

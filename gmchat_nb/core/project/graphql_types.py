"""Small, total helpers over graphql-core types, used while indexing and compiling."""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLError,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLType,
    is_leaf_type,
)

__all__ = [
    "PageShape",
    "has_required_arguments",
    "input_object",
    "is_list",
    "is_required",
    "named",
    "page_shape",
    "raise_first_error",
]


def raise_first_error(path: Any, invalid: Any, error: GraphQLError) -> None:
    """``on_error`` for ``coerce_input_value``: stop at the first problem, with its message."""
    raise error


def named(type_: GraphQLType) -> GraphQLNamedType:
    """The named type under any list and non-null wrappers."""
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    assert isinstance(type_, GraphQLNamedType)
    return type_


def is_list(type_: GraphQLType) -> bool:
    """True for ``[T]``, ``[T]!`` and ``[T!]!``."""
    if isinstance(type_, GraphQLNonNull):
        type_ = type_.of_type
    return isinstance(type_, GraphQLList)


def is_required(arg: GraphQLArgument | GraphQLInputField) -> bool:
    """An argument or input field the caller must give (non-null and without a default)."""
    from graphql import Undefined

    return isinstance(arg.type, GraphQLNonNull) and arg.default_value is Undefined


def has_required_arguments(field: GraphQLField) -> bool:
    """Fields like ``partGroups(groupBy: [String!]!)`` cannot be selected without extra input."""
    return any(is_required(arg) for arg in field.args.values())


def input_object(type_: GraphQLType | None) -> GraphQLInputObjectType | None:
    """The input object type under wrappers, or None for scalars and enums."""
    if type_ is None:
        return None
    base = named(type_)
    return base if isinstance(base, GraphQLInputObjectType) else None


class PageShape:
    """How a page-shaped object spells its parts: ``{items: [T], pageInfo {totalCount}}``."""

    __slots__ = ("item_type", "items_field", "page_info_field", "total_field")

    def __init__(
        self,
        item_type: GraphQLObjectType,
        items_field: str,
        page_info_field: str,
        total_field: str,
    ) -> None:
        self.item_type = item_type
        self.items_field = items_field
        self.page_info_field = page_info_field
        self.total_field = total_field


def page_shape(type_: GraphQLType) -> PageShape | None:
    """Recognise GeneralManager's page objects (and the snake_case variant some schemas use)."""
    base = named(type_)
    if not isinstance(base, GraphQLObjectType) or is_list(type_):
        return None
    fields = base.fields
    items = fields.get("items")
    if items is None or not is_list(items.type):
        return None
    item_type = named(items.type)
    if not isinstance(item_type, GraphQLObjectType):
        return None
    for info_name in ("pageInfo", "page_info"):
        info = fields.get(info_name)
        if info is None:
            continue
        info_type = named(info.type)
        if not isinstance(info_type, GraphQLObjectType):
            continue
        for total_name in ("totalCount", "total_count"):
            if total_name in info_type.fields and is_leaf_type(
                named(info_type.fields[total_name].type)
            ):
                return PageShape(item_type, "items", info_name, total_name)
    return None

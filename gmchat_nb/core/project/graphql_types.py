"""Small, total helpers over graphql-core types, used while indexing and compiling."""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLField,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNamedType,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLType,
    Undefined,
    coerce_input_value,
    is_leaf_type,
    value_from_ast_untyped,
)

try:  # graphql-core 3.3 split validation out of coercion
    from graphql.utilities import (  # type: ignore[attr-defined,unused-ignore]
        validate_input_value as _validate_input_value,
    )
except ImportError:  # graphql-core 3.2
    _validate_input_value = None

__all__ = [
    "PageShape",
    "default_of",
    "has_required_arguments",
    "input_object",
    "input_value_error",
    "is_list",
    "is_required",
    "named",
    "page_shape",
]


def input_value_error(value: Any, type_: GraphQLInputType) -> str | None:
    """Why ``value`` is not a valid ``type_`` input (graphql-core's own words), or None."""
    messages: list[str] = []
    if _validate_input_value is not None:  # graphql-core 3.3
        _validate_input_value(value, type_, lambda error, path: messages.append(error.message))
    else:  # graphql-core 3.2 reports through coerce_input_value's on_error
        coerce_input_value(
            value,
            type_,
            lambda path, invalid, error: messages.append(error.message),  # type: ignore[call-arg,arg-type,unused-ignore]
        )
    return messages[0] if messages else None


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


def default_of(arg: GraphQLArgument | GraphQLInputField) -> tuple[bool, Any]:
    """``(has_default, value)``, whether the schema was built in process or introspected."""
    default = getattr(arg, "default", None)  # graphql-core 3.3 keeps a value or a literal
    if default is not None:
        if default.value is not Undefined:
            return True, default.value
        if default.literal is not None:
            return True, value_from_ast_untyped(default.literal)
        return False, None
    if arg.default_value is not Undefined:  # graphql-core 3.2
        return True, arg.default_value
    return False, None


def is_required(arg: GraphQLArgument | GraphQLInputField) -> bool:
    """An argument or input field the caller must give (non-null and without a default)."""
    return isinstance(arg.type, GraphQLNonNull) and not default_of(arg)[0]


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

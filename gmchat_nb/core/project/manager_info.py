"""What the schema index knows about a manager, as frozen values: its roots, arguments, fields,
relations, filters and mutations."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ArgumentInfo",
    "FieldInfo",
    "FilterInfo",
    "ManagerInfo",
    "MutationInfo",
    "RelationInfo",
    "RootInfo",
]


@dataclass(frozen=True, slots=True)
class ArgumentInfo:
    """One argument of a root, relation field or mutation."""

    name: str
    type: str
    required: bool
    default: Any = None
    has_default: bool = False
    description: str = ""

    def describe(self) -> str:
        """``Int = 0`` style text, as the model sees it in schemas."""
        if self.has_default:
            return f"{self.type} = {_graphql_literal(self.default)}"
        return self.type


@dataclass(frozen=True, slots=True)
class FieldInfo:
    """A selectable value of a manager: a scalar, or a small value object like a measurement."""

    name: str
    type: str
    description: str = ""
    subfields: tuple[str, ...] = ()
    arguments: tuple[ArgumentInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class RelationInfo:
    """A field that leads to another exposed manager."""

    name: str
    target: str
    many: bool
    paginated: bool
    path: tuple[str, ...]
    description: str = ""
    arguments: tuple[ArgumentInfo, ...] = ()


@dataclass(frozen=True, slots=True)
class FilterInfo:
    """The filters of one field (``name`` with its lookups) or of one relation."""

    field: str
    type: str = ""
    lookups: Mapping[str, str] = dataclasses.field(
        default_factory=dict
    )  # lookup -> native input name
    relation: str | None = None  # target manager of a nested relation filter
    many: bool = False
    modes: tuple[str, ...] = ()  # ("any", "none") for to-many relation filters
    input_name: str = ""  # native input field of a nested relation filter


@dataclass(frozen=True, slots=True)
class RootInfo:
    """A page-shaped query root that lists one manager."""

    name: str
    arguments: tuple[ArgumentInfo, ...]
    items_field: str
    page_info_field: str
    total_field: str
    _by_name: Mapping[str, ArgumentInfo] = dataclasses.field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        # Every compile asks for several arguments by name.
        object.__setattr__(self, "_by_name", {arg.name: arg for arg in self.arguments})

    def argument(self, name: str) -> ArgumentInfo | None:
        """The argument called ``name``, if the root has it."""
        return self._by_name.get(name)


@dataclass(frozen=True, slots=True)
class MutationInfo:
    """A mutation whose payload returns an exposed manager."""

    name: str
    manager: str
    action: str  # create / update / delete / other
    arguments: tuple[ArgumentInfo, ...]
    payload_type: str
    object_field: str
    description: str = ""


@dataclass(frozen=True, slots=True)
class ManagerInfo:
    """Everything the tools know about one exposed manager."""

    name: str
    type_name: str
    description: str
    roots: tuple[RootInfo, ...]
    fields: tuple[FieldInfo, ...]
    relations: tuple[RelationInfo, ...]
    filters: tuple[FilterInfo, ...]
    order_fields: tuple[str, ...]
    mutations: tuple[MutationInfo, ...]

    @property
    def root(self) -> RootInfo:
        """The default root: ``partList`` when several roots list the manager."""
        return self.roots[0]

    def field(self, name: str) -> FieldInfo | None:
        """The field called ``name`` (exact GraphQL name)."""
        return next((item for item in self.fields if item.name == name), None)

    def relation(self, name: str) -> RelationInfo | None:
        """The relation called ``name`` (exact GraphQL name)."""
        return next((item for item in self.relations if item.name == name), None)


def _graphql_literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)

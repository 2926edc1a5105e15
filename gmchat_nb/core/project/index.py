"""The schema index: what a GeneralManager project's GraphQL schema says about its managers.

A *manager* is an object type that a page-shaped query root lists
(``partList(...) -> {items: [PartType], pageInfo {totalCount}}``). The index records, for each
exposed manager, its fields, relations (with the GraphQL selection path that walks them), filters
grouped by field, order fields, roots and mutations. Managers that are not exposed are left out
entirely, and so is every relation, filter, order field and mutation that would reveal them.

The index is built once per schema and is read-only afterwards; every tool reads it. Its parts
live beside it: :mod:`.manager_info` (the values it hands out), :mod:`.roots` (how managers are
found), :mod:`.visibility` (what would reveal a hidden manager), :mod:`.members` and
:mod:`.filter_groups` (a manager's fields, relations, filters and order fields),
:mod:`.offered_mutations` (mutations offered and withheld) and :mod:`.aliases` (name resolution).
This module keeps their public names importable from here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from types import MappingProxyType

from graphql import GraphQLSchema

from .aliases import UnknownExposedManagerError, aliases, name_variants, resolve_exposed
from .errors import ToolError
from .filter_groups import LOOKUPS, RELATION_MODES, filter_key_visible
from .manager_info import (
    ArgumentInfo,
    FieldInfo,
    FilterInfo,
    ManagerInfo,
    MutationInfo,
    RelationInfo,
    RootInfo,
)
from .members import build_manager
from .names import MAX_NAME_LENGTH, clip, did_you_mean, normalize_key, suggestion_hint
from .offered_mutations import offered_mutations
from .roots import find_roots, manager_name
from .tools import TOOLS
from .visibility import Visibility

__all__ = [
    "LOOKUPS",
    "RELATION_MODES",
    "ArgumentInfo",
    "FieldInfo",
    "FilterInfo",
    "ManagerInfo",
    "MutationInfo",
    "RelationInfo",
    "RootInfo",
    "SchemaIndex",
    "UnknownExposedManagerError",
]


class SchemaIndex:
    """An index of the exposed managers of one GraphQL schema.

    ``exposed`` lists the managers the assistant may see (any accepted spelling); None exposes all.
    """

    def __init__(self, schema: GraphQLSchema, exposed: Iterable[str] | None = None) -> None:
        self.schema = schema
        all_roots = find_roots(schema)
        type_to_manager = {type_name: manager_name(type_name) for type_name in all_roots}
        self.all_managers: tuple[str, ...] = tuple(sorted(type_to_manager.values()))
        visible = resolve_exposed(exposed, type_to_manager) if exposed is not None else None
        self._visibility = Visibility(
            schema,
            type_to_manager,
            frozenset(
                type_name
                for type_name, manager in type_to_manager.items()
                if visible is None or manager in visible
            ),
        )
        withheld: dict[str, str] = {}
        mutations = offered_mutations(self._visibility, withheld)
        managers: dict[str, ManagerInfo] = {}
        for type_name, roots in all_roots.items():
            if type_name not in self._visibility.visible_types:
                continue
            info = build_manager(self._visibility, type_name, roots, mutations.get(type_name, ()))
            managers[info.name] = info
        self.managers: Mapping[str, ManagerInfo] = MappingProxyType(managers)
        self.mutations: Mapping[str, MutationInfo] = MappingProxyType(
            {m.name: m for infos in mutations.values() for m in infos}
        )
        self._aliases = aliases(managers.values())
        # Why an exposed manager's mutation is not offered: operators read this, never the chat.
        self.withheld_mutations: Mapping[str, str] = MappingProxyType(withheld)
        self.hidden_names = self._visibility.hidden_names(managers)

    @property
    def names(self) -> tuple[str, ...]:
        """The exposed manager names in schema order."""
        return tuple(self.managers)

    def find(self, name: str) -> ManagerInfo | None:
        """Resolve ``Part``, ``part``, ``PartManager``, ``PartType``, ``partList``, ``parts``."""
        if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
            return None
        key = normalize_key(name)
        for candidate in name_variants(key):
            found = self._aliases.get(candidate)
            if found is not None:
                return self.managers[found]
        return None

    def filter_key_visible(self, type_name: str, input_name: str) -> bool:
        """False for a filter input field that reaches a hidden manager (``auditSecretList``)."""
        return filter_key_visible(self._visibility, type_name, input_name)

    def resolve(self, name: object, *, argument: str = "manager") -> ManagerInfo:
        """Like :meth:`find`, but an unknown name is a :class:`ToolError` naming close matches."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError(
                "invalid_arguments", f"'{argument}' must be a non-empty manager name string."
            )
        found = self.find(name)
        if found is not None:
            return found
        suggestions = did_you_mean(name, self.managers)
        hint = suggestion_hint(suggestions)
        raise ToolError(
            "unknown_manager",
            f"Unknown manager '{clip(name)}'.{hint} Use {TOOLS.search_managers.name} to find the "
            "right one.",
            suggestions=suggestions or None,
        )

    def mutation(self, name: object) -> MutationInfo:
        """The mutation called ``name`` (exact or case-insensitive), else a ToolError."""
        if not isinstance(name, str) or not name.strip():
            raise ToolError("invalid_arguments", "'mutation' must be a non-empty mutation name.")
        found = self.mutations.get(name)
        if found is None and len(name) <= MAX_NAME_LENGTH:
            by_key = {normalize_key(key): info for key, info in self.mutations.items()}
            found = by_key.get(normalize_key(name))
        if found is not None:
            return found
        suggestions = did_you_mean(name, self.mutations)
        hint = suggestion_hint(suggestions)
        raise ToolError("unknown_mutation", f"Unknown mutation '{clip(name)}'.{hint}")

"""Which managers the chat may see, and which relations, filters and arguments would reveal one it
may not.

A manager that is not exposed is left out of everything the index builds: no relation leads to
it, no filter walks through it, no order field or mutation argument names it, and its name (in
any spelling) is something :class:`~.hidden.HiddenNames` keeps out of server messages.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from graphql import GraphQLField, GraphQLObjectType, GraphQLSchema, is_leaf_type

from .graphql_types import has_required_arguments, is_list, named, page_shape
from .hidden import HiddenNames

__all__ = ["Visibility", "reveals_hidden"]


class Visibility:
    """The exposed managers of one schema, and the hidden relations of each object type.

    ``type_to_manager`` maps every manager's item type to its name; ``visible_types`` are the
    item types of the exposed ones.
    """

    def __init__(
        self,
        schema: GraphQLSchema,
        type_to_manager: Mapping[str, str],
        visible_types: frozenset[str],
    ) -> None:
        self.schema = schema
        self.type_to_manager = type_to_manager
        self.visible_types = visible_types
        self._hidden_cache: dict[str, frozenset[str]] = {}

    def object_type(self, type_name: str) -> GraphQLObjectType:
        """The schema's object type called ``type_name``."""
        type_ = self.schema.type_map[type_name]
        assert isinstance(type_, GraphQLObjectType)
        return type_

    def classify(self, graphql_field: GraphQLField) -> tuple[str, str | None]:
        """('leaf'|'one'|'page'|'list'|'value'|'hidden'|'skip', target manager or None)."""
        if has_required_arguments(graphql_field):
            return "skip", None
        base = named(graphql_field.type)
        if is_leaf_type(base):
            return "leaf", None
        if not isinstance(base, GraphQLObjectType):
            return "skip", None  # interfaces and unions are not supported selections
        shape = page_shape(graphql_field.type)
        if shape is not None:
            item = shape.item_type.name
            if item in self.visible_types:
                return "page", self.type_to_manager[item]
            return ("hidden" if item in self.type_to_manager else "skip"), None
        if base.name in self.type_to_manager:
            if base.name not in self.visible_types:
                return "hidden", None
            kind = "list" if is_list(graphql_field.type) else "one"
            return kind, self.type_to_manager[base.name]
        if is_list(graphql_field.type):
            return "skip", None
        return "value", None

    def hidden_relations(self, object_type: GraphQLObjectType) -> frozenset[str]:
        """The fields of ``object_type`` that lead to a hidden manager."""
        hidden = self._hidden_cache.get(object_type.name)
        if hidden is None:
            hidden = frozenset(
                name
                for name, item in object_type.fields.items()
                if self.classify(item)[0] == "hidden"
            )
            self._hidden_cache[object_type.name] = hidden
        return hidden

    def hidden_names(self, exposed: Collection[str]) -> HiddenNames:
        """The names to keep out of server messages: every manager not in ``exposed``, and every
        relation of an exposed one that leads to such a manager."""
        return HiddenNames(
            [
                *(name for name in self.type_to_manager.values() if name not in exposed),
                *(
                    relation
                    for type_name in self.visible_types
                    for relation in self.hidden_relations(self.object_type(type_name))
                ),
            ]
        )

    def hidden_target(self, object_type: GraphQLObjectType, argument: str) -> str:
        """The hidden manager a mutation argument refers to (``material`` -> ``Material``)."""
        for relation in self.hidden_relations(object_type):
            if reveals_hidden(argument, frozenset({relation})):
                graphql_field = object_type.fields[relation]
                shape = page_shape(graphql_field.type)
                base = shape.item_type if shape is not None else named(graphql_field.type)
                return self.type_to_manager.get(base.name, base.name)
        return "another manager"

    def path_visible(
        self,
        object_type: GraphQLObjectType,
        segments: list[str],
        hidden_relations: frozenset[str],
    ) -> bool:
        """False when a filter path walks through (or names the id of) a hidden manager."""
        current = object_type
        hidden = hidden_relations
        for position, segment in enumerate(segments):
            if reveals_hidden(segment, hidden):
                return False
            graphql_field = current.fields.get(segment)
            if graphql_field is None or position == len(segments) - 1:
                return True
            base = named(graphql_field.type)
            shape = page_shape(graphql_field.type)
            next_type = shape.item_type if shape is not None else base
            if not isinstance(next_type, GraphQLObjectType):
                return True
            current = next_type
            hidden = self.hidden_relations(current)
        return True


def reveals_hidden(name: str, hidden_relations: frozenset[str]) -> bool:
    """Whether ``name`` is a hidden relation or one of its id or list spellings.

    ``material``, ``materialId``, ``auditSecretList``, ``auditSecret`` and ``auditSecretIdList``
    all name a relation in ``hidden_relations`` (``{"material", "auditSecretList"}``).
    """
    if not hidden_relations:
        return False
    stems = {name, name + "List"}
    for suffix in ("IdList", "Ids", "Id", "List"):
        if name.endswith(suffix) and len(name) > len(suffix):
            stem = name[: -len(suffix)]
            stems.update((stem, stem + "List"))
    return not stems.isdisjoint(hidden_relations)

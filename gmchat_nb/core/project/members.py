"""A manager's members, read from its object type and its default root: fields (scalars and
small value objects), relations to other exposed managers, filters and order fields — each without
what would reveal a hidden manager — put together as a :class:`ManagerInfo`."""

from __future__ import annotations

from graphql import GraphQLEnumType, GraphQLField, GraphQLObjectType, is_leaf_type

from .filter_groups import filter_groups
from .graphql_types import has_required_arguments, input_object, named, page_shape
from .manager_info import FieldInfo, ManagerInfo, MutationInfo, RelationInfo
from .roots import argument_info, collapse, ordered_roots, root_info
from .visibility import Visibility, reveals_hidden

__all__ = ["build_manager"]


def build_manager(
    visibility: Visibility,
    type_name: str,
    roots: list[tuple[str, GraphQLField]],
    mutations: tuple[MutationInfo, ...],
) -> ManagerInfo:
    """The :class:`ManagerInfo` of the exposed manager whose item type is ``type_name``, listed
    by ``roots`` and changed by ``mutations``."""
    object_type = visibility.object_type(type_name)
    fields, relations = _fields_and_relations(visibility, object_type)
    hidden_relations = visibility.hidden_relations(object_type)
    root_infos = tuple(root_info(name, root) for name, root in ordered_roots(roots))
    root_field = dict(roots)[root_infos[0].name]
    description = collapse(object_type.description or root_field.description or "")
    filters = filter_groups(visibility, object_type, root_field, hidden_relations)
    order_fields = _order_fields(root_field, hidden_relations)
    return ManagerInfo(
        name=visibility.type_to_manager[type_name],
        type_name=type_name,
        description=description,
        roots=root_infos,
        fields=tuple(fields),
        relations=tuple(relations),
        filters=tuple(filters),
        order_fields=order_fields,
        mutations=mutations,
    )


def _fields_and_relations(
    visibility: Visibility, object_type: GraphQLObjectType
) -> tuple[list[FieldInfo], list[RelationInfo]]:
    hidden = visibility.hidden_relations(object_type)
    fields: list[FieldInfo] = []
    relations: list[RelationInfo] = []
    for name, graphql_field in object_type.fields.items():
        kind, target = visibility.classify(graphql_field)
        description = collapse(graphql_field.description or "")
        arguments = tuple(argument_info(n, a) for n, a in graphql_field.args.items())
        if kind == "leaf":
            if reveals_hidden(name, hidden):
                continue
            fields.append(FieldInfo(name, str(graphql_field.type), description, (), arguments))
        elif kind == "value":
            value_type = named(graphql_field.type)
            assert isinstance(value_type, GraphQLObjectType)
            subfields = tuple(
                sub
                for sub, sub_field in value_type.fields.items()
                if is_leaf_type(named(sub_field.type)) and not has_required_arguments(sub_field)
            )
            if subfields:
                fields.append(
                    FieldInfo(name, str(graphql_field.type), description, subfields, arguments)
                )
        elif kind in ("one", "list", "page"):
            assert target is not None
            shape = page_shape(graphql_field.type) if kind == "page" else None
            path = (name, shape.items_field) if shape is not None else (name,)
            relations.append(
                RelationInfo(
                    name=name,
                    target=target,
                    many=kind != "one",
                    paginated=kind == "page",
                    path=path,
                    description=description,
                    arguments=arguments,
                )
            )
    return fields, relations


def _order_fields(root: GraphQLField, hidden_relations: frozenset[str]) -> tuple[str, ...]:
    argument = root.args.get("orderBy")
    order_type = input_object(argument.type) if argument is not None else None
    if order_type is None or "field" not in order_type.fields:
        return ()
    enum = named(order_type.fields["field"].type)
    if not isinstance(enum, GraphQLEnumType):
        return ()
    return tuple(
        value for value in enum.values if not reveals_hidden(value.split("__")[0], hidden_relations)
    )

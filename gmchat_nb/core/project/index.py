"""The schema index: what a GeneralManager project's GraphQL schema says about its managers.

A *manager* is an object type that a page-shaped query root lists
(``partList(...) -> {items: [PartType], pageInfo {totalCount}}``). The index records, for each
exposed manager, its fields, relations (with the GraphQL selection path that walks them), filters
grouped by field, order fields, roots and mutations. Managers that are not exposed are left out
entirely, and so is every relation, filter, order field and mutation that would reveal them.

The index is built once per schema and is read-only afterwards; every tool reads it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from graphql import (
    GraphQLEnumType,
    GraphQLField,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    is_leaf_type,
)

from .errors import ToolError
from .graphql_types import (
    default_of,
    has_required_arguments,
    input_object,
    is_list,
    is_required,
    named,
    page_shape,
)
from .hidden import HiddenNames
from .names import (
    MAX_NAME_LENGTH,
    clip,
    did_you_mean,
    normalize_key,
    singular,
    split_words,
    suggestion_hint,
)

__all__ = [
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


class UnknownExposedManagerError(ValueError):
    """``exposed`` named a manager the schema does not have."""


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


class SchemaIndex:
    """An index of the exposed managers of one GraphQL schema.

    ``exposed`` lists the managers the assistant may see (any accepted spelling); None exposes all.
    """

    def __init__(self, schema: GraphQLSchema, exposed: Iterable[str] | None = None) -> None:
        self.schema = schema
        all_roots = _find_roots(schema)
        self._type_to_manager = {type_name: _manager_name(type_name) for type_name in all_roots}
        all_names = sorted(self._type_to_manager.values())
        self.all_managers: tuple[str, ...] = tuple(all_names)
        visible = _resolve_exposed(exposed, self._type_to_manager) if exposed is not None else None
        self._visible_types = frozenset(
            type_name
            for type_name, manager in self._type_to_manager.items()
            if visible is None or manager in visible
        )
        self._hidden_cache: dict[str, frozenset[str]] = {}
        withheld: dict[str, str] = {}
        mutations = self._mutations_by_type(withheld)
        managers: dict[str, ManagerInfo] = {}
        for type_name, roots in all_roots.items():
            if type_name not in self._visible_types:
                continue
            info = self._build_manager(type_name, roots, mutations.get(type_name, ()))
            managers[info.name] = info
        self.managers: Mapping[str, ManagerInfo] = MappingProxyType(managers)
        self.mutations: Mapping[str, MutationInfo] = MappingProxyType(
            {m.name: m for infos in mutations.values() for m in infos}
        )
        self._aliases = _aliases(managers.values())
        # Why an exposed manager's mutation is not offered: operators read this, never the chat.
        self.withheld_mutations: Mapping[str, str] = MappingProxyType(withheld)
        self.hidden_names = HiddenNames(
            [
                *(name for name in all_names if name not in managers),
                *(
                    relation
                    for type_name in self._visible_types
                    for relation in self._hidden_relation_names(self._object(type_name))
                ),
            ]
        )

    # -- lookups -------------------------------------------------------------------------------

    @property
    def names(self) -> tuple[str, ...]:
        """The exposed manager names in schema order."""
        return tuple(self.managers)

    def find(self, name: str) -> ManagerInfo | None:
        """Resolve ``Part``, ``part``, ``PartManager``, ``PartType``, ``partList``, ``parts``."""
        if not isinstance(name, str) or len(name) > MAX_NAME_LENGTH:
            return None
        key = normalize_key(name)
        for candidate in _name_variants(key):
            found = self._aliases.get(candidate)
            if found is not None:
                return self.managers[found]
        return None

    def filter_key_visible(self, type_name: str, input_name: str) -> bool:
        """False for a filter input field that reaches a hidden manager (``auditSecretList``)."""
        object_type = self._object(type_name)
        segments = [s[:1].lower() + s[1:] for s in _SEGMENT_SPLIT.split(input_name)]
        if len(segments) > 1 and segments[-1] in LOOKUPS:
            segments.pop()
        return self._path_visible(object_type, segments, self._hidden_relation_names(object_type))

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
            f"Unknown manager '{clip(name)}'.{hint} Use search_managers to find the right one.",
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

    # -- building ------------------------------------------------------------------------------

    def _object(self, type_name: str) -> GraphQLObjectType:
        type_ = self.schema.type_map[type_name]
        assert isinstance(type_, GraphQLObjectType)
        return type_

    def _build_manager(
        self,
        type_name: str,
        roots: list[tuple[str, GraphQLField]],
        mutations: tuple[MutationInfo, ...],
    ) -> ManagerInfo:
        object_type = self._object(type_name)
        fields, relations = self._fields_and_relations(object_type)
        hidden_relations = self._hidden_relation_names(object_type)
        root_infos = tuple(_root_info(name, root) for name, root in _ordered_roots(roots))
        root_field = dict(roots)[root_infos[0].name]
        description = _collapse(object_type.description or root_field.description or "")
        filters = self._filters(object_type, root_field, hidden_relations)
        order_fields = _order_fields(root_field, hidden_relations)
        return ManagerInfo(
            name=self._type_to_manager[type_name],
            type_name=type_name,
            description=description,
            roots=root_infos,
            fields=tuple(fields),
            relations=tuple(relations),
            filters=tuple(filters),
            order_fields=order_fields,
            mutations=mutations,
        )

    def _classify(self, graphql_field: GraphQLField) -> tuple[str, str | None]:
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
            if item in self._visible_types:
                return "page", self._type_to_manager[item]
            return ("hidden" if item in self._type_to_manager else "skip"), None
        if base.name in self._type_to_manager:
            if base.name not in self._visible_types:
                return "hidden", None
            kind = "list" if is_list(graphql_field.type) else "one"
            return kind, self._type_to_manager[base.name]
        if is_list(graphql_field.type):
            return "skip", None
        return "value", None

    def _hidden_relation_names(self, object_type: GraphQLObjectType) -> frozenset[str]:
        hidden = self._hidden_cache.get(object_type.name)
        if hidden is None:
            hidden = frozenset(
                name
                for name, item in object_type.fields.items()
                if self._classify(item)[0] == "hidden"
            )
            self._hidden_cache[object_type.name] = hidden
        return hidden

    def _fields_and_relations(
        self, object_type: GraphQLObjectType
    ) -> tuple[list[FieldInfo], list[RelationInfo]]:
        hidden = self._hidden_relation_names(object_type)
        fields: list[FieldInfo] = []
        relations: list[RelationInfo] = []
        for name, graphql_field in object_type.fields.items():
            kind, target = self._classify(graphql_field)
            description = _collapse(graphql_field.description or "")
            arguments = tuple(_argument_info(n, a) for n, a in graphql_field.args.items())
            if kind == "leaf":
                if _reveals_hidden(name, hidden):
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

    def _filters(
        self,
        object_type: GraphQLObjectType,
        root_field: GraphQLField,
        hidden_relations: frozenset[str],
    ) -> list[FilterInfo]:
        argument = root_field.args.get("filter")
        filter_type = input_object(argument.type) if argument is not None else None
        if filter_type is None:
            return []
        groups: dict[str, dict[str, Any]] = {}
        for input_name, input_field in filter_type.fields.items():
            segments = [s[:1].lower() + s[1:] for s in _SEGMENT_SPLIT.split(input_name)]
            lookup = "exact"
            if len(segments) > 1 and segments[-1] in LOOKUPS:
                lookup = segments.pop()
            if not self._path_visible(object_type, segments, hidden_relations):
                continue
            nested = input_object(input_field.type)
            key = ".".join(segments)
            relation = object_type.fields.get(segments[0]) if len(segments) == 1 else None
            if nested is not None and relation is not None:
                _, target = self._classify(relation)
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

    def _mutations_by_type(self, withheld: dict[str, str]) -> dict[str, tuple[MutationInfo, ...]]:
        """The mutations whose payload returns an exposed manager, by its type name.

        Arguments that refer to a hidden manager are left out; a mutation that cannot run without
        one is not offered at all, and ``withheld`` records why.
        """
        found: dict[str, list[MutationInfo]] = {}
        mutation_type = self.schema.mutation_type
        if mutation_type is None:
            return {}
        for name, mutation in mutation_type.fields.items():
            payload = named(mutation.type)
            if not isinstance(payload, GraphQLObjectType):
                continue
            for field_name, payload_field in payload.fields.items():
                target = named(payload_field.type)
                if target.name not in self._visible_types:
                    continue
                object_type = self._object(target.name)
                hidden = self._hidden_relation_names(object_type)
                arguments = {
                    arg_name: argument
                    for arg_name, argument in mutation.args.items()
                    if not _reveals_hidden(arg_name, hidden)
                }
                needed = [
                    arg_name
                    for arg_name, argument in mutation.args.items()
                    if arg_name not in arguments and is_required(argument)
                ]
                if needed:
                    withheld[name] = (
                        f"{name} needs the argument '{needed[0]}', which refers to "
                        f"{self._hidden_target(object_type, needed[0])}, a manager that is not "
                        f"exposed: expose it, or leave {name} out of allowed_mutations."
                    )
                else:
                    found.setdefault(target.name, []).append(
                        _mutation_info(name, mutation, arguments, payload.name, field_name, target)
                    )
                break
        return {type_name: tuple(infos) for type_name, infos in found.items()}

    def _hidden_target(self, object_type: GraphQLObjectType, argument: str) -> str:
        """The hidden manager a mutation argument refers to (``material`` -> ``Material``)."""
        for relation in self._hidden_relation_names(object_type):
            if _reveals_hidden(argument, frozenset({relation})):
                graphql_field = object_type.fields[relation]
                shape = page_shape(graphql_field.type)
                base = shape.item_type if shape is not None else named(graphql_field.type)
                return self._type_to_manager.get(base.name, base.name)
        return "another manager"

    def _path_visible(
        self,
        object_type: GraphQLObjectType,
        segments: list[str],
        hidden_relations: frozenset[str],
    ) -> bool:
        """False when a filter path walks through (or names the id of) a hidden manager."""
        current = object_type
        hidden = hidden_relations
        for position, segment in enumerate(segments):
            if _reveals_hidden(segment, hidden):
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
            hidden = self._hidden_relation_names(current)
        return True


# -- module helpers ----------------------------------------------------------------------------


def _find_roots(schema: GraphQLSchema) -> dict[str, list[tuple[str, GraphQLField]]]:
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


def _manager_name(type_name: str) -> str:
    if type_name.endswith("Type") and len(type_name) > 4:
        return type_name[:-4]
    return type_name


def _ordered_roots(roots: list[tuple[str, GraphQLField]]) -> list[tuple[str, GraphQLField]]:
    """Put the conventional ``xList`` root first, keeping schema order otherwise."""
    return sorted(roots, key=lambda item: (not item[0].endswith("List"), roots.index(item)))


def _root_info(name: str, root: GraphQLField) -> RootInfo:
    shape = page_shape(root.type)
    assert shape is not None
    return RootInfo(
        name=name,
        arguments=tuple(_argument_info(arg_name, arg) for arg_name, arg in root.args.items()),
        items_field=shape.items_field,
        page_info_field=shape.page_info_field,
        total_field=shape.total_field,
    )


def _argument_info(name: str, argument: Any) -> ArgumentInfo:
    has_default, default = default_of(argument)
    return ArgumentInfo(
        name=name,
        type=str(argument.type),
        required=is_required(argument),
        default=default,
        has_default=has_default,
        description=_collapse(argument.description or ""),
    )


def _order_fields(root: GraphQLField, hidden_relations: frozenset[str]) -> tuple[str, ...]:
    argument = root.args.get("orderBy")
    order_type = input_object(argument.type) if argument is not None else None
    if order_type is None or "field" not in order_type.fields:
        return ()
    enum = named(order_type.fields["field"].type)
    if not isinstance(enum, GraphQLEnumType):
        return ()
    return tuple(
        value
        for value in enum.values
        if not _reveals_hidden(value.split("__")[0], hidden_relations)
    )


def _mutation_info(
    name: str,
    mutation: GraphQLField,
    arguments: Mapping[str, Any],
    payload_type: str,
    object_field: str,
    target: GraphQLNamedType,
) -> MutationInfo:
    return MutationInfo(
        name=name,
        manager=_manager_name(target.name),
        action=next(
            (verb for verb in ("create", "update", "delete") if name.startswith(verb)), "other"
        ),
        arguments=tuple(_argument_info(arg_name, arg) for arg_name, arg in arguments.items()),
        payload_type=payload_type,
        object_field=object_field,
        description=_collapse(mutation.description or ""),
    )


def _resolve_exposed(exposed: Iterable[str], type_to_manager: dict[str, str]) -> frozenset[str]:
    if isinstance(exposed, str):
        exposed = [exposed]
    by_key: dict[str, str] = {}
    for type_name, manager in type_to_manager.items():
        for key in (manager, manager + "Manager", type_name):
            by_key[normalize_key(key)] = manager
    chosen: set[str] = set()
    for name in exposed:
        found = by_key.get(normalize_key(name))
        if found is None:
            suggestions = did_you_mean(name, sorted(type_to_manager.values()))
            hint = suggestion_hint(suggestions)
            raise UnknownExposedManagerError(
                f"exposed names '{name}', which is not a manager of this schema.{hint}"
            )
        chosen.add(found)
    return frozenset(chosen)


def _aliases(managers: Iterable[ManagerInfo]) -> dict[str, str]:
    aliases: dict[str, str] = {}
    for info in managers:
        keys = [info.name, info.type_name, *(root.name for root in info.roots)]
        words = split_words(info.name)
        keys.append("".join(words))
        for key in keys:
            aliases.setdefault(normalize_key(key), info.name)
    return aliases


def _name_variants(key: str) -> list[str]:
    """``partmanagers`` -> [partmanagers, partmanager, part]; strips Manager/Type/List suffixes."""
    variants = [key, singular(key)]
    for suffix in ("manager", "managers", "type", "types", "list", "page", "set"):
        for item in list(variants):
            if item.endswith(suffix) and len(item) > len(suffix):
                stem = item[: -len(suffix)]
                variants.extend([stem, singular(stem)])
    if key.endswith("es"):
        variants.append(key[:-2])
    return list(dict.fromkeys(variants))


def _reveals_hidden(name: str, hidden_relations: frozenset[str]) -> bool:
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


def _value_type(type_: Any, lookup: str) -> str:
    text = str(type_)
    if lookup == "in" and text.startswith("["):
        return text[1:].split("]")[0].rstrip("!")
    return text.rstrip("!")


def _collapse(text: str) -> str:
    return " ".join(text.split())


def _graphql_literal(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)

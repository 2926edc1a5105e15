"""Turn a model's filter mapping into the value of a root's native ``filter`` argument.

Accepted spellings, mixed freely:

* native names: ``{"name_Icontains": "bo"}``, ``{"material": {"name": "Steel"}}``,
  ``{"partsList": {"any": {"name": "Gear"}}}``;
* Django-style paths: ``{"material__name__icontains": "st"}``,
  ``{"parts__material__name": "Cobalt"}``
  (a to-many hop means ``any``; ``parts__none__name`` asks for ``none``);
* case and separator slips: ``name_icontains``, ``unit_price__gt``, ``material_id``.

The schema decides the output: nested inputs on GeneralManager servers, flat names
(``parts_Material_Name``) on the older toy shape. Where a path reaches deeper than the server's
filter inputs nest (GeneralManager stops after one relation by default), the rest of the path is
answered first with a query on the related manager and replaced by an ``xId_In`` filter on its ids:
an :class:`IdLookup` placeholder that :class:`~gmchat_nb.core.project.project.Project` fills in.

Over 400 lines: one resolver, :class:`FilterResolver`, for every spelling a model may
use, checked against one root's filter input types.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from graphql import GraphQLInputObjectType, GraphQLInputType

from .errors import ToolError
from .graphql_types import input_object, input_value_error
from .index import LOOKUPS, RELATION_MODES, ManagerInfo, RelationInfo, SchemaIndex
from .names import (
    MAX_NAME_LENGTH,
    camel_case,
    clip,
    clip_repr,
    did_you_mean,
    normalize_key,
    quoted_or,
    singular,
    suggestion_hint,
)
from .tools import TOOLS

__all__ = ["FilterResolver", "IdLookup"]

_MAX_DEPTH = 6


@dataclass(slots=True)
class IdLookup:
    """Stands for "ids of ``manager`` rows matching ``filter``" until a sub-query fills it in."""

    manager: str
    filter: dict[str, Any]
    description: str
    ids: list[str] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class _InputTable:
    """What one filter input type offers one manager, worked out once."""

    visible: tuple[str, ...]
    visible_set: frozenset[str]
    by_key: dict[str, tuple[str, ...]]  # normalize_key(name) -> names
    lookups: dict[str, dict[str, str]]  # normalize_key(field) -> lookup -> native name

    @classmethod
    def build(
        cls, index: SchemaIndex, manager: ManagerInfo, input_type: GraphQLInputObjectType
    ) -> _InputTable:
        visible = tuple(
            name for name in input_type.fields if index.filter_key_visible(manager.type_name, name)
        )
        by_key: dict[str, tuple[str, ...]] = {}
        lookups: dict[str, dict[str, str]] = {}
        for name in visible:
            by_key[normalize_key(name)] = (*by_key.get(normalize_key(name), ()), name)
            if input_object(input_type.fields[name].type) is not None:
                continue
            base, _, suffix = name.partition("_")
            lookup = suffix.lower() if suffix else "exact"
            if "_" not in suffix and lookup in LOOKUPS:
                lookups.setdefault(normalize_key(base), {}).setdefault(lookup, name)
        return cls(visible, frozenset(visible), by_key, lookups)


class FilterResolver:
    """Resolves filter mappings of one schema index (stateless between calls)."""

    def __init__(self, index: SchemaIndex) -> None:
        self.index = index
        self._tables: dict[tuple[str, str], _InputTable] = {}

    def resolve(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        value: Any,
        *,
        argument: str = "filters",
        in_exclude: bool = False,
    ) -> dict[str, Any]:
        """The native filter value for ``input_type``; a :class:`ToolError` explains any problem."""
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                value = None
        if not isinstance(value, dict):
            raise ToolError(
                "invalid_filter",
                f'\'{argument}\' must be an object such as {{"name__icontains": "steel"}}.',
            )
        return self._resolve(manager, input_type, value, argument, in_exclude, 0)

    # -- internals -----------------------------------------------------------------------------

    def _resolve(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        value: dict[str, Any],
        where: str,
        in_exclude: bool,
        depth: int,
    ) -> dict[str, Any]:
        if depth > _MAX_DEPTH:
            raise ToolError("invalid_filter", f"The filter in '{where}' nests too deeply.")
        result: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str) or not key:
                raise ToolError("invalid_filter", f"Filter keys in '{where}' must be names.")
            if len(key) > MAX_NAME_LENGTH:  # names no filter; spare the spelling conversions
                raise self._unknown(manager, input_type, key)
            for native, native_value in self._resolve_key(
                manager, input_type, key, item, where, in_exclude, depth
            ):
                _merge(result, native, native_value, where)
        return result

    def _resolve_key(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        key: str,
        item: Any,
        where: str,
        in_exclude: bool,
        depth: int,
    ) -> list[tuple[str, Any]]:
        native = self._native_name(manager, input_type, key)
        if native is not None:
            return [
                (
                    native,
                    self._native_value(manager, input_type, native, item, where, in_exclude, depth),
                )
            ]
        segments = [camel_case(part) for part in key.replace(".", "__").split("__") if part]
        if len(segments) == 1 and "_" in key and "__" not in key:
            head, _, tail = key.rpartition("_")
            if tail.lower() in LOOKUPS:  # ``name_icontains`` written with one underscore
                segments = [camel_case(head), tail.lower()]
        if len(segments) > 1:
            flat = self._flat_name(manager, input_type, segments)
            if flat is not None:
                return [(flat, self._leaf(manager, input_type, flat, item, where))]
            return self._resolve_path(
                manager, input_type, key, segments, item, where, in_exclude, depth
            )
        relation = self._relation_for(manager, segments[0] if segments else key)
        if relation is not None and isinstance(item, dict):
            return [self._deferred(manager, input_type, relation, item, key, where)]
        raise self._unknown(manager, input_type, key)

    def _resolve_path(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        key: str,
        segments: list[str],
        item: Any,
        where: str,
        in_exclude: bool,
        depth: int,
    ) -> list[tuple[str, Any]]:
        head, rest = segments[0], segments[1:]
        if rest[-1].lower() in LOOKUPS and len(rest) == 1:
            lookup = rest[0].lower()
            native = self._lookup_name(manager, input_type, head, lookup)
            if native is not None:
                return [(native, self._leaf(manager, input_type, native, item, where))]
        nested_name = self._nested_name(manager, input_type, head)
        if nested_name is not None:
            # Rewrite the path as the native nested form, which _native_value resolves.
            nested = input_object(input_type.fields[nested_name].type)
            assert nested is not None
            inner: dict[str, Any] = {"__".join(rest): item}
            if _modes(nested) and rest[0].lower() in _modes(nested):
                if len(rest) == 1:
                    raise ToolError(
                        "invalid_filter",
                        f"Filter '{clip(key)}' in '{where}' needs a field after '{clip(rest[0])}'.",
                    )
                inner = {rest[0].lower(): {"__".join(rest[1:]): item}}
            value = self._native_value(
                manager, input_type, nested_name, inner, where, in_exclude, depth
            )
            return [(nested_name, value)]
        relation = self._relation_for(manager, head)
        if relation is not None:
            return [
                self._deferred(manager, input_type, relation, {"__".join(rest): item}, key, where)
            ]
        if self._lookup_name(manager, input_type, head, "exact") is not None:
            available = sorted(self._lookups_of(manager, input_type, head))
            raise ToolError(
                "invalid_filter",
                f"Lookup '{clip(rest[-1].lower())}' is not available for "
                f"{manager.name}.{clip(head)}. "
                f"Available lookups: {', '.join(available)}.",
            )
        raise self._unknown(manager, input_type, key)

    def _native_value(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        native: str,
        item: Any,
        where: str,
        in_exclude: bool,
        depth: int,
    ) -> Any:
        nested = input_object(input_type.fields[native].type)
        relation = self._relation_for(manager, native)
        if nested is None or relation is None:
            return self._leaf(manager, input_type, native, item, where)
        if not isinstance(item, dict):
            id_hint = f"{native}Id" if f"{native}Id" in input_type.fields else None
            hint = f", or '{id_hint}' for ids" if id_hint else ""
            raise ToolError(
                "invalid_filter",
                f"Filter '{native}' on {manager.name} is a relation to {relation.target}; give it "
                f"a "
                f'nested filter such as {{"{native}": {{"name": "..."}}}}{hint}.',
            )
        target = self.index.managers[relation.target]
        modes = _modes(nested)
        if not modes:
            return self._resolve(target, nested, item, where, in_exclude, depth + 1)
        if not any(key in modes for key in item):
            # ``{"partsList": {"name": "Gear"}}`` means "any part named Gear", as in Django.
            item = {"any": item}
        result: dict[str, Any] = {}
        for mode, inner in item.items():
            if mode not in modes:
                raise ToolError(
                    "invalid_filter",
                    f"Filter '{native}' on {manager.name} takes {quoted_or(sorted(modes))}, "
                    f"not '{clip(mode)}'.",
                )
            self._check_mode(mode, in_exclude, where)
            mode_type = input_object(nested.fields[mode].type)
            assert mode_type is not None
            if not isinstance(inner, dict):
                raise ToolError(
                    "invalid_filter",
                    f"'{native}.{mode}' must be an object of {relation.target} filters.",
                )
            result[mode] = self._resolve(target, mode_type, inner, where, in_exclude, depth + 1)
        return result

    def _deferred(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        relation: RelationInfo,
        item: dict[str, Any],
        key: str,
        where: str,
    ) -> tuple[str, IdLookup]:
        """A relation the server's filter input cannot nest: match its ids with a query first."""
        id_in = self._lookup_name(manager, input_type, f"{relation.name}Id", "in")
        if id_in is None or relation.many:
            raise ToolError(
                "invalid_filter",
                f"Filter '{clip(key)}' reaches through {manager.name}.{relation.name}, which this "
                f"server cannot filter on here. Query {relation.target} first, or filter from "
                f"{relation.target}'s side.",
            )
        target = self.index.managers[relation.target]
        root_filter = _root_filter_type(self.index, target)
        if root_filter is None:
            raise ToolError(
                "invalid_filter", f"{relation.target} cannot be filtered on this server."
            )
        inner = self._resolve(target, root_filter, item, where, False, 1)
        lookup = IdLookup(target.name, inner, f"{manager.name}.{relation.name} ({clip(key)})")
        return id_in, lookup

    def _leaf(
        self,
        manager: ManagerInfo,
        input_type: GraphQLInputObjectType,
        native: str,
        item: Any,
        where: str,
    ) -> Any:
        field_type: GraphQLInputType = input_type.fields[native].type
        if isinstance(item, IdLookup):
            return item
        problem = input_value_error(item, field_type)
        if problem is not None:
            raise ToolError(
                "invalid_filter",
                f"Filter '{native}' on {manager.name} expects {field_type}: {problem}",
            )
        return item

    # -- name resolution -----------------------------------------------------------------------

    def _table(self, manager: ManagerInfo, input_type: GraphQLInputObjectType) -> _InputTable:
        key = (manager.type_name, input_type.name)
        table = self._tables.get(key)
        if table is None:
            table = _InputTable.build(self.index, manager, input_type)
            self._tables[key] = table
        return table

    def _visible_fields(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType
    ) -> tuple[str, ...]:
        return self._table(manager, input_type).visible

    def _is_visible(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, name: str
    ) -> bool:
        return name in self._table(manager, input_type).visible_set

    def _native_name(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, key: str
    ) -> str | None:
        table = self._table(manager, input_type)
        if key in table.visible_set:
            return key
        if key in input_type.fields:
            return None  # a field that reaches a hidden manager
        matches = table.by_key.get(normalize_key(key), ())
        return matches[0] if len(matches) == 1 else None

    def _flat_name(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, segments: list[str]
    ) -> str | None:
        parts = list(segments)
        if parts[-1].lower() == "exact":
            parts = parts[:-1]
        candidate = parts[0] + "".join("_" + p[:1].upper() + p[1:] for p in parts[1:])
        if candidate in input_type.fields and self._is_visible(manager, input_type, candidate):
            return candidate
        return None

    def _lookup_name(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, field_name: str, lookup: str
    ) -> str | None:
        lookups = self._lookups_of(manager, input_type, field_name)
        return lookups.get(lookup)

    def _lookups_of(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, field_name: str
    ) -> dict[str, str]:
        return self._table(manager, input_type).lookups.get(normalize_key(field_name), {})

    def _nested_name(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, head: str
    ) -> str | None:
        for candidate in (head, f"{head}List", f"{singular(head)}List"):
            native = self._native_name(manager, input_type, candidate)
            if native is not None and input_object(input_type.fields[native].type) is not None:
                return native
        return None

    def _relation_for(self, manager: ManagerInfo, name: str) -> RelationInfo | None:
        wanted = normalize_key(name)
        for relation in manager.relations:
            key = normalize_key(relation.name)
            if key == wanted or key in (f"{wanted}list", f"{normalize_key(singular(name))}list"):
                return relation
        return None

    def _check_mode(self, mode: str, in_exclude: bool, where: str) -> None:
        if in_exclude and mode == "none":
            raise ToolError(
                "invalid_filter",
                "`none` relation filters are not supported inside `exclude`; put "
                '{"relation": {"none": {...}}} in \'filters\' instead.',
            )

    def _unknown(
        self, manager: ManagerInfo, input_type: GraphQLInputObjectType, key: str
    ) -> ToolError:
        names = self._visible_fields(manager, input_type)
        # the chat's own spelling (``quantity__gt``) first: of two as close, it is the one named
        spellings = list(dict.fromkeys([*(_django_spelling(name) for name in names), *names]))
        suggestions = did_you_mean(key, spellings)
        hint = suggestion_hint(suggestions)
        return ToolError(
            "unknown_filter",
            f"Unknown filter '{clip(key)}' on {manager.name}.{hint} "
            f"Call {TOOLS.get_manager_schema.name}('{manager.name}') for its filters.",
            suggestions=suggestions or None,
        )


def _root_filter_type(index: SchemaIndex, manager: ManagerInfo) -> GraphQLInputObjectType | None:
    argument = manager.root.argument("filter")
    if argument is None:
        return None
    base = index.schema.type_map.get(argument.type.strip("[]!"))
    return base if isinstance(base, GraphQLInputObjectType) else None


def _modes(nested: GraphQLInputObjectType) -> frozenset[str]:
    names = frozenset(nested.fields)
    return names if names and names <= RELATION_MODES else frozenset()


def _merge(target: dict[str, Any], key: str, value: Any, where: str) -> None:
    if key not in target:
        target[key] = value
        return
    existing = target[key]
    if isinstance(existing, dict) and isinstance(value, dict):
        for inner_key, inner_value in value.items():
            _merge(existing, inner_key, inner_value, where)
        return
    if existing != value:
        raise ToolError(
            "invalid_filter",
            f"'{where}' gives '{key}' twice with different values ({clip_repr(existing)} and "
            f"{clip_repr(value)}).",
        )


def _django_spelling(native: str) -> str:
    parts = native.split("_")
    return "__".join(part[:1].lower() + part[1:] for part in parts)

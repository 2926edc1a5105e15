"""Compile the ``fields`` tree of a query into GraphQL selections.

Accepted entries (the spec's field-tree format, plus the slips models make):

* ``"name"`` — a field; ``"unit_price"`` or ``"UnitPrice"`` resolve to ``unitPrice``; ``"*"``
  selects every plain field; a value object (``unitPrice``) expands to its parts (``value``,
  ``unit``); a relation given as a plain string selects the related manager's plain fields;
* ``{"material": ["name"]}`` — a relation with its own field tree; a paginated relation may be
  written with or without its ``items`` wrapper (``{"partsList": [{"items": ["name"]}]}``);
* ``{"field": "partsList", "arguments": {"filter": {...}, "orderBy": [...]}, "fields": [...]}`` —
  a field with arguments.

Every paginated relation also selects ``pageInfo {totalCount}`` so that the result can say whether
a nested list is complete. The :class:`Shape` recorded alongside tells the normaliser how to unwrap
``{items, pageInfo}`` back into plain lists.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from graphql import GraphQLObjectType, parse_type
from graphql.language import ast

from .errors import ToolError
from .graphql_types import page_shape
from .index import FieldInfo, ManagerInfo, RelationInfo, SchemaIndex
from .names import (
    MAX_NAME_LENGTH,
    clip,
    clip_repr,
    did_you_mean,
    normalize_key,
    singular,
    suggestion_hint,
)
from .tools import TOOLS

__all__ = [
    "NESTED_PAGE_SIZE",
    "ArgumentBinder",
    "Shape",
    "compile_fields",
    "field_node",
    "name_node",
    "operation_document",
]

# (argument name, the field it belongs to, path of that field, value) -> variable name
ArgumentBinder = Callable[[str, RelationInfo | FieldInfo, str, Any], str]
# The value a binder receives for the page size of a nested list the model did not size.
NESTED_PAGE_SIZE = object()


@dataclass(frozen=True, slots=True)
class Shape:
    """How one selected field comes back: a plain value, one object, a list, or a page."""

    kind: str  # "leaf" | "one" | "list" | "page"
    children: dict[str, Shape] | None = None
    items_field: str = "items"
    page_info_field: str = "pageInfo"
    total_field: str = "totalCount"


LEAF = Shape("leaf")
# Names of the page around every list (normalised): selected for the caller, never fields.
_PAGE_WRAPPER = frozenset(
    {"items", "pageinfo", "totalcount", "pagesize", "currentpage", "totalpages", "hasmore"}
)
# What models write for nested-list arguments, mapped to GeneralManager's names.
_ARGUMENT_ALIASES = {"filters": "filter", "limit": "pageSize", "order_by": "orderBy"}


def name_node(value: str) -> ast.NameNode:
    """A GraphQL name node."""
    return ast.NameNode(value=value)


def field_node(
    name: str,
    selections: list[ast.FieldNode] | None = None,
    arguments: list[tuple[str, str]] | None = None,
) -> ast.FieldNode:
    """``name(arg: $var) { selections }``."""
    return ast.FieldNode(
        name=name_node(name),
        arguments=tuple(
            ast.ArgumentNode(name=name_node(arg), value=ast.VariableNode(name=name_node(var)))
            for arg, var in (arguments or [])
        ),
        directives=(),
        selection_set=ast.SelectionSetNode(selections=tuple(selections)) if selections else None,
    )


@functools.lru_cache(maxsize=1024)
def _type_node(type_text: str) -> ast.TypeNode:
    """Parsed once per type: graphql-core's parser is slow to start."""
    return parse_type(type_text)


def operation_document(
    operation: ast.OperationType,
    name: str,
    variables: dict[str, str],
    root_field: ast.FieldNode,
) -> ast.DocumentNode:
    """``query|mutation NAME($var: Type, ...) { root_field }`` with the variables declared."""
    definition = ast.OperationDefinitionNode(
        operation=operation,
        name=name_node(name),
        directives=(),
        variable_definitions=tuple(
            ast.VariableDefinitionNode(
                variable=ast.VariableNode(name=name_node(variable)),
                type=_type_node(type_text),
                directives=(),
            )
            for variable, type_text in variables.items()
        ),
        selection_set=ast.SelectionSetNode(selections=(root_field,)),
    )
    return ast.DocumentNode(definitions=(definition,))


def compile_fields(
    index: SchemaIndex,
    manager: ManagerInfo,
    fields: Any,
    bind: ArgumentBinder,
    *,
    path: str = "",
    depth: int = 0,
) -> tuple[list[ast.FieldNode], dict[str, Shape]]:
    """Selections and result shape for ``fields`` on ``manager``'s object type."""
    if not isinstance(fields, list) or not fields:
        where = f" of '{path}'" if path else ""
        raise ToolError(
            "invalid_arguments",
            f'\'fields\'{where} must be a non-empty list such as ["name", {{"material": '
            f'["name"]}}].',
        )
    if depth > 8:
        raise ToolError("invalid_arguments", "The field tree nests more than 8 relations deep.")
    entries = _unwrap_page_entries(fields)
    if not entries:  # only wrapper names such as "pageInfo" were asked for
        raise _page_wrapper_error(manager, fields[0], path)
    nodes: dict[str, ast.FieldNode] = {}
    shapes: dict[str, Shape] = {}
    for entry in entries:
        for name, node, shape in _compile_entry(index, manager, entry, bind, path, depth):
            if name in nodes and shape.kind != "leaf":
                raise ToolError(
                    "invalid_arguments", f"'{name}' is selected twice in 'fields'; select it once."
                )
            nodes.setdefault(name, node)
            shapes.setdefault(name, shape)
    return list(nodes.values()), shapes


def _unwrap_page_entries(fields: list[Any]) -> list[Any]:
    """Accept ``[{"items": [...]}, {"pageInfo": [...]}]`` where a plain list was meant."""
    unwrapped: list[Any] = []
    for entry in fields:
        if isinstance(entry, dict) and len(entry) == 1:
            (key, value), *_ = entry.items()
            if key == "items" and isinstance(value, list):
                unwrapped.extend(value)
                continue
            if key in ("pageInfo", "page_info"):
                continue  # always selected for paginated relations
        if entry in ("pageInfo", "page_info", "items"):
            continue
        unwrapped.append(entry)
    return unwrapped


def _compile_entry(
    index: SchemaIndex,
    manager: ManagerInfo,
    entry: Any,
    bind: ArgumentBinder,
    path: str,
    depth: int,
) -> list[tuple[str, ast.FieldNode, Shape]]:
    if isinstance(entry, str):
        if entry == "*":
            return [
                (item.name, field_node(item.name, _value_nodes(item)), LEAF)
                for item in manager.fields
                if not any(arg.required for arg in item.arguments)
            ]
        return [_plain(index, manager, entry, bind, path, depth)]
    if isinstance(entry, dict):
        if "field" in entry:
            unknown = set(entry) - {"field", "arguments", "fields"}
            if unknown:
                raise ToolError(
                    "invalid_arguments",
                    f"A structured field takes only 'field', 'arguments' and 'fields'; "
                    f"got {[clip(key) for key in sorted(unknown)]}.",
                )
            return [
                _structured(
                    index,
                    manager,
                    entry.get("field"),
                    entry.get("arguments") or {},
                    entry.get("fields"),
                    bind,
                    path,
                    depth,
                )
            ]
        if len(entry) != 1:
            raise ToolError(
                "invalid_arguments",
                'Write each relation as its own object, e.g. [{"material": ["name"]}, '
                f'{{"supplier": ["name"]}}]; got an object with keys '
                f"{[clip(key) for key in sorted(entry)]}.",
            )
        (name, subfields), *_ = entry.items()
        return [_structured(index, manager, name, {}, subfields, bind, path, depth)]
    raise ToolError(
        "invalid_arguments",
        f"Field entries must be strings or objects; got {type(entry).__name__} {clip_repr(entry)}.",
    )


def _plain(
    index: SchemaIndex,
    manager: ManagerInfo,
    name: str,
    bind: ArgumentBinder,
    path: str,
    depth: int,
) -> tuple[str, ast.FieldNode, Shape]:
    resolved = _resolve_name(manager, name, path)
    if isinstance(resolved, FieldInfo):
        return resolved.name, field_node(resolved.name, _value_nodes(resolved)), LEAF
    target = index.managers[resolved.target]
    plain = [item.name for item in target.fields if not item.subfields] or ["*"]
    return _structured(index, manager, resolved.name, {}, plain, bind, path, depth)


def _structured(
    index: SchemaIndex,
    manager: ManagerInfo,
    name: Any,
    arguments: Any,
    subfields: Any,
    bind: ArgumentBinder,
    path: str,
    depth: int,
) -> tuple[str, ast.FieldNode, Shape]:
    if not isinstance(name, str) or not name:
        raise ToolError("invalid_arguments", "A structured field needs a 'field' name string.")
    if not isinstance(arguments, dict):
        raise ToolError("invalid_arguments", f"'arguments' of '{clip(name)}' must be an object.")
    resolved = _resolve_name(manager, name, path)
    here = f"{path}.{resolved.name}" if path else resolved.name
    bound = _bind_arguments(resolved, arguments, bind, manager.name, here)
    if isinstance(resolved, FieldInfo):
        if not resolved.subfields:
            if subfields not in (None, []):
                raise ToolError(
                    "invalid_arguments",
                    f"'{resolved.name}' on {manager.name} is a plain {resolved.type} value; "
                    "select it as a string, without sub-fields.",
                )
            return resolved.name, field_node(resolved.name, None, bound), LEAF
        chosen = _value_subfields(resolved, subfields)
        return resolved.name, field_node(resolved.name, chosen, bound), LEAF
    target = index.managers[resolved.target]
    if subfields is None:
        subfields = [item.name for item in target.fields if not item.subfields] or ["*"]
    nodes, children = compile_fields(index, target, subfields, bind, path=here, depth=depth + 1)
    if resolved.paginated:
        shape = _page_shape(index, manager, resolved.name, children)
        if not any(arg == "pageSize" for arg, _ in bound) and _has_argument(resolved, "pageSize"):
            bound.append(("pageSize", bind("pageSize", resolved, here, NESTED_PAGE_SIZE)))
        page_info = field_node(shape.page_info_field, [field_node(shape.total_field)])
        inner = [field_node(shape.items_field, nodes), page_info]
        return resolved.name, field_node(resolved.name, inner, bound), shape
    kind = "list" if resolved.many else "one"
    return resolved.name, field_node(resolved.name, nodes, bound), Shape(kind, children)


def _bind_arguments(
    resolved: RelationInfo | FieldInfo,
    arguments: dict[str, Any],
    bind: ArgumentBinder,
    owner: str,
    here: str,
) -> list[tuple[str, str]]:
    allowed = {arg.name for arg in resolved.arguments}
    bound: list[tuple[str, str]] = []
    for arg_name, value in arguments.items():
        native = arg_name
        if native not in allowed:
            alias = _ARGUMENT_ALIASES.get(arg_name)
            wanted = normalize_key(arg_name) if len(arg_name) <= MAX_NAME_LENGTH else None
            matches = [a for a in allowed if normalize_key(a) == wanted]
            if alias in allowed:
                matches = [alias]
            if len(matches) != 1:
                valid = ", ".join(sorted(allowed)) or "none"
                raise ToolError(
                    "invalid_arguments",
                    f"'{resolved.name}' on {owner} has no argument '{clip(arg_name)}'. "
                    f"Its arguments: {valid}.",
                )
            native = matches[0]
        bound.append((native, bind(native, resolved, here, value)))
    return bound


def _has_argument(resolved: RelationInfo | FieldInfo, name: str) -> bool:
    return any(arg.name == name for arg in resolved.arguments)


def _page_shape(
    index: SchemaIndex, manager: ManagerInfo, relation: str, children: dict[str, Shape]
) -> Shape:
    object_type = index.schema.type_map[manager.type_name]
    assert isinstance(object_type, GraphQLObjectType)
    shape = page_shape(object_type.fields[relation].type)
    assert shape is not None
    return Shape("page", children, shape.items_field, shape.page_info_field, shape.total_field)


def _resolve_name(manager: ManagerInfo, name: str, path: str) -> FieldInfo | RelationInfo:
    found: FieldInfo | RelationInfo | None = manager.field(name) or manager.relation(name)
    if found is None and len(name) <= MAX_NAME_LENGTH:
        wanted = normalize_key(name)
        candidates: list[FieldInfo | RelationInfo] = [*manager.fields, *manager.relations]
        # ``unit_price`` -> ``unitPrice``, ``material_id`` -> ``materialId``, ``parts`` -> ``partsList``
        matches = [c for c in candidates if normalize_key(c.name) == wanted]
        if not matches:
            # ``parts`` -> ``partsList``; ``projects`` -> the reverse relation ``projectList``
            stems = (f"{wanted}list", f"{singular(wanted)}list")
            matches = [c for c in manager.relations if normalize_key(c.name) in stems]
        if len(matches) == 1:
            found = matches[0]
    if found is None and normalize_key(name[:MAX_NAME_LENGTH]) in _PAGE_WRAPPER:
        raise _page_wrapper_error(manager, name, path)
    if found is None:
        names = [item.name for item in manager.fields] + [item.name for item in manager.relations]
        suggestions = did_you_mean(name, names)
        hint = suggestion_hint(suggestions)
        where = f" (in '{path}')" if path else ""
        raise ToolError(
            "unknown_field",
            f"Unknown field '{clip(name)}' on {manager.name}{where}.{hint} "
            f"Call {TOOLS.get_manager_schema.name}('{manager.name}') for its fields and relations.",
            suggestions=suggestions or None,
        )
    return found


def _page_wrapper_error(manager: ManagerInfo, entry: Any, path: str) -> ToolError:
    """``pageInfo``, ``items`` or ``totalCount`` asked for as if it were a field of the rows."""
    name = next(iter(entry), "") if isinstance(entry, dict) else entry
    names = [item.name for item in manager.fields] + [item.name for item in manager.relations]
    where = f" (in '{path}')" if path else ""
    return ToolError(
        "unknown_field",
        f"Unknown field '{clip(name)}' on {manager.name}{where}: the page around the rows (items, "
        "pageInfo, totalCount) is selected for you, and every result says total_count and "
        f"has_more. Ask for fields of the rows: {', '.join(names)}.",
    )


def _value_nodes(item: FieldInfo) -> list[ast.FieldNode] | None:
    return [field_node(sub) for sub in item.subfields] if item.subfields else None


def _value_subfields(item: FieldInfo, subfields: Any) -> list[ast.FieldNode]:
    if subfields is None or subfields == ["*"]:
        return [field_node(sub) for sub in item.subfields]
    if not isinstance(subfields, list) or not all(isinstance(s, str) for s in subfields):
        raise ToolError(
            "invalid_arguments",
            f"'{item.name}' takes a list of its parts: {list(item.subfields)}.",
        )
    unknown = [s for s in subfields if s not in item.subfields]
    if unknown:
        raise ToolError(
            "unknown_field",
            f"'{item.name}' has no part {clip_repr(unknown[0])}; its parts are "
            f"{list(item.subfields)}.",
        )
    return [field_node(sub) for sub in dict.fromkeys(subfields)]

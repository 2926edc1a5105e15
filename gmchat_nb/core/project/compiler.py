"""Compile a structured ``query`` call into a validated GraphQL document with typed variables.

The model never writes GraphQL. It names a manager, filters, fields, ordering and a window
(``limit``/``offset``); :class:`QueryCompiler` checks every name against the schema index, builds a
graphql-core AST whose argument values are all variables declared with the schema's own types,
validates it against the schema (once per document shape; validation dominates the cost of small
queries) and plans the page requests that cover the window exactly.

Over 400 lines: one document built and checked by :class:`QueryCompiler` with the AST
helpers and shape cache only it uses; fields, filters and ordering already live in their own
modules.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from graphql import DocumentNode, GraphQLInputObjectType, print_ast, validate
from graphql.language import ast

from .errors import ToolError
from .filters import FilterResolver, IdLookup
from .index import ArgumentInfo, FieldInfo, ManagerInfo, RelationInfo, RootInfo, SchemaIndex
from .names import MAX_NAME_LENGTH, clip, clip_repr, did_you_mean, normalize_key
from .ordering import resolve_order
from .selection import (
    LEAF,
    NESTED_PAGE_SIZE,
    Shape,
    compile_fields,
    field_node,
    operation_document,
)

__all__ = ["PageRequest", "QueryCompiler", "QueryPlan", "lookups_in"]

OPERATION_NAME = "GmchatQuery"
SHAPE_CACHE_SIZE = 512
# Longer structure keys are not cached: the key is built from caller input of any size.
MAX_CACHED_KEY = 4096
# Pages past this offset are not worth fetching in a chat, and page numbers stay far inside
# GraphQL's 32-bit Int.
MAX_OFFSET = 1_000_000
QUERY_KEYS = frozenset(
    {"manager", "fields", "filters", "exclude", "order_by", "limit", "offset", "root", "arguments"}
)


@dataclass(frozen=True, slots=True)
class _CompiledShape:
    """A validated document for one shape of query, reused while only values change."""

    document: DocumentNode
    shape: dict[str, Shape]
    constants: dict[str, Any]  # variables fixed by the shape (nested page sizes)


@dataclass(frozen=True, slots=True)
class PageRequest:
    """Variables that select one page of the root list."""

    variables: dict[str, Any]


@dataclass(slots=True)
class QueryPlan:
    """A compiled query: the document, its variables, the pages to fetch and how to read them."""

    manager: ManagerInfo
    root: RootInfo
    document: DocumentNode
    variables: dict[str, Any]
    pages: list[PageRequest]
    window_start: int
    limit: int
    offset: int
    shape: dict[str, Shape]
    id_lookups: list[IdLookup] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        """The GraphQL document as text (for evidence, logs and "copy as code")."""
        return print_ast(self.document)

    def request_variables(self, page: PageRequest) -> dict[str, Any]:
        """All variables of one page request, with id look-ups filled in."""
        merged = {**self.variables, **page.variables}
        return _substitute(merged) if self.id_lookups else merged


class QueryCompiler:
    """Compiles ``query`` tool calls for one schema index."""

    def __init__(
        self,
        index: SchemaIndex,
        *,
        max_results: int = 200,
        max_page_size: int = 100,
    ) -> None:
        self.index = index
        self.max_results = max_results
        self.max_page_size = max_page_size
        self.filters = FilterResolver(index)
        self._validated: dict[Any, list[str]] = {}
        self._shapes: dict[Any, _CompiledShape] = {}
        self._id_documents: dict[tuple[str, int], DocumentNode] = {}

    @property
    def row_cap(self) -> int:
        """The most rows one call returns: ``max_results`` and the server's page size."""
        return max(1, min(self.max_results, self.max_page_size))

    def compile(self, args: dict[str, Any]) -> QueryPlan:
        """Check ``args`` (the ``query`` tool arguments) and compile them."""
        unknown = set(args) - QUERY_KEYS
        if unknown:
            raise ToolError(
                "invalid_arguments",
                f"query does not take {_names(sorted(unknown))}; it takes {_names(sorted(QUERY_KEYS))}.",
            )
        manager = self.index.resolve(args.get("manager"))
        root = self._root(manager, args.get("root"))
        native = self._native_arguments(root, manager, args.get("arguments"))
        notes: list[str] = []
        limit, offset = self._window(args.get("limit"), args.get("offset"), notes)
        variables: dict[str, Any] = {}
        definitions: dict[str, str] = {}
        root_arguments: list[tuple[str, str]] = []

        def put(name: str, argument: ArgumentInfo, value: Any) -> str:
            definitions[name] = argument.type
            variables[name] = value
            return name

        for argument_name, argument_key in (("filter", "filters"), ("exclude", "exclude")):
            value = _one_of(args, argument_key, native, argument_name)
            if value is None:
                continue
            argument = _require_argument(root, manager, argument_name)
            resolved = self._resolve_filter(manager, argument, value, argument_key)
            root_arguments.append((argument_name, put(argument_name, argument, resolved)))
        order = _one_of(args, "order_by", native, "orderBy")
        if order is not None:
            argument = _require_argument(root, manager, "orderBy", "ordered")
            resolved_order = resolve_order(self.index.schema, manager, argument, order)
            root_arguments.append(("orderBy", put("orderBy", argument, resolved_order)))
        for name, value in native.items():
            if name in ("filter", "exclude", "orderBy", "page", "pageSize"):
                continue
            extra = root.argument(name)
            assert extra is not None
            root_arguments.append((name, put(name, extra, value)))
        pages, window_start, effective_offset = self._pages(
            root, limit, offset, native.get("page"), native.get("pageSize")
        )
        _declare_page_variables(root, pages, definitions, root_arguments)

        def bind(arg_name: str, owner: RelationInfo | FieldInfo, path: str, value: Any) -> str:
            variable = f"{path.replace('.', '_')}_{arg_name}"
            argument = next(arg for arg in owner.arguments if arg.name == arg_name)
            if value is NESTED_PAGE_SIZE:
                value = self.max_page_size
            elif isinstance(owner, RelationInfo) and arg_name in ("filter", "exclude"):
                target = self.index.managers[owner.target]
                value = self._resolve_filter(target, argument, value, f"{path}.{arg_name}")
            elif isinstance(owner, RelationInfo) and arg_name == "orderBy":
                target = self.index.managers[owner.target]
                value = resolve_order(self.index.schema, target, argument, value)
            definitions[variable] = argument.type
            variables[variable] = value
            return variable

        fields = args.get("fields")
        structure = _structure_key(fields)
        key = _shape_key(manager, root, definitions, fields, structure, self.max_page_size)
        compiled = self._shapes.get(key) if key is not None else None
        if compiled is None:
            given = set(variables)
            selections, shape = compile_fields(self.index, manager, fields, bind)
            document = _document(root, root_arguments, selections, definitions)
            self._validate(document, root, definitions, structure)
            constants = {name: value for name, value in variables.items() if name not in given}
            compiled = _CompiledShape(document, shape, constants)
            if key is not None:
                _remember(self._shapes, key, compiled)
        else:
            variables.update(compiled.constants)
        document, shape = compiled.document, compiled.shape
        return QueryPlan(
            manager=manager,
            root=root,
            document=document,
            variables=variables,
            pages=pages,
            window_start=window_start,
            limit=limit,
            offset=effective_offset,
            shape=shape,
            id_lookups=lookups_in(variables),
            notes=notes,
        )

    def compile_ids(
        self, manager: ManagerInfo, native_filter: dict[str, Any], page: int
    ) -> QueryPlan:
        """A query for one page of the ids matching an already-resolved filter."""
        argument = manager.root.argument("filter")
        if manager.field("id") is None or argument is None:
            raise ToolError(
                "invalid_filter", f"{manager.name} rows cannot be matched by id on this server."
            )
        root = manager.root
        definitions = {"filter": argument.type}
        root_arguments = [("filter", "filter")]
        pages, start, offset = self._pages(
            root, self.row_cap, (page - 1) * self.row_cap, None, None
        )
        _declare_page_variables(root, pages, definitions, root_arguments)
        document = self._id_documents.get((manager.name, self.max_page_size))
        if document is None:
            document = _document(root, root_arguments, [field_node("id")], definitions)
            self._validate(document, root, definitions, _structure_key(["id"]))
            self._id_documents[(manager.name, self.max_page_size)] = document
        variables = {"filter": native_filter}
        return QueryPlan(
            manager=manager,
            root=root,
            document=document,
            variables=variables,
            pages=pages,
            window_start=start,
            limit=self.row_cap,
            offset=offset,
            shape={"id": LEAF},
            id_lookups=lookups_in(variables),
        )

    # -- argument handling ---------------------------------------------------------------------

    def _root(self, manager: ManagerInfo, root: Any) -> RootInfo:
        if root is None:
            return manager.root
        wanted = normalize_key(str(root)) if len(str(root)) <= MAX_NAME_LENGTH else None
        for info in manager.roots:
            if info.name == root or normalize_key(info.name) == wanted:
                return info
        raise ToolError(
            "invalid_arguments",
            f"'{clip(root)}' is not a list root of {manager.name}; its roots: "
            f"{_names([r.name for r in manager.roots])}.",
        )

    def _native_arguments(self, root: RootInfo, manager: ManagerInfo, value: Any) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ToolError("invalid_arguments", "'arguments' must be an object of root arguments.")
        allowed = [arg.name for arg in root.arguments]
        native: dict[str, Any] = {}
        for key, item in value.items():
            name = key if key in allowed else _match(key, allowed)
            if name is None:
                raise ToolError(
                    "invalid_arguments",
                    f"{root.name} has no argument '{clip(key)}'; its arguments: {_names(allowed)}.",
                    suggestions=did_you_mean(key, allowed) or None,
                )
            native[name] = item
        return native

    def _resolve_filter(
        self, manager: ManagerInfo, argument: ArgumentInfo, value: Any, where: str
    ) -> dict[str, Any]:
        input_type = self.index.schema.type_map.get(argument.type.strip("[]!"))
        assert isinstance(input_type, GraphQLInputObjectType)
        return self.filters.resolve(
            manager, input_type, value, argument=where, in_exclude=where.endswith("exclude")
        )

    def _window(self, limit: Any, offset: Any, notes: list[str]) -> tuple[int, int]:
        cap = self.row_cap
        if limit is None:
            limit = cap
        elif not _is_int(limit) or limit < 1:
            raise ToolError(
                "invalid_arguments", f"limit must be a positive integer; got {clip_repr(limit)}."
            )
        elif limit > cap:
            notes.append(
                f"limit {clip(limit)} was capped at {cap} rows per call; use offset to read "
                "further pages."
            )
            limit = cap
        if offset is None:
            offset = 0
        elif not _is_int(offset) or not 0 <= offset <= MAX_OFFSET:
            raise ToolError(
                "invalid_arguments",
                f"offset must be an integer from 0 to {MAX_OFFSET:,}; got {clip_repr(offset)}.",
            )
        return limit, offset

    def _pages(
        self, root: RootInfo, limit: int, offset: int, native_page: Any, native_size: Any
    ) -> tuple[list[PageRequest], int, int]:
        """The page requests covering rows [offset, offset+limit), and where the window starts."""
        has_page = root.argument("page") is not None
        has_size = root.argument("pageSize") is not None
        if native_page is not None or native_size is not None:
            if offset:
                raise ToolError(
                    "invalid_arguments",
                    "Use either offset or native page/pageSize arguments, not both.",
                )
            size = native_size if native_size is not None else limit
            page = native_page if native_page is not None else 1
            if not (_is_int(size) and _is_int(page) and size >= 1 and page >= 1):
                raise ToolError("invalid_arguments", "page and pageSize must be positive integers.")
            if (page - 1) * size > MAX_OFFSET:
                raise ToolError(
                    "invalid_arguments",
                    f"page {clip(page)} of {clip(size)} rows starts past row {MAX_OFFSET:,}; "
                    "narrow the filters instead.",
                )
            request = {"pageSize": size} if has_size else {}
            if has_page:
                request["page"] = page
            return [PageRequest(request)], 0, max(0, (page - 1) * size)
        if not has_size:
            return [PageRequest({})], offset, offset
        if not has_page:
            if offset + limit > self.max_page_size:
                raise ToolError(
                    "invalid_arguments",
                    f"{root.name} cannot page; offset + limit must stay within "
                    f"{self.max_page_size} rows.",
                )
            return [PageRequest({"pageSize": offset + limit})], offset, offset
        first = offset // limit + 1
        last = (offset + limit - 1) // limit + 1
        pages = [PageRequest({"page": n, "pageSize": limit}) for n in range(first, last + 1)]
        return pages, offset - (first - 1) * limit, offset

    def _validate(
        self,
        document: DocumentNode,
        root: RootInfo,
        definitions: dict[str, str],
        structure: str,
    ) -> None:
        key = (root.name, tuple(definitions.items()), structure)
        errors = self._validated.get(key)
        if errors is None:
            errors = [error.message for error in validate(self.index.schema, document)]
            if len(structure) <= MAX_CACHED_KEY:
                _remember(self._validated, key, errors)
        if errors:
            hidden = self.index.hidden_names
            raise ToolError(
                "invalid_graphql_request",
                "The compiled query is not valid for this schema: "
                + "; ".join(dict.fromkeys(hidden.redact(error) for error in errors)),
            )


def _remember(cache: dict[Any, Any], key: Any, value: Any) -> None:
    """Keep ``value`` under ``key``, forgetting everything once the cache is full."""
    if len(cache) >= SHAPE_CACHE_SIZE:
        cache.clear()
    cache[key] = value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _declare_page_variables(
    root: RootInfo,
    pages: list[PageRequest],
    definitions: dict[str, str],
    root_arguments: list[tuple[str, str]],
) -> None:
    for name in pages[0].variables:
        argument = root.argument(name)
        assert argument is not None
        definitions[name] = argument.type
        root_arguments.append((name, name))


def _document(
    root: RootInfo,
    arguments: list[tuple[str, str]],
    selections: list[ast.FieldNode],
    definitions: dict[str, str],
) -> DocumentNode:
    page_info = field_node(root.page_info_field, [field_node(root.total_field)])
    root_field = field_node(
        root.name, [field_node(root.items_field, selections), page_info], arguments
    )
    return operation_document(ast.OperationType.QUERY, OPERATION_NAME, definitions, root_field)


def _structure_key(fields: Any) -> str:
    """The document's shape without argument values (they are variables, not structure)."""

    def strip(entry: Any) -> Any:
        if isinstance(entry, dict):
            return {
                key: (
                    sorted(value)
                    if key == "arguments" and isinstance(value, dict)
                    else strip(value)
                )
                for key, value in entry.items()
            }
        if isinstance(entry, list):
            return [strip(item) for item in entry]
        return entry

    return json.dumps(strip(fields), sort_keys=True, default=str)


def _shape_key(
    manager: ManagerInfo,
    root: RootInfo,
    definitions: dict[str, str],
    fields: Any,
    structure: str,
    page_size: int,
) -> Any:
    """What decides the document, or None when it is not worth caching: nested arguments carry
    values of their own, or the field tree is too large to keep as a key."""
    if len(structure) > MAX_CACHED_KEY or _has_field_arguments(fields):
        return None
    return (manager.name, root.name, tuple(definitions.items()), page_size, structure)


def _has_field_arguments(entry: Any) -> bool:
    if isinstance(entry, dict):
        return bool(entry.get("arguments")) or any(_has_field_arguments(v) for v in entry.values())
    if isinstance(entry, list):
        return any(_has_field_arguments(item) for item in entry)
    return False


def _one_of(args: dict[str, Any], key: str, native: dict[str, Any], native_key: str) -> Any:
    if args.get(key) is not None and native.get(native_key) is not None:
        raise ToolError(
            "invalid_arguments",
            f"Give either '{key}' or 'arguments.{native_key}', not both.",
        )
    return args.get(key) if args.get(key) is not None else native.get(native_key)


def _require_argument(
    root: RootInfo, manager: ManagerInfo, name: str, verb: str = "filtered"
) -> ArgumentInfo:
    argument = root.argument(name)
    if argument is None:
        raise ToolError(
            "invalid_arguments",
            f"{manager.name} cannot be {verb} on this server: {root.name} has no '{name}' argument.",
        )
    return argument


def _match(key: str, allowed: list[str]) -> str | None:
    aliases = {"filters": "filter", "order_by": "orderBy", "limit": "pageSize"}
    if aliases.get(key) in allowed:
        return aliases[key]
    if len(key) > MAX_NAME_LENGTH:
        return None
    matches = [name for name in allowed if normalize_key(name) == normalize_key(key)]
    return matches[0] if len(matches) == 1 else None


def lookups_in(value: Any) -> list[IdLookup]:
    """The id look-ups a filter value still waits for."""
    found: list[IdLookup] = []
    if isinstance(value, IdLookup):
        found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            found.extend(lookups_in(item))
    elif isinstance(value, list):
        for item in value:
            found.extend(lookups_in(item))
    return found


def _substitute(value: Any) -> Any:
    if isinstance(value, IdLookup):
        if value.ids is None:
            raise RuntimeError(f"id look-up on {value.manager} was not run")
        return value.ids
    if isinstance(value, dict):
        return {key: _substitute(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_substitute(item) for item in value]
    return value


def _names(items: list[str]) -> str:
    return ", ".join(f"'{clip(item)}'" for item in items)

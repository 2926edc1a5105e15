"""Compile GraphQL filter, exclude and orderBy values into parameterized SQLite.

Every value travels as a ``?`` parameter; only identifiers taken from the validated catalog are
written into the SQL text.

String lookups are all case-sensitive except ``_Icontains``, which folds ASCII letters only
(SQLite's ``lower()``), the same as Django's ``icontains`` on SQLite. ``exclude`` treats an unknown
(NULL) comparison as "does not match", so excluding ``quantity_Gt: 5`` keeps rows without a
quantity, as Django's ``exclude()`` does.
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from graphql import GraphQLError

from .catalog import Catalog, ListLink, Model, ToOneLink
from .lookups import ListLookup, Lookup, LookupTables, ScalarLookup, ToOneLookup
from .units import Measurement, UnitError, convert

__all__ = [
    "MAX_IN_VALUES",
    "NONE_IN_EXCLUDE",
    "Selection",
    "compile_selection",
    "storable_id",
]

NONE_IN_EXCLUDE = "`none` relation filters are not supported inside `exclude` inputs."
# Values one ``_In`` filter may list (Django's DATA_UPLOAD_MAX_NUMBER_FIELDS is the same); each is
# an SQL parameter, and SQLite takes only so many per statement.
MAX_IN_VALUES = 1000

_COMPARE = {"exact": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
# SQLite keeps integers in 64 bits: an id outside them belongs to no row.
_ID_RANGE = range(-(2**63), 2**63)
_NO_ROW = object()  # an id value that no row can have


@dataclass
class Selection:
    """A compiled ``WHERE`` and ``ORDER BY`` over the manager's table aliased ``t0``."""

    where: str
    order: str
    params: list[object] = field(default_factory=list)


def compile_selection(
    tables: LookupTables,
    model: Model,
    *,
    filter: Mapping[str, object] | None,
    exclude: Mapping[str, object] | None,
    order_by: Sequence[Mapping[str, object]] | None,
    scope: tuple[ListLink, int] | None = None,
) -> Selection:
    """Rows of ``model`` matching ``filter`` and not ``exclude``, optionally within one owner's list.

    Raises :class:`GraphQLError` for values the database cannot compare (unknown units,
    malformed ids, ``none`` inside ``exclude``).
    """
    compiler = _Compiler(tables)
    conditions = []
    if scope is not None:
        link, owner_id = scope
        conditions.append(link.condition("?", "t0", compiler.alias("j")))
        compiler.params.append(owner_id)
    if filter:
        conditions.append(compiler.where(model, "t0", filter, 1, in_exclude=False))
    if exclude:
        conditions.append(f"NOT COALESCE({compiler.where(model, 't0', exclude, 1, True)}, 0)")
    where = " AND ".join(f"({condition})" for condition in conditions) or "1"
    return Selection(where, _order(tables, model, order_by or ()), compiler.params)


def _order(tables: LookupTables, model: Model, order_by: Sequence[Mapping[str, object]]) -> str:
    keys = tables.orders(model)
    terms = []
    # A field repeated later cannot change the order (the first term decides every tie it
    # could), so each field counts once and the statement stays within SQLite's term limit.
    seen: set[str] = set()
    for term in order_by:
        field_name = str(term["field"])
        if field_name in seen:
            continue
        seen.add(field_name)
        key = keys[field_name]
        direction = "DESC" if term.get("direction") == "DESC" else "ASC"
        if key.via is None:
            expression = f't0."{key.column}"'
        else:
            target = tables.catalog[key.via.target].table
            expression = (
                f'(SELECT r."{key.column}" FROM "{target}" r WHERE r.id = t0."{key.via.column}")'
            )
        terms.append(f"{expression} {direction}")
    # Ties (and the default order) fall back to the id so pages never overlap.
    terms.append("t0.id ASC")
    return ", ".join(terms)


class _Compiler:
    def __init__(self, tables: LookupTables) -> None:
        self.tables = tables
        self.catalog: Catalog = tables.catalog
        self.params: list[object] = []
        self._counter = itertools.count(1)

    def alias(self, prefix: str = "t") -> str:
        return f"{prefix}{next(self._counter)}"

    def where(
        self, model: Model, alias: str, node: Mapping[str, object], depth: int, in_exclude: bool
    ) -> str:
        lookups = self.tables.filters(model, depth)
        parts = []
        for key, value in node.items():
            lookup: Lookup | None = lookups.get(key)
            if lookup is None:
                raise GraphQLError(f'Unknown filter key "{key}" for {model.name}.')
            parts.append(self.lookup(alias, lookup, value, in_exclude))
        return " AND ".join(f"({part})" for part in parts) or "1"

    def lookup(self, alias: str, lookup: Lookup, value: object, in_exclude: bool) -> str:
        if isinstance(lookup, ScalarLookup):
            return self.scalar(alias, lookup, value)
        if isinstance(lookup, ToOneLookup):
            return self.to_one(alias, lookup.link, value, in_exclude)
        return self.to_many(alias, lookup, value, in_exclude)

    def scalar(self, alias: str, lookup: ScalarLookup, value: object) -> str:
        column = f'{alias}."{lookup.column}"'
        if value is None:
            if lookup.op == "exact":
                return f"{column} IS NULL"
            raise GraphQLError(f'Filter "{lookup.label}" does not accept null.')
        if lookup.op == "in":
            values = _as_list(value)
            if len(values) > MAX_IN_VALUES:
                raise GraphQLError(
                    f'Filter "{lookup.label}" takes at most {MAX_IN_VALUES} values, '
                    f"got {len(values)}.",
                    extensions={"code": "BAD_USER_INPUT"},
                )
            items = [_param(lookup, item) for item in values if item is not None]
            items = [item for item in items if item is not _NO_ROW]
            self.params.extend(items)
            return f"{column} IN ({', '.join('?' * len(items))})" if items else "0"
        param = _param(lookup, value)
        if param is _NO_ROW:
            return "0"
        if lookup.op in _COMPARE:
            self.params.append(param)
            return f"{column} {_COMPARE[lookup.op]} ?"
        text = str(param)
        if lookup.op == "icontains":
            self.params.append(text)
            return f"instr(lower({column}), lower(?)) > 0"
        if lookup.op == "contains":
            self.params.append(text)
            return f"instr({column}, ?) > 0"
        if not text:
            return f"{column} IS NOT NULL"
        # substr() with a length compares a prefix/suffix without LIKE's wildcard escaping.
        if lookup.op == "startswith":
            self.params += [len(text), text]
            return f"substr({column}, 1, ?) = ?"
        self.params += [-len(text), text]
        return f"substr({column}, ?) = ?"

    def to_one(self, alias: str, link: ToOneLink, value: object, in_exclude: bool) -> str:
        if value is None:
            return f'{alias}."{link.column}" IS NULL'
        target = self.catalog[link.target]
        inner = self.alias()
        condition = self.where(target, inner, _as_mapping(value), 0, in_exclude)
        return (
            f'EXISTS (SELECT 1 FROM "{target.table}" {inner} '
            f'WHERE {inner}.id = {alias}."{link.column}" AND {condition})'
        )

    def to_many(self, alias: str, lookup: ListLookup, value: object, in_exclude: bool) -> str:
        if value is None:
            return "1"
        parts = []
        for quantifier, nested in _as_mapping(value).items():
            if quantifier == "none" and in_exclude:
                raise GraphQLError(NONE_IN_EXCLUDE)
            if nested is None:
                continue
            target = self.catalog[lookup.link.target]
            inner = self.alias()
            link_condition = lookup.link.condition(f"{alias}.id", inner, self.alias("j"))
            condition = self.where(target, inner, _as_mapping(nested), 0, in_exclude)
            exists = (
                f'EXISTS (SELECT 1 FROM "{target.table}" {inner} '
                f"WHERE {link_condition} AND {condition})"
            )
            parts.append(exists if quantifier == "any" else f"NOT {exists}")
        return " AND ".join(parts) or "1"


def _param(lookup: ScalarLookup, value: object) -> object:
    """The SQL parameter for one filter value, in the column's storage form."""
    if lookup.kind == "id" and lookup.op in ("exact", "in"):
        try:
            number = int(str(value))
        except ValueError:
            raise GraphQLError(
                f'Filter "{lookup.label}" expects an integer id, got "{value}".'
            ) from None
        # Like Django 5 on an out-of-range integer: such an id matches nothing.
        return number if storable_id(number) else _NO_ROW
    if isinstance(value, Measurement):
        try:
            return convert(value.value, value.unit, lookup.unit or value.unit)
        except UnitError as error:
            raise GraphQLError(f'Filter "{lookup.label}": {error}') from None
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def storable_id(number: int) -> bool:
    """Whether ``number`` fits an SQLite integer column (otherwise no row can have it)."""
    return number in _ID_RANGE


def _as_list(value: object) -> list[object]:
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _as_mapping(value: object) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise GraphQLError("A relation filter must be an input object.")
    return value

"""Which filter keys and order keys a manager offers, independent of GraphQL and of SQL.

The GraphQL layer turns these tables into input types and enums; the SQL layer compiles filter
values and order terms with the very same tables, so a key exists in the schema exactly when the
database can answer it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .catalog import Catalog, ListLink, Model, ScalarKind, ToOneLink

__all__ = [
    "ListLookup",
    "Lookup",
    "LookupTables",
    "Op",
    "OrderKey",
    "ScalarLookup",
    "ToOneLookup",
]

Op = Literal[
    "exact", "in", "icontains", "contains", "startswith", "endswith", "gt", "gte", "lt", "lte"
]

# GraphQL suffix -> operation, in the order GeneralManager lists them.
_STRING_OPS: tuple[tuple[str, Op], ...] = (
    ("", "exact"),
    ("_Exact", "exact"),
    ("_Icontains", "icontains"),
    ("_Contains", "contains"),
    ("_In", "in"),
    ("_Startswith", "startswith"),
    ("_Endswith", "endswith"),
)
_COMPARISONS: tuple[tuple[str, Op], ...] = (
    ("_Gt", "gt"),
    ("_Gte", "gte"),
    ("_Lt", "lt"),
    ("_Lte", "lte"),
)
_ORDERED_OPS: tuple[tuple[str, Op], ...] = (("", "exact"), ("_Exact", "exact"), *_COMPARISONS)
_ID_OPS: tuple[tuple[str, Op], ...] = (
    ("", "exact"),
    ("_Exact", "exact"),
    ("_In", "in"),
    *_COMPARISONS,
)


@dataclass(frozen=True)
class ScalarLookup:
    """``name_Icontains``: compare the SQL ``column`` with operation ``op``.

    ``kind`` is the column's value kind; ``"id"`` covers the key and every ``xId`` column.
    """

    label: str
    column: str
    kind: ScalarKind
    op: Op
    unit: str | None = None


@dataclass(frozen=True)
class ToOneLookup:
    """``material: {...}``: the related row exists and matches a Depth0 filter."""

    link: ToOneLink


@dataclass(frozen=True)
class ListLookup:
    """``partsList: {any, none}``: some / no related row matches a Depth0 filter."""

    link: ListLink


Lookup = ScalarLookup | ToOneLookup | ListLookup


@dataclass(frozen=True)
class OrderKey:
    """An order-enum value: ``column`` of the row itself, or of the row ``via`` points at."""

    column: str
    via: ToOneLink | None = None


class LookupTables:
    """Filter keys per (manager, depth) and order keys per manager, computed once each."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._filters: dict[tuple[str, int], dict[str, Lookup]] = {}
        self._orders: dict[str, dict[str, OrderKey]] = {}

    def filters(self, model: Model, depth: int) -> dict[str, Lookup]:
        """Filter input keys of ``{model}FilterTypeDepth{depth}`` in schema order.

        Depth 1 adds nested to-one filters and ``{any, none}`` list filters; depth 0 has only
        scalar and ``xId`` keys, which keeps relation filters one hop deep like GeneralManager.
        """
        cache_key = (model.name, depth)
        if cache_key not in self._filters:
            self._filters[cache_key] = _filters(model, depth)
        return self._filters[cache_key]

    def orders(self, model: Model) -> dict[str, OrderKey]:
        """Values of ``{model}OrderField``: own columns, then per to-one ``x``, ``x__*``, ``xId``."""
        if model.name not in self._orders:
            keys = {column.graph: OrderKey(column.field) for column in model.columns}
            for link in model.to_one:
                keys[link.name] = OrderKey(link.column)
                for graph, column in _group_columns(self.catalog[link.target]):
                    keys[f"{link.name}__{graph}"] = OrderKey(column, link)
                keys[link.id_graph] = OrderKey(link.column)
            self._orders[model.name] = keys
        return self._orders[model.name]


def _group_columns(model: Model) -> list[tuple[str, str]]:
    """(GraphQL name, SQL column) of every plain column, foreign keys included."""
    pairs = [(column.graph, column.field) for column in model.columns]
    return pairs + [(link.id_graph, link.column) for link in model.to_one]


def _filters(model: Model, depth: int) -> dict[str, Lookup]:
    table: dict[str, Lookup] = {}
    for column in model.columns:
        ops = _STRING_OPS if column.kind == "str" else _ORDERED_OPS
        if column.kind == "id":
            ops = _ID_OPS
        for suffix, op in ops:
            label = column.graph + suffix
            table[label] = ScalarLookup(label, column.field, column.kind, op, column.unit)
    for link in model.to_one:
        if depth > 0:
            table[link.graph] = ToOneLookup(link)
        for suffix, op in _ID_OPS:
            label = link.id_graph + suffix
            table[label] = ScalarLookup(label, link.column, "id", op)
    if depth > 0:
        for list_link in model.lists:
            table[list_link.graph] = ListLookup(list_link)
    return table

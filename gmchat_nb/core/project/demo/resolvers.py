"""Resolvers of plain columns: ids as strings, booleans as bools, measurements in any unit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graphql import GraphQLError, GraphQLResolveInfo

from .catalog import Column
from .store import Row
from .units import Measurement, UnitError, convert

__all__ = ["Resolver", "id_resolver", "measurement_resolver", "value_resolver"]

Resolver = Callable[..., Any]


def id_resolver(column: str) -> Resolver:
    """Resolve an integer key column as a GraphQL ``ID`` string (``None`` stays null)."""

    def resolve(row: Row, _info: GraphQLResolveInfo) -> str | None:
        value = row[column]
        return None if value is None else str(value)

    return resolve


def value_resolver(column: str, cast: Callable[[Any], Any] | None) -> Resolver:
    """Resolve a column as stored, optionally ``cast`` (SQLite keeps booleans as 0/1)."""

    def resolve(row: Row, _info: GraphQLResolveInfo) -> object:
        value = row[column]
        return value if value is None or cast is None else cast(value)

    return resolve


def measurement_resolver(column: Column) -> Resolver:
    """Resolve ``field(targetUnit)`` to a :class:`Measurement`, converted when asked."""
    unit = column.unit or ""

    def resolve(
        row: Row, _info: GraphQLResolveInfo, targetUnit: str | None = None
    ) -> Measurement | None:
        value = row[column.field]
        if value is None:
            return None
        target = targetUnit or unit
        try:
            return Measurement(convert(float(value), unit, target), target)
        except UnitError as error:
            raise GraphQLError(f"{column.graph}: {error}") from None

    return resolve

"""GraphQL types every demo schema shares: ``Date``, measurements, ``PageInfo``, ``OrderDirection``.

They hold no resolvers bound to a database, so one instance serves every schema.
"""

from __future__ import annotations

import datetime
import re
from typing import Any

from graphql import (
    GraphQLBoolean,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLError,
    GraphQLField,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLScalarType,
    GraphQLString,
    StringValueNode,
    ValueNode,
)

from .units import Measurement, parse_measurement

__all__ = [
    "DATE",
    "MEASUREMENT_SCALAR",
    "MEASUREMENT_TYPE",
    "ORDER_DIRECTION",
    "PAGE_INFO",
    "input_scalar",
]

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _serialize_date(value: Any) -> str:
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, str) and _ISO_DATE.match(value):
        return value
    raise GraphQLError(f"Date cannot represent value: {value!r}")


def _parse_date(value: Any) -> datetime.date:
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return datetime.date.fromisoformat(value)
        except ValueError:
            pass
    raise GraphQLError(f'Date expects "YYYY-MM-DD", got {value!r}.')


def _parse_date_literal(node: ValueNode, variables: Any = None) -> datetime.date:
    if isinstance(node, StringValueNode):
        return _parse_date(node.value)
    raise GraphQLError('Date expects a "YYYY-MM-DD" string.')


def _serialize_measurement(value: Any) -> str:
    if isinstance(value, Measurement):
        return str(value)
    raise GraphQLError(f"MeasurementScalar cannot represent value: {value!r}")


def _parse_measurement(value: Any) -> Measurement:
    if not isinstance(value, str):
        raise GraphQLError('MeasurementScalar expects a string such as "12.5 EUR".')
    try:
        return parse_measurement(value)
    except ValueError as error:
        raise GraphQLError(str(error)) from None


def _parse_measurement_literal(node: ValueNode, variables: Any = None) -> Measurement:
    if isinstance(node, StringValueNode):
        return _parse_measurement(node.value)
    raise GraphQLError('MeasurementScalar expects a string such as "12.5 EUR".')


DATE = GraphQLScalarType(
    "Date",
    serialize=_serialize_date,
    parse_value=_parse_date,
    parse_literal=_parse_date_literal,
    description="A calendar date in ISO 8601 form, `YYYY-MM-DD`.",
)

MEASUREMENT_SCALAR = GraphQLScalarType(
    "MeasurementScalar",
    serialize=_serialize_measurement,
    parse_value=_parse_measurement,
    parse_literal=_parse_measurement_literal,
    description='A measurement written as "<value> <unit>", e.g. "12.5 EUR". Filters compare it '
    "after converting to the field's unit (1 EUR = 1.1 USD).",
)

MEASUREMENT_TYPE = GraphQLObjectType(
    "MeasurementType",
    lambda: {
        "value": GraphQLField(GraphQLFloat, description="The magnitude in `unit`."),
        "unit": GraphQLField(GraphQLString, description="The unit of `value`, e.g. EUR."),
    },
    description="A measured value with its unit.",
)

PAGE_INFO = GraphQLObjectType(
    "PageInfo",
    lambda: {
        "totalCount": GraphQLField(
            GraphQLInt, description="Rows matching filter and exclude, before slicing."
        ),
        "pageSize": GraphQLField(GraphQLInt, description="Rows per page."),
        "currentPage": GraphQLField(GraphQLNonNull(GraphQLInt), description="1-based page."),
        "totalPages": GraphQLField(GraphQLInt, description="ceil(totalCount / pageSize)."),
    },
    description="Pagination metadata of a list page.",
)

ORDER_DIRECTION = GraphQLEnumType(
    "OrderDirection",
    {
        "ASC": GraphQLEnumValue("ASC", description="Ascending."),
        "DESC": GraphQLEnumValue("DESC", description="Descending."),
    },
    description="One direction for one typed GraphQL ordering term.",
)


def input_scalar(kind: str) -> GraphQLScalarType:
    """The GraphQL scalar a value of ``kind`` is written in: filters and mutation arguments."""
    return {
        "id": GraphQLID,
        "str": GraphQLString,
        "int": GraphQLInt,
        "float": GraphQLFloat,
        "bool": GraphQLBoolean,
        "date": DATE,
        "measurement": MEASUREMENT_SCALAR,
    }[kind]

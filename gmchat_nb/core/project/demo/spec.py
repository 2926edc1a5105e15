"""The declarative description of a demo project: managers, their fields, relations and rows.

A spec is plain frozen data. :func:`gmchat_nb.core.project.demo.build_demo` turns it into a
SQLite database and a GraphQL schema with GeneralManager's naming conventions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

__all__ = ["DemoSpec", "Field", "FieldType", "ManagerSpec", "ToMany", "ToOne"]

FieldType = Literal["str", "int", "float", "bool", "date", "measurement"]


@dataclass(frozen=True)
class Field:
    """A scalar field of a manager.

    ``name`` is the snake_case Python name (``unit_price``); GraphQL sees it camel-cased
    (``unitPrice``). ``required`` makes the create-mutation argument non-null unless a
    ``default`` is given, which then shows up as the argument's GraphQL default value.
    A ``measurement`` field stores a number in ``unit`` and is exposed as ``MeasurementType``.
    """

    name: str
    type: FieldType
    required: bool = False
    default: object = None
    description: str = ""
    unit: str | None = None


@dataclass(frozen=True)
class ToOne:
    """A foreign key from this manager to ``target`` (a manager name), stored as ``<name>_id``."""

    name: str
    target: str
    required: bool = False
    description: str = ""


@dataclass(frozen=True)
class ToMany:
    """A many-to-many relation declared on this manager (``Project.parts -> Part``).

    The owner gets ``<name>List`` (``partsList``); the target gets the reverse list named
    after this manager (``projectList``).
    """

    name: str
    target: str
    description: str = ""


@dataclass(frozen=True)
class ManagerSpec:
    """One GeneralManager class: a PascalCase ``name``, its fields, relations and seed rows.

    Each row maps ``"id"`` (an int) and field names to values: a target id (or ``None``) for a
    :class:`ToOne`, a list of target ids for a :class:`ToMany`, a number in the field's unit for
    a measurement and ``"YYYY-MM-DD"`` or a :class:`datetime.date` for a date. ``mutations``
    generates ``createX``/``updateX``/``deleteX``. ``exposed=False`` hides the manager from the
    chat assistant only; it stays in the GraphQL schema like on a real server.
    """

    name: str
    description: str
    fields: tuple[Field, ...]
    relations: tuple[ToOne | ToMany, ...] = ()
    rows: tuple[Mapping[str, object], ...] = ()
    mutations: bool = False
    exposed: bool = True


@dataclass(frozen=True)
class DemoSpec:
    """A whole demo project: its managers in schema order and its pagination limits."""

    name: str
    managers: tuple[ManagerSpec, ...]
    default_page_size: int = 10
    max_page_size: int = 100

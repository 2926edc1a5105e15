"""A validated, resolved view of a :class:`DemoSpec`: tables, columns and both sides of relations.

The SQL layer and the GraphQL layer both read this catalog, so a name or a relation is derived in
exactly one place. Reverse relations (``MaterialType.partList`` from ``Part.material``) only exist
here; the spec declares each relation once, on its owning side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from .names import camel, pascal_to_snake, plural
from .spec import DemoSpec, Field, ManagerSpec, ToMany, ToOne

__all__ = ["Catalog", "Column", "ListLink", "Model", "ScalarKind", "ToOneLink"]

ScalarKind = Literal["id", "str", "int", "float", "bool", "date", "measurement"]

_MANAGER_NAME = re.compile(r"^[A-Z][A-Za-z0-9]*$")
# Double underscores are reserved for ordering paths such as ``material__name``.
_FIELD_NAME = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_FIELD_TYPES = frozenset({"str", "int", "float", "bool", "date", "measurement"})


@dataclass(frozen=True)
class Column:
    """A scalar column: the primary key ``id`` or one :class:`Field`."""

    field: str
    graph: str
    kind: ScalarKind
    unit: str | None
    description: str
    spec: Field | None = None


@dataclass(frozen=True)
class ToOneLink:
    """A foreign key as seen from its owner: ``material`` plus the raw ``materialId``."""

    name: str
    graph: str
    id_graph: str
    target: str
    column: str
    required: bool
    description: str


@dataclass(frozen=True)
class ListLink:
    """A to-many field on ``owner`` listing rows of ``target`` (``partsList``, ``partList``).

    ``kind`` says how the rows are linked: ``m2m`` is a declared many-to-many (rows of the join
    table ``table``), ``reverse_m2m`` its other side, and ``reverse_fk`` the rows of ``target``
    whose foreign key ``column`` points at the owner.
    """

    graph: str
    owner: str
    target: str
    kind: Literal["m2m", "reverse_m2m", "reverse_fk"]
    table: str
    column: str
    description: str
    declared: str | None = None

    def condition(self, owner_id: str, item: str, join_alias: str) -> str:
        """SQL that is true when row ``item`` of the target belongs to the owner ``owner_id``.

        ``owner_id`` is an SQL expression (a ``?`` placeholder or an outer column), never a value.
        """
        if self.kind == "reverse_fk":
            return f'{item}."{self.column}" = {owner_id}'
        mine, theirs = ("source_id", "target_id")
        if self.kind == "reverse_m2m":
            mine, theirs = theirs, mine
        return (
            f'EXISTS (SELECT 1 FROM "{self.table}" {join_alias} '
            f"WHERE {join_alias}.{mine} = {owner_id} AND {join_alias}.{theirs} = {item}.id)"
        )


@dataclass(frozen=True)
class Model:
    """One manager with everything derived from it: names, columns and links in schema order."""

    spec: ManagerSpec
    snake: str
    root: str
    table: str
    measurements: tuple[Column, ...]
    key: Column
    scalars: tuple[Column, ...]
    to_one: tuple[ToOneLink, ...]
    lists: tuple[ListLink, ...]

    @property
    def name(self) -> str:
        """The manager's class name (``PurchaseOrder``)."""
        return self.spec.name

    @property
    def columns(self) -> tuple[Column, ...]:
        """Scalar columns in GeneralManager's order: measurements first, then id, then the rest."""
        return (*self.measurements, self.key, *self.scalars)

    def declared_lists(self) -> tuple[tuple[ToMany, ListLink], ...]:
        """The many-to-many relations this manager declares, with their list links."""
        links = {link.declared: link for link in self.lists if link.declared}
        return tuple(
            (relation, links[relation.name])
            for relation in self.spec.relations
            if isinstance(relation, ToMany)
        )


class Catalog:
    """All models of a spec, validated; raises :class:`ValueError` naming the first problem."""

    def __init__(self, spec: DemoSpec) -> None:
        if spec.default_page_size < 1 or spec.max_page_size < spec.default_page_size:
            raise ValueError("need 1 <= default_page_size <= max_page_size")
        self.spec = spec
        names = [manager.name for manager in spec.managers]
        for manager in spec.managers:
            _check_manager(manager, names)
        reverse: dict[str, list[ListLink]] = {name: [] for name in names}
        for manager in spec.managers:
            for link in _reverse_links(manager):
                reverse[link.owner].append(link)
        self.models: dict[str, Model] = {
            manager.name: _model(manager, reverse[manager.name]) for manager in spec.managers
        }
        for model in self.models.values():
            _check_unique_graph_names(model)

    def __getitem__(self, name: str) -> Model:
        return self.models[name]


def _check_manager(manager: ManagerSpec, names: list[str]) -> None:
    if not _MANAGER_NAME.match(manager.name):
        raise ValueError(f"manager name {manager.name!r} must be PascalCase")
    if names.count(manager.name) > 1:
        raise ValueError(f"manager {manager.name!r} is declared twice")
    for field in manager.fields:
        if field.type not in _FIELD_TYPES:
            raise ValueError(f"{manager.name}.{field.name}: unknown type {field.type!r}")
        if (field.type == "measurement") != (field.unit is not None):
            raise ValueError(f"{manager.name}.{field.name}: a unit is for measurement fields only")
    for item in (*manager.fields, *manager.relations):
        if not _FIELD_NAME.match(item.name) or item.name == "id":
            raise ValueError(f"{manager.name}.{item.name}: not a valid snake_case field name")
    for relation in manager.relations:
        if relation.target not in names:
            raise ValueError(f"{manager.name}.{relation.name}: unknown target {relation.target!r}")


def _reverse_links(manager: ManagerSpec) -> list[ListLink]:
    snake = pascal_to_snake(manager.name)
    graph = camel(snake) + "List"
    links = []
    for relation in manager.relations:
        if isinstance(relation, ToOne):
            links.append(
                ListLink(
                    graph=graph,
                    owner=relation.target,
                    target=manager.name,
                    kind="reverse_fk",
                    table=snake,
                    column=f"{relation.name}_id",
                    description=f"{plural(manager.name)} whose {camel(relation.name)} is this "
                    f"{relation.target}.",
                )
            )
        else:
            links.append(
                ListLink(
                    graph=graph,
                    owner=relation.target,
                    target=manager.name,
                    kind="reverse_m2m",
                    table=f"{snake}__{relation.name}",
                    column="",
                    description=f"{plural(manager.name)} whose {camel(relation.name)}List "
                    f"includes this {relation.target}.",
                )
            )
    return links


def _model(manager: ManagerSpec, reverse: list[ListLink]) -> Model:
    snake = pascal_to_snake(manager.name)
    columns = [
        Column(
            field.name,
            camel(field.name),
            field.type,
            field.unit,
            field.description,
            field,
        )
        for field in manager.fields
    ]
    to_one = tuple(
        ToOneLink(
            name=relation.name,
            graph=camel(relation.name),
            id_graph=camel(relation.name) + "Id",
            target=relation.target,
            column=f"{relation.name}_id",
            required=relation.required,
            description=relation.description or f"The related {relation.target}.",
        )
        for relation in manager.relations
        if isinstance(relation, ToOne)
    )
    declared = tuple(
        ListLink(
            graph=camel(relation.name) + "List",
            owner=manager.name,
            target=relation.target,
            kind="m2m",
            table=f"{snake}__{relation.name}",
            column="",
            description=relation.description or f"The related {relation.target} rows.",
            declared=relation.name,
        )
        for relation in manager.relations
        if isinstance(relation, ToMany)
    )
    return Model(
        spec=manager,
        snake=snake,
        root=camel(snake),
        table=snake,
        measurements=tuple(column for column in columns if column.kind == "measurement"),
        key=Column("id", "id", "id", None, f"Unique identifier of the {manager.name}."),
        scalars=tuple(column for column in columns if column.kind != "measurement"),
        to_one=to_one,
        lists=(*declared, *reverse),
    )


def _check_unique_graph_names(model: Model) -> None:
    seen: set[str] = set()
    graph_names = [column.graph for column in model.columns]
    for link in model.to_one:
        graph_names += [link.graph, link.id_graph]
    graph_names += [link.graph for link in model.lists]
    for graph_name in graph_names:
        if graph_name in seen:
            raise ValueError(
                f"{model.name}: two fields would both be named {graph_name!r} in GraphQL"
            )
        seen.add(graph_name)

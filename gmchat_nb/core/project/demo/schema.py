"""Generate the GraphQL schema of a demo with GeneralManager 0.87.1's names and shapes.

Per manager ``Part``: ``PartType``, ``PartTypePage``, ``PartFilterTypeDepth1``/``Depth0``,
``PartOrderBy``/``PartOrderField`` and their ``Relation`` variants, the roots ``partList`` and
``part``, and (when enabled) the mutations. Field maps are thunks because object types refer to
each other in cycles; lookup input fields are shared instances because there are only a few
dozen distinct ones even in a schema with thousands of filter types.
"""

from __future__ import annotations

from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLEnumValue,
    GraphQLField,
    GraphQLID,
    GraphQLInputField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    GraphQLString,
)

from .catalog import Catalog, Column, ListLink, Model, ToOneLink
from .lookups import ListLookup, LookupTables, Op, ScalarLookup, ToOneLookup
from .mutations import mutation_fields
from .names import pascal, plural
from .paging import resolve_page
from .resolvers import Resolver, id_resolver, measurement_resolver, value_resolver
from .scalars import MEASUREMENT_TYPE, ORDER_DIRECTION, PAGE_INFO, input_scalar
from .store import Row, Store

__all__ = ["build_schema"]


def build_schema(catalog: Catalog, store: Store) -> GraphQLSchema:
    """A schema whose resolvers read and write ``store``."""
    return _Builder(catalog, store).schema()


class _Builder:
    def __init__(self, catalog: Catalog, store: Store) -> None:
        self.catalog = catalog
        self.store = store
        self.tables = LookupTables(catalog)
        self._objects: dict[str, GraphQLObjectType] = {}
        self._pages: dict[str, GraphQLObjectType] = {}
        self._filters: dict[tuple[str, int], GraphQLInputObjectType] = {}
        self._orders: dict[tuple[str, bool], GraphQLInputObjectType] = {}
        self._relation_filters: dict[str, GraphQLInputObjectType] = {}
        self._lookup_fields: dict[tuple[str, Op], GraphQLInputField] = {}

    def schema(self) -> GraphQLSchema:
        self._reserve_type_names()
        query: dict[str, GraphQLField] = {}
        mutation: dict[str, GraphQLField] = {}
        for model in self.catalog.models.values():
            query[model.root + "List"] = GraphQLField(
                self.page_type(model),
                args=self.list_args(model, relation=False),
                resolve=self._root_list(model),
                description=f"{plural(model.name)}, filtered, ordered and paginated.",
            )
            query[model.root] = GraphQLField(
                self.object_type(model),
                args={"id": GraphQLArgument(GraphQLNonNull(GraphQLID))},
                resolve=self._root_single(model),
                description=f"One {model.name} by id, or null when it does not exist.",
            )
            if model.spec.mutations:
                mutation.update(mutation_fields(self.catalog, self.store, model, self.object_type))
        return GraphQLSchema(
            query=GraphQLObjectType("Query", query),
            mutation=GraphQLObjectType("Mutation", mutation) if mutation else None,
        )

    def _reserve_type_names(self) -> None:
        """Fail with :class:`ValueError` before any thunk runs if two types would share a name."""
        owners: dict[str, str] = {}

        def reserve(name: str, owner: str) -> None:
            previous = owners.setdefault(name, owner)
            if previous != owner:
                raise ValueError(
                    f"GraphQL type {name!r} would be generated for {previous} and {owner}"
                )

        shared = ["Query", "Mutation", "PageInfo", "MeasurementType", "OrderDirection"]
        shared += ["Date", "MeasurementScalar", "String", "Int", "Float", "Boolean", "ID"]
        for name in shared:
            reserve(name, "the shared types")
        listed = {link.target for model in self.catalog.models.values() for link in model.lists}
        for model in self.catalog.models.values():
            suffixes = [
                "Type",
                "TypePage",
                "FilterTypeDepth0",
                "FilterTypeDepth1",
                "OrderBy",
                "OrderField",
            ]
            if model.name in listed:
                suffixes += ["RelationOrderBy", "RelationOrderField"]
            if model.spec.mutations:
                for verb in ("Create", "Update", "Delete"):
                    reserve(verb + model.name, model.name)
            for suffix in suffixes:
                reserve(model.name + suffix, model.name)
            for link in model.lists:
                name = f"{link.target}{pascal(link.graph)}RelationFilterTypeDepth0"
                reserve(name, f"{link.target}.{link.graph}")

    # Output types

    def object_type(self, model: Model) -> GraphQLObjectType:
        if model.name not in self._objects:
            self._objects[model.name] = GraphQLObjectType(
                model.name + "Type",
                lambda: self._object_fields(model),
                description=model.spec.description or None,
            )
        return self._objects[model.name]

    def page_type(self, model: Model) -> GraphQLObjectType:
        if model.name not in self._pages:
            item = self.object_type(model)
            self._pages[model.name] = GraphQLObjectType(
                model.name + "TypePage",
                lambda: {
                    "items": GraphQLField(GraphQLNonNull(GraphQLList(item))),
                    "pageInfo": GraphQLField(GraphQLNonNull(PAGE_INFO)),
                },
                description=f"One page of {model.name} rows.",
            )
        return self._pages[model.name]

    def _object_fields(self, model: Model) -> dict[str, GraphQLField]:
        fields = {column.graph: self._column_field(column) for column in model.columns}
        for link in model.to_one:
            target = self.catalog[link.target]
            fields[link.graph] = GraphQLField(
                self.object_type(target),
                resolve=self._to_one(target, link),
                description=link.description,
            )
            fields[link.id_graph] = GraphQLField(
                GraphQLID,
                resolve=id_resolver(link.column),
                description=f"Id of the related {link.target}.",
            )
        for list_link in model.lists:
            target = self.catalog[list_link.target]
            fields[list_link.graph] = GraphQLField(
                self.page_type(target),
                args=self.list_args(target, relation=True),
                resolve=self._relation_list(target, list_link),
                description=list_link.description,
            )
        return fields

    def _column_field(self, column: Column) -> GraphQLField:
        description = column.description or None
        if column.kind == "measurement":
            return GraphQLField(
                MEASUREMENT_TYPE,
                args={"targetUnit": GraphQLArgument(GraphQLString)},
                resolve=measurement_resolver(column),
                description=description,
            )
        if column.kind == "id":
            return GraphQLField(GraphQLID, resolve=id_resolver("id"), description=description)
        return GraphQLField(
            input_scalar(column.kind),
            resolve=value_resolver(column.field, bool if column.kind == "bool" else None),
            description=description,
        )

    # Arguments and input types

    def list_args(self, model: Model, *, relation: bool) -> dict[str, GraphQLArgument]:
        filter_type = self.filter_type(model, 1)
        return {
            "page": GraphQLArgument(GraphQLInt),
            "pageSize": GraphQLArgument(GraphQLInt),
            "filter": GraphQLArgument(filter_type),
            "exclude": GraphQLArgument(filter_type),
            "orderBy": GraphQLArgument(
                GraphQLList(GraphQLNonNull(self.order_type(model, relation)))
            ),
        }

    def filter_type(self, model: Model, depth: int) -> GraphQLInputObjectType:
        key = (model.name, depth)
        if key not in self._filters:
            self._filters[key] = GraphQLInputObjectType(
                f"{model.name}FilterTypeDepth{depth}",
                lambda: self._filter_fields(model, depth),
            )
        return self._filters[key]

    def _filter_fields(self, model: Model, depth: int) -> dict[str, GraphQLInputField]:
        fields = {}
        for key, lookup in self.tables.filters(model, depth).items():
            if isinstance(lookup, ScalarLookup):
                fields[key] = self._lookup_field(lookup.kind, lookup.op)
            elif isinstance(lookup, ToOneLookup):
                target = self.catalog[lookup.link.target]
                fields[key] = GraphQLInputField(self.filter_type(target, 0))
            elif isinstance(lookup, ListLookup):
                fields[key] = GraphQLInputField(self._relation_filter(lookup.link))
        return fields

    def _lookup_field(self, kind: str, op: Op) -> GraphQLInputField:
        if (kind, op) not in self._lookup_fields:
            scalar: GraphQLInputType = input_scalar(kind)
            if kind == "id" and op not in ("exact", "in"):
                scalar = GraphQLInt
            self._lookup_fields[kind, op] = GraphQLInputField(
                GraphQLList(scalar) if op == "in" else scalar
            )
        return self._lookup_fields[kind, op]

    def _relation_filter(self, link: ListLink) -> GraphQLInputObjectType:
        name = f"{link.target}{pascal(link.graph)}RelationFilterTypeDepth0"
        if name not in self._relation_filters:
            target = self.catalog[link.target]
            self._relation_filters[name] = GraphQLInputObjectType(
                name,
                lambda: {
                    "any": GraphQLInputField(
                        self.filter_type(target, 0),
                        description="At least one related row matches.",
                    ),
                    "none": GraphQLInputField(
                        self.filter_type(target, 0), description="No related row matches."
                    ),
                },
            )
        return self._relation_filters[name]

    def order_type(self, model: Model, relation: bool) -> GraphQLInputObjectType:
        key = (model.name, relation)
        if key not in self._orders:
            prefix = model.name + ("Relation" if relation else "")
            enum = GraphQLEnumType(
                prefix + "OrderField",
                {name: GraphQLEnumValue(name) for name in self.tables.orders(model)},
            )
            self._orders[key] = GraphQLInputObjectType(
                prefix + "OrderBy",
                lambda: {
                    "field": GraphQLInputField(GraphQLNonNull(enum)),
                    "direction": GraphQLInputField(
                        GraphQLNonNull(ORDER_DIRECTION), default_value="ASC"
                    ),
                },
            )
        return self._orders[key]

    # Resolvers

    def _root_list(self, model: Model) -> Resolver:
        def resolve(_root: object, _info: GraphQLResolveInfo, **args: Any) -> object:
            return resolve_page(self.store, self.tables, self.catalog.spec, model, args)

        return resolve

    def _root_single(self, model: Model) -> Resolver:
        def resolve(_root: object, _info: GraphQLResolveInfo, id: str) -> Row | None:
            try:
                return self.store.get(model, int(id))
            except ValueError:
                return None

        return resolve

    def _to_one(self, target: Model, link: ToOneLink) -> Resolver:
        def resolve(row: Row, _info: GraphQLResolveInfo) -> Row | None:
            return self.store.get(target, row[link.column])

        return resolve

    def _relation_list(self, target: Model, link: ListLink) -> Resolver:
        def resolve(row: Row, _info: GraphQLResolveInfo, **args: Any) -> object:
            scope = (link, int(row["id"]))
            return resolve_page(self.store, self.tables, self.catalog.spec, target, args, scope)

        return resolve

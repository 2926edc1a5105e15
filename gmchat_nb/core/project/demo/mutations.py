"""``createX``/``updateX``/``deleteX`` with GeneralManager's flat arguments and error shapes.

Arguments are sorted alphabetically, as Graphene prints them. Validation problems become one
GraphQL error ``"Validation failed."`` whose extensions carry Django-style ``fieldErrors`` keyed by
the Python field name. ``historyComment`` is accepted and ignored: the demo keeps no history.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLString,
)

from .catalog import Catalog, ListLink, Model
from .scalars import input_scalar
from .store import Row, Store
from .units import Measurement, UnitError, convert

__all__ = ["mutation_fields"]

BLANK = "This field cannot be blank."
NULL = "This field cannot be null."


def mutation_fields(
    catalog: Catalog,
    store: Store,
    model: Model,
    object_type: Callable[[Model], GraphQLObjectType],
) -> dict[str, GraphQLField]:
    """The three mutation fields of ``model``; ``object_type`` supplies its ``{M}Type``."""
    writer = _Writer(catalog, store, model)
    item = object_type(model)
    fields = {}
    for verb, args, resolve in (
        ("create", writer.create_args(), writer.create),
        ("update", writer.update_args(), writer.update),
        (
            "delete",
            _with_history({"id": GraphQLArgument(GraphQLNonNull(GraphQLID))}),
            writer.delete,
        ),
    ):
        description = f"Mutation to {verb} {model.name}"
        payload = GraphQLObjectType(
            verb.capitalize() + model.name,
            {"success": GraphQLField(GraphQLBoolean), model.name: GraphQLField(item)},
            description=description,
        )
        fields[verb + model.name] = GraphQLField(
            payload, args=args, resolve=resolve, description=description
        )
    return fields


def _with_history(args: dict[str, GraphQLArgument]) -> dict[str, GraphQLArgument]:
    args["historyComment"] = GraphQLArgument(GraphQLString)
    return dict(sorted(args.items()))


def _validation_failed(errors: Mapping[str, list[str]]) -> GraphQLError:
    return GraphQLError(
        "Validation failed.",
        extensions={"code": "BAD_USER_INPUT", "fieldErrors": dict(errors), "nonFieldErrors": []},
    )


class _Writer:
    def __init__(self, catalog: Catalog, store: Store, model: Model) -> None:
        self.catalog = catalog
        self.store = store
        self.model = model
        self.lists = model.declared_lists()

    def create_args(self) -> dict[str, GraphQLArgument]:
        args = {}
        for column in self.model.columns:
            field = column.spec
            if field is None:
                continue
            scalar: GraphQLInputType = input_scalar(column.kind)
            if field.default is not None:
                args[column.graph] = GraphQLArgument(scalar, default_value=field.default)
            else:
                args[column.graph] = GraphQLArgument(
                    GraphQLNonNull(scalar) if field.required else scalar
                )
        for link in self.model.to_one:
            args[link.graph] = GraphQLArgument(
                GraphQLNonNull(GraphQLID) if link.required else GraphQLID
            )
        for _, list_link in self.lists:
            args[list_link.graph] = GraphQLArgument(GraphQLList(GraphQLID), default_value=None)
        return _with_history(args)

    def update_args(self) -> dict[str, GraphQLArgument]:
        args: dict[str, GraphQLArgument] = {"id": GraphQLArgument(GraphQLNonNull(GraphQLID))}
        for column in self.model.columns:
            if column.spec is not None:
                args[column.graph] = GraphQLArgument(input_scalar(column.kind))
        for link in self.model.to_one:
            args[link.graph] = GraphQLArgument(GraphQLID)
        for _, list_link in self.lists:
            args[list_link.graph] = GraphQLArgument(GraphQLList(GraphQLID))
        return _with_history(args)

    def create(self, _root: object, _info: GraphQLResolveInfo, **args: Any) -> dict[str, object]:
        # One lock around id allocation and insert keeps concurrent creates from sharing an id.
        with self.store.lock:
            values, lists = self._validate(args)
            row_id = self.store.next_id(self.model)
            self.store.write(self.model, row_id, values, lists, insert=True)
            return {"success": True, self.model.name: self.store.get(self.model, row_id)}

    def update(self, _root: object, _info: GraphQLResolveInfo, **args: Any) -> dict[str, object]:
        with self.store.lock:
            row = self._existing(args["id"])
            values, lists = self._validate(args)
            self.store.write(self.model, row["id"], values, lists, insert=False)
            return {"success": True, self.model.name: self.store.get(self.model, row["id"])}

    def delete(self, _root: object, _info: GraphQLResolveInfo, **args: Any) -> dict[str, object]:
        with self.store.lock:
            row = self._existing(args["id"])
            self.store.delete(self.model, row["id"])
            return {"success": True, self.model.name: None}

    def _existing(self, raw_id: str) -> Row:
        try:
            row = self.store.get(self.model, int(raw_id))
        except ValueError:  # not a number, or more digits than Python converts
            row = None
        if row is None:
            raise GraphQLError(
                f"{self.model.name} matching query does not exist.",
                extensions={"code": "NOT_FOUND"},
            )
        return row

    def _validate(
        self, args: Mapping[str, Any]
    ) -> tuple[dict[str, object], dict[ListLink, list[int]]]:
        """Storage values for the given arguments, or a ``Validation failed.`` error."""
        errors: dict[str, list[str]] = {}
        values: dict[str, object] = {}
        for column in self.model.columns:
            if column.spec is None or column.graph not in args:
                continue
            value = args[column.graph]
            if column.spec.required and (value is None or str(value).strip() == ""):
                errors[column.field] = [NULL if value is None else BLANK]
            elif isinstance(value, Measurement):
                try:
                    values[column.field] = convert(value.value, value.unit, column.unit or "")
                except UnitError as error:
                    errors[column.field] = [str(error)]
            elif isinstance(value, datetime.date):
                values[column.field] = value.isoformat()
            else:
                values[column.field] = int(value) if isinstance(value, bool) else value
        for link in self.model.to_one:
            if link.graph not in args:
                continue
            target = self.catalog[link.target]
            raw = args[link.graph]
            if raw is None:
                if link.required:
                    errors[link.name] = [NULL]
                values[link.column] = None
                continue
            ids, missing = self._ids(target, [raw])
            if missing:
                errors[link.name] = missing
            else:
                values[link.column] = ids[0]
        lists: dict[ListLink, list[int]] = {}
        for relation, list_link in self.lists:
            if list_link.graph not in args:
                continue
            raw_ids = [raw for raw in args[list_link.graph] or [] if raw is not None]
            ids, missing = self._ids(self.catalog[list_link.target], raw_ids)
            if missing:
                errors[relation.name] = missing
            lists[list_link] = ids
        if errors:
            raise _validation_failed(errors)
        return values, lists

    def _ids(self, target: Model, raw_ids: list[object]) -> tuple[list[int], list[str]]:
        """Parsed ids and one message per id with no row."""
        ids: list[int] = []
        bad: list[object] = []
        for raw in raw_ids:
            try:
                ids.append(int(str(raw)))
            except ValueError:
                bad.append(raw)
        bad += self.store.missing(target, ids)
        return ids, [f"{target.name} with id {raw} does not exist." for raw in bad]

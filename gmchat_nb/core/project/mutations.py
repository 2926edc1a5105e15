"""Validate and compile ``mutate`` calls.

Everything about a mutation is checked before anything runs (and, in the turn engine, before a
human is asked to confirm it): the name is allow-listed, every input key names an argument
(``history_comment`` and ``unit_price`` resolve to ``historyComment`` and ``unitPrice``; ``material_id``
to the relation argument ``material``), every required argument is present, and every value coerces
to its argument's GraphQL type. The document selects the whole payload — ``success`` and the object
with its fields — so a created id comes back.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Any, cast

from graphql import (
    DocumentNode,
    GraphQLInputType,
    GraphQLObjectType,
    is_input_type,
    is_leaf_type,
    parse_type,
    print_ast,
    type_from_ast,
    validate,
)
from graphql.language import ast

from .errors import ToolError
from .graphql_types import input_value_error, named
from .index import ArgumentInfo, MutationInfo, SchemaIndex
from .names import MAX_NAME_LENGTH, clip, normalize_key
from .selection import field_node, operation_document

__all__ = ["MutationCompiler", "PreparedMutation"]

OPERATION_NAME = "GmchatMutation"


@dataclass(frozen=True, slots=True)
class PreparedMutation:
    """A validated mutation call, ready to confirm and run."""

    mutation: str
    manager: str
    action: str
    input: dict[str, Any]  # argument name -> value, as the server will receive it
    document: DocumentNode
    object_field: str

    @property
    def text(self) -> str:
        """The GraphQL document as text."""
        return print_ast(self.document)


class MutationCompiler:
    """Prepares mutations of one schema index."""

    def __init__(self, index: SchemaIndex) -> None:
        self.index = index
        self._documents: dict[tuple[str, tuple[str, ...]], DocumentNode] = {}

    def prepare(
        self, mutation: Any, input_value: Any, allowed: Collection[str]
    ) -> PreparedMutation:
        """Check a ``mutate`` call completely; raise a ToolError saying what to fix."""
        info = self.index.mutation(mutation)
        if info.name not in allowed:
            allowed_text = ", ".join(sorted(allowed)) if allowed else "none"
            raise ToolError(
                "mutation_not_allowed",
                f"Mutation '{info.name}' is not allowed here. Allowed mutations: {allowed_text}.",
            )
        if input_value is None:
            input_value = {}
        if not isinstance(input_value, dict):
            raise ToolError("invalid_mutation_input", "'input' must be an object of arguments.")
        values = self._map_keys(info, input_value)
        missing = [arg for arg in info.arguments if arg.required and arg.name not in values]
        if missing:
            raise ToolError(
                "invalid_mutation_input",
                f"{info.name} needs {_list(missing)}. {_signature(info)}",
            )
        for argument in info.arguments:
            if argument.name in values:
                self._check_value(info, argument, values[argument.name])
        document = self._document(info, tuple(values))
        return PreparedMutation(
            mutation=info.name,
            manager=info.manager,
            action=info.action,
            input=values,
            document=document,
            object_field=info.object_field,
        )

    def _map_keys(self, info: MutationInfo, input_value: dict[str, Any]) -> dict[str, Any]:
        by_key = {normalize_key(arg.name): arg.name for arg in info.arguments}
        values: dict[str, Any] = {}
        for key, value in input_value.items():
            name = key if any(arg.name == key for arg in info.arguments) else None
            if name is None and len(str(key)) <= MAX_NAME_LENGTH:
                wanted = normalize_key(str(key))
                name = by_key.get(wanted)
                if name is None and wanted.endswith("id"):
                    name = by_key.get(
                        wanted[:-2]
                    )  # ``material_id`` -> relation argument ``material``
                if name is None:
                    name = by_key.get(wanted + "list")  # ``parts`` -> ``partsList``
            if name is None:
                raise ToolError(
                    "invalid_mutation_input",
                    f"{info.name} has no argument '{clip(key)}'. {_signature(info)}",
                )
            if name in values:
                raise ToolError(
                    "invalid_mutation_input",
                    f"'{clip(key)}' and another key both give {info.name}'s argument '{name}'.",
                )
            values[name] = value
        return values

    def _document(self, info: MutationInfo, names: tuple[str, ...]) -> DocumentNode:
        key = (info.name, names)
        document = self._documents.get(key)
        if document is not None:
            return document
        arguments = {arg.name: arg for arg in info.arguments}
        payload = self.index.schema.type_map[info.payload_type]
        assert isinstance(payload, GraphQLObjectType)
        selections: list[ast.FieldNode] = []
        for field_name, payload_field in payload.fields.items():
            if field_name == info.object_field:
                manager = self.index.managers[info.manager]
                selections.append(
                    field_node(
                        field_name,
                        [
                            field_node(item.name, [field_node(s) for s in item.subfields] or None)
                            for item in manager.fields
                            if not any(arg.required for arg in item.arguments)
                        ],
                    )
                )
            elif is_leaf_type(named(payload_field.type)):
                selections.append(field_node(field_name))
        variables = {name: arguments[name].type for name in names}
        call = field_node(info.name, selections, [(name, name) for name in names])
        document = operation_document(ast.OperationType.MUTATION, OPERATION_NAME, variables, call)
        errors = validate(self.index.schema, document)
        if errors:
            raise ToolError(
                "invalid_graphql_request",
                "The compiled mutation is not valid: " + "; ".join(e.message for e in errors),
            )
        self._documents[key] = document
        return document

    def _check_value(self, info: MutationInfo, argument: ArgumentInfo, value: Any) -> None:
        input_type = type_from_ast(self.index.schema, parse_type(argument.type))
        assert is_input_type(input_type)
        problem = input_value_error(value, cast(GraphQLInputType, input_type))
        if problem is not None:
            raise ToolError(
                "invalid_mutation_input",
                f"Argument '{argument.name}' of {info.name} expects {argument.type}: {problem}",
            )


def _list(arguments: list[ArgumentInfo]) -> str:
    return ", ".join(f"'{arg.name}' ({arg.type})" for arg in arguments)


def _signature(info: MutationInfo) -> str:
    parts = ", ".join(f"{arg.name}: {arg.describe()}" for arg in info.arguments)
    return f"Arguments: {info.name}({parts})."

"""Which mutations the index offers: those whose payload returns an exposed manager, without the
arguments that refer to a hidden one. A mutation that cannot run without such an argument is
withheld, and the reason is kept for operators (never shown in the chat)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from graphql import GraphQLField, GraphQLNamedType, GraphQLObjectType

from .graphql_types import is_required, named
from .manager_info import MutationInfo
from .roots import argument_info, collapse, manager_name
from .visibility import Visibility, reveals_hidden

__all__ = ["offered_mutations"]


def offered_mutations(
    visibility: Visibility, withheld: dict[str, str]
) -> dict[str, tuple[MutationInfo, ...]]:
    """The mutations whose payload returns an exposed manager, by its type name.

    Arguments that refer to a hidden manager are left out; a mutation that cannot run without
    one is not offered at all, and ``withheld`` records why.
    """
    found: dict[str, list[MutationInfo]] = {}
    mutation_type = visibility.schema.mutation_type
    if mutation_type is None:
        return {}
    for name, mutation in mutation_type.fields.items():
        payload = named(mutation.type)
        if not isinstance(payload, GraphQLObjectType):
            continue
        for field_name, payload_field in payload.fields.items():
            target = named(payload_field.type)
            if target.name not in visibility.visible_types:
                continue
            object_type = visibility.object_type(target.name)
            hidden = visibility.hidden_relations(object_type)
            arguments = {
                arg_name: argument
                for arg_name, argument in mutation.args.items()
                if not reveals_hidden(arg_name, hidden)
            }
            needed = [
                arg_name
                for arg_name, argument in mutation.args.items()
                if arg_name not in arguments and is_required(argument)
            ]
            if needed:
                withheld[name] = (
                    f"{name} needs the argument '{needed[0]}', which refers to "
                    f"{visibility.hidden_target(object_type, needed[0])}, a manager that is not "
                    f"exposed: expose it, or leave {name} out of allowed_mutations."
                )
            else:
                found.setdefault(target.name, []).append(
                    _mutation_info(name, mutation, arguments, payload.name, field_name, target)
                )
            break
    return {type_name: tuple(infos) for type_name, infos in found.items()}


def _mutation_info(
    name: str,
    mutation: GraphQLField,
    arguments: Mapping[str, Any],
    payload_type: str,
    object_field: str,
    target: GraphQLNamedType,
) -> MutationInfo:
    return MutationInfo(
        name=name,
        manager=manager_name(target.name),
        action=next(
            (verb for verb in ("create", "update", "delete") if name.startswith(verb)), "other"
        ),
        arguments=tuple(argument_info(arg_name, arg) for arg_name, arg in arguments.items()),
        payload_type=payload_type,
        object_field=object_field,
        description=collapse(mutation.description or ""),
    )

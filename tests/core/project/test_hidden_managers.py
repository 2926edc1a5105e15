"""A manager that is not exposed stays invisible through the mutations and errors of exposed ones.

Part's mutations take ``material`` and ``supplier``; with only Part and Project exposed, the chat
must answer exactly as a server without Material, Supplier or PurchaseOrder would, and no server
message may name them.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from graphql import (
    GraphQLArgument,
    GraphQLBoolean,
    GraphQLError,
    GraphQLField,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLString,
)

import gmchat_nb
from gmchat_nb.core.project import LocalExecutor, Project, ToolError, WithheldMutationError
from gmchat_nb.core.project.demo import (
    DemoSpec,
    Field,
    ManagerSpec,
    ToOne,
    build_demo,
    inventory_spec,
)
from gmchat_nb.core.prompt import build_system_prompt

EXPOSED = ["Part", "Project"]
WRITES = ["createPart", "updatePart"]
NEUTRAL = "The server rejected a value that refers to data this chat cannot see."


def hidden_managers(project: Project) -> set[str]:
    return set(project.index.all_managers) - set(project.index.managers)


def spellings(names: set[str]) -> re.Pattern[str]:
    """Any spelling of the names: ``Material``, ``materials``, ``materialId``, ``audit_secret``."""
    words = [re.findall(r"[A-Z][a-z]*", name) for name in names]
    return re.compile("|".join("[_ -]?".join(parts) for parts in words), re.IGNORECASE)


def without_descriptions(value: Any) -> Any:
    """A tool result without its prose (the project's own descriptions are text, not names)."""
    if isinstance(value, dict):
        return {k: without_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list):
        return [without_descriptions(item) for item in value]
    return value


def spec_without(names: set[str]) -> DemoSpec:
    """The inventory spec as if the managers ``names`` (and every relation to them) never existed."""
    spec = inventory_spec()
    kept = []
    for manager in spec.managers:
        if manager.name in names:
            continue
        relations = tuple(r for r in manager.relations if r.target not in names)
        dropped = {r.name for r in manager.relations} - {r.name for r in relations}
        rows = tuple({k: v for k, v in row.items() if k not in dropped} for row in manager.rows)
        kept.append(dataclasses.replace(manager, relations=relations, rows=rows))
    return dataclasses.replace(spec, managers=tuple(kept))


@pytest.fixture
async def parts_only() -> AsyncIterator[Project]:
    project = gmchat_nb.demo_project(exposed=EXPOSED, allowed_mutations=WRITES)
    yield project
    await project.aclose()


@pytest.fixture
async def never_had_them(parts_only: Project) -> AsyncIterator[Project]:
    """The same project built from a spec that has no hidden managers at all."""
    backend = build_demo(spec_without(hidden_managers(parts_only)))
    project = Project(
        LocalExecutor(backend.schema), allowed_mutations=WRITES, on_close=backend.close
    )
    yield project
    await project.aclose()


async def test_schema_offers_no_mutation_argument_of_a_hidden_manager(
    parts_only: Project, never_had_them: Project
) -> None:
    schema = await parts_only.call_tool("get_manager_schema", {"manager": "Part"})
    mutations = schema["mutations"]
    assert set(mutations["createPart"]["arguments"]) == {
        "historyComment",
        "name",
        "quantity",
        "unitPrice",
    }
    assert "material" not in mutations["updatePart"]["arguments"]
    assert not spellings(hidden_managers(parts_only)).search(
        json.dumps(without_descriptions(schema))
    )
    assert all(
        arg.name not in ("material", "supplier")
        for info in parts_only.index.mutations.values()
        for arg in info.arguments
    )
    # Exactly what a project without those managers says, snapshot hash included.
    assert schema == await never_had_them.call_tool("get_manager_schema", {"manager": "Part"})


@pytest.mark.parametrize("key", ["material", "material_id", "materialId", "supplier", "Supplier"])
async def test_mutate_refuses_hidden_arguments_as_unknown(
    parts_only: Project, never_had_them: Project, key: str
) -> None:
    before = await parts_only.call_tool("query", {"manager": "Part", "fields": ["id"]})
    answers = [
        await parts_only.call_tool(
            "mutate", {"mutation": "createPart", "input": {"name": "x", key: row_id}}
        )
        for row_id in ("1", "99")  # an existing and a missing Material: no way to tell apart
    ]
    assert answers[0] == answers[1]
    result = answers[0]
    assert result["code"] == "invalid_mutation_input"
    assert result["message"].startswith(f"createPart has no argument '{key}'.")
    listed = result["message"].removeprefix(f"createPart has no argument '{key}'.")
    assert not spellings(hidden_managers(parts_only)).search(listed)
    assert result == await never_had_them.call_tool(
        "mutate", {"mutation": "createPart", "input": {"name": "x", key: "1"}}
    )
    after = await parts_only.call_tool("query", {"manager": "Part", "fields": ["id"]})
    assert after["total_count"] == before["total_count"]


async def test_tool_definitions_are_those_of_a_project_without_them(
    parts_only: Project, never_had_them: Project
) -> None:
    hidden = hidden_managers(parts_only)
    for strategy in ("discovery", "direct"):
        tools = parts_only.tool_definitions(strategy)
        assert tools == never_had_them.tool_definitions(strategy)
        text = json.dumps(tools)
        # The static descriptions use "material" as a generic example; no manager name appears.
        assert not any(name in text for name in hidden), strategy
        assert not any(spellings(hidden).search(tool["name"]) for tool in tools)


async def test_system_prompt_is_that_of_a_project_without_them(
    parts_only: Project, never_had_them: Project
) -> None:
    prompt = build_system_prompt(parts_only.index, mutations=tuple(WRITES))
    assert prompt == build_system_prompt(never_had_them.index, mutations=tuple(WRITES))
    assert not any(name in prompt for name in hidden_managers(parts_only))


def _shop(*, required: bool) -> DemoSpec:
    customer = ManagerSpec(
        "Customer",
        "People who buy.",
        (Field("name", "str", required=True),),
        rows=({"id": 1, "name": "Ada"},),
        exposed=False,
    )
    order = ManagerSpec(
        "Order",
        "What they bought.",
        (Field("total", "float"),),
        relations=(ToOne("customer", "Customer", required=required),),
        rows=({"id": 1, "total": 9.5, "customer": 1},),
        mutations=True,
    )
    return DemoSpec("shop", (customer, order))


async def test_a_mutation_that_needs_a_hidden_manager_is_not_offered() -> None:
    backend = build_demo(_shop(required=True))
    try:
        project = Project(LocalExecutor(backend.schema), exposed=["Order"])
        assert "createOrder" not in project.index.mutations
        assert set(project.index.mutations) == {"updateOrder", "deleteOrder"}
        reason = project.index.withheld_mutations["createOrder"]
        assert "'customer'" in reason and "Customer" in reason
        result = await project.call_tool(
            "mutate", {"mutation": "createOrder", "input": {"total": 1}}
        )
        assert result["code"] == "unknown_mutation"
        assert "customer" not in json.dumps(result).lower()
        # The operator who allow-lists it learns why at once.
        with pytest.raises(WithheldMutationError, match=r"'customer'.*Customer.*not exposed"):
            Project(
                LocalExecutor(backend.schema), exposed=["Order"], allowed_mutations=["createOrder"]
            )
    finally:
        backend.close()


def _stand_in_server() -> GraphQLSchema:
    """A GeneralManager-shaped server whose error texts name its relations freely.

    The model requires a material (GraphQL does not), and reading parts fails with a message that
    names the related type, as Django permission and validation errors do.
    """
    material = GraphQLObjectType("MaterialType", {"id": GraphQLField(GraphQLID)})
    part = GraphQLObjectType(
        "PartType",
        {
            "id": GraphQLField(GraphQLID),
            "name": GraphQLField(GraphQLString),
            "material": GraphQLField(material),
        },
    )
    page_info = GraphQLObjectType("PageInfo", {"totalCount": GraphQLField(GraphQLInt)})

    def page(item: GraphQLObjectType) -> GraphQLObjectType:
        return GraphQLObjectType(
            f"{item.name}Page",
            {
                "items": GraphQLField(GraphQLNonNull(GraphQLList(item))),
                "pageInfo": GraphQLField(GraphQLNonNull(page_info)),
            },
        )

    def refuse_read(*_: Any, **__: Any) -> None:
        raise GraphQLError("You may not read parts whose MaterialType is restricted.")

    def refuse_write(*_: Any, **__: Any) -> None:
        raise GraphQLError(
            "Validation failed.",
            extensions={
                "code": "BAD_USER_INPUT",
                "fieldErrors": {
                    "material": ["This field cannot be blank."],
                    "name": ["Ensure this value has at most 5 characters."],
                    "quantity": ["No material with id 7 exists."],
                },
                "nonFieldErrors": ["Every part needs one of our Materials."],
            },
        )

    paging = {"page": GraphQLArgument(GraphQLInt), "pageSize": GraphQLArgument(GraphQLInt)}
    query = GraphQLObjectType(
        "Query",
        {
            "partList": GraphQLField(page(part), args=paging, resolve=refuse_read),
            "materialList": GraphQLField(page(material), args=paging),
        },
    )
    payload = GraphQLObjectType(
        "CreatePart", {"success": GraphQLField(GraphQLBoolean), "Part": GraphQLField(part)}
    )
    mutation = GraphQLObjectType(
        "Mutation",
        {
            "createPart": GraphQLField(
                payload,
                args={
                    "name": GraphQLArgument(GraphQLNonNull(GraphQLString)),
                    "material": GraphQLArgument(GraphQLID),
                },
                resolve=refuse_write,
            )
        },
    )
    return GraphQLSchema(query=query, mutation=mutation)


async def test_server_errors_that_name_a_hidden_manager_are_replaced() -> None:
    project = Project(
        LocalExecutor(_stand_in_server()), exposed=["Part"], allowed_mutations=["createPart"]
    )
    hidden = spellings({"Material"})
    failed = await project.call_tool("mutate", {"mutation": "createPart", "input": {"name": "x"}})
    assert failed["code"] == "mutation_failed"
    assert failed["field_errors"] == {"name": ["Ensure this value has at most 5 characters."]}
    assert failed["non_field_errors"] == [NEUTRAL]
    assert NEUTRAL in failed["message"] and "Validation failed." in failed["message"]
    assert not hidden.search(json.dumps(failed))
    read = await project.call_tool("query", {"manager": "Part", "fields": ["name"]})
    assert read["code"] == "graphql_error" and NEUTRAL in read["message"]
    assert not hidden.search(json.dumps(read))
    with pytest.raises(ToolError) as raised:
        await project.rows("{ partList { items { name } } }")
    assert NEUTRAL in raised.value.message and not hidden.search(raised.value.message)


async def test_demo_server_text_about_a_hidden_manager_is_replaced(parts_only: Project) -> None:
    """The demo echoes an unknown unit; here the unit is spelled like a hidden manager."""
    failed = await parts_only.call_tool(
        "mutate", {"mutation": "createPart", "input": {"name": "x", "unitPrice": "5 Suppliers"}}
    )
    assert failed["code"] == "mutation_failed" and NEUTRAL in failed["message"]
    assert not spellings(hidden_managers(parts_only)).search(json.dumps(failed))
    read = await parts_only.call_tool(
        "query",
        {"manager": "Part", "fields": ["name"], "filters": {"unit_price__gt": "5 AUDIT_SECRET"}},
    )
    assert read["code"] == "graphql_error" and NEUTRAL in read["message"]

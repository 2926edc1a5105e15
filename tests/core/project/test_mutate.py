"""The `mutate` tool: allow-list, validation before anything runs, full payloads, server errors."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb.core.project import Project, ToolError


async def part_names(project: Project) -> list[str]:
    result = await project.call_tool("query", {"manager": "Part", "fields": ["name"], "limit": 100})
    return [row["name"] for row in result["data"]]


async def test_mutations_are_denied_unless_allow_listed(inventory: Project) -> None:
    before = await part_names(inventory)
    result = await inventory.call_tool(
        "mutate", {"mutation": "createPart", "input": {"name": "Spring"}}
    )
    assert result["status"] == "error" and result["code"] == "mutation_not_allowed"
    assert await part_names(inventory) == before


async def test_create_returns_the_new_object_with_its_id(writable: Project) -> None:
    result = await writable.call_tool(
        "mutate",
        {
            "mutation": "createPart",
            "input": {"name": "Spring", "quantity": 12, "unit_price": "1.5 EUR", "material_id": 1},
        },
    )
    assert result["status"] == "executed" and result["mutation"] == "createPart"
    created = result["data"]["Part"]
    assert result["data"]["success"] is True
    assert created["name"] == "Spring" and created["quantity"] == 12
    assert created["unitPrice"] == {"value": 1.5, "unit": "EUR"}
    assert created["materialId"] == "1"
    found = await writable.call_tool(
        "query",
        {
            "manager": "Part",
            "filters": {"id": created["id"]},
            "fields": ["name", {"material": ["name"]}],
        },
    )
    assert found["data"] == [{"name": "Spring", "material": {"name": "Steel"}}]


async def test_update_and_delete(writable: Project) -> None:
    updated = await writable.call_tool(
        "mutate", {"mutation": "updatePart", "input": {"id": 1, "quantity": 7}}
    )
    assert updated["data"]["Part"]["quantity"] == 7
    deleted = await writable.call_tool("mutate", {"mutation": "deletePart", "input": {"id": "1"}})
    assert deleted["status"] == "executed" and deleted["data"]["success"] is True
    assert "Bolt" not in await part_names(writable)


async def test_to_many_relations_are_given_as_id_lists(writable: Project) -> None:
    result = await writable.call_tool(
        "mutate",
        {
            "mutation": "createProject",
            "input": {"name": "Hermes", "parts": [1, 2], "start_date": "2026-12-01"},
        },
    )
    project_id = result["data"]["Project"]["id"]
    found = await writable.call_tool(
        "query",
        {
            "manager": "Project",
            "filters": {"id": project_id},
            "fields": ["name", "status", {"parts": ["name"]}],
        },
    )
    assert found["data"] == [
        {
            "name": "Hermes",
            "status": "planned",
            "partsList": [{"name": "Bolt"}, {"name": "Bearing"}],
        }
    ]


@pytest.mark.parametrize(
    ("mutation", "input_", "code", "fragment"),
    [
        ("createPart", {"nme": "Spring"}, "invalid_mutation_input", "no argument 'nme'"),
        ("createPart", {"quantity": 3}, "invalid_mutation_input", "needs 'name' (String!)"),
        (
            "createPart",
            {"name": "Spring", "quantity": "many"},
            "invalid_mutation_input",
            "expects Int",
        ),
        (
            "createPart",
            {"name": "X", "material": 1, "material_id": 2},
            "invalid_mutation_input",
            "both give",
        ),
        ("createPart", "name=Spring", "invalid_arguments", "must be an object"),
        ("createPrat", {"name": "Spring"}, "unknown_mutation", "Did you mean 'createPart'"),
        ("createMaterial", {"name": "Tin"}, "unknown_mutation", "Unknown mutation"),
        ("createAuditSecret", {"name": "x"}, "unknown_mutation", "Unknown mutation"),
    ],
)
async def test_bad_input_is_refused_before_anything_runs(
    writable: Project, mutation: str, input_: Any, code: str, fragment: str
) -> None:
    before = await part_names(writable)
    result = await writable.call_tool("mutate", {"mutation": mutation, "input": input_})
    assert result["status"] == "error" and result["code"] == code
    assert fragment in result["message"]
    assert await part_names(writable) == before


async def test_server_validation_errors_keep_their_field_errors(writable: Project) -> None:
    result = await writable.call_tool(
        "mutate", {"mutation": "createPart", "input": {"name": "Spring", "material": 999}}
    )
    assert result["status"] == "error" and result["code"] == "mutation_failed"
    assert "Validation failed." in result["message"]
    assert "material" in result["field_errors"]
    missing = await writable.call_tool("mutate", {"mutation": "deletePart", "input": {"id": 999}})
    assert missing["code"] == "mutation_failed" and "does not exist" in missing["message"]


async def test_prepare_validates_without_running(writable: Project) -> None:
    before = await part_names(writable)
    prepared = writable.prepare_mutation(
        "createPart", {"name": "Spring", "history_comment": "test"}
    )
    assert prepared.input == {"name": "Spring", "historyComment": "test"}
    assert prepared.text.startswith(
        "mutation GmchatMutation($name: String!, $historyComment: String)"
    )
    assert await part_names(writable) == before
    with pytest.raises(ToolError) as error:
        writable.prepare_mutation("createPart", {})
    assert error.value.code == "invalid_mutation_input"
    await writable.execute_mutation(prepared)
    assert "Spring" in await part_names(writable)

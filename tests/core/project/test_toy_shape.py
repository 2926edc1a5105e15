"""A graphene schema in the older flat shape (GeneralManager's eval toy fixture) works too."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

import gmchat_nb
from gmchat_nb.core.project import Project

from .toy_schema import toy_schema


@pytest.fixture
async def toy() -> AsyncIterator[Project]:
    project = await gmchat_nb.connect(toy_schema)  # a graphene Schema, not a GraphQLSchema
    yield project
    await project.aclose()


def test_the_flat_shape_is_indexed(toy: Project) -> None:
    assert toy.managers == ("Material", "Part", "Project")
    assert toy.index.find("ProjectManager") is toy.index.managers["Project"]
    project = toy.index.managers["Project"]
    assert project.roots[0].name == "projectmanagerList"
    [parts] = project.relations
    assert (parts.name, parts.target, parts.many, parts.paginated, parts.path) == (
        "parts",
        "Part",
        True,
        False,
        ("parts",),
    )
    flat = {f.field: dict(f.lookups) for f in project.filters}
    assert flat["parts.material.name"] == {
        "exact": "parts_Material_Name",
        "icontains": "parts_Material_Name_Icontains",
    }


async def run(project: Project, **args: Any) -> Any:
    return await project.call_tool("query", args)


@pytest.mark.parametrize(
    "filters",
    [
        {"parts__material__name__icontains": "co"},
        {"parts_Material_Name_Icontains": "co"},
        {"parts__material__name": "Cobalt"},
    ],
)
async def test_django_paths_map_onto_flat_filter_names(
    toy: Project, filters: dict[str, Any]
) -> None:
    result = await run(toy, manager="ProjectManager", filters=filters, fields=["name"])
    assert result["data"] == [{"name": "Apollo"}]
    assert result["complete"] is True


async def test_plain_list_relations_and_paths(toy: Project) -> None:
    result = await run(
        toy, manager="Project", fields=["name", {"parts": ["name", {"material": ["name"]}]}]
    )
    assert result["data"] == [
        {"name": "Apollo", "parts": [{"name": "Gear", "material": {"name": "Cobalt"}}]},
        {"name": "Mercury", "parts": [{"name": "Bearing", "material": {"name": "Aluminum"}}]},
    ]
    path = await toy.call_tool(
        "find_path", {"from_manager": "ProjectManager", "to_manager": "MaterialManager"}
    )
    assert path["path"] == ["parts", "material"]
    back = await toy.call_tool("find_path", {"from_manager": "Material", "to_manager": "Project"})
    assert back["path"] is None  # the toy has no reverse relations


async def test_paging_and_unsupported_features_on_the_flat_shape(toy: Project) -> None:
    second = await run(toy, manager="Material", fields=["name"], limit=1, offset=1)
    assert second["data"] == [{"name": "Aluminum"}]
    assert (second["total_count"], second["has_more"], second["complete"]) == (3, True, False)
    ordered = await run(toy, manager="Material", fields=["name"], order_by=["name"])
    assert ordered["code"] == "invalid_arguments" and "cannot be ordered" in ordered["message"]
    missing = await run(toy, manager="Material", fields=["name"], filters={"density__lt": 5})
    assert missing["code"] == "unknown_filter"

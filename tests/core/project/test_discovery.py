"""Discovery: the schema index, search_managers, get_manager_schema and find_path."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import gmchat_nb
from gmchat_nb.core.project import Project, SchemaIndex, UnknownExposedManagerError


def test_the_index_knows_each_manager(inventory: Project) -> None:
    assert inventory.managers == ("Material", "Supplier", "Part", "Project", "PurchaseOrder")
    part = inventory.index.managers["Part"]
    assert part.type_name == "PartType"
    assert [root.name for root in part.roots] == ["partList"]
    assert {"id", "name", "quantity", "unitPrice", "materialId", "supplierId"} == {
        f.name for f in part.fields
    }
    assert part.field("unitPrice") is not None and part.field("unitPrice").subfields == (
        "value",
        "unit",
    )  # type: ignore[union-attr]
    relations = {r.name: (r.target, r.many, r.path) for r in part.relations}
    assert relations == {
        "material": ("Material", False, ("material",)),
        "supplier": ("Supplier", False, ("supplier",)),
        "projectList": ("Project", True, ("projectList", "items")),
        "purchaseOrderList": ("PurchaseOrder", True, ("purchaseOrderList", "items")),
    }
    filters = {f.field: f for f in part.filters}
    assert filters["name"].lookups["icontains"] == "name_Icontains"
    assert filters["name"].lookups["exact"] == "name"
    assert set(filters["quantity"].lookups) == {"exact", "gt", "gte", "lt", "lte"}
    assert filters["material"].relation == "Material" and not filters["material"].many
    assert filters["projectList"].modes == ("any", "none")
    assert "material__name" in part.order_fields
    assert [m.name for m in part.mutations] == ["createPart", "updatePart", "deletePart"]
    assert inventory.index.managers["Material"].mutations == ()


@pytest.mark.parametrize(
    "spelling",
    ["Part", "part", "PART", "PartManager", "PartType", "partList", "parts", "part_manager"],
)
def test_every_spelling_of_a_manager_resolves(inventory: Project, spelling: str) -> None:
    found = inventory.index.find(spelling)
    assert found is not None and found.name == "Part"


def test_multi_word_manager_names_resolve(inventory: Project) -> None:
    for spelling in ("PurchaseOrder", "purchase_orders", "purchaseOrderList", "Purchase Orders"):
        found = inventory.index.find(spelling)
        assert found is not None and found.name == "PurchaseOrder", spelling


def test_exposed_must_name_real_managers(inventory: Project) -> None:
    with pytest.raises(UnknownExposedManagerError, match=r"'Partz'.*Did you mean 'Part'"):
        SchemaIndex(inventory.index.schema, exposed=["Partz"])


# -- search_managers ---------------------------------------------------------------------------


async def search(project: Project, query: str) -> list[str]:
    result = await project.call_tool("search_managers", {"query": query})
    return [hit["manager"] for hit in result]


@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("parts", "Part"),  # GeneralManager ranks Material first here
        ("Part", "Part"),
        ("PARTS", "Part"),
        ("materials", "Material"),
        ("purchase orders", "PurchaseOrder"),
        ("orders", "PurchaseOrder"),
        ("projects", "Project"),
        ("which suppliers are in Germany", "Supplier"),
        ("density", "Material"),
        ("matrial", "Material"),  # a typo still finds it
        ("components we stock", "Part"),  # description words
    ],
)
async def test_search_puts_the_named_manager_first(
    inventory: Project, query: str, first: str
) -> None:
    assert (await search(inventory, query))[0] == first


async def test_relation_and_filter_name_hits_rank_last(inventory: Project) -> None:
    hits = await inventory.call_tool("search_managers", {"query": "parts"})
    assert hits[0]["manager"] == "Part" and hits[0]["matched"][0] == "name"
    # Project only mentions parts through its partsList relation: it ranks below the name hit.
    assert [h["manager"] for h in hits].index("Project") > 0


async def test_search_results_are_compact_summaries(inventory: Project) -> None:
    hits = await inventory.call_tool("search_managers", {"query": "material"})
    top = hits[0]
    assert set(top) == {"manager", "description", "fields", "relations", "matched"}
    assert top["relations"] == {"partList": "Part"}
    assert "density" in top["fields"]


async def test_search_with_no_match_is_empty_and_blank_is_an_error(inventory: Project) -> None:
    assert await inventory.call_tool("search_managers", {"query": "xyzzy"}) == []
    blank = await inventory.call_tool("search_managers", {"query": "  "})
    assert blank["code"] == "invalid_arguments"


async def test_search_at_scale_finds_the_exact_manager() -> None:
    project = gmchat_nb.demo_project("large", manager_count=300)
    try:
        name = project.managers[217]
        hits = await project.call_tool("search_managers", {"query": name})
        assert hits[0]["manager"] == name
        limited = await project.call_tool("search_managers", {"query": "active", "limit": 3})
        assert len(limited) == 3
    finally:
        await project.aclose()


# -- get_manager_schema ------------------------------------------------------------------------


async def test_the_schema_view_has_what_a_query_needs(inventory: Project) -> None:
    view = await inventory.call_tool("get_manager_schema", {"manager": "parts"})
    assert view["manager"] == "Part" and view["type"] == "PartType"
    unit_price = view["fields"]["unitPrice"]
    assert unit_price["type"] == "MeasurementType"
    assert unit_price["parts"] == ["value", "unit"]
    assert unit_price["arguments"] == {"targetUnit": "String"}
    assert view["relations"]["projectList"]["path"] == ["projectList", "items"]
    assert view["filters"]["name"]["lookups"] == [
        "exact",
        "icontains",
        "contains",
        "in",
        "startswith",
        "endswith",
    ]
    assert view["filters"]["projectList"] == {
        "relation": "Project",
        "kind": "many",
        "modes": ["any", "none"],
    }
    assert "-" not in "".join(view["order_by"]) and "material__name" in view["order_by"]
    assert view["root_arguments"]["partList"]["orderBy"] == "[PartOrderBy!]"
    assert view["mutations"]["createPart"]["arguments"]["quantity"] == "Int = 0"
    assert view["mutations"]["createPart"]["arguments"]["name"] == "String!"
    assert len(view["snapshot"]) == 64


async def test_the_schema_example_runs_as_written(project: Project) -> None:
    for manager in project.managers:
        view = await project.call_tool("get_manager_schema", {"manager": manager})
        result = await project.call_tool("query", view["example"])
        assert "data" in result, (manager, result)


async def test_unknown_manager_schema_names_close_matches(inventory: Project) -> None:
    result = await inventory.call_tool("get_manager_schema", {"manager": "Suplier"})
    assert result["code"] == "unknown_manager"
    assert result["suggestions"] == ["Supplier"]


def test_snapshots_are_stable_across_processes(inventory: Project) -> None:
    here = inventory.get_manager_schema("Part")["snapshot"]
    script = (
        "import gmchat_nb; print(gmchat_nb.demo_project().get_manager_schema('Part')['snapshot'])"
    )
    other = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert other == here


async def test_snapshots_change_when_what_the_model_sees_changes(inventory: Project) -> None:
    narrowed = await gmchat_nb.connect(inventory.index.schema, exposed=["Part", "Material"])
    assert (
        narrowed.get_manager_schema("Part")["snapshot"]
        != inventory.get_manager_schema("Part")["snapshot"]
    )
    assert (
        narrowed.get_manager_schema("Material")["snapshot"]
        == inventory.get_manager_schema("Material")["snapshot"]
    )


# -- find_path ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target", "path"),
    [
        ("Project", "Material", ["partsList", "items", "material"]),
        ("Material", "Project", ["partList", "items", "projectList", "items"]),
        ("PurchaseOrder", "Material", ["part", "material"]),
        ("Supplier", "Project", ["partList", "items", "projectList", "items"]),
        ("Part", "parts", []),
    ],
)
async def test_find_path(inventory: Project, source: str, target: str, path: list[str]) -> None:
    result = await inventory.call_tool("find_path", {"from_manager": source, "to_manager": target})
    assert result["path"] == path


async def test_a_found_path_comes_with_a_query_that_walks_it(inventory: Project) -> None:
    result = await inventory.call_tool(
        "find_path", {"from_manager": "Project", "to_manager": "Material"}
    )
    assert [hop["relation"] for hop in result["hops"]] == ["partsList", "material"]
    rows = await inventory.call_tool(
        "query",
        {"manager": "Project", "filters": {"name": "Apollo"}, "fields": result["fields_example"]},
    )
    assert rows["data"] == [{"partsList": [{"material": {"name": "Cobalt"}}]}]


async def test_no_path_is_a_clear_result() -> None:
    project = gmchat_nb.demo_project(exposed=["Material", "Supplier"])
    try:
        result = await project.call_tool(
            "find_path", {"from_manager": "Material", "to_manager": "Supplier"}
        )
        assert result["path"] is None and "No relation path" in result["message"]
        unknown = await project.call_tool(
            "find_path", {"from_manager": "Material", "to_manager": "Part"}
        )
        assert unknown["code"] == "unknown_manager"  # Part is not exposed here
    finally:
        await project.aclose()


def test_path_json_is_serialisable(inventory: Project) -> None:
    json.dumps(inventory.find_path("Supplier", "Project"))

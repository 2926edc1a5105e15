"""The `query` tool against the inventory demo, in process and over HTTP (every test runs twice)."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb.core.project import Project


async def run(project: Project, **args: Any) -> dict[str, Any]:
    result = await project.call_tool("query", args)
    assert isinstance(result, dict)
    return result


def names(result: dict[str, Any]) -> list[str]:
    return [row["name"] for row in result["data"]]


async def test_a_plain_list_reports_total_more_and_completeness(project: Project) -> None:
    everything = await run(project, manager="Material", fields=["name"])
    assert everything["total_count"] == 8
    assert everything["has_more"] is False
    assert everything["complete"] is True
    assert set(everything) == {"data", "total_count", "has_more", "complete"}
    first = await run(project, manager="Material", fields=["name"], limit=3)
    assert names(first) == names(everything)[:3]
    assert (first["total_count"], first["has_more"], first["complete"]) == (8, True, False)


@pytest.mark.parametrize(
    "filters",
    [
        {"name_Icontains": "steel"},
        {"name__icontains": "steel"},
        {"name_icontains": "STEEL"},
        {"name": "Steel"},
        {"name__exact": "Steel"},
    ],
)
async def test_native_and_django_filter_spellings_mean_the_same(
    project: Project, filters: dict[str, Any]
) -> None:
    result = await run(project, manager="Material", filters=filters, fields=["name", "density"])
    assert result["data"] == [{"name": "Steel", "density": 7.8}]


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        ({"quantity__gt": 1000}, ["Bolt", "Nylon Spacer", "Nylon Washer", "Nylon Cable Clip"]),
        ({"quantity__lte": 8}, ["Radiation Shield Plate", "Copper Coil", "Lead Solder Bar"]),
        (
            {"name__startswith": "Brass", "quantity__gte": 180},
            ["Brass Fitting", "Brass Bushing", "Brass Hinge"],
        ),
        ({"name__in": ["Bolt", "Gear", "Nope"]}, ["Bolt", "Gear"]),
        ({"unit_price__gt": "800 EUR"}, ["Turbine Blade", "Radiation Shield Plate"]),
        ({"material__name": "Cobalt"}, ["Gear"]),
        ({"material": {"name_Icontains": "alu"}}, ["Bearing"]),
        (
            {"material__hazardous": True},
            ["Lead Ballast Weight", "Radiation Shield Plate", "Lead Solder Bar"],
        ),
        ({"supplier__country": "Japan", "material__name": "Nylon"}, ["Nylon Sprocket"]),
        ({"material_id": 3}, ["Gear"]),
    ],
)
async def test_filters_of_every_kind(
    project: Project, filters: dict[str, Any], expected: list[str]
) -> None:
    result = await run(project, manager="Part", filters=filters, fields=["name"])
    assert sorted(names(result)) == sorted(expected)
    assert result["total_count"] == len(expected)
    assert result["complete"] is True


async def test_to_many_filters_any_and_none(project: Project) -> None:
    aluminum = await run(
        project, manager="Project", filters={"parts__name": "Bearing"}, fields=["name"]
    )
    assert names(aluminum) == ["Mercury"]
    native = await run(
        project,
        manager="Project",
        filters={"partsList": {"any": {"name": "Gear"}}},
        fields=["name"],
    )
    assert names(native) == ["Apollo"]
    without_nylon = await run(
        project,
        manager="Project",
        filters={"partsList": {"none": {"name_Icontains": "nylon"}}},
        fields=["name"],
    )
    assert names(without_nylon) == ["Apollo", "Mercury", "Artemis", "Pioneer", "Orion"]
    reverse = await run(
        project, manager="Material", filters={"parts__name": "Bolt"}, fields=["name"]
    )
    assert names(reverse) == ["Steel"]


async def test_a_path_deeper_than_the_server_nests_is_answered_with_an_id_lookup(
    project: Project,
) -> None:
    """GeneralManager's filter inputs stop after one relation; the compiler goes further."""
    django = await run(
        project,
        manager="Project",
        filters={"parts__material__name__icontains": "alumin"},
        fields=["name"],
    )
    assert names(django) == ["Mercury"]
    assert any("looked up first" in note for note in django["notes"])
    native = await run(
        project,
        manager="Project",
        filters={"partsList": {"any": {"material": {"name": "Cobalt"}}}},
        fields=["name"],
    )
    assert names(native) == ["Apollo"]
    nothing = await run(
        project,
        manager="Project",
        filters={"parts__material__name": "Unobtainium"},
        fields=["name"],
    )
    assert nothing["data"] == [] and nothing["total_count"] == 0 and nothing["complete"] is True


async def test_exclude_leaves_rows_out_and_rejects_none(project: Project) -> None:
    result = await run(
        project,
        manager="Material",
        exclude={"density__lt": 8},
        fields=["name"],
        order_by=["name"],
    )
    assert names(result) == ["Brass", "Cobalt", "Copper", "Lead"]
    error = await run(
        project,
        manager="Project",
        exclude={"partsList": {"none": {"name": "Gear"}}},
        fields=["name"],
    )
    assert error["status"] == "error" and error["code"] == "invalid_filter"
    assert "exclude" in error["message"]


@pytest.mark.parametrize(
    "order_by",
    [["-density"], "-density", ["density desc"], [{"field": "density", "direction": "DESC"}]],
)
async def test_order_by_spellings(project: Project, order_by: Any) -> None:
    result = await run(project, manager="Material", fields=["name", "density"], order_by=order_by)
    densities = [row["density"] for row in result["data"]]
    assert densities == sorted(densities, reverse=True)


async def test_order_by_a_related_field(project: Project) -> None:
    result = await run(
        project,
        manager="Part",
        filters={"quantity__gte": 100},
        fields=["name", {"material": ["name"]}],
        order_by=["material__name", "-quantity"],
        limit=50,
    )
    materials = [row["material"]["name"] if row["material"] else "" for row in result["data"]]
    assert materials == sorted(materials)


async def test_offset_is_exact_across_page_boundaries(project: Project) -> None:
    everything = await run(project, manager="Part", fields=["name"], order_by=["name"], limit=100)
    assert everything["complete"] is True
    for limit, offset in [(5, 3), (4, 10), (7, 0), (3, 26), (10, 27)]:
        window = await run(
            project, manager="Part", fields=["name"], order_by=["name"], limit=limit, offset=offset
        )
        assert names(window) == names(everything)[offset : offset + limit], (limit, offset)
        assert window["total_count"] == 28
        assert window["has_more"] is (offset + limit < 28)
        assert window["complete"] is (offset == 0 and limit >= 28)


async def test_limit_is_capped_with_a_note(project: Project) -> None:
    result = await run(project, manager="Part", fields=["name"], limit=5000)
    assert len(result["data"]) == 28
    assert any("capped" in note for note in result["notes"])


async def test_relations_to_one_to_many_and_value_objects(project: Project) -> None:
    result = await run(
        project,
        manager="Project",
        filters={"name": "Apollo"},
        fields=[
            "name",
            {"partsList": ["name", "unitPrice", {"material": ["name"]}, {"supplier": ["country"]}]},
        ],
    )
    assert result["data"] == [
        {
            "name": "Apollo",
            "partsList": [
                {
                    "name": "Gear",
                    "unitPrice": {"value": 48.0, "unit": "EUR"},
                    "material": {"name": "Cobalt"},
                    "supplier": {"country": "Switzerland"},
                }
            ],
        }
    ]
    assert result["complete"] is True


async def test_nested_lists_with_or_without_their_items_wrapper(project: Project) -> None:
    plain = await run(
        project,
        manager="Material",
        filters={"name": "Lead"},
        fields=["name", {"partList": ["name"]}],
    )
    wrapped = await run(
        project,
        manager="Material",
        filters={"name": "Lead"},
        fields=["name", {"partList": [{"items": ["name"]}, {"pageInfo": ["totalCount"]}]}],
    )
    assert plain == wrapped
    assert sorted(p["name"] for p in plain["data"][0]["partList"]) == [
        "Lead Ballast Weight",
        "Lead Solder Bar",
        "Radiation Shield Plate",
    ]


async def test_structured_fields_with_arguments(project: Project) -> None:
    result = await run(
        project,
        manager="Material",
        filters={"name": "Nylon"},
        fields=[
            "name",
            {
                "field": "partList",
                "arguments": {"filter": {"quantity__gte": 1000}, "orderBy": ["-quantity"]},
                "fields": ["name", "quantity"],
            },
        ],
    )
    parts = result["data"][0]["partList"]
    assert [p["name"] for p in parts] == ["Nylon Washer", "Nylon Spacer", "Nylon Cable Clip"]
    converted = await run(
        project,
        manager="Part",
        filters={"name": "Gear"},
        fields=[
            {"field": "unitPrice", "arguments": {"targetUnit": "USD"}, "fields": ["value", "unit"]}
        ],
    )
    assert converted["data"][0]["unitPrice"]["unit"] == "USD"
    assert converted["data"][0]["unitPrice"]["value"] == pytest.approx(52.8)


async def test_field_name_slips_resolve(project: Project) -> None:
    result = await run(
        project,
        manager="parts",
        filters={"name": "Bolt"},
        fields=["Name", "unit_price", "material_id", "material", "*"],
    )
    row = result["data"][0]
    assert row["name"] == "Bolt" and row["materialId"] == "1"
    assert row["unitPrice"] == {"value": 0.25, "unit": "EUR"}
    assert row["material"]["name"] == "Steel"  # a relation named alone selects its plain fields
    assert {"id", "quantity", "supplierId"} <= set(row)
    reverse = await run(
        project, manager="Part", filters={"name": "Gear"}, fields=[{"projects": ["name"]}]
    )
    assert reverse["data"] == [{"projectList": [{"name": "Apollo"}]}]


async def test_an_empty_result_is_complete(project: Project) -> None:
    result = await run(project, manager="Part", filters={"name": "Flux Capacitor"}, fields=["name"])
    assert result == {"data": [], "total_count": 0, "has_more": False, "complete": True}


@pytest.mark.parametrize(
    ("args", "code", "fragment"),
    [
        ({"manager": "Part", "fields": ["nme"]}, "unknown_field", "Did you mean 'name'"),
        ({"manager": "Part", "fields": []}, "invalid_arguments", "non-empty list"),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"nme": "x"}},
            "unknown_filter",
            "Did you mean 'name'",
        ),
        (  # in the chat's own spelling, not the GraphQL input's (quantity_Gt)
            {"manager": "Part", "fields": ["name"], "filters": {"quantiti__gt": 1}},
            "unknown_filter",
            "Did you mean 'quantity__gt'",
        ),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"quantity": "many"}},
            "invalid_filter",
            "Int",
        ),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"name__gt": "a"}},
            "invalid_filter",
            "Available lookups",
        ),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"material": "Steel"}},
            "invalid_filter",
            "relation to Material",
        ),
        ({"manager": "Part", "fields": ["name"], "limit": 0}, "invalid_arguments", "limit"),
        ({"manager": "Part", "fields": ["name"], "offset": -1}, "invalid_arguments", "offset"),
        (
            {"manager": "Part", "fields": ["name"], "order_by": ["colour"]},
            "invalid_order",
            "cannot be ordered by 'colour'",
        ),
        ({"manager": "Prat", "fields": ["name"]}, "unknown_manager", "Did you mean 'Part'"),
        ({"manager": "AuditSecret", "fields": ["name"]}, "unknown_manager", "Unknown manager"),
        (
            {"manager": "Part", "fields": ["name"], "arguments": {"sortBy": "name"}},
            "invalid_arguments",
            "no argument 'sortBy'",
        ),
        (
            {
                "manager": "Part",
                "fields": ["name"],
                "filters": {"name": "x"},
                "arguments": {"filter": {}},
            },
            "invalid_arguments",
            "not both",
        ),
        (
            {"manager": "Part", "fields": ["name"], "offset": 2, "arguments": {"page": 2}},
            "invalid_arguments",
            "not both",
        ),
        (
            {"manager": "Part", "fields": [{"material": ["name"], "supplier": ["name"]}]},
            "invalid_arguments",
            "own object",
        ),
        (
            {"manager": "Part", "fields": ["name"], "colour": "red"},
            "invalid_arguments",
            "does not take 'colour'",
        ),
    ],
)
async def test_errors_say_what_is_wrong_and_what_would_be_valid(
    project: Project, args: dict[str, Any], code: str, fragment: str
) -> None:
    result = await run(project, **args)
    assert result["status"] == "error"
    assert result["code"] == code
    assert fragment in result["message"]


async def test_in_process_and_http_give_identical_results(
    inventory: Project, remote_inventory: Project
) -> None:
    calls: list[tuple[str, dict[str, Any]]] = [
        ("search_managers", {"query": "orders from suppliers"}),
        ("get_manager_schema", {"manager": "PurchaseOrder"}),
        ("find_path", {"from_manager": "Supplier", "to_manager": "Project"}),
        (
            "query",
            {
                "manager": "PurchaseOrder",
                "fields": ["number", "orderDate", "urgent", {"part": ["name"]}],
                "filters": {"urgent": True},
                "order_by": ["-orderDate"],
            },
        ),
        (
            "query",
            {
                "manager": "Project",
                "fields": ["name", {"parts": ["name"]}],
                "filters": {"parts__material__name": "Titanium"},
            },
        ),
        ("query", {"manager": "Part", "fields": ["name"], "limit": 6, "offset": 9}),
        ("query", {"manager": "Part", "fields": ["nme"]}),
        ("mutate", {"mutation": "deletePart", "input": {"id": 1}}),
        ("query_material", {"fields": ["name"], "limit": 2}),
    ]
    for name, args in calls:
        assert await inventory.call_tool(name, args) == await remote_inventory.call_tool(
            name, args
        ), name

"""The compiler on the schema a real GeneralManager 0.87.1 server generates (tests/fixtures/, by introspection).

The SDL has no resolvers, so nothing executes: every test builds the index, compiles a query or a
mutation, and the compiler validates the document against this schema with graphql-core.
"""

from __future__ import annotations

from typing import Any

import pytest
from graphql import GraphQLSchema, print_ast

from gmchat_nb.core.project import QueryCompiler, SchemaIndex, ToolError
from gmchat_nb.core.project.mutations import MutationCompiler

EXPOSED = ["Material", "Supplier", "Part", "Project", "PurchaseOrder"]


@pytest.fixture(scope="module")
def index(sample_schema: GraphQLSchema) -> SchemaIndex:
    return SchemaIndex(sample_schema, exposed=EXPOSED)


@pytest.fixture(scope="module")
def compiler(index: SchemaIndex) -> QueryCompiler:
    return QueryCompiler(index)


def test_the_index_of_a_real_schema(index: SchemaIndex) -> None:
    assert index.names == ("Material", "Supplier", "Part", "Project", "PurchaseOrder")
    assert set(index.all_managers) == {*EXPOSED, "Secret"}  # partGroups etc. are not managers
    part = index.managers["Part"]
    assert [root.name for root in part.roots] == ["partList"]
    assert {r.name: r.path for r in part.relations} == {
        "material": ("material",),
        "supplier": ("supplier",),
        "projectList": ("projectList", "items"),
        "purchaseOrderList": ("purchaseOrderList", "items"),
    }
    assert "partGroups" not in {r.name for r in index.managers["Material"].relations}
    assert index.managers["Project"].relation("partsList") is not None
    assert index.managers["PurchaseOrder"].field("orderDate") is not None
    assert [m.name for m in index.managers["Project"].mutations] == [
        "createProject",
        "updateProject",
        "deleteProject",
    ]
    assert "secret" not in " ".join(index.mutations).lower()


def compile_text(compiler: QueryCompiler, **args: Any) -> tuple[str, dict[str, Any]]:
    plan = compiler.compile(args)
    return print_ast(plan.document), plan.request_variables(
        plan.pages[0]
    ) if not plan.id_lookups else plan.variables


def test_a_plain_query(compiler: QueryCompiler) -> None:
    text, variables = compile_text(compiler, manager="Part", fields=["name", "quantity"])
    assert "query GmchatQuery($page: Int, $pageSize: Int)" in text
    assert "partList(page: $page, pageSize: $pageSize)" in text
    assert "items {\n      name\n      quantity\n    }\n    pageInfo {\n      totalCount" in text
    assert variables == {"page": 1, "pageSize": 100}


@pytest.mark.parametrize(
    ("filters", "native"),
    [
        ({"name__icontains": "bo"}, {"name_Icontains": "bo"}),
        ({"material__name__icontains": "steel"}, {"material": {"name_Icontains": "steel"}}),
        ({"material": {"density__gt": 5}}, {"material": {"density_Gt": 5}}),
        ({"supplier__country__in": ["Sweden"]}, {"supplier": {"country_In": ["Sweden"]}}),
        (
            {"projectList": {"any": {"status": "active"}}},
            {"projectList": {"any": {"status": "active"}}},
        ),
        (
            {"project_list__none__start_date__lt": "2025-01-01"},
            {"projectList": {"none": {"startDate_Lt": "2025-01-01"}}},
        ),
        ({"unit_price__gte": "10 EUR"}, {"unitPrice_Gte": "10 EUR"}),
        ({"purchase_orders__urgent": True}, {"purchaseOrderList": {"any": {"urgent": True}}}),
    ],
)
def test_filters_compile_to_gm_nested_inputs(
    compiler: QueryCompiler, filters: dict[str, Any], native: dict[str, Any]
) -> None:
    plan = compiler.compile({"manager": "Part", "filters": filters, "fields": ["name"]})
    assert plan.variables["filter"] == native
    assert "$filter: PartFilterTypeDepth1" in print_ast(plan.document)


def test_a_filter_past_the_default_depth_becomes_an_id_lookup(compiler: QueryCompiler) -> None:
    """The shipped GM prompt example `partsList.any.material.name` is invalid at depth 1."""
    plan = compiler.compile(
        {
            "manager": "Project",
            "filters": {"partsList": {"any": {"material": {"name": "Cobalt"}}}},
            "fields": ["name"],
        }
    )
    [lookup] = plan.id_lookups
    assert lookup.manager == "Material" and lookup.filter == {"name": "Cobalt"}
    assert plan.variables["filter"]["partsList"]["any"]["materialId_In"] is lookup
    sub = compiler.compile_ids(compiler.index.managers["Material"], lookup.filter, 1)
    assert "materialList(filter: $filter, page: $page, pageSize: $pageSize)" in print_ast(
        sub.document
    )


def test_exclude_and_order_by(compiler: QueryCompiler) -> None:
    plan = compiler.compile(
        {
            "manager": "PurchaseOrder",
            "fields": ["number", "orderDate", {"supplier": ["name"]}],
            "exclude": {"urgent": False},
            "order_by": ["-orderDate", "supplier__name"],
        }
    )
    text = print_ast(plan.document)
    assert (
        "$exclude: PurchaseOrderFilterTypeDepth1" in text
        and "$orderBy: [PurchaseOrderOrderBy!]" in text
    )
    assert plan.variables["orderBy"] == [
        {"field": "orderDate", "direction": "DESC"},
        {"field": "supplier__name", "direction": "ASC"},
    ]


def test_nested_pages_measurements_and_arguments(compiler: QueryCompiler) -> None:
    plan = compiler.compile(
        {
            "manager": "Project",
            "fields": [
                "name",
                {
                    "field": "partsList",
                    "arguments": {"filter": {"quantity__gt": 3}, "orderBy": ["name"]},
                    "fields": [
                        "name",
                        {
                            "field": "unitPrice",
                            "arguments": {"targetUnit": "USD"},
                            "fields": ["value"],
                        },
                        {"material": ["name"]},
                    ],
                },
            ],
        }
    )
    text = print_ast(plan.document)
    for argument in ("filter", "orderBy", "pageSize"):
        assert f"{argument}: $partsList_{argument}" in text
    assert "unitPrice(targetUnit: $partsList_unitPrice_targetUnit)" in text
    assert "$partsList_filter: PartFilterTypeDepth1" in text
    assert plan.variables["partsList_filter"] == {"quantity_Gt": 3}
    assert plan.variables["partsList_pageSize"] == 100


def test_offset_windows_fetch_the_covering_pages(compiler: QueryCompiler) -> None:
    plan = compiler.compile({"manager": "Part", "fields": ["name"], "limit": 10, "offset": 15})
    assert [page.variables for page in plan.pages] == [
        {"page": 2, "pageSize": 10},
        {"page": 3, "pageSize": 10},
    ]
    assert plan.window_start == 5


@pytest.mark.parametrize(
    ("args", "code"),
    [
        ({"manager": "Secret", "fields": ["name"]}, "unknown_manager"),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"name__regex": "x"}},
            "invalid_filter",
        ),
        ({"manager": "Part", "fields": ["partGroups"]}, "unknown_field"),
        ({"manager": "Part", "fields": ["name"], "order_by": ["projectList"]}, "invalid_order"),
        (
            {"manager": "Part", "fields": ["name"], "filters": {"quantity__in": [1]}},
            "invalid_filter",
        ),
    ],
)
def test_invalid_queries_are_refused_before_execution(
    compiler: QueryCompiler, args: dict[str, Any], code: str
) -> None:
    with pytest.raises(ToolError) as error:
        compiler.compile(args)
    assert error.value.code == code


@pytest.mark.parametrize(
    ("mutation", "input_", "expected"),
    [
        (
            "createPart",
            {"name": "Spring", "material": 1, "unit_price": "3 EUR"},
            {"name": "Spring", "material": 1, "unitPrice": "3 EUR"},
        ),
        (
            "updatePart",
            {"id": 4, "quantity": 2, "history_comment": "recount"},
            {"id": 4, "quantity": 2, "historyComment": "recount"},
        ),
        ("deletePart", {"id": "4"}, {"id": "4"}),
        (
            "createProject",
            {"name": "Hermes", "start_date": "2026-01-01", "parts": [1, 2]},
            {"name": "Hermes", "startDate": "2026-01-01", "partsList": [1, 2]},
        ),
        (
            "createPurchaseOrder",
            {"number": "PO-9", "order_date": "2026-01-02", "part_id": 1, "supplier": 2},
            {"number": "PO-9", "orderDate": "2026-01-02", "part": 1, "supplier": 2},
        ),
        ("updateMaterial", {"id": 1, "hazardous": True}, {"id": 1, "hazardous": True}),
    ],
)
def test_mutations_compile_against_gm_flat_arguments(
    index: SchemaIndex, mutation: str, input_: dict[str, Any], expected: dict[str, Any]
) -> None:
    prepared = MutationCompiler(index).prepare(mutation, input_, {mutation})
    assert prepared.input == expected
    text = prepared.text
    manager = prepared.manager
    assert f"{mutation}(" in text and "success" in text and f"{manager} {{" in text
    assert "id" in text  # the object comes back with its id


def test_gm_required_arguments_are_enforced(index: SchemaIndex) -> None:
    with pytest.raises(ToolError, match=r"needs 'material' \(ID!\)"):
        MutationCompiler(index).prepare("createPart", {"name": "Spring"}, {"createPart"})
    with pytest.raises(ToolError, match="expects String!"):
        MutationCompiler(index).prepare(
            "createProject", {"name": 5, "startDate": "2026-01-01"}, {"createProject"}
        )

"""The generated inventory schema follows the SDL GeneralManager 0.87.1 printed for the same project.

Known, intended differences: no ``*Groups`` roots/fields/types and no subscriptions; the hidden
``AuditSecret`` manager replaces the sample's ``Secret`` and adds ``PartType.auditSecretList``;
required-ness of some create arguments follows our spec, not the sample's models.
"""

from __future__ import annotations

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLObjectType,
    GraphQLSchema,
)

from gmchat_nb.core.project.demo import DemoBackend
from gmchat_nb.core.project.graphql_types import default_of

MANAGERS = ("Material", "Supplier", "Part", "Project", "PurchaseOrder")
ROOTS = {
    "Material": "material",
    "Supplier": "supplier",
    "Part": "part",
    "Project": "project",
    "PurchaseOrder": "purchaseOrder",
}
# Fields that only exist because our hidden manager AuditSecret points at Part.
HIDDEN_EXTRAS = {"auditSecretList"}


@pytest.fixture(scope="module")
def sample(sample_schema: GraphQLSchema) -> GraphQLSchema:
    """GeneralManager's own SDL for the inventory project (tests/conftest.py finds it)."""
    return sample_schema


def _input_fields(schema: GraphQLSchema, name: str) -> list[tuple[str, str]]:
    input_type = schema.get_type(name)
    assert isinstance(input_type, GraphQLInputObjectType), name
    return [(key, str(field.type)) for key, field in input_type.fields.items()]


def _object_fields(schema: GraphQLSchema, name: str) -> list[str]:
    object_type = schema.get_type(name)
    assert isinstance(object_type, GraphQLObjectType), name
    return [key for key in object_type.fields if not key.endswith("Groups")]


def _enum_values(schema: GraphQLSchema, name: str) -> list[str]:
    enum = schema.get_type(name)
    assert isinstance(enum, GraphQLEnumType), name
    return list(enum.values)


def _args(
    schema: GraphQLSchema, root: GraphQLObjectType | None, field: str
) -> list[tuple[str, str]]:
    assert root is not None
    return [(key, str(arg.type)) for key, arg in root.fields[field].args.items()]


@pytest.mark.parametrize("manager", MANAGERS)
def test_root_fields_match(inventory: DemoBackend, sample: GraphQLSchema, manager: str) -> None:
    root = ROOTS[manager]
    ours, theirs = inventory.schema.query_type, sample.query_type
    assert ours is not None and theirs is not None
    assert _args(inventory.schema, ours, root + "List") == _args(sample, theirs, root + "List")
    assert str(ours.fields[root + "List"].type) == f"{manager}TypePage"
    assert _args(inventory.schema, ours, root) == [("id", "ID!")]
    assert str(ours.fields[root].type) == f"{manager}Type"


@pytest.mark.parametrize("manager", MANAGERS)
@pytest.mark.parametrize("depth", [0, 1])
def test_filter_inputs_match(
    inventory: DemoBackend, sample: GraphQLSchema, manager: str, depth: int
) -> None:
    name = f"{manager}FilterTypeDepth{depth}"
    ours = [item for item in _input_fields(inventory.schema, name) if item[0] not in HIDDEN_EXTRAS]
    assert ours == _input_fields(sample, name)


def test_relation_filter_inputs_match(inventory: DemoBackend, sample: GraphQLSchema) -> None:
    for name in (
        "PartPartsListRelationFilterTypeDepth0",
        "PartPartListRelationFilterTypeDepth0",
        "ProjectProjectListRelationFilterTypeDepth0",
        "PurchaseOrderPurchaseOrderListRelationFilterTypeDepth0",
    ):
        assert _input_fields(inventory.schema, name) == _input_fields(sample, name)


def test_hidden_manager_reverse_relation_is_generated(inventory: DemoBackend) -> None:
    fields = _input_fields(inventory.schema, "PartFilterTypeDepth1")
    assert fields[-1] == ("auditSecretList", "AuditSecretAuditSecretListRelationFilterTypeDepth0")
    assert "auditSecretList" in _object_fields(inventory.schema, "PartType")
    assert inventory.hidden_managers == ("AuditSecret",)


@pytest.mark.parametrize("manager", MANAGERS)
def test_order_inputs_match(inventory: DemoBackend, sample: GraphQLSchema, manager: str) -> None:
    for prefix in (manager, manager + "Relation"):
        if inventory.schema.get_type(prefix + "OrderField") is None:
            # Only the skipped group types (``PartGroupType.materialList``) list these managers
            # through a relation, so the sample has relation order types that we do not need.
            assert prefix in ("MaterialRelation", "SupplierRelation")
            continue
        assert _enum_values(inventory.schema, prefix + "OrderField") == _enum_values(
            sample, prefix + "OrderField"
        )
        assert _input_fields(inventory.schema, prefix + "OrderBy") == _input_fields(
            sample, prefix + "OrderBy"
        )
    order_by = inventory.schema.get_type(manager + "OrderBy")
    assert isinstance(order_by, GraphQLInputObjectType)
    assert default_of(order_by.fields["direction"]) == (True, "ASC")


def test_order_direction_and_page_info_match(inventory: DemoBackend, sample: GraphQLSchema) -> None:
    assert _enum_values(inventory.schema, "OrderDirection") == ["ASC", "DESC"]
    for name in ("PageInfo", "MeasurementType"):
        ours = inventory.schema.get_type(name)
        theirs = sample.get_type(name)
        assert isinstance(ours, GraphQLObjectType) and isinstance(theirs, GraphQLObjectType)
        assert [(k, str(f.type)) for k, f in ours.fields.items()] == [
            (k, str(f.type)) for k, f in theirs.fields.items()
        ]


@pytest.mark.parametrize("manager", MANAGERS)
def test_object_and_page_types_match(
    inventory: DemoBackend, sample: GraphQLSchema, manager: str
) -> None:
    ours = [name for name in _object_fields(inventory.schema, f"{manager}Type")]
    ours = [name for name in ours if name not in HIDDEN_EXTRAS]
    assert ours == _object_fields(sample, f"{manager}Type")
    ours_type = inventory.schema.get_type(f"{manager}Type")
    theirs_type = sample.get_type(f"{manager}Type")
    assert isinstance(ours_type, GraphQLObjectType) and isinstance(theirs_type, GraphQLObjectType)
    for name in ours:
        ours_field, theirs_field = ours_type.fields[name], theirs_type.fields[name]
        assert str(ours_field.type) == str(theirs_field.type), name
        assert [(k, str(a.type)) for k, a in ours_field.args.items()] == [
            (k, str(a.type)) for k, a in theirs_field.args.items()
        ], name
    page = f"{manager}TypePage"
    ours_page = inventory.schema.get_type(page)
    theirs_page = sample.get_type(page)
    assert isinstance(ours_page, GraphQLObjectType) and isinstance(theirs_page, GraphQLObjectType)
    assert {k: str(f.type) for k, f in ours_page.fields.items()} == {
        "items": f"[{manager}Type]!",
        "pageInfo": "PageInfo!",
    }
    assert {k: str(f.type) for k, f in theirs_page.fields.items()} == {
        "items": f"[{manager}Type]!",
        "pageInfo": "PageInfo!",
    }


# Where our spec deliberately differs from the sample project's models.
REQUIRED_DIFFERENCES = {
    ("createPart", "material"): ("ID", "ID!"),
    ("createProject", "startDate"): ("Date", "Date!"),
    ("createPurchaseOrder", "orderDate"): ("Date", "Date!"),
    ("createPurchaseOrder", "part"): ("ID", "ID!"),
    ("createPurchaseOrder", "supplier"): ("ID", "ID!"),
}


@pytest.mark.parametrize("manager", ["Part", "Project", "PurchaseOrder"])
def test_mutations_match(inventory: DemoBackend, sample: GraphQLSchema, manager: str) -> None:
    ours_root, theirs_root = inventory.schema.mutation_type, sample.mutation_type
    assert ours_root is not None and theirs_root is not None
    for verb in ("create", "update", "delete"):
        field = verb + manager
        ours = _args(inventory.schema, ours_root, field)
        theirs = _args(sample, theirs_root, field)
        assert [name for name, _ in ours] == [name for name, _ in theirs]
        for (name, our_type), (_, their_type) in zip(ours, theirs, strict=True):
            expected = REQUIRED_DIFFERENCES.get((field, name), (their_type, their_type))[0]
            assert our_type == expected, (field, name)
        our_defaults = {k: default_of(a) for k, a in ours_root.fields[field].args.items()}
        their_defaults = {k: default_of(a) for k, a in theirs_root.fields[field].args.items()}
        assert our_defaults == their_defaults
        assert ours_root.fields[field].description == f"Mutation to {verb} {manager}"
        payload = inventory.schema.get_type(verb.capitalize() + manager)
        assert isinstance(payload, GraphQLObjectType)
        assert {k: str(f.type) for k, f in payload.fields.items()} == {
            "success": "Boolean",
            manager: f"{manager}Type",
        }


def test_only_managers_with_mutations_get_them(inventory: DemoBackend) -> None:
    mutation = inventory.schema.mutation_type
    assert mutation is not None
    assert [name for name in mutation.fields if name.startswith("create")] == [
        "createPart",
        "createProject",
        "createPurchaseOrder",
    ]


def test_descriptions_are_present(inventory: DemoBackend) -> None:
    part = inventory.schema.get_type("PartType")
    assert isinstance(part, GraphQLObjectType)
    assert part.description is not None and "Inventory parts catalog" in part.description
    assert part.fields["quantity"].description == "Units currently in stock."

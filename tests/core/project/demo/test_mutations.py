"""Writes: create/update/delete change the database and fail with GeneralManager's error shapes."""

from __future__ import annotations

from typing import Any

import pytest

from gmchat_nb.core.project.demo import DemoBackend

from .helpers import data, error, execute

PART_FIELDS = "id name quantity unitPrice { value unit } material { name } supplierId"


def _validation(backend: DemoBackend, query: str, **variables: Any) -> dict[str, list[str]]:
    message = error(backend, query, **variables)
    assert message["message"] == "Validation failed."
    extensions = message["extensions"]
    assert extensions["code"] == "BAD_USER_INPUT"
    assert extensions["nonFieldErrors"] == []
    field_errors: dict[str, list[str]] = extensions["fieldErrors"]
    return field_errors


def test_create_part_returns_the_new_row(fresh_inventory: DemoBackend) -> None:
    query = f"""mutation {{ createPart(name: "Widget", material: "1", unitPrice: "11 USD",
        historyComment: "new stock") {{ success Part {{ {PART_FIELDS} }} }} }}"""
    created = data(fresh_inventory, query)["createPart"]
    assert created == {
        "success": True,
        "Part": {
            "id": "29",
            "name": "Widget",
            "quantity": 0,
            "unitPrice": {"value": 10.0, "unit": "EUR"},
            "material": {"name": "Steel"},
            "supplierId": None,
        },
    }
    found = data(fresh_inventory, '{ partList(filter: {name: "Widget"}) { items { id } } }')
    assert found["partList"]["items"] == [{"id": "29"}]
    again = data(fresh_inventory, 'mutation { createPart(name: "Sprocket") { Part { id } } }')
    assert again["createPart"]["Part"]["id"] == "30"


def test_create_with_variables(fresh_inventory: DemoBackend) -> None:
    query = """mutation($name: String!, $quantity: Int, $price: MeasurementScalar) {
        createPart(name: $name, quantity: $quantity, unitPrice: $price, supplier: "2") {
            success Part { name quantity unitPrice { value } supplier { name } } } }"""
    created = data(fresh_inventory, query, name="Rivet", quantity=7, price="0.5 EUR")
    assert created["createPart"]["Part"] == {
        "name": "Rivet",
        "quantity": 7,
        "unitPrice": {"value": 0.5},
        "supplier": {"name": "Nordic Alloys AB"},
    }


@pytest.mark.parametrize("blank", ["", "   "])
def test_blank_required_string(fresh_inventory: DemoBackend, blank: str) -> None:
    errors = _validation(
        fresh_inventory, "mutation($n: String!) { createPart(name: $n) { success } }", n=blank
    )
    assert errors == {"name": ["This field cannot be blank."]}


def test_missing_required_argument_is_a_graphql_validation_error(
    fresh_inventory: DemoBackend,
) -> None:
    result = execute(fresh_inventory, "mutation { createPart(quantity: 1) { success } }")
    assert result.errors is not None
    assert "name" in result.errors[0].message
    assert result.data is None


def test_unknown_relation_ids(fresh_inventory: DemoBackend) -> None:
    query = 'mutation { createPart(name: "X", material: "99", supplier: "abc") { success } }'
    assert _validation(fresh_inventory, query) == {
        "material": ["Material with id 99 does not exist."],
        "supplier": ["Supplier with id abc does not exist."],
    }
    many = 'mutation { createProject(name: "Zeus", partsList: ["1", "98", "99"]) { success } }'
    assert _validation(fresh_inventory, many) == {
        "parts": ["Part with id 98 does not exist.", "Part with id 99 does not exist."]
    }


def test_unknown_measurement_unit(fresh_inventory: DemoBackend) -> None:
    query = 'mutation { createPart(name: "X", unitPrice: "3 GBP") { success } }'
    errors = _validation(fresh_inventory, query)
    assert list(errors) == ["unit_price"]
    assert '"GBP"' in errors["unit_price"][0]


def test_errors_are_collected_and_nothing_is_written(fresh_inventory: DemoBackend) -> None:
    query = 'mutation { createPart(name: "", material: "99", unitPrice: "1 GBP") { success } }'
    assert set(_validation(fresh_inventory, query)) == {"name", "material", "unit_price"}
    total = data(fresh_inventory, "{ partList { pageInfo { totalCount } } }")
    assert total["partList"]["pageInfo"]["totalCount"] == 28


def test_update_changes_only_given_fields(fresh_inventory: DemoBackend) -> None:
    query = f'mutation {{ updatePart(id: "1", quantity: 5, supplier: null) {{ success Part {{ {PART_FIELDS} }} }} }}'
    updated = data(fresh_inventory, query)["updatePart"]
    assert updated["success"] is True
    assert updated["Part"] == {
        "id": "1",
        "name": "Bolt",
        "quantity": 5,
        "unitPrice": {"value": 0.25, "unit": "EUR"},
        "material": {"name": "Steel"},
        "supplierId": None,
    }
    priced = data(
        fresh_inventory,
        'mutation { updatePart(id: "1", unitPrice: "1.1 USD") { Part { unitPrice { value } } } }',
    )
    assert priced["updatePart"]["Part"]["unitPrice"] == {"value": 1.0}


def test_update_validation(fresh_inventory: DemoBackend) -> None:
    assert _validation(
        fresh_inventory, 'mutation { updatePart(id: "1", name: null) { success } }'
    ) == {"name": ["This field cannot be null."]}
    assert _validation(
        fresh_inventory, 'mutation { updatePart(id: "1", name: "") { success } }'
    ) == {"name": ["This field cannot be blank."]}
    assert _validation(
        fresh_inventory, 'mutation { updatePart(id: "1", material: "42") { success } }'
    ) == {"material": ["Material with id 42 does not exist."]}


@pytest.mark.parametrize("verb", ["update", "delete"])
@pytest.mark.parametrize("part_id", ["999", "abc"])
def test_missing_row(fresh_inventory: DemoBackend, verb: str, part_id: str) -> None:
    message = error(fresh_inventory, f'mutation {{ {verb}Part(id: "{part_id}") {{ success }} }}')
    assert message["message"] == "Part matching query does not exist."
    assert message["extensions"] == {"code": "NOT_FOUND"}
    assert message["path"] == [f"{verb}Part"]


def test_delete_removes_the_row_and_its_references(fresh_inventory: DemoBackend) -> None:
    deleted = data(
        fresh_inventory,
        'mutation { deletePart(id: "3", historyComment: "obsolete") { success Part { id } } }',
    )
    assert deleted == {"deletePart": {"success": True, "Part": None}}
    assert data(fresh_inventory, '{ part(id: "3") { id } }') == {"part": None}
    apollo = data(fresh_inventory, '{ project(id: "1") { partsList { items { id } } } }')
    assert apollo["project"]["partsList"]["items"] == []
    orders = data(
        fresh_inventory,
        '{ purchaseOrderList(filter: {number_In: ["PO-1003", "PO-1027"]}) { items { partId } } }',
    )
    assert orders["purchaseOrderList"]["items"] == [{"partId": None}, {"partId": None}]
    again = error(fresh_inventory, 'mutation { deletePart(id: "3") { success } }')
    assert again["extensions"] == {"code": "NOT_FOUND"}


def test_new_id_after_deleting_the_last_row(fresh_inventory: DemoBackend) -> None:
    data(fresh_inventory, 'mutation { deletePart(id: "28") { success } }')
    created = data(fresh_inventory, 'mutation { createPart(name: "Clip") { Part { id } } }')
    assert created["createPart"]["Part"]["id"] == "28"


def test_project_mutations_with_to_many(fresh_inventory: DemoBackend) -> None:
    query = """mutation { createProject(name: "Zeus", partsList: ["2", "3", "3"], startDate: "2026-01-02") {
        success Project { id name status startDate partsList { items { name } } } } }"""
    created = data(fresh_inventory, query)["createProject"]
    assert created == {
        "success": True,
        "Project": {
            "id": "9",
            "name": "Zeus",
            "status": "planned",
            "startDate": "2026-01-02",
            "partsList": {"items": [{"name": "Bearing"}, {"name": "Gear"}]},
        },
    }
    update = 'mutation { updateProject(id: "9", partsList: ["1"], status: "active") { Project { status partsList { items { name } } } } }'
    updated = data(fresh_inventory, update)["updateProject"]["Project"]
    assert updated == {"status": "active", "partsList": {"items": [{"name": "Bolt"}]}}
    untouched = data(
        fresh_inventory,
        'mutation { updateProject(id: "9", name: "Zeus II") { Project { partsList { items { name } } } } }',
    )
    assert untouched["updateProject"]["Project"]["partsList"]["items"] == [{"name": "Bolt"}]
    reverse = data(fresh_inventory, '{ part(id: "1") { projectList { items { name } } } }')
    assert reverse["part"]["projectList"]["items"] == [{"name": "Zeus II"}]
    cleared = data(
        fresh_inventory,
        'mutation { updateProject(id: "9", partsList: null) { Project { partsList { items { name } } } } }',
    )
    assert cleared["updateProject"]["Project"]["partsList"]["items"] == []


def test_purchase_order_defaults(fresh_inventory: DemoBackend) -> None:
    query = """mutation { createPurchaseOrder(number: "PO-2000", part: "3", supplier: "5", orderDate: "2026-06-01") {
        success PurchaseOrder { id number quantity urgent orderDate part { name } supplier { name } } } }"""
    created = data(fresh_inventory, query)["createPurchaseOrder"]["PurchaseOrder"]
    assert created == {
        "id": "41",
        "number": "PO-2000",
        "quantity": 1,
        "urgent": False,
        "orderDate": "2026-06-01",
        "part": {"name": "Gear"},
        "supplier": {"name": "Alpine Precision AG"},
    }
    blank = 'mutation { createPurchaseOrder(number: "") { success } }'
    assert _validation(fresh_inventory, blank) == {"number": ["This field cannot be blank."]}


def test_managers_without_mutations_have_none(fresh_inventory: DemoBackend) -> None:
    for name in ("createMaterial", "updateSupplier", "deleteAuditSecret"):
        result = execute(fresh_inventory, f'mutation {{ {name}(id: "1") {{ success }} }}')
        assert result.errors is not None
        assert name in result.errors[0].message

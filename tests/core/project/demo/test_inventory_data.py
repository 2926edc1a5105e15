"""The inventory seed data keeps the promises eval questions rely on, checked through GraphQL."""

from __future__ import annotations

import re

from gmchat_nb.core.project.demo import DemoBackend, inventory_spec

from .helpers import data, names


def _total(backend: DemoBackend, root: str) -> int:
    result = data(backend, f"{{ {root} {{ pageInfo {{ totalCount }} }} }}")
    total: int = result[root]["pageInfo"]["totalCount"]
    return total


def test_managers_and_exposure(inventory: DemoBackend) -> None:
    assert inventory.spec.name == "inventory"
    assert inventory.exposed_managers == (
        "Material",
        "Supplier",
        "Part",
        "Project",
        "PurchaseOrder",
    )
    assert inventory.hidden_managers == ("AuditSecret",)
    assert data(inventory, "{ auditSecretList { pageInfo { totalCount } } }") == {
        "auditSecretList": {"pageInfo": {"totalCount": 3}}
    }


def test_sizes(inventory: DemoBackend) -> None:
    assert _total(inventory, "materialList") == 8
    assert _total(inventory, "supplierList") == 6
    assert _total(inventory, "partList") == 28
    assert _total(inventory, "projectList") == 8
    assert _total(inventory, "purchaseOrderList") == 40


def test_anchor_materials_and_parts(inventory: DemoBackend) -> None:
    materials = data(inventory, "{ materialList(pageSize: 3) { items { id name density } } }")
    assert materials["materialList"]["items"] == [
        {"id": "1", "name": "Steel", "density": 7.8},
        {"id": "2", "name": "Aluminum", "density": 2.7},
        {"id": "3", "name": "Cobalt", "density": 8.9},
    ]
    parts = data(inventory, "{ partList(pageSize: 3) { items { id name material { name } } } }")
    assert parts["partList"]["items"] == [
        {"id": "1", "name": "Bolt", "material": {"name": "Steel"}},
        {"id": "2", "name": "Bearing", "material": {"name": "Aluminum"}},
        {"id": "3", "name": "Gear", "material": {"name": "Cobalt"}},
    ]
    assert names(inventory, "materialList", "filter: {hazardous: true}") == ["Lead"]


def test_project_constraints(inventory: DemoBackend) -> None:
    def projects_using(material_id: str) -> list[str]:
        arguments = f'filter: {{partsList: {{any: {{materialId: "{material_id}"}}}}}}'
        return names(inventory, "projectList", arguments)

    assert projects_using("3") == ["Apollo"]  # Cobalt
    assert projects_using("2") == ["Mercury"]  # Aluminum
    assert projects_using("1") == []  # Steel
    assert names(inventory, "projectList", 'filter: {partsList: {any: {name: "Bolt"}}}') == []
    apollo = data(
        inventory,
        '{ projectList(filter: {name: "Apollo"}) { items { partsList { items { name } } } } }',
    )
    assert apollo["projectList"]["items"][0]["partsList"]["items"] == [{"name": "Gear"}]
    mercury = data(
        inventory,
        '{ projectList(filter: {name: "Mercury"}) { items { partsList { items { name } } } } }',
    )
    assert mercury["projectList"]["items"][0]["partsList"]["items"] == [{"name": "Bearing"}]
    assert names(inventory, "projectList", "filter: {partsList: {none: {}}}") == ["Pioneer"]
    statuses = data(inventory, "{ projectList { items { status } } }")["projectList"]["items"]
    assert {item["status"] for item in statuses} == {"planned", "active", "completed"}


def test_parts_variety(inventory: DemoBackend) -> None:
    assert names(inventory, "partList", "filter: {materialId: null}") == ["Gasket Set"]
    assert len(names(inventory, "partList", "filter: {supplierId: null}")) >= 3
    assert names(inventory, "partList", 'filter: {name_Icontains: "gear"}') == ["Gear"]
    countries = data(inventory, "{ supplierList { items { country } } }")["supplierList"]["items"]
    assert len({item["country"] for item in countries}) >= 4


def test_purchase_orders(inventory: DemoBackend) -> None:
    orders = data(
        inventory,
        "{ purchaseOrderList(pageSize: 100) { items { number orderDate urgent partId supplierId } } }",
    )["purchaseOrderList"]["items"]
    assert [order["number"] for order in orders] == [f"PO-{1001 + i}" for i in range(40)]
    assert all(re.match(r"^202[56]-\d\d-\d\d$", order["orderDate"]) for order in orders)
    assert 3 <= sum(order["urgent"] for order in orders) < 20
    assert len({order["partId"] for order in orders}) >= 20
    assert all(order["partId"] and order["supplierId"] for order in orders)


def test_spec_is_deterministic() -> None:
    assert inventory_spec() == inventory_spec()

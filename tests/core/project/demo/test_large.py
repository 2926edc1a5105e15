"""The large demo: many distinct managers, a relation chain and one row each."""

from __future__ import annotations

import re

import pytest
from graphql import GraphQLObjectType

from gmchat_nb.core.project.demo import ToOne, build_demo, demo_spec, large_spec

from .helpers import data


def test_default_spec_shape() -> None:
    spec = large_spec()
    assert spec.name == "large"
    managers = spec.managers
    assert len(managers) == 150
    names = [manager.name for manager in managers]
    assert len(set(names)) == 150
    assert all(re.match(r"^[A-Z][a-z]+[A-Z][a-z]+$", name) for name in names)
    assert names[:3] == ["FleetVehicle", "InvoiceLine", "WarehouseBin"]
    # Interleaved: the first managers do not share a prefix.
    prefixes = [re.findall(r"[A-Z][a-z]+", name)[0] for name in names[:20]]
    assert len(set(prefixes)) == 20
    assert all(manager.exposed and not manager.mutations for manager in managers)
    assert all(len(manager.rows) == 1 for manager in managers)
    assert managers[0].description == (
        "Vehicles managed by the fleet domain: name, code, status and a quantity."
    )
    assert managers[0].rows[0]["code"] == "FLV-0001"
    field_types = {manager.fields[3].type for manager in managers}
    assert field_types == {"int", "float", "date", "bool"}


def test_chain_relations() -> None:
    managers = large_spec(150, chain_length=8).managers
    for index, manager in enumerate(managers):
        relations = manager.relations
        if index < 8:
            assert relations == (
                ToOne("next_item", managers[index + 1].name, description=relations[0].description),
            )
        else:
            assert relations == ()


def test_names_stay_unique_at_the_maximum() -> None:
    names = [manager.name for manager in large_spec(5000).managers]
    assert len(set(names)) == 5000


@pytest.mark.parametrize("count", [0, 5001])
@pytest.mark.parametrize("name", ["large", "synthetic"])
def test_bounds(count: int, name: str) -> None:
    with pytest.raises(ValueError, match="manager_count"):
        demo_spec(name, manager_count=count)
    with pytest.raises(ValueError, match="chain_length"):
        demo_spec(name, manager_count=10, chain_length=-1)


def test_small_custom_size_is_queryable() -> None:
    spec = demo_spec("large", manager_count=4, chain_length=8)
    assert [manager.name for manager in spec.managers] == [
        "FleetVehicle",
        "InvoiceLine",
        "WarehouseBin",
        "PayrollShift",
    ]
    with build_demo(spec) as backend:
        assert backend.exposed_managers == tuple(m.name for m in spec.managers)
        assert backend.hidden_managers == ()
        query = """{ fleetVehicleList { items { name code status quantity
            nextItem { name nextItem { name nextItem { name } } } } pageInfo { totalCount } } }"""
        page = data(backend, query)["fleetVehicleList"]
        assert page["pageInfo"]["totalCount"] == 1
        item = page["items"][0]
        assert item["name"] == "Fleet Vehicle 1"
        assert item["nextItem"]["nextItem"]["nextItem"] == {"name": "Payroll Shift 1"}
        end_of_chain = backend.schema.get_type("PayrollShiftType")
        assert isinstance(end_of_chain, GraphQLObjectType)
        assert "nextItem" not in end_of_chain.fields
        reverse = data(
            backend, "{ invoiceLineList { items { fleetVehicleList { items { code } } } } }"
        )
        assert reverse["invoiceLineList"]["items"][0]["fleetVehicleList"]["items"] == [
            {"code": "FLV-0001"}
        ]
        filtered = data(
            backend,
            '{ fleetVehicleList(filter: {nextItem: {name_Startswith: "Invoice"}}) { items { id } } }',
        )
        assert filtered["fleetVehicleList"]["items"] == [{"id": "1"}]


def test_default_large_demo_builds() -> None:
    with build_demo(large_spec()) as backend:
        query = backend.schema.query_type
        assert query is not None
        assert len(query.fields) == 300
        last = large_spec().managers[-1].name
        assert backend.schema.get_type(f"{last}FilterTypeDepth1") is not None

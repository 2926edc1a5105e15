"""Reads: every filter family, relation filters, exclude, ordering, pagination and single lookups."""

from __future__ import annotations

import pytest

from gmchat_nb.core.project.demo import DemoBackend, build_demo, inventory_spec

from .helpers import data, error, names

TITANIUM = ["Titanium Shaft", "Titanium Bracket", "Titanium Fastener Kit", "Titanium Valve Stem"]
BRASS = ["Brass Fitting", "Brass Valve", "Brass Bushing", "Brass Nozzle", "Brass Hinge"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('filter: {name: "Bolt"}', ["Bolt"]),
        ('filter: {name_Exact: "Gear"}', ["Gear"]),
        ('filter: {name_Exact: "gear"}', []),
        ('filter: {name_Icontains: "TITAN"}', TITANIUM),
        ('filter: {name_Contains: "Titan"}', TITANIUM),
        ('filter: {name_Contains: "titan"}', []),
        ('filter: {name_In: ["Gear", "Bolt", "Nope"]}', ["Bolt", "Gear"]),
        ("filter: {name_In: []}", []),
        ('filter: {name_Startswith: "Brass"}', BRASS),
        ('filter: {name_Startswith: "brass"}', []),
        ('filter: {name_Endswith: "Kit"}', ["Titanium Fastener Kit"]),
        ('filter: {name_Endswith: "kit"}', []),
    ],
)
def test_string_lookups(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "partList", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("filter: {quantity: 0}", ["Copper Coil", "Lead Solder Bar"]),
        ("filter: {quantity_Exact: 85}", ["Gear"]),
        ("filter: {quantity_Gt: 1500}", ["Nylon Spacer", "Nylon Washer"]),
        ("filter: {quantity_Gte: 1500}", ["Nylon Spacer", "Nylon Washer", "Nylon Cable Clip"]),
        ("filter: {quantity_Lt: 8}", ["Copper Coil", "Lead Solder Bar"]),
        ("filter: {quantity_Lte: 8}", ["Copper Coil", "Radiation Shield Plate", "Lead Solder Bar"]),
        ("filter: {quantity_Gte: 80, quantity_Lte: 90}", ["Gear"]),
    ],
)
def test_int_lookups(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "partList", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ("filter: {density: 7.8}", ["Steel"]),
        ("filter: {density_Gt: 8.9}", ["Copper", "Lead"]),
        ("filter: {density_Lte: 2.7}", ["Aluminum", "Nylon"]),
        ("filter: {hazardous: true}", ["Lead"]),
        ("filter: {hazardous_Exact: true}", ["Lead"]),
        ("filter: {hazardous_Gt: false}", ["Lead"]),
        ("exclude: {hazardous: false}", ["Lead"]),
    ],
)
def test_float_and_bool_lookups(
    inventory: DemoBackend, arguments: str, expected: list[str]
) -> None:
    assert names(inventory, "materialList", arguments) == expected


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('filter: {startDate: "2025-03-01"}', ["Apollo"]),
        ('filter: {startDate_Exact: "2024-09-15"}', ["Mercury"]),
        ('filter: {startDate_Gt: "2026-05-15"}', ["Skylab"]),
        ('filter: {startDate_Gte: "2026-01-01"}', ["Artemis", "Pioneer", "Skylab"]),
        ('filter: {startDate_Lt: "2024-12-31"}', ["Mercury", "Orion"]),
        ('filter: {startDate_Lte: "2024-04-01"}', ["Orion"]),
        ('filter: {status_In: ["completed"]}', ["Mercury", "Orion"]),
    ],
)
def test_date_lookups(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "projectList", arguments) == expected


def test_invalid_date_is_rejected(inventory: DemoBackend) -> None:
    message = error(
        inventory, '{ projectList(filter: {startDate: "2025-13-01"}) { items { id } } }'
    )
    assert "YYYY-MM-DD" in message["message"]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('filter: {id: "2"}', ["Bearing"]),
        ("filter: {id_Exact: 3}", ["Gear"]),
        ('filter: {id_In: ["3", "1", "999"]}', ["Bolt", "Gear"]),
        ("filter: {id_Gt: 26}", ["Brass Hinge", "Nylon Cable Clip"]),
        ("filter: {id_Lte: 2}", ["Bolt", "Bearing"]),
        ('filter: {materialId: "3"}', ["Gear"]),
        ("filter: {materialId: null}", ["Gasket Set"]),
        ('filter: {materialId_In: ["1", "2"]}', ["Bolt", "Bearing"]),
        ("filter: {supplierId_Gte: 6, materialId_Lt: 6}", ["Turbine Blade", "Heat Sink"]),
    ],
)
def test_id_lookups(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "partList", arguments) == expected


def test_malformed_id_filter_is_an_error(inventory: DemoBackend) -> None:
    message = error(inventory, '{ partList(filter: {id: "abc"}) { items { id } } }')
    assert message["message"] == 'Filter "id" expects an integer id, got "abc".'


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('filter: {unitPrice: "48 EUR"}', ["Gear"]),
        ('filter: {unitPrice_Exact: "52.8 USD"}', ["Gear"]),
        (
            'filter: {unitPrice_Gt: "320 EUR"}',
            ["Turbine Blade", "Radiation Shield Plate"],
        ),
        (
            'filter: {unitPrice_Gte: "110 USD"}',
            ["Titanium Shaft", "Turbine Blade", "Radiation Shield Plate", "Titanium Valve Stem"],
        ),
        ('filter: {unitPrice_Lt: "0.1 EUR"}', ["Nylon Spacer", "Nylon Washer"]),
        (
            'filter: {unitPrice_Lte: "0.12 EUR"}',
            ["Nylon Spacer", "Nylon Washer", "Nylon Cable Clip"],
        ),
    ],
)
def test_measurement_lookups(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "partList", arguments) == expected


def test_measurement_filter_around_ten_euro(inventory: DemoBackend) -> None:
    cheap = names(inventory, "partList", 'filter: {unitPrice_Lt: "10 EUR"}')
    same_in_dollars = names(inventory, "partList", 'filter: {unitPrice_Lt: "11 USD"}')
    assert cheap == same_in_dollars
    assert "Bolt" in cheap and "Gear" not in cheap and "Lead Solder Bar" in cheap
    assert len(cheap) == 12


def test_measurement_filter_rejects_unknown_units_and_bad_text(inventory: DemoBackend) -> None:
    unknown = error(inventory, '{ partList(filter: {unitPrice_Gt: "10 GBP"}) { items { id } } }')
    assert '"GBP"' in unknown["message"]
    malformed = error(inventory, '{ partList(filter: {unitPrice_Gt: "ten"}) { items { id } } }')
    assert "<value> <unit>" in malformed["message"]


def test_measurement_variable(inventory: DemoBackend) -> None:
    query = "query($price: MeasurementScalar) { partList(filter: {unitPrice_Gte: $price}) { items { name } } }"
    items = data(inventory, query, price="1000 EUR")["partList"]["items"]
    assert items == [{"name": "Turbine Blade"}]


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ('filter: {material: {name_Icontains: "steel"}}', ["Bolt"]),
        (
            "filter: {material: {hazardous: true}}",
            ["Lead Ballast Weight", "Radiation Shield Plate", "Lead Solder Bar"],
        ),
        ('filter: {material: {name: "Lead"}, quantity_Gt: 10}', ["Lead Ballast Weight"]),
        ('filter: {supplier: {country: "Japan"}, material: {name: "Titanium"}}', ["Turbine Blade"]),
        ("filter: {material: null}", ["Gasket Set"]),
    ],
)
def test_nested_to_one_filters(inventory: DemoBackend, arguments: str, expected: list[str]) -> None:
    assert names(inventory, "partList", arguments) == expected


@pytest.mark.parametrize(
    ("root", "arguments", "expected"),
    [
        ("projectList", 'filter: {partsList: {any: {name_Icontains: "gear"}}}', ["Apollo"]),
        ("projectList", 'filter: {partsList: {any: {materialId: "2"}}}', ["Mercury"]),
        ("projectList", "filter: {partsList: {none: {}}}", ["Pioneer"]),
        (
            "projectList",
            "filter: {partsList: {any: {}, none: {quantity_Lt: 100}}}",
            ["Mercury"],
        ),
        ("partList", 'filter: {projectList: {any: {name: "Apollo"}}}', ["Gear"]),
        ("materialList", 'filter: {partList: {any: {name: "Bearing"}}}', ["Aluminum"]),
        ("materialList", "filter: {partList: {none: {quantity_Gt: 100}}}", ["Cobalt", "Lead"]),
        (
            "supplierList",
            'filter: {purchaseOrderList: {any: {urgent: true, orderDate_Gte: "2026-01-01"}}}',
            ["Acme Metals GmbH", "Pacific Components Inc", "Shinoda Manufacturing"],
        ),
    ],
)
def test_any_and_none_relation_filters(
    inventory: DemoBackend, root: str, arguments: str, expected: list[str]
) -> None:
    assert names(inventory, root, arguments) == expected


def test_relation_filters_stay_one_hop_deep(inventory: DemoBackend) -> None:
    query = (
        '{ projectList(filter: {partsList: {any: {material: {name: "Steel"}}}}) { items { id } } }'
    )
    message = error(inventory, query)
    assert "material" in message["message"]


def test_exclude(inventory: DemoBackend) -> None:
    # Gasket Set has no material; excluding by material id keeps it, as Django's exclude() does.
    kept = names(inventory, "partList", 'exclude: {materialId_In: ["4", "5", "6", "7", "8"]}')
    assert kept == ["Bolt", "Bearing", "Gear", "Gasket Set"]
    both = names(
        inventory,
        "partList",
        'filter: {name_Startswith: "Titanium"}, exclude: {quantity_Lt: 50}',
    )
    assert both == ["Titanium Bracket", "Titanium Fastener Kit"]
    with_any = names(inventory, "projectList", "exclude: {partsList: {any: {}}}")
    assert with_any == ["Pioneer"]


def test_none_inside_exclude_is_rejected(inventory: DemoBackend) -> None:
    for exclude in ("{partsList: {none: {}}}", '{partsList: {any: {name: "x"}, none: null}}'):
        message = error(inventory, f"{{ projectList(exclude: {exclude}) {{ items {{ id }} }} }}")
        assert message["message"] == (
            "`none` relation filters are not supported inside `exclude` inputs."
        )
        assert message["path"] == ["projectList"]


def test_filters_on_relation_lists(inventory: DemoBackend) -> None:
    query = """{ supplier(id: "3") { name partList(filter: {quantity_Gt: 200}) {
        items { name } pageInfo { totalCount } } } }"""
    supplier = data(inventory, query)["supplier"]
    assert supplier["partList"]["items"] == [
        {"name": "Copper Wire Spool"},
        {"name": "Nylon Spacer"},
        {"name": "Gasket Set"},
    ]
    assert supplier["partList"]["pageInfo"]["totalCount"] == 3


def test_relation_lists_in_every_direction(inventory: DemoBackend) -> None:
    query = """{ part(id: "3") { name material { name } materialId supplierId
        projectList { items { name } } purchaseOrderList { items { number } } } }"""
    part = data(inventory, query)["part"]
    assert part["material"] == {"name": "Cobalt"}
    assert (part["materialId"], part["supplierId"]) == ("3", "5")
    assert part["projectList"]["items"] == [{"name": "Apollo"}]
    assert part["purchaseOrderList"]["items"] == [{"number": "PO-1003"}, {"number": "PO-1027"}]
    project = data(inventory, '{ project(id: "1") { partsList { items { name } } } }')["project"]
    assert project["partsList"]["items"] == [{"name": "Gear"}]


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        (
            "[{field: quantity, direction: DESC}]",
            ["Nylon Washer", "Nylon Spacer", "Nylon Cable Clip"],
        ),
        ("[{field: quantity}]", ["Copper Coil", "Lead Solder Bar", "Radiation Shield Plate"]),
        ("[{field: name, direction: ASC}]", ["Bearing", "Bolt", "Brass Bushing"]),
        (
            "[{field: unitPrice, direction: DESC}]",
            ["Turbine Blade", "Radiation Shield Plate", "Titanium Shaft"],
        ),
        ("[{field: material__name, direction: ASC}]", ["Gasket Set", "Bearing", "Brass Fitting"]),
        (
            "[{field: material__name, direction: DESC}]",
            ["Titanium Shaft", "Titanium Bracket", "Turbine Blade"],
        ),
        (
            "[{field: material__density, direction: DESC}, {field: quantity}]",
            ["Lead Solder Bar", "Radiation Shield Plate", "Lead Ballast Weight"],
        ),
        (
            "[{field: material, direction: DESC}]",
            ["Lead Ballast Weight", "Radiation Shield Plate", "Lead Solder Bar"],
        ),
        (
            "[{field: supplier__country}, {field: name, direction: DESC}]",
            ["Titanium Fastener Kit", "Nylon Cable Clip", "Cable Tie Pack"],
        ),
    ],
)
def test_ordering(inventory: DemoBackend, order: str, expected: list[str]) -> None:
    result = data(
        inventory, f"{{ partList(pageSize: 3, orderBy: {order}) {{ items {{ name }} }} }}"
    )
    assert [item["name"] for item in result["partList"]["items"]] == expected


def test_default_order_is_by_id(inventory: DemoBackend) -> None:
    result = data(inventory, "{ purchaseOrderList(pageSize: 100) { items { id } } }")
    ids = [int(item["id"]) for item in result["purchaseOrderList"]["items"]]
    assert ids == list(range(1, 41))


def test_ordering_relation_lists(inventory: DemoBackend) -> None:
    query = """{ project(id: "3") { partsList(orderBy: [{field: name, direction: DESC}]) {
        items { name } } } }"""
    items = data(inventory, query)["project"]["partsList"]["items"]
    assert [item["name"] for item in items] == [
        "Titanium Shaft",
        "Nylon Spacer",
        "Copper Wire Spool",
        "Brass Fitting",
    ]


def test_default_pagination(inventory: DemoBackend) -> None:
    page = data(
        inventory,
        "{ partList { items { id } pageInfo { totalCount pageSize currentPage totalPages } } }",
    )
    assert [item["id"] for item in page["partList"]["items"]] == [str(i) for i in range(1, 11)]
    assert page["partList"]["pageInfo"] == {
        "totalCount": 28,
        "pageSize": 10,
        "currentPage": 1,
        "totalPages": 3,
    }


def test_pages_and_past_the_end(inventory: DemoBackend) -> None:
    query = "query($page: Int) { partList(page: $page) { items { id } pageInfo { totalCount currentPage } } }"
    last = data(inventory, query, page=3)["partList"]
    assert [item["id"] for item in last["items"]] == [str(i) for i in range(21, 29)]
    beyond = data(inventory, query, page=4)["partList"]
    assert beyond == {"items": [], "pageInfo": {"totalCount": 28, "currentPage": 4}}
    filtered = data(
        inventory,
        '{ partList(pageSize: 2, page: 2, filter: {name_Startswith: "Brass"}) { items { name } pageInfo { totalCount totalPages } } }',
    )
    assert filtered["partList"] == {
        "items": [{"name": "Brass Bushing"}, {"name": "Brass Nozzle"}],
        "pageInfo": {"totalCount": 5, "totalPages": 3},
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ("pageSize: 101", "pageSize must not exceed 100"),
        ("pageSize: 0", "pageSize must be a positive integer"),
        ("pageSize: -3", "pageSize must be a positive integer"),
        ("page: 0", "page must be a positive integer"),
        ("page: -1, pageSize: 5", "page must be a positive integer"),
    ],
)
def test_pagination_errors(inventory: DemoBackend, arguments: str, message: str) -> None:
    assert (
        error(inventory, f"{{ partList({arguments}) {{ items {{ id }} }} }}")["message"] == message
    )
    nested = error(
        inventory, f'{{ material(id: "1") {{ partList({arguments}) {{ items {{ id }} }} }} }}'
    )
    assert nested["message"] == message
    assert nested["path"] == ["material", "partList"]


def test_max_page_size_is_allowed(inventory: DemoBackend) -> None:
    page = data(
        inventory,
        "{ purchaseOrderList(pageSize: 100) { items { id } pageInfo { pageSize totalPages } } }",
    )
    assert len(page["purchaseOrderList"]["items"]) == 40
    assert page["purchaseOrderList"]["pageInfo"] == {"pageSize": 100, "totalPages": 1}


def test_single_object(inventory: DemoBackend) -> None:
    bolt = data(
        inventory, '{ part(id: "1") { id name quantity material { name density hazardous } } }'
    )
    assert bolt["part"] == {
        "id": "1",
        "name": "Bolt",
        "quantity": 1200,
        "material": {"name": "Steel", "density": 7.8, "hazardous": False},
    }
    assert data(inventory, '{ part(id: "999") { id } }') == {"part": None}
    assert data(inventory, '{ part(id: "abc") { id } }') == {"part": None}
    order = data(inventory, "{ purchaseOrder(id: 3) { number orderDate urgent part { name } } }")
    assert order["purchaseOrder"] == {
        "number": "PO-1003",
        "orderDate": "2025-01-22",
        "urgent": True,
        "part": {"name": "Gear"},
    }


def test_measurement_target_unit(inventory: DemoBackend) -> None:
    query = """{ part(id: "3") { plain: unitPrice { value unit } eur: unitPrice(targetUnit: "EUR") {
        value unit } usd: unitPrice(targetUnit: "USD") { value unit } } }"""
    part = data(inventory, query)["part"]
    assert part["plain"] == {"value": 48.0, "unit": "EUR"}
    assert part["eur"] == {"value": 48.0, "unit": "EUR"}
    assert part["usd"] == {"value": 52.8, "unit": "USD"}
    message = error(inventory, '{ part(id: "3") { unitPrice(targetUnit: "GBP") { value } } }')
    assert '"GBP"' in message["message"]
    assert message["path"] == ["part", "unitPrice"]


def test_repeated_order_fields_count_once(inventory: DemoBackend) -> None:
    once = names(inventory, "partList", "orderBy: [{field: name, direction: DESC}]")
    terms = ", ".join(["{field: name, direction: DESC}", *["{field: name}"] * 2500])
    assert names(inventory, "partList", f"orderBy: [{terms}]") == once


def test_an_id_beyond_64_bits_belongs_to_no_row(inventory: DemoBackend) -> None:
    huge = str(10**30)
    assert names(inventory, "partList", f'filter: {{id: "{huge}"}}') == []
    assert names(inventory, "partList", f'filter: {{id_In: ["{huge}", "3"]}}') == ["Gear"]
    failed = error(inventory, f'mutation {{ updatePart(id: "{huge}", quantity: 1) {{ success }} }}')
    assert failed["message"] == "Part matching query does not exist."


def test_in_filters_take_at_most_a_thousand_values(inventory: DemoBackend) -> None:
    ids = ", ".join(f'"{n}"' for n in range(1, 1002))
    failed = error(inventory, f"{{ partList(filter: {{id_In: [{ids}]}}) {{ items {{ id }} }} }}")
    assert failed["message"] == 'Filter "id_In" takes at most 1000 values, got 1001.'
    assert failed["extensions"] == {"code": "BAD_USER_INPUT"}


def test_a_database_failure_reaches_the_client_as_a_plain_error() -> None:
    backend = build_demo(inventory_spec())
    backend.close()  # the database went away under a running server
    failed = error(backend, "{ partList { items { name } } }")
    assert failed["message"] == "The request could not be carried out."
    assert failed["extensions"] == {"code": "INTERNAL_SERVER_ERROR"}

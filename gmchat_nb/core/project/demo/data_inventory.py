"""The "inventory" demo: a small manufacturing project shaped like GeneralManager's sample schema.

Seed-data promises that tests and eval questions rely on:

* Steel (1), Aluminum (2) and Cobalt (3) each have exactly one part: Bolt (1), Bearing (2) and
  Gear (3). Only Apollo uses a Cobalt part (Gear), only Mercury uses an Aluminum part (Bearing),
  and no project uses Bolt or any Steel part. Pioneer has no parts.
* Only Gear has "gear" in its name, so "projects using a gear" is Apollo alone.
* Lead is the one hazardous material. Gasket Set has no material; several parts have no supplier.
"""

from __future__ import annotations

from collections.abc import Mapping

from .spec import DemoSpec, Field, ManagerSpec, ToMany, ToOne

__all__ = ["inventory_spec"]

_MATERIALS = (
    # id, name, density (g/cm³), hazardous
    (1, "Steel", 7.8, False),
    (2, "Aluminum", 2.7, False),
    (3, "Cobalt", 8.9, False),
    (4, "Titanium", 4.5, False),
    (5, "Copper", 8.96, False),
    (6, "Brass", 8.5, False),
    (7, "Nylon", 1.15, False),
    (8, "Lead", 11.34, True),
)

_SUPPLIERS = (
    # id, name, country
    (1, "Acme Metals GmbH", "Germany"),
    (2, "Nordic Alloys AB", "Sweden"),
    (3, "Pacific Components Inc", "USA"),
    (4, "Keystone Industrial Supply", "USA"),
    (5, "Alpine Precision AG", "Switzerland"),
    (6, "Shinoda Manufacturing", "Japan"),
)

_PARTS = (
    # id, name, quantity on hand, unit price in EUR, material id, supplier id
    (1, "Bolt", 1200, 0.25, 1, 1),
    (2, "Bearing", 340, 12.5, 2, 2),
    (3, "Gear", 85, 48.0, 3, 5),
    (4, "Titanium Shaft", 40, 320.0, 4, 5),
    (5, "Titanium Bracket", 120, 75.5, 4, 2),
    (6, "Turbine Blade", 16, 1450.0, 4, 6),
    (7, "Titanium Fastener Kit", 60, 89.9, 4, None),
    (8, "Copper Wire Spool", 210, 34.0, 5, 3),
    (9, "Copper Busbar", 75, 22.4, 5, 4),
    (10, "Heat Sink", 150, 18.75, 5, 6),
    (11, "Copper Coil", 0, 41.2, 5, 3),
    (12, "Brass Fitting", 500, 3.1, 6, 1),
    (13, "Brass Valve", 95, 27.8, 6, 4),
    (14, "Brass Bushing", 260, 4.6, 6, None),
    (15, "Brass Nozzle", 30, 15.0, 6, 5),
    (16, "Nylon Spacer", 2000, 0.08, 7, 3),
    (17, "Nylon Washer", 3500, 0.05, 7, 4),
    (18, "Cable Tie Pack", 800, 2.4, 7, None),
    (19, "Nylon Sprocket", 140, 6.9, 7, 6),
    (20, "Nylon Pulley", 55, 11.3, 7, 1),
    (21, "Lead Ballast Weight", 25, 64.0, 8, 2),
    (22, "Radiation Shield Plate", 8, 890.0, 8, 5),
    (23, "Lead Solder Bar", 0, 9.5, 8, 4),
    (24, "Gasket Set", 300, 5.25, None, 3),
    (25, "Titanium Valve Stem", 45, 132.0, 4, 1),
    (26, "Copper Terminal", 900, 0.9, 5, 2),
    (27, "Brass Hinge", 180, 7.2, 6, 6),
    (28, "Nylon Cable Clip", 1500, 0.12, 7, None),
)

_PROJECTS: tuple[tuple[object, ...], ...] = (
    # id, name, status, start date, part ids
    (1, "Apollo", "active", "2025-03-01", [3]),
    (2, "Mercury", "completed", "2024-09-15", [2]),
    (3, "Gemini", "active", "2025-06-10", [4, 8, 12, 16]),
    (4, "Artemis", "planned", "2026-02-01", [5, 6, 9, 25]),
    (5, "Voyager", "active", "2025-11-20", [10, 13, 17, 19, 24]),
    (6, "Pioneer", "planned", "2026-05-15", []),
    (7, "Orion", "completed", "2024-04-01", [14, 18, 21, 26]),
    (8, "Skylab", "planned", "2026-09-01", [7, 15, 20, 22, 27]),
)

_PURCHASE_ORDERS = (
    # number, order date, part id, supplier id, quantity, urgent
    ("PO-1001", "2025-01-08", 1, 1, 500, False),
    ("PO-1002", "2025-01-15", 2, 2, 100, False),
    ("PO-1003", "2025-01-22", 3, 5, 20, True),
    ("PO-1004", "2025-02-03", 8, 3, 40, False),
    ("PO-1005", "2025-02-11", 16, 3, 1000, False),
    ("PO-1006", "2025-02-19", 12, 1, 200, False),
    ("PO-1007", "2025-03-04", 4, 5, 10, True),
    ("PO-1008", "2025-03-12", 9, 4, 30, False),
    ("PO-1009", "2025-03-27", 17, 4, 2000, False),
    ("PO-1010", "2025-04-02", 6, 6, 4, True),
    ("PO-1011", "2025-04-16", 10, 6, 60, False),
    ("PO-1012", "2025-04-29", 13, 4, 25, False),
    ("PO-1013", "2025-05-07", 1, 1, 800, False),
    ("PO-1014", "2025-05-21", 21, 2, 5, False),
    ("PO-1015", "2025-06-03", 22, 5, 2, True),
    ("PO-1016", "2025-06-18", 5, 2, 50, False),
    ("PO-1017", "2025-07-01", 19, 6, 70, False),
    ("PO-1018", "2025-07-15", 24, 3, 150, False),
    ("PO-1019", "2025-07-30", 2, 2, 80, True),
    ("PO-1020", "2025-08-12", 25, 1, 15, False),
    ("PO-1021", "2025-08-26", 11, 3, 40, True),
    ("PO-1022", "2025-09-09", 26, 2, 400, False),
    ("PO-1023", "2025-09-23", 27, 6, 90, False),
    ("PO-1024", "2025-10-07", 15, 5, 12, False),
    ("PO-1025", "2025-10-21", 20, 1, 30, False),
    ("PO-1026", "2025-11-04", 23, 4, 10, True),
    ("PO-1027", "2025-11-18", 3, 5, 25, False),
    ("PO-1028", "2025-12-02", 7, 5, 20, False),
    ("PO-1029", "2025-12-16", 14, 1, 120, False),
    ("PO-1030", "2026-01-08", 18, 3, 300, False),
    ("PO-1031", "2026-01-20", 28, 4, 600, False),
    ("PO-1032", "2026-02-03", 8, 3, 35, True),
    ("PO-1033", "2026-02-17", 12, 1, 250, False),
    ("PO-1034", "2026-03-03", 6, 6, 3, True),
    ("PO-1035", "2026-03-17", 10, 6, 45, False),
    ("PO-1036", "2026-04-01", 4, 5, 8, False),
    ("PO-1037", "2026-04-14", 17, 4, 1500, False),
    ("PO-1038", "2026-04-28", 21, 2, 6, False),
    ("PO-1039", "2026-05-12", 1, 1, 1000, True),
    ("PO-1040", "2026-05-26", 16, 3, 900, False),
)

_AUDIT_SECRETS = (
    # id, name, note, part id
    (1, "Supplier rebate", "Acme grants a 7% rebate on orders above 10k EUR.", 1),
    (2, "Vault code", "The spare-parts vault code is 4471.", 3),
    (3, "Pricing floor", "Never sell turbine blades below 1200 EUR.", 6),
)


def _rows(
    keys: tuple[str, ...], table: tuple[tuple[object, ...], ...]
) -> tuple[Mapping[str, object], ...]:
    return tuple(dict(zip(keys, values, strict=True)) for values in table)


def inventory_spec() -> DemoSpec:
    """Materials, suppliers, parts, projects and purchase orders, plus one hidden manager.

    Part, Project and PurchaseOrder have mutations; AuditSecret is not exposed to the chat.
    """
    material = ManagerSpec(
        name="Material",
        description="Raw materials our parts are made of, with density and a hazard flag.",
        fields=(
            Field("name", "str", required=True, description="Material name, e.g. Steel."),
            Field("density", "float", description="Density in g/cm³."),
            Field("hazardous", "bool", description="True when handling needs hazmat precautions."),
        ),
        rows=_rows(("id", "name", "density", "hazardous"), _MATERIALS),
    )
    supplier = ManagerSpec(
        name="Supplier",
        description="Suppliers we buy parts from, with the country they are based in.",
        fields=(
            Field("name", "str", required=True, description="Company name of the supplier."),
            Field("country", "str", description="Country the supplier is based in."),
        ),
        rows=_rows(("id", "name", "country"), _SUPPLIERS),
    )
    part = ManagerSpec(
        name="Part",
        description="Inventory parts catalog: every component we stock, with quantity on hand, "
        "unit price, material and supplier.",
        fields=(
            Field("name", "str", required=True, description="Part name, e.g. Bolt."),
            Field("quantity", "int", default=0, description="Units currently in stock."),
            Field("unit_price", "measurement", unit="EUR", description="Price of one unit."),
        ),
        relations=(
            ToOne("material", "Material", description="Material the part is made of."),
            ToOne("supplier", "Supplier", description="Supplier the part is bought from."),
        ),
        rows=_rows(("id", "name", "quantity", "unit_price", "material", "supplier"), _PARTS),
        mutations=True,
    )
    project = ManagerSpec(
        name="Project",
        description="Engineering projects with their status, start date and the parts they use.",
        fields=(
            Field("name", "str", required=True, description="Project name, e.g. Apollo."),
            Field(
                "status",
                "str",
                default="planned",
                description="Project status: planned, active or completed.",
            ),
            Field("start_date", "date", description="Date the project starts or started."),
        ),
        relations=(ToMany("parts", "Part", description="Parts used by the project."),),
        rows=_rows(("id", "name", "status", "start_date", "parts"), _PROJECTS),
        mutations=True,
    )
    purchase_order = ManagerSpec(
        name="PurchaseOrder",
        description="Purchase orders placed with suppliers: which part, how many, when, and "
        "whether the order is urgent.",
        fields=(
            Field("number", "str", required=True, description="Order number, e.g. PO-1001."),
            Field("order_date", "date", description="Date the order was placed."),
            Field("quantity", "int", default=1, description="Units ordered."),
            Field("urgent", "bool", default=False, description="True for rush orders."),
        ),
        relations=(
            ToOne("supplier", "Supplier", description="Supplier the order was placed with."),
            ToOne("part", "Part", description="Part being ordered."),
        ),
        rows=tuple(
            {"id": index, **row}
            for index, row in enumerate(
                _rows(
                    ("number", "order_date", "part", "supplier", "quantity", "urgent"),
                    _PURCHASE_ORDERS,
                ),
                start=1,
            )
        ),
        mutations=True,
    )
    audit_secret = ManagerSpec(
        name="AuditSecret",
        description="Confidential audit notes about parts; never shown to the chat assistant.",
        fields=(
            Field("name", "str", required=True, description="Short title of the note."),
            Field("note", "str", description="The confidential note."),
        ),
        relations=(ToOne("part", "Part", description="Part the note is about."),),
        rows=_rows(("id", "name", "note", "part"), _AUDIT_SECRETS),
        exposed=False,
    )
    return DemoSpec(
        name="inventory",
        managers=(material, supplier, part, project, purchase_order, audit_secret),
    )

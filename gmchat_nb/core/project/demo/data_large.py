"""The "large" demo: hundreds or thousands of managers, to exercise search and schema size.

Names combine a domain prefix and a noun (``FleetVehicle``, ``InvoiceLine``). Manager ``i`` takes
prefix ``i mod P`` and noun ``(i mod P + i div P) mod N``, so neighbours differ in both words and
every name up to ``P * N`` is unique (the noun index walks a different diagonal per round).
"""

from __future__ import annotations

import datetime

from .names import plural
from .spec import DemoSpec, Field, FieldType, ManagerSpec, ToOne

__all__ = ["MAX_MANAGERS", "check_size", "large_spec"]

_PREFIXES = (
    "Fleet", "Invoice", "Warehouse", "Payroll", "Clinical", "Marketing", "Customer", "Vendor",
    "Asset", "Budget", "Contract", "Facility", "Freight", "Stock", "Lab", "Legal",
    "Loyalty", "Maintenance", "Network", "Patient", "Pension", "Pharmacy", "Procurement",
    "Quality", "Recruiting", "Research", "Retail", "Safety", "Sales", "Security", "Shipping",
    "Support", "Tax", "Training", "Travel", "Treasury", "Billing", "Campus", "Catering",
    "Claims", "Compliance", "Course", "Credit", "Dental", "Donor", "Energy", "Event", "Export",
    "Farm", "Field", "Finance", "Grant", "Hotel", "Import", "Insurance", "Kitchen", "Lease",
    "Library", "Loan", "Media", "Mining", "Museum", "Nursing", "Office", "Parking", "Partner",
    "Pipeline", "Port", "Print", "Radio", "Railway", "Rental", "Route", "School", "Solar",
    "Studio", "Survey", "Telecom", "Ticket", "Tooling", "Tourism", "Utility", "Water", "Wind",
)  # fmt: skip

_NOUNS = (
    "Vehicle", "Line", "Bin", "Shift", "Trial", "Campaign", "Account", "Batch", "Booking",
    "Branch", "Bundle", "Case", "Channel", "Check", "Claim", "Client", "Contact", "Crew",
    "Cycle", "Deal", "Delivery", "Device", "Dock", "Draft", "Entry", "Estimate", "Fee",
    "Forecast", "Grade", "Hazard", "Incident", "Inspection", "Item", "Job", "Journal", "Kit",
    "Label", "Ledger", "License", "Lot", "Meter", "Milestone", "Note", "Offer", "Outage",
    "Pallet", "Payment", "Permit", "Plan", "Policy", "Quote", "Rate", "Reading", "Receipt",
    "Record", "Refund", "Region", "Report", "Request", "Reservation", "Review", "Rule",
    "Sample", "Schedule", "Seat", "Segment", "Sensor", "Session", "Site", "Slot", "Sponsor",
    "Stage", "Station", "Task", "Team", "Template", "Tender", "Transfer", "Unit", "Visit",
    "Voucher", "Zone",
)  # fmt: skip

MAX_MANAGERS = 5000
"""The largest ``manager_count`` :func:`large_spec` accepts."""

_STATUSES = ("active", "inactive", "pending", "archived")
# (field name, type, description, phrase used in the manager description)
_EXTRA_FIELDS: tuple[tuple[str, FieldType, str, str], ...] = (
    ("quantity", "int", "Quantity on record.", "a quantity"),
    ("amount", "float", "Amount in the reporting currency.", "an amount"),
    ("due_date", "date", "Date the record is due.", "a due date"),
    ("flagged", "bool", "True when the record is flagged for review.", "a review flag"),
)


def _words(index: int) -> tuple[str, str]:
    prefix = index % len(_PREFIXES)
    noun = (prefix + index // len(_PREFIXES)) % len(_NOUNS)
    return _PREFIXES[prefix], _NOUNS[noun]


def _extra_value(index: int) -> object:
    kind = _EXTRA_FIELDS[index % len(_EXTRA_FIELDS)][1]
    if kind == "int":
        return index * 7 % 100 + 1
    if kind == "float":
        return round(index * 1.5 + 10, 2)
    if kind == "date":
        return (datetime.date(2025, 1, 1) + datetime.timedelta(days=index % 365)).isoformat()
    return index % 3 == 0


def _manager(index: int, next_name: str | None) -> ManagerSpec:
    prefix, noun = _words(index)
    extra_name, extra_type, extra_description, extra_phrase = _EXTRA_FIELDS[index % 4]
    code = f"{prefix[:2].upper()}{noun[0]}-{index + 1:04d}"
    row: dict[str, object] = {
        "id": 1,
        "name": f"{prefix} {noun} 1",
        "code": code,
        "status": _STATUSES[index // 2 % len(_STATUSES)],
        extra_name: _extra_value(index),
    }
    relations: tuple[ToOne, ...] = ()
    if next_name is not None:
        relations = (ToOne("next_item", next_name, description=f"The linked {next_name}."),)
        row["next_item"] = 1
    return ManagerSpec(
        name=prefix + noun,
        description=f"{plural(noun)} managed by the {prefix.lower()} domain: name, code, status "
        f"and {extra_phrase}.",
        fields=(
            Field("name", "str", required=True, description=f"Name of the {noun.lower()}."),
            Field("code", "str", description=f"Reference code such as {code}."),
            Field("status", "str", description="Lifecycle status: " + ", ".join(_STATUSES) + "."),
            Field(extra_name, extra_type, description=extra_description),
        ),
        relations=relations,
        rows=(row,),
    )


def check_size(manager_count: int, chain_length: int) -> None:
    """Raise :class:`ValueError` unless ``1 <= manager_count <= 5000`` and ``chain_length >= 0``."""
    if not 1 <= manager_count <= MAX_MANAGERS:
        raise ValueError(f"manager_count must be between 1 and {MAX_MANAGERS}, got {manager_count}")
    if chain_length < 0:
        raise ValueError(f"chain_length must not be negative, got {chain_length}")


def large_spec(manager_count: int = 150, chain_length: int = 8) -> DemoSpec:
    """``manager_count`` exposed managers with one row each and no mutations.

    Manager ``i`` links to manager ``i + 1`` through ``next_item`` for ``i < chain_length``, a
    chain of ``chain_length + 1`` managers; the chain is shortened to fit small counts.
    Raises :class:`ValueError` unless ``1 <= manager_count <= 5000`` and ``chain_length >= 0``.
    """
    check_size(manager_count, chain_length)
    chain = min(chain_length, manager_count - 1)
    names = ["".join(_words(index)) for index in range(manager_count)]
    managers = tuple(
        _manager(index, names[index + 1] if index < chain else None)
        for index in range(manager_count)
    )
    return DemoSpec(name="large", managers=managers)

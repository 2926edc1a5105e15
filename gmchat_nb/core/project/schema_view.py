"""The JSON a model sees for a manager: ``search_managers`` summaries and ``get_manager_schema``."""

from __future__ import annotations

from typing import Any

from ..digest import digest
from .index import ManagerInfo, SchemaIndex

__all__ = ["manager_schema", "manager_summary"]

SUMMARY_FIELDS = 12


def manager_summary(info: ManagerInfo, matched: tuple[str, ...] = ()) -> dict[str, Any]:
    """A compact description: enough to pick the right manager, not to query it."""
    summary: dict[str, Any] = {"manager": info.name}
    if info.description:
        summary["description"] = info.description
    plain = [item.name for item in info.fields]
    summary["fields"] = plain[:SUMMARY_FIELDS] + (["..."] if len(plain) > SUMMARY_FIELDS else [])
    if info.relations:
        summary["relations"] = {relation.name: relation.target for relation in info.relations}
    if matched:
        summary["matched"] = list(matched)
    return summary


def manager_schema(index: SchemaIndex, info: ManagerInfo) -> dict[str, Any]:
    """Everything needed to query (and change) one manager, plus a content ``snapshot`` hash.

    The snapshot is a SHA-256 over the canonical JSON of the rest, so it is the same in every
    process and after every restart for as long as the schema itself is unchanged.
    """
    view: dict[str, Any] = {"manager": info.name}
    if info.description:
        view["description"] = info.description
    view["type"] = info.type_name
    view["roots"] = [root.name for root in info.roots]
    view["fields"] = {item.name: _field(item) for item in info.fields}
    view["relations"] = {
        relation.name: {
            "target": relation.target,
            "kind": "many" if relation.many else "one",
            "path": list(relation.path),
            **({"description": relation.description} if relation.description else {}),
        }
        for relation in info.relations
    }
    view["filters"] = {item.field: _filter(item) for item in info.filters}
    view["order_by"] = list(info.order_fields)
    view["root_arguments"] = {
        root.name: {arg.name: arg.describe() for arg in root.arguments} for root in info.roots
    }
    if info.mutations:
        view["mutations"] = {
            mutation.name: {
                "action": mutation.action,
                "arguments": {arg.name: arg.describe() for arg in mutation.arguments},
            }
            for mutation in info.mutations
        }
    view["example"] = _example(index, info)
    view["snapshot"] = digest(view)
    return view


def _field(item: Any) -> dict[str, Any]:
    described: dict[str, Any] = {"type": item.type}
    if item.subfields:
        described["parts"] = list(item.subfields)
    if item.arguments:
        described["arguments"] = {arg.name: arg.describe() for arg in item.arguments}
    if item.description:
        described["description"] = item.description
    return described


def _filter(item: Any) -> dict[str, Any]:
    if item.relation is not None:
        described: dict[str, Any] = {
            "relation": item.relation,
            "kind": "many" if item.many else "one",
        }
        if item.modes:
            described["modes"] = list(item.modes)
        return described
    return {"type": item.type, "lookups": list(item.lookups)}


def _example(index: SchemaIndex, info: ManagerInfo) -> dict[str, Any]:
    """A query on this manager that is valid as written, to copy the shape from."""
    plain = [item.name for item in info.fields if not item.subfields]
    fields: list[Any] = [name for name in plain if name != "id"][:3] or plain[:1]
    example: dict[str, Any] = {"manager": info.name, "fields": fields}
    to_one = next((r for r in info.relations if not r.many), None)
    if to_one is not None:
        target = index.managers[to_one.target]
        target_plain = [item.name for item in target.fields if not item.subfields]
        label = "name" if "name" in target_plain else (target_plain or ["id"])[0]
        fields.append({to_one.name: [label]})
    text_filter = next(
        (f for f in info.filters if f.type == "String" and "icontains" in f.lookups), None
    )
    if text_filter is not None:
        example["filters"] = {f"{text_filter.field}__icontains": "..."}
    if info.order_fields:
        example["order_by"] = [f"-{info.order_fields[min(1, len(info.order_fields) - 1)]}"]
    example["limit"] = 20
    return example

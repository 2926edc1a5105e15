"""What a planned turn's executor model is offered: the read tools (and ``chart`` when charts
are on), the ``query`` tool typed for the task's candidate managers (their names, field names
and filter paths as enums), never ``mutate``."""

from __future__ import annotations

import json
from typing import Any

from ..charts.tool import CHART
from ..project.tools import TOOLS
from ..providers.base import ToolDefinition
from .work import TurnWork

__all__ = ["READ_TOOLS", "executor_tools"]

READ_TOOLS = tuple(tool.name for tool in TOOLS if tool.reads)
_MAX_FILTER_NAMES = 80


def executor_tools(work: TurnWork) -> list[ToolDefinition]:
    """The read tools (and ``chart`` when charts are on), with ``query`` typed for the
    candidate managers when there are any."""
    definitions = [ToolDefinition.from_dict(item) for item in _read_definitions(work)]
    if work.charts:
        definitions.append(ToolDefinition.from_dict(CHART.definition()))
    if not work.schemas:
        return definitions
    managers = list(work.schemas)
    fields: list[str] = []
    filters: list[str] = []
    for schema in work.schemas.values():
        fields.extend(schema.get("fields", {}))
        fields.extend(schema.get("relations", {}))
        for name, spec in schema.get("filters", {}).items():
            filters.append(name)
            filters.extend(
                f"{name}__{lookup}" for lookup in spec.get("lookups", ()) if lookup != "exact"
            )
    typed = []
    for definition in definitions:
        if definition.name != TOOLS.query.name:
            typed.append(definition)
            continue
        schema = json.loads(json.dumps(definition.input_schema))
        properties = schema["properties"]
        properties["manager"] = {"type": "string", "enum": managers}
        properties["fields"]["items"] = {
            "anyOf": [
                {"type": "string", "enum": sorted(set(fields))},
                {"$ref": "#/$defs/fieldSelection"},
            ]
        }
        unique_filters = sorted(set(filters))
        if len(unique_filters) <= _MAX_FILTER_NAMES:
            properties["filters"]["propertyNames"] = {"enum": unique_filters}
        typed.append(ToolDefinition(definition.name, definition.description, schema))
    return typed


def _read_definitions(work: TurnWork) -> list[dict[str, Any]]:
    return [tool.definition() for tool in TOOLS if tool.reads]

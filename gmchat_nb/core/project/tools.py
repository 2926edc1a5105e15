"""The chat tools: their definitions (what a model is offered) and their dispatch.

They are the project's API — ``Project.call_tool`` and ``Project.tool_definitions`` are these —
so they live in the project package, below the loop that calls them.

Tool names and argument names are the contract of spec/chat-api-reference.txt ("Chat tools").
Dispatch never raises: a bad argument, an unknown manager, a GraphQL error or a bug in a tool
comes back to the model as ``{"status": "error", "code": ..., "message": ...}``, which it can read
and correct.
"""

from __future__ import annotations

import copy
import functools
import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .errors import ToolError
from .names import MAX_NAME_LENGTH, clip, did_you_mean, suggestion_hint

if TYPE_CHECKING:  # Project imports this module: the names are for annotations only
    from .project import Project, QueryOutcome

__all__ = [
    "DISCOVERY_TOOLS",
    "ToolRun",
    "discovery_tool_definitions",
    "dispatch",
    "is_read_tool",
    "run_tool",
    "tool_definitions",
]

log = logging.getLogger(__name__)

DISCOVERY_TOOLS = ("search_managers", "get_manager_schema", "find_path", "query", "mutate")
DIRECT_PREFIX = "query_"

_FIELD_SELECTION: dict[str, Any] = {
    "oneOf": [
        {"type": "string", "description": "A field name, or '*' for every plain field."},
        {
            "type": "object",
            "description": 'A relation and its fields, e.g. {"material": ["name"]}.',
            "minProperties": 1,
            "maxProperties": 1,
            "additionalProperties": {"type": "array", "items": {"$ref": "#/$defs/fieldSelection"}},
        },
        {
            "type": "object",
            "description": "A field with arguments, e.g. a filtered nested list.",
            "properties": {
                "field": {"type": "string"},
                "arguments": {"type": "object"},
                "fields": {"type": "array", "items": {"$ref": "#/$defs/fieldSelection"}},
            },
            "required": ["field"],
            "additionalProperties": False,
        },
    ]
}

_QUERY_PROPERTIES: dict[str, Any] = {
    "manager": {"type": "string", "description": "The manager to list, e.g. 'Part'."},
    "fields": {
        "type": "array",
        "minItems": 1,
        "items": {"$ref": "#/$defs/fieldSelection"},
        "description": 'Fields of each row: ["name", {"material": ["name"]}]. Nested lists may '
        "omit their items wrapper.",
    },
    "filters": {
        "type": "object",
        "description": 'Native GraphQL filter names ({"name_Icontains": "bolt"}, '
        '{"material": {"name": "Steel"}}, {"partsList": {"any": {...}}}) or Django-style '
        'paths ({"material__name__icontains": "steel"}).',
    },
    "exclude": {"type": "object", "description": "Rows to leave out; same format as filters."},
    "order_by": {
        "type": "array",
        "items": {"type": ["string", "object"]},
        "description": 'Field names, \'-name\' for descending, or [{"field": ..., "direction": '
        '"ASC"|"DESC"}].',
    },
    "limit": {"type": "integer", "minimum": 1, "description": "Rows to return (capped)."},
    "offset": {"type": "integer", "minimum": 0, "description": "Rows to skip, exactly."},
    "root": {"type": "string", "description": "A list root other than the default."},
    "arguments": {"type": "object", "description": "Native root arguments (advanced)."},
}

_DESCRIPTIONS = {
    "search_managers": "Find the data types (managers) that match some words, best first. Use it "
    "when you do not know which manager holds the data.",
    "get_manager_schema": "Show one manager's fields, relations, filters with their lookups, "
    "order fields and mutations, with an example query. Read it before querying.",
    "find_path": "The relation path from one manager to another, as GraphQL selection names, with "
    "a fields example that walks it.",
    "query": "Read rows of one manager: filters, fields (relations nested), order_by, limit and "
    "offset. Returns data, total_count, has_more and complete (true only when data is the whole "
    "result).",
    "mutate": "Run one allow-listed mutation (create/update/delete) with its input. Only when the "
    "user clearly asked for a change; never together with another tool call.",
}


@functools.cache
def _schemas() -> dict[str, dict[str, Any]]:
    """The input schemas (built once; callers outside this module get copies)."""
    return {
        "search_managers": _object(
            {
                "query": {"type": "string", "description": "Words describing the data."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            ["query"],
        ),
        "get_manager_schema": _object({"manager": {"type": "string"}}, ["manager"]),
        "find_path": _object(
            {"from_manager": {"type": "string"}, "to_manager": {"type": "string"}},
            ["from_manager", "to_manager"],
        ),
        "query": {
            **_object(_QUERY_PROPERTIES, ["manager", "fields"]),
            "$defs": {"fieldSelection": _FIELD_SELECTION},
        },
        "mutate": _object(
            {
                "mutation": {"type": "string", "description": "The GraphQL mutation name."},
                "input": {"type": "object", "description": "Its arguments."},
            },
            ["mutation", "input"],
        ),
    }


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


def discovery_tool_definitions() -> list[dict[str, Any]]:
    """``[{name, description, input_schema}]`` of the discovery tools (fresh copies)."""
    schemas = copy.deepcopy(_schemas())
    return [
        {"name": name, "description": _DESCRIPTIONS[name], "input_schema": schemas[name]}
        for name in DISCOVERY_TOOLS
    ]


def tool_definitions(project: Project, strategy: str = "discovery") -> list[dict[str, Any]]:
    """``[{name, description, input_schema}]`` for ``strategy`` "discovery" or "direct".

    ``direct`` keeps the discovery tools and adds one ``query_<manager>`` tool per exposed manager
    with the manager fixed (GeneralManager drops the other tools, leaving no way to mutate).
    """
    tools = discovery_tool_definitions()
    if strategy == "discovery":
        return tools
    if strategy != "direct":
        raise ValueError(f"tool_strategy must be 'discovery' or 'direct', not {strategy!r}")
    properties = {k: v for k, v in _QUERY_PROPERTIES.items() if k != "manager"}
    for manager in project.index.managers.values():
        description = f"Query {manager.name} records directly."
        if manager.description:
            description += f" {manager.description}"
        tools.append(
            {
                "name": direct_tool_name(manager.name),
                "description": description,
                "input_schema": {
                    **_object(properties, ["fields"]),
                    "$defs": {"fieldSelection": _FIELD_SELECTION},
                },
            }
        )
    return tools


def direct_tool_name(manager: str) -> str:
    """``query_part``, ``query_purchaseorder`` (GeneralManager's spelling)."""
    return f"{DIRECT_PREFIX}{manager.lower()}"


@dataclass(frozen=True, slots=True)
class ToolRun:
    """A tool's JSON result, and for a successful query the evidence behind it."""

    result: Any
    outcome: QueryOutcome | None = None

    @property
    def failed(self) -> bool:
        """True for an error result."""
        return isinstance(self.result, dict) and self.result.get("status") == "error"


async def dispatch(project: Project, name: object, args: Any) -> Any:
    """Run one tool call and return its JSON result, errors included."""
    return (await run_tool(project, name, args)).result


async def run_tool(project: Project, name: object, args: Any) -> ToolRun:
    """Run one tool call; never raises. Queries also return their :class:`QueryOutcome`.

    ``name`` may be anything a caller sent: a non-string is an unknown tool like any other.
    """
    try:
        if not isinstance(name, str):
            raise _unknown_tool(project, name)
        return await _dispatch(project, name, args)
    except ToolError as error:
        return ToolRun(error.to_result())
    except Exception:  # a bug must not end the turn; the model gets a plain error
        log.exception("tool %s failed", clip(name))
        return ToolRun(
            {
                "status": "error",
                "code": "tool_failed",
                "message": f"The {clip(name)} tool failed unexpectedly; try a simpler call.",
            }
        )


async def _dispatch(project: Project, name: str, args: Any) -> ToolRun:
    if isinstance(args, str):
        try:
            args = json.loads(args) if args.strip() else {}
        except ValueError:
            raise ToolError(
                "invalid_arguments", f"The arguments of {clip(name)} are not valid JSON."
            ) from None
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(
            "invalid_arguments", f"The arguments of {clip(name)} must be a JSON object."
        )
    schemas = _schemas()
    if len(name) > MAX_NAME_LENGTH:
        raise _unknown_tool(project, name)
    if name.startswith(DIRECT_PREFIX) and name not in schemas:
        manager = project.index.find(name[len(DIRECT_PREFIX) :])
        if manager is None or direct_tool_name(manager.name) != name:
            raise _unknown_tool(project, name)
        _check_arguments(
            name, args, {k: v for k, v in _QUERY_PROPERTIES.items() if k != "manager"}, ["fields"]
        )
        outcome = await project.query(**{**args, "manager": manager.name})
        return ToolRun(outcome.to_result(), outcome)
    schema = schemas.get(name)
    if schema is None:
        raise _unknown_tool(project, name)
    _check_arguments(name, args, schema["properties"], schema["required"])
    if name == "search_managers":
        return ToolRun(project.search_managers(args["query"], args.get("limit", 10)))
    if name == "get_manager_schema":
        return ToolRun(project.get_manager_schema(args["manager"]))
    if name == "find_path":
        return ToolRun(project.find_path(args["from_manager"], args["to_manager"]))
    if name == "query":
        outcome = await project.query(**args)
        return ToolRun(outcome.to_result(), outcome)
    return ToolRun(await project.mutate(args["mutation"], args["input"]))


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "object": (dict,),
    "array": (list,),
}


def _check_arguments(
    tool: str, args: dict[str, Any], properties: dict[str, Any], required: list[str]
) -> None:
    unknown = [key for key in args if key not in properties]
    if unknown:
        raise ToolError(
            "invalid_arguments",
            f"{tool} does not take {', '.join(repr(clip(k)) for k in unknown)}; "
            f"it takes {', '.join(repr(k) for k in properties)}.",
        )
    missing = [key for key in required if args.get(key) is None]
    if missing:
        raise ToolError("invalid_arguments", f"{tool} needs {', '.join(repr(k) for k in missing)}.")
    for key, value in args.items():
        expected = properties[key].get("type")
        if value is None or not isinstance(expected, str) or expected not in _JSON_TYPES:
            continue
        if isinstance(value, bool) or not isinstance(value, _JSON_TYPES[expected]):
            if expected == "array" and key == "order_by" and isinstance(value, str | dict):
                continue  # a single ordering is fine
            raise ToolError(
                "invalid_arguments",
                f"'{key}' of {tool} must be {'an' if expected[0] in 'aeiou' else 'a'} {expected}; "
                f"got {type(value).__name__}.",
            )


def _unknown_tool(project: Project, name: object) -> ToolError:
    names = list(DISCOVERY_TOOLS) + [direct_tool_name(m) for m in project.managers]
    if not isinstance(name, str):
        return ToolError(
            "unknown_tool",
            f"Tool names are strings, not {type(name).__name__}. Tools: {', '.join(names)}.",
        )
    suggestions = did_you_mean(name, names)
    hint = suggestion_hint(suggestions)
    return ToolError("unknown_tool", f"Unknown tool '{clip(name)}'.{hint}")


def is_read_tool(name: str) -> bool:
    """Every tool but ``mutate`` only reads."""
    return name != "mutate"

"""The chat tools: their one declaration each (:data:`TOOLS`), their definitions (what a model is
offered) and their dispatch.

They are the project's API — ``Project.call_tool`` and ``Project.tool_definitions`` are these —
so they live in the project package, below the loop that calls them.

Each tool is declared once, here, as a :class:`Tool`: its name, description, argument schema,
whether it reads or writes, the evidence it yields and its lines in the system prompt. Everything
else that needs a tool's name or facts (the prompt, the planned executors, the offline and
constrained providers, the sessions, the eval oracle) reads them from :data:`TOOLS`
(``TOOLS.find_path.name``); tests/test_architecture.py holds every other module to that.

Tool names and argument names are GeneralManager 0.87's chat API ("Chat tools").
Dispatch never raises: a bad argument, an unknown manager, a GraphQL error or a bug in a tool
comes back to the model as ``{"status": "error", "code": ..., "message": ...}``, which it can read
and correct.

Over 400 lines: the tools' single declaration (:data:`TOOLS`) and their dispatch belong
together: the registry is what dispatch checks arguments against.
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal

from .errors import ToolError
from .names import MAX_NAME_LENGTH, clip, did_you_mean, suggestion_hint

if TYPE_CHECKING:  # Project imports this module: the names are for annotations only
    from .project import Project, QueryOutcome

__all__ = [
    "DISCOVERY_TOOLS",
    "TOOLS",
    "Tool",
    "ToolAccess",
    "ToolEvidence",
    "ToolRegistry",
    "ToolRun",
    "check_call",
    "discovery_tool_definitions",
    "dispatch",
    "is_read_tool",
    "run_tool",
    "tool_definitions",
]

log = logging.getLogger(__name__)

ToolAccess = Literal["read", "write"]
ToolEvidence = Literal["schema", "path", "query"]
"""The kind of evidence record a tool's successful call becomes in a planned turn
(``task_1:path:1``); the same words name the plan's requirements it satisfies."""


@dataclass(frozen=True, slots=True)
class Tool:
    """One chat tool, declared once: everything the package knows of it without running it."""

    name: str
    """What a model calls it."""
    description: str
    """Its description in the tool definitions sent to providers."""
    parameters: Mapping[str, Any] = field(compare=False, repr=False)
    """The JSON schema of its arguments (shared and never changed: :meth:`definition` copies)."""
    access: ToolAccess
    """``read``, or ``write`` for a tool that changes data (the loop runs it alone)."""
    evidence: ToolEvidence | None
    """What a successful call becomes in a planned turn; ``None``: never evidence."""
    prompt_lines: tuple[str, ...]
    """What the system prompt's rules say of it (:mod:`gmchat_nb.core.prompt` lays them out)."""

    @property
    def reads(self) -> bool:
        """Whether it only reads."""
        return self.access == "read"

    def definition(self) -> dict[str, Any]:
        """``{name, description, input_schema}`` (a fresh copy of the schema)."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": dict(copy.deepcopy(self.parameters)),
        }


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
    "manager": {"type": "string", "description": "e.g. 'Part'."},
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
    "exclude": {"type": "object", "description": "Rows to leave out (as filters)."},
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


def _object(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": False,
    }


@dataclass(frozen=True, slots=True)
class ToolRegistry:
    """The chat tools, one attribute per tool (named as the tool), in the order they are offered."""

    search_managers: Tool
    get_manager_schema: Tool
    find_path: Tool
    query: Tool
    mutate: Tool

    def __post_init__(self) -> None:
        for item in fields(self):
            declared = getattr(self, item.name).name
            if declared != item.name:
                raise ValueError(f"TOOLS.{item.name} declares the tool {declared!r}")

    def __iter__(self) -> Iterator[Tool]:
        return (getattr(self, item.name) for item in fields(self))

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool's name, in order."""
        return tuple(tool.name for tool in self)

    def get(self, name: object) -> Tool | None:
        """The tool called ``name``; ``None`` for any other name (a direct ``query_<manager>``
        tool is not declared here: :func:`tool_definitions` derives them from ``query``)."""
        if not isinstance(name, str):
            return None
        return _BY_NAME.get(name)  # every call asks: a lookup, not a walk of the fields


TOOLS = ToolRegistry(
    search_managers=Tool(
        name="search_managers",
        description="Find the data types (managers) that match some words, best first. Use it "
        "when you do not know which manager holds the data.",
        parameters=_object(
            {
                "query": {"type": "string", "description": "Words describing the data."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            ["query"],
        ),
        access="read",
        evidence="schema",
        prompt_lines=("Unsure which manager holds the data? search_managers.",),
    ),
    get_manager_schema=Tool(
        name="get_manager_schema",
        description="Show one manager's fields, relations, filters with their lookups, order "
        "fields and mutations, with an example query. Read it before querying.",
        parameters=_object({"manager": {"type": "string"}}, ["manager"]),
        access="read",
        evidence="schema",
        prompt_lines=("Unsure of fields or filters? get_manager_schema.",),
    ),
    find_path=Tool(
        name="find_path",
        description="The relation path from one manager to another, as GraphQL selection names, "
        "with a fields example that walks it.",
        parameters=_object(
            {"from_manager": {"type": "string"}, "to_manager": {"type": "string"}},
            ["from_manager", "to_manager"],
        ),
        access="read",
        evidence="path",
        prompt_lines=(
            "Questions across managers: find_path, then query the manager whose rows the user "
            'asked for, filtering through the path (e.g. {"parts__material__name__icontains": '
            '"steel"}).',
        ),
    ),
    query=Tool(
        name="query",
        description="Read rows of one manager. Returns data, total_count, has_more and complete "
        "(true only when data is the whole result).",
        parameters={
            **_object(_QUERY_PROPERTIES, ["manager", "fields"]),
            "$defs": {"fieldSelection": _FIELD_SELECTION},
        },
        access="read",
        evidence="query",
        prompt_lines=(
            "After a successful query, answer; do not repeat it with other syntax. Use offset to "
            "read further pages.",
        ),
    ),
    mutate=Tool(
        name="mutate",
        description="Run one allow-listed mutation (create/update/delete) with its input. Only "
        "when the user clearly asked for a change; never together with another tool call.",
        parameters=_object(
            {
                "mutation": {"type": "string", "description": "The GraphQL mutation name."},
                "input": {"type": "object", "description": "Its arguments."},
            },
            ["mutation", "input"],
        ),
        access="write",
        evidence=None,
        prompt_lines=(
            "Only mutate when the user clearly asks to create, change or delete something; "
            '"what would happen if" is a read.',
            "Call mutate alone, never with another tool in the same step. The user may have to "
            "confirm; report what happened.",
        ),
    ),
)
"""The chat tools, each declared once (``TOOLS.find_path.name``, ``for tool in TOOLS``)."""
_BY_NAME: dict[str, Tool] = {tool.name: tool for tool in TOOLS}

DISCOVERY_TOOLS = TOOLS.names
"""The tools of the ``discovery`` strategy, in the order they are offered."""
DIRECT_PREFIX = "query_"
"""``direct`` adds ``query_<manager>`` tools (GeneralManager's spelling)."""


def discovery_tool_definitions() -> list[dict[str, Any]]:
    """``[{name, description, input_schema}]`` of the discovery tools (fresh copies)."""
    return [tool.definition() for tool in TOOLS]


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
    properties = _direct_properties()
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


def _direct_properties() -> dict[str, Any]:
    """A direct tool's arguments: the query tool's, but the manager (the tool fixes it)."""
    return {k: v for k, v in TOOLS.query.parameters["properties"].items() if k != "manager"}


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


async def run_tool(project: Project, name: object, args: Any, *, checked: bool = False) -> ToolRun:
    """Run one tool call; never raises. Queries also return their :class:`QueryOutcome`.

    ``name`` may be anything a caller sent: a non-string is an unknown tool like any other.
    ``checked``: the call already passed :func:`check_call` (the tool-call pipeline's arguments
    stage), so it is not checked twice.
    """
    try:
        if not checked:
            name, args = check_call(project, name, args)
        assert isinstance(name, str)
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


def check_call(project: Project, name: object, args: Any) -> tuple[str, dict[str, Any]]:
    """A call's name and arguments checked against the tool's declaration (arguments given as
    JSON text are parsed; none are ``{}``), or the :class:`ToolError` the model can correct: an
    unknown tool (with "did you mean"), arguments that are no object, an argument the tool does
    not take, one it needs, one of the wrong JSON type."""
    if not isinstance(name, str):
        raise _unknown_tool(project, name)
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
    tool = TOOLS.get(name)
    if len(name) > MAX_NAME_LENGTH:
        raise _unknown_tool(project, name)
    if name.startswith(DIRECT_PREFIX) and tool is None:
        manager = project.index.find(name[len(DIRECT_PREFIX) :])
        if manager is None or direct_tool_name(manager.name) != name:
            raise _unknown_tool(project, name)
        _check_arguments(name, args, _direct_properties(), ["fields"])
        return name, args
    if tool is None:
        raise _unknown_tool(project, name)
    _check_arguments(name, args, tool.parameters["properties"], tool.parameters["required"])
    return name, args


async def _dispatch(project: Project, name: str, args: dict[str, Any]) -> ToolRun:
    """A checked call, run."""
    tool = TOOLS.get(name)
    if tool is None:  # a direct query_<manager> tool (check_call found its manager)
        manager = project.index.find(name[len(DIRECT_PREFIX) :])
        assert manager is not None
        outcome = await project.query(**{**args, "manager": manager.name})
        return ToolRun(outcome.to_result(), outcome)
    if tool is TOOLS.search_managers:
        return ToolRun(project.search_managers(args["query"], args.get("limit", 10)))
    if tool is TOOLS.get_manager_schema:
        return ToolRun(project.get_manager_schema(args["manager"]))
    if tool is TOOLS.find_path:
        return ToolRun(project.find_path(args["from_manager"], args["to_manager"]))
    if tool is TOOLS.query:
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


# The tools that write, named once: a turn asks is_read_tool several times a tool call, and the
# registry's get() walks its fields each time.
_WRITE_TOOLS = frozenset(tool.name for tool in TOOLS if not tool.reads)


def is_read_tool(name: str) -> bool:
    """Whether a call of ``name`` only reads: every tool but those declared ``write`` (``mutate``);
    a direct ``query_<manager>`` tool or an unknown name changes nothing either."""
    try:
        return name not in _WRITE_TOOLS
    except TypeError:  # a malformed call's name that is no string (a list): no tool of ours
        return True

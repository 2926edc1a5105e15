"""The chat's tools as an MCP server, with the official SDK's high-level API (``MCPServer``).

Each tool of the :class:`~gmchat_nb.core.agent.AgentToolbox` becomes one SDK tool that keeps the
chat registry's own JSON schema (the SDK would otherwise derive one from a Python signature) and
hands the raw arguments to the toolbox, which checks them itself: a bad argument is a tool
result with ``isError`` that the agent can correct, never a protocol error. Query results are
structured content (``rows``, ``total``, ``has_more``) with a text rendering.

Resources: ``gmchat://managers`` (the exposed managers) and ``gmchat://managers/{name}/schema``
(one manager's schema). A change that must be confirmed asks the agent's user through MCP
elicitation where the client can answer it (``elicit``), with the validated input shown.
"""

from __future__ import annotations

import json
from typing import Any, cast

from mcp.server.mcpserver import AcceptedElicitation, Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.tools import Tool
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from ..core.agent import AgentTool, AgentToolbox, AskHuman, PendingChange
from ..core.guards.invisible import HIDDEN_WARNING, mark_invisible

__all__ = ["SERVER_NAME", "build_server"]

SERVER_NAME = "gmchat"
INSTRUCTIONS = (
    "Tools over a GeneralManager project's data. Find the data type with search_managers, read "
    "its schema with get_manager_schema (or the gmchat://managers resources), then query it. "
    "Changes (mutate) are allow-listed and may wait for a person to confirm them."
)
MANAGERS_URI = "gmchat://managers"


class Decision(BaseModel):
    """What the agent's user is asked about a change."""

    confirm: bool = Field(description="Run this change now?")


class RegistryTool(Tool):
    """An SDK tool whose schema is the chat registry's and whose arguments the toolbox checks."""

    declared_output: dict[str, Any] | None = None

    @property
    def output_schema(self) -> dict[str, Any] | None:
        return self.declared_output

    async def run(
        self, arguments: dict[str, Any], context: Any, convert_result: bool = False
    ) -> CallToolResult:
        return cast(CallToolResult, await self.fn(arguments, context))


def build_server(toolbox: AgentToolbox, *, elicit: bool = True) -> MCPServer[Any]:
    """An MCP server of ``toolbox``'s tools and resources. ``elicit``: ask a client that can
    answer elicitation about changes (a stateless HTTP server cannot receive the answer)."""
    tools: list[Tool] = [_registry_tool(toolbox, tool, elicit) for tool in toolbox.tools()]
    server: MCPServer[Any] = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, tools=tools)
    server.add_resource(
        FunctionResource(
            uri=MANAGERS_URI,
            name="managers",
            description="The data types (managers) of the project this server exposes.",
            mime_type="application/json",
            fn=lambda: json.dumps(toolbox.managers()),
        )
    )
    for manager in toolbox.managers():
        server.add_resource(
            FunctionResource(
                uri=f"{MANAGERS_URI}/{manager['name']}/schema",
                name=f"{manager['name']} schema",
                description=f"{manager['name']}'s fields, relations, filters and mutations.",
                mime_type="application/json",
                fn=_schema_reader(toolbox, manager["name"]),
            )
        )

    @server.resource(
        MANAGERS_URI + "/{name}/schema",
        name="manager schema",
        description="One manager's fields, relations, filters and mutations.",
        mime_type="application/json",
    )
    def manager_schema(name: str) -> str:
        return str(_schema_reader(toolbox, name)())

    return server


def _schema_reader(toolbox: AgentToolbox, name: str) -> Any:
    def read() -> str:
        schema = toolbox.manager_schema(name)
        if schema is None:  # unknown and hidden alike
            raise ResourceError(f"Unknown manager {name[:64]!r}.")
        return json.dumps(schema)

    return read


def _registry_tool(toolbox: AgentToolbox, tool: AgentTool, elicit: bool) -> RegistryTool:
    async def call(arguments: dict[str, Any], context: Context[Any]) -> CallToolResult:
        ask = _asker(context) if elicit else None
        answer = await toolbox.call(tool.name, arguments, ask=ask)
        return CallToolResult(
            content=[TextContent(type="text", text=answer.text)],
            structured_content=answer.structured,
            is_error=answer.is_error,
        )

    # from_function builds ``cls``: a RegistryTool (its annotation says Tool)
    registered = cast(
        RegistryTool,
        RegistryTool.from_function(
            call,
            name=tool.name,
            title=tool.title,
            description=tool.description,
            annotations=ToolAnnotations(
                title=tool.title,
                read_only_hint=tool.annotations.get("readOnlyHint"),
                destructive_hint=tool.annotations.get("destructiveHint"),
                idempotent_hint=tool.annotations.get("idempotentHint"),
                open_world_hint=tool.annotations.get("openWorldHint"),
            ),
            structured_output=False,
        ),
    )
    registered.parameters = dict(tool.input_schema)
    registered.declared_output = tool.output_schema
    return registered


def _asker(context: Context[Any]) -> AskHuman | None:
    """Elicitation, when the client said it can answer it."""
    capabilities = context.client_capabilities
    if capabilities is None or capabilities.elicitation is None:
        return None

    async def ask(change: PendingChange) -> bool | None:
        stored = json.dumps(change.input, ensure_ascii=False, indent=2, default=str)
        shown, marked = mark_invisible(stored)  # it reads as it is stored, or says so
        warning = f"\n{HIDDEN_WARNING}" if marked else ""
        result = await context.elicit(
            f"An agent asks to run {change.mutation} on the project's data with this input:\n"
            f"{shown}{warning}\nConfirm to run it once; decline and nothing runs.",
            Decision,
        )
        if isinstance(result, AcceptedElicitation):
            return bool(result.data.confirm)
        return False if result.action == "decline" else None

    return ask

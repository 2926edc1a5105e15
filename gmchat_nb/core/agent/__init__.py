"""The chat's tools for agents (the MCP server's core, without the SDK): :class:`AgentToolbox`
declares and runs them; an agent's data change runs as a turn (:mod:`.changes`), its call relayed
as the turn's model (:mod:`.relay`)."""

from .changes import AskHuman, PendingChange
from .guards import AgentGuards
from .toolbox import AgentResult, AgentTool, AgentToolbox

__all__ = [
    "AgentGuards",
    "AgentResult",
    "AgentTool",
    "AgentToolbox",
    "AskHuman",
    "PendingChange",
]

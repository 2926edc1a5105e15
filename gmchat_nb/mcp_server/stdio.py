"""``gmchat mcp``: the MCP server over stdio, for an agent on this machine (Claude Code, Claude
Desktop, Cursor, VS Code, jupyter-ai), under the same settings as the chat.

Its actor is the local user (``local:<user>``), as a notebook's ``Chat`` is, so a change waiting
for confirmation can also be decided by that user's notebook over the same store. stdout carries
the protocol only: every log line goes to stderr.
"""

from __future__ import annotations

from typing import Any

from ..core.agent import AgentToolbox
from ..core.session.actor import Actor
from ..core.session.compose import connect_project, open_store
from ..core.settings import ChatSettings
from .server import build_server

__all__ = ["serve_stdio"]


async def serve_stdio(settings: ChatSettings, *, store: Any = None) -> None:
    """Serve the settings' project to one agent over stdin/stdout until it hangs up."""
    project = await connect_project(settings)
    chat_store = open_store(settings, store)
    try:
        toolbox = AgentToolbox(project, settings, store=chat_store, actor=Actor.local())
        await build_server(toolbox).run_stdio_async()
    finally:
        chat_store.close()
        await project.aclose()

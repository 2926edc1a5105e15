"""``gmchat mcp``: the MCP server over stdio, for an agent on this machine (Claude Code, Claude
Desktop, Cursor, VS Code, jupyter-ai), under the same settings as the chat.

Its actor is the local user (``local:<user>``), as a notebook's ``Chat`` is, so a change waiting
for confirmation can also be decided by that user's notebook over the same store. Who decides an
agent's change is the ``mcp_stdio_decisions`` setting: ``elicitation`` (the default) asks the
agent's host, which shows the question to its person (Claude Code, VS Code, Cursor do);
``person`` never asks the host, so the change waits for a person in a notebook or its widget.
stdout carries the protocol only: every log line goes to stderr.

Each line the agent sends is screened (:mod:`.screen`) before the SDK's stdio transport reads it:
a line that is not JSON is answered ``-32700`` and one that is no valid JSON-RPC message (an id
that is not a string or an integer among them) ``-32600`` -- the SDK alone would drop both
without a word --, and a name longer than any this server has is answered cut, never echoed in
full. The answers go out through the SDK's own writer, so they never interleave with its lines;
the SDK still claims stdout (stray output goes to stderr), while stdin is read in place.
"""

from __future__ import annotations

import io
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator
from typing import Any, cast

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from ..core.agent import AgentToolbox
from ..core.session.actor import Actor
from ..core.session.compose import connect_project, open_store
from ..core.settings import ChatSettings
from .screen import screen
from .server import build_server

__all__ = ["ScreenedLines", "serve_screened", "serve_stdio"]

log = logging.getLogger(__name__)


async def serve_stdio(settings: ChatSettings, *, store: Any = None) -> None:
    """Serve the settings' project to one agent over stdin/stdout until it hangs up."""
    project = await connect_project(settings)
    chat_store = open_store(settings, store)
    try:
        toolbox = AgentToolbox(project, settings, store=chat_store, actor=Actor.local())
        # who decides an agent's change: the host's elicitation, or a person on the same store
        elicit = settings.mcp_stdio_decisions == "elicitation"
        await serve_screened(build_server(toolbox, elicit=elicit))
    finally:
        chat_store.close()
        await project.aclose()


class ScreenedLines:
    """The agent's lines for the SDK's stdio transport, each screened first: what passes is
    handed on, what is refused waits in :attr:`refusals` for its answer."""

    def __init__(self, source: AsyncIterable[str]) -> None:
        self._source = source
        self._refused, self.refusals = anyio.create_memory_object_stream[dict[str, Any]](16)

    async def __aiter__(self) -> AsyncIterator[str]:
        async with self._refused:  # closed at the end of stdin: the answers are all queued
            async for line in self._source:
                if not line.strip():
                    continue  # a blank line is no message (a host's stray newline)
                screened = screen(line)
                if screened.passes and screened.text is not None:
                    yield screened.text
                elif screened.reply is not None:
                    log.info("gmchat answered an MCP message itself (%s)", screened.verdict)
                    await self._refused.send(screened.reply)


async def serve_screened(server: MCPServer[Any]) -> None:
    """Run ``server`` over stdin/stdout with every line screened (what ``run_stdio_async``
    does, with the SDK's transport reading :class:`ScreenedLines` instead of stdin)."""
    lowlevel = server._lowlevel_server  # as the SDK's own in-process clients reach it
    stdin = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace")
    lines = ScreenedLines(anyio.wrap_file(stdin))
    try:
        async with (
            stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream),
            anyio.create_task_group() as group,
        ):
            group.start_soon(_answer, lines.refusals, write_stream.clone())
            options = lowlevel.create_initialization_options()
            await lowlevel.run(read_stream, write_stream, options)
    finally:
        stdin.detach()  # the wrapper is ours, stdin's buffer is not: never close it


async def _answer(refusals: MemoryObjectReceiveStream[dict[str, Any]], write: Any) -> None:
    """Send each refused line's answer through the SDK's writer, until stdin ends."""
    async with refusals, write:
        async for reply in refusals:
            message = types.jsonrpc_message_adapter.validate_python(reply, by_name=False)
            await write.send(SessionMessage(message))

"""The :class:`GMChat` extension app: configuration, routes and shutdown.

Configure it like any Jupyter app (``c.GMChat.provider = "openai:gpt-4.1-mini"`` in
``jupyter_server_config.py``, ``--GMChat.project=demo`` on the command line) and/or point
``c.GMChat.settings_file`` at the same YAML file the notebook side reads. Traits that are set
override the file; ``c.GMChat.chat_settings`` overrides any other chat setting.
"""

from __future__ import annotations

import getpass
from typing import Any

from jupyter_server.auth.identity import IdentityProvider, PasswordIdentityProvider
from jupyter_server.extension.application import ExtensionApp
from traitlets import Dict, Float, Int, Unicode

from ..core.settings import ChatSettings, load_settings
from .agent_tokens import AgentTokenHandler, AgentTokensHandler
from .charts import TurnChartHandler
from .durable import (
    CancelHandler,
    ConversationEventsHandler,
    ConversationTurnsHandler,
    TurnEvidenceHandler,
    TurnsHandler,
)
from .handlers import ChatHandler, ConfirmHandler, ConversationsHandler
from .knowledge import (
    DEFAULT_IMPORT_BYTES,
    ENTRY_ID,
    KnowledgeAcceptHandler,
    KnowledgeEntryHandler,
    KnowledgeListHandler,
)
from .knowledge_exchange import (
    ConversationKnowledgeHandler,
    KnowledgeCheckHandler,
    KnowledgeExportHandler,
    KnowledgeFromTurnHandler,
    KnowledgeImportHandler,
)
from .mcp import MCPBridge, MCPHandler, MCPMissingHandler, mcp_installed
from .notebook import ConversationNotebookHandler
from .sessions import ChatRuntime
from .sse import StreamHandler
from .usage import UsageHandler
from .websocket import ChatSocket

__all__ = ["GMChat"]

MCP_ROUTE = "/gmchat/mcp/?"  # under base_url, fixed: the chat setting url moves the chat's routes


class GMChat(ExtensionApp):
    """Runs gmchat sessions in the Jupyter server process."""

    name = "gmchat_nb"
    description = "gmchat: chat with a GeneralManager project through Jupyter Server"
    load_other_extensions = True

    settings_file = Unicode(
        None, allow_none=True, config=True, help="The chat settings YAML (the notebook's file)."
    )
    provider = Unicode(
        None, allow_none=True, config=True, help="Provider spec, e.g. openai:gpt-4.1-mini."
    )
    project = Unicode(
        None, allow_none=True, config=True, help="A demo name or a GraphQL endpoint URL."
    )
    store = Unicode(
        None,
        allow_none=True,
        config=True,
        help="The chat store: a SQLite file's path or a postgresql:// URL (a hub's shared store).",
    )
    url = Unicode(
        None, allow_none=True, config=True, help="Route prefix under base_url (gmchat/chat/)."
    )
    chat_settings = Dict(config=True, help="Any other chat settings, over the file's.")
    max_body_bytes = Int(64 * 1024, config=True, help="Largest accepted request body.")
    max_import_bytes = Int(
        DEFAULT_IMPORT_BYTES,
        config=True,
        help="Largest accepted knowledge import (YAML), which may hold many entries.",
    )
    keepalive_seconds = Float(
        15.0, config=True, help="Silence after which an SSE stream sends a keep-alive comment."
    )
    lease_seconds = Float(
        15.0,
        config=True,
        help="How long this server's claim on a turn it runs lasts unrenewed: a server sharing "
        "the store takes over (or closes) a turn whose claim lapsed, after at most 1.5 leases.",
    )

    runtime: ChatRuntime | None = None
    mcp_bridge: MCPBridge | None = None

    def chat_config(self) -> ChatSettings:
        """The effective chat settings: file, then ``chat_settings``, then set traits."""
        overrides: dict[str, Any] = dict(self.chat_settings)
        for name in ("provider", "project", "store", "url"):
            value = getattr(self, name)
            if value is not None:
                overrides[name] = value
        return load_settings(self.settings_file or None, **overrides)

    owner = Unicode(
        None,
        allow_none=True,
        config=True,
        help="The actor name for every user (default: the OS user on a stock single-user "
        "server, whose token requests otherwise get a new anonymous user each; else none).",
    )

    def _owner(self) -> str | None:
        if self.owner is not None:
            return self.owner or None
        provider = getattr(self.serverapp, "identity_provider", None)
        if type(provider) in (IdentityProvider, PasswordIdentityProvider):
            return getpass.getuser()
        return None

    def _runtime(self) -> ChatRuntime:
        return ChatRuntime(
            self.chat_config(), owner=self._owner(), lease_seconds=self.lease_seconds
        )

    def initialize_settings(self) -> None:
        """Load and validate the settings now, so a bad file stops the server with its message."""
        self.runtime = self._runtime()

    def initialize_handlers(self) -> None:
        """Register the routes (ExtensionApp prepends base_url)."""
        if self.runtime is None:  # initialize_settings runs first; this keeps mypy honest
            self.runtime = self._runtime()
        prefix = "/" + self.runtime.settings.url.strip("/")
        common = {"runtime": self.runtime, "max_body_bytes": self.max_body_bytes}
        streaming = {**common, "keepalive_seconds": self.keepalive_seconds}
        importing = {**common, "max_import_bytes": self.max_import_bytes}
        # The trailing slash is optional, so `curl .../gmchat/chat` works as well.
        self.handlers.extend(
            [
                (prefix + "/?", ChatHandler, common),
                (prefix + "/stream/?", StreamHandler, streaming),
                (prefix + "/confirm/?", ConfirmHandler, common),
                (prefix + "/conversations/?", ConversationsHandler, common),
                (prefix + "/turns/?", TurnsHandler, common),
                (prefix + "/conversations/([^/]+)/events/?", ConversationEventsHandler, streaming),
                (prefix + "/conversations/([^/]+)/turns/?", ConversationTurnsHandler, common),
                (
                    prefix + "/conversations/([^/]+)/notebook/?",
                    ConversationNotebookHandler,
                    common,
                ),
                (prefix + "/conversations/([^/]+)/turns/([^/]+)/cancel/?", CancelHandler, common),
                (
                    prefix + "/conversations/([^/]+)/turns/([^/]+)/evidence/?",
                    TurnEvidenceHandler,
                    common,
                ),
                (
                    prefix + "/conversations/([^/]+)/turns/([^/]+)/chart/?",
                    TurnChartHandler,
                    common,
                ),
                (prefix + "/usage/?", UsageHandler, common),
                (prefix + "/knowledge/?", KnowledgeListHandler, common),
                (prefix + "/knowledge/from-turn/?", KnowledgeFromTurnHandler, common),
                (prefix + "/knowledge/export/?", KnowledgeExportHandler, common),
                (prefix + "/knowledge/import/?", KnowledgeImportHandler, importing),
                (prefix + "/knowledge/check/?", KnowledgeCheckHandler, common),
                (prefix + f"/knowledge/{ENTRY_ID}/?", KnowledgeEntryHandler, common),
                (prefix + "/knowledge/([^/]+)/accept/?", KnowledgeAcceptHandler, common),
                (
                    prefix + "/conversations/([^/]+)/knowledge/?",
                    ConversationKnowledgeHandler,
                    common,
                ),
                (prefix + "/agent-tokens/?", AgentTokensHandler, common),
                (prefix + "/agent-tokens/([^/]+)/?", AgentTokenHandler, common),
                (prefix + "/ws", ChatSocket, common),
                self._mcp_route(common),
            ]
        )
        self.log.info("gmchat routes under %s", prefix)

    def _mcp_route(self, common: dict[str, Any]) -> tuple[str, type[Any], dict[str, Any]]:
        """``{base_url}gmchat/mcp`` (whatever the chat's ``url``): the agents' MCP endpoint, or,
        without the ``[mcp]`` extra, a route that says so (501)."""
        if not mcp_installed():
            return (MCP_ROUTE, MCPMissingHandler, common)
        assert self.runtime is not None
        self.mcp_bridge = MCPBridge(self.runtime, max_body_bytes=self.max_body_bytes)
        return (MCP_ROUTE, MCPHandler, {**common, "bridge": self.mcp_bridge})

    async def stop_extension(self) -> None:
        """Stop the agents' MCP servers, cancel running turns, close the project and the store."""
        if self.mcp_bridge is not None:
            await self.mcp_bridge.aclose()
        if self.runtime is not None:
            await self.runtime.aclose()

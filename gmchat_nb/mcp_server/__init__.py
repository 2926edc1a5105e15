"""The chat's tools for agents over the Model Context Protocol (the ``[mcp]`` extra): the
server (:mod:`.server`), its stdio transport (``gmchat mcp``, :mod:`.stdio`); the Jupyter server
extension serves it over Streamable HTTP at ``{base_url}gmchat/mcp``. Both check what an agent
sends before the SDK reads it (:mod:`.screen`)."""

from .server import build_server

__all__ = ["build_server"]

"""The Jupyter Server extension: gmchat's HTTP, SSE and WebSocket routes under base_url.

Enabled by ``etc/jupyter/jupyter_server_config.d/gmchat_nb.json`` (installed as shared data);
configured through ``c.GMChat.*`` traits and the chat settings YAML (see :mod:`.app`).
"""

from __future__ import annotations

from typing import Any

from .app import GMChat

__all__ = ["GMChat"]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """Tell Jupyter Server which app this module provides."""
    return [{"module": "gmchat_nb.server_ext", "app": GMChat}]

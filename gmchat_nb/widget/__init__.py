"""The notebook chat widget (anywidget): ``chat`` as a cell's last line, ``display(chat)`` or
``panel(chat)`` shows a chat's panel. ``evidence_code`` (a cell that re-runs one query) lives in
``gmchat_nb.core.session.evidence``, shared with the server's evidence route."""

from __future__ import annotations

from ..core.session.evidence import evidence_code
from .chat_widget import ChatWidget
from .display import panel, register_display

__all__ = ["ChatWidget", "evidence_code", "panel", "register_display"]

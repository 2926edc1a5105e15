"""The notebook chat widget (anywidget): ``chat`` as a cell's last line, ``display(chat)`` or
``panel(chat)`` shows a chat's panel."""

from __future__ import annotations

from .chat_widget import ChatWidget, evidence_code
from .display import panel, register_display

__all__ = ["ChatWidget", "evidence_code", "panel", "register_display"]

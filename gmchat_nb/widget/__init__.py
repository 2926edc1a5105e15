"""The notebook chat widget (anywidget): ``display(chat)`` or ``chat.widget()``."""

from __future__ import annotations

from .chat_widget import ChatWidget, evidence_code

__all__ = ["ChatWidget", "evidence_code"]

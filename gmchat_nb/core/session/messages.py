"""Messages as the session takes and keeps them: whether a user's text may be accepted, the title
a first question gives its conversation, and a message as a row of the store."""

from __future__ import annotations

from typing import Any

from ..providers.base import Message
from ..text import json_kind, lone_surrogate_at

__all__ = ["TITLE_LENGTH", "conversation_title", "message_row", "text_refusal"]

TITLE_LENGTH = 120


def text_refusal(text: Any) -> str | None:
    """Why a user message cannot be accepted, or None."""
    if text is None:
        return "Message text is required."
    if not isinstance(text, str):
        return f"Message text must be a string, not {json_kind(text)}."
    if not text.strip():
        return "Message text is required."
    position = lone_surrogate_at(text)
    if position is not None:
        return (
            f"Message text has a lone surrogate (U+{ord(text[position]):04X}) at character "
            f"{position}, which is not valid Unicode; send the text as valid UTF-8."
        )
    return None


def message_row(message: Message) -> dict[str, Any]:
    """A provider message as :meth:`ChatStore.record_turn` takes it."""
    return {
        "role": message.role,
        "content": message.content,
        "tool_calls": [
            {"id": call.id, "name": call.name, "args": call.args} for call in message.tool_calls
        ],
        "tool_call_id": message.tool_call_id,
        "tool_name": message.tool_name,
        "tool_result": message.tool_result,
    }


def conversation_title(text: str) -> str:
    """The first eight words of the first question, at most 120 characters."""
    words = text[:2000].split()
    title = " ".join(words[:8]) + ("…" if len(words) > 8 else "")
    return title if len(title) <= TITLE_LENGTH else title[: TITLE_LENGTH - 1] + "…"

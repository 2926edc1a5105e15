"""The bounded context of a turn: the system prompt, a summary of the older messages (made once
and kept in the store), and the recent messages verbatim, with no tool result cut off from its
call."""

from __future__ import annotations

from collections.abc import Iterable

from ..providers.attempts import ProviderRetries, complete_text
from ..providers.base import BaseLLMProvider, Message, ProviderError, ToolCallEvent
from ..store import ChatStore, StoredMessage
from ..turn_state import TurnIO, TurnState

__all__ = ["SUMMARY_INSTRUCTIONS", "bounded_context"]

SUMMARY_INSTRUCTIONS = (
    "Summarise this earlier part of a conversation about a project's data in a few sentences. "
    "Keep the facts found (names, numbers), what the user wanted, which tools gave which "
    "results, and anything left unresolved. Write only the summary."
)


async def bounded_context(
    store: ChatStore,
    provider: BaseLLMProvider,
    io: TurnIO,
    conversation_id: str,
    state: TurnState,
    *,
    system_prompt: str,
    summarize_after: int,
    max_recent: int,
    pending_tail: bool,
    retries: ProviderRetries | None = None,
) -> list[Message]:
    """The bounded context: system prompt, summary of older messages, the recent window.

    A summary is a provider round of ``state``: its tokens go to ``io.record_usage`` and a
    provider failure (after the turn's ``retries``) to ``io.provider_failed`` (the context then
    goes without a summary).
    """
    stored = store.messages(conversation_id)
    start = _window_start(stored, summarize_after, max_recent)
    messages = [Message("system", system_prompt)]
    if start > 0:
        summary = await _summary(
            store, provider, io, conversation_id, stored[:start], state, retries
        )
        if summary:
            messages.append(Message("system", f"Summary of the earlier conversation: {summary}"))
    messages.extend(_to_provider(stored[start:], pending_tail=pending_tail))
    return messages


async def _summary(
    store: ChatStore,
    provider: BaseLLMProvider,
    io: TurnIO,
    conversation_id: str,
    older: list[StoredMessage],
    state: TurnState,
    retries: ProviderRetries | None,
) -> str:
    """The summary covering exactly ``older``: reused when its marker matches, else made."""
    record = store.conversation(conversation_id)
    through = older[-1].id
    if record is not None and record.summary and record.summarized_through == through:
        return record.summary
    lines = "\n".join(_summary_line(message) for message in older)
    state.rounds += 1  # a summary is a provider round like any other
    try:
        text, usage = await complete_text(
            provider,
            [Message("system", SUMMARY_INSTRUCTIONS), Message("user", lines)],
            retries,
        )
    except (ProviderError, TimeoutError) as error:
        io.provider_failed(error)
        return ""
    state.add_usage(usage)
    io.record_usage(usage)
    if text.strip():
        store.set_summary(conversation_id, text.strip(), through)
    return text.strip()


def _window_start(stored: list[StoredMessage], summarize_after: int, max_recent: int) -> int:
    """Where the verbatim window begins: everything fits, or the last ``max_recent`` messages
    moved back so no tool result loses its call, and the latest tool exchange always kept."""
    if len(stored) <= summarize_after:
        return 0
    start = max(0, len(stored) - max_recent)
    latest_tool = max((i for i, m in enumerate(stored) if m.role == "tool"), default=-1)
    if 0 <= latest_tool < start:
        start = latest_tool
    while start > 0 and stored[start].role == "tool":
        start -= 1
    return start


def _to_provider(stored: Iterable[StoredMessage], *, pending_tail: bool) -> list[Message]:
    """Stored rows as provider messages; a tool exchange missing results becomes plain text."""
    rows = list(stored)
    answered = {m.tool_call_id for m in rows if m.role == "tool"}
    messages: list[Message] = []
    for position, row in enumerate(rows):
        if row.role == "assistant" and row.tool_calls:
            calls = tuple(
                ToolCallEvent(str(call["id"]), str(call["name"]), dict(call.get("args") or {}))
                for call in row.tool_calls
            )
            complete = all(call.id in answered for call in calls)
            is_tail = position == len(rows) - 1
            if complete or (pending_tail and is_tail):
                messages.append(Message("assistant", row.content, tool_calls=calls))
            else:
                names = ", ".join(call.name for call in calls)
                messages.append(
                    Message("assistant", f"{row.content}\n(Unfinished tool call: {names}.)".strip())
                )
        elif row.role == "tool":
            messages.append(
                Message(
                    "tool",
                    tool_call_id=row.tool_call_id,
                    tool_name=row.tool_name,
                    tool_result=row.tool_result,
                )
            )
        elif row.role in ("user", "assistant", "system"):
            messages.append(Message(row.role, row.content))  # type: ignore[arg-type]
    return messages


def _summary_line(message: StoredMessage) -> str:
    if message.role == "tool":
        return f"tool:{message.tool_name}: {str(message.tool_result)[:800]}"
    if message.tool_calls:
        calls = ", ".join(f"{call['name']}({call.get('args')})" for call in message.tool_calls)
        return f"assistant (called {calls}): {message.content}"
    return f"{message.role}: {message.content}"

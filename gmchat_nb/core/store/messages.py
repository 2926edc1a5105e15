"""The messages table: a conversation's history, appended, read and trimmed."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Final

from .conversations import touch
from .database import Database, Row, Statements, time_or_now
from .records import StoredMessage

__all__ = ["MessageRow", "Messages", "insert_messages", "message_row_of"]

_ROLES: Final = frozenset({"system", "user", "assistant", "tool"})
_INSERT: Final = (
    "INSERT INTO messages (conversation_id, role, content, tool_calls, tool_call_id, "
    "tool_name, tool_result, turn_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)

MessageRow = tuple[str, str, str | None, str | None, str | None, str, str | None]
"""``(role, tool_calls json, tool_call_id, tool_name, tool_result json, content, turn_id)``."""


def _message_row(
    role: str,
    content: str,
    tool_calls: Iterable[Mapping[str, Any]],
    tool_call_id: str | None,
    tool_name: str | None,
    tool_result: Any,
    turn_id: str | None,
) -> MessageRow:
    """A :data:`MessageRow`, validated: an unknown role or a tool call without id or name is a
    ``ValueError``."""
    if role not in _ROLES:
        raise ValueError(f"role must be one of {sorted(_ROLES)}, not {role!r}")
    calls = []
    for call in tool_calls:
        if not call.get("id") or not call.get("name"):
            raise ValueError(f"a tool call needs an id and a name: {dict(call)!r}")
        calls.append({"id": call["id"], "name": call["name"], "args": call.get("args") or {}})
    result_json = None if tool_result is None else json.dumps(tool_result)
    return (role, json.dumps(calls), tool_call_id, tool_name, result_json, content, turn_id)


def message_row_of(message: Mapping[str, Any], turn_id: str) -> MessageRow:
    """:func:`_message_row` from a mapping of :meth:`Messages.append_message`'s arguments."""
    return _message_row(
        message["role"],
        message.get("content", ""),
        message.get("tool_calls", ()),
        message.get("tool_call_id"),
        message.get("tool_name"),
        message.get("tool_result"),
        turn_id,
    )


def _values(conversation_id: str, row: MessageRow, at: float) -> tuple[Any, ...]:
    """The parameters of :data:`_INSERT` for one row."""
    role, calls_json, tool_call_id, tool_name, result_json, content, turn_id = row
    return (
        conversation_id,
        role,
        content,
        calls_json,
        tool_call_id,
        tool_name,
        result_json,
        turn_id,
        at,
    )


def insert_messages(
    connection: Statements, conversation_id: str, rows: list[MessageRow], at: float
) -> None:
    """Insert the rows in order (the caller touches the conversation)."""
    connection.executemany(_INSERT, [_values(conversation_id, row, at) for row in rows])


def _message(row: Row) -> StoredMessage:
    result = row["tool_result"]
    return StoredMessage(
        id=row["id"],
        conversation_id=row["conversation_id"],
        role=row["role"],
        content=row["content"],
        tool_calls=tuple(json.loads(row["tool_calls"])),
        tool_call_id=row["tool_call_id"],
        tool_name=row["tool_name"],
        tool_result=None if result is None else json.loads(result),
        turn_id=row["turn_id"],
        created_at=row["created_at"],
    )


class Messages(Database):
    """The :class:`~gmchat_nb.core.store.ChatStore` methods over a conversation's messages."""

    def append_message(
        self,
        conversation_id: str,
        role: str,
        content: str = "",
        *,
        tool_calls: Iterable[Mapping[str, Any]] = (),
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        tool_result: Any = None,
        turn_id: str | None = None,
        now: float | None = None,
    ) -> StoredMessage:
        """Append one message and touch the conversation's ``updated_at``.

        ``tool_calls`` are mappings with ``id``, ``name`` and ``args`` (``{}`` when missing);
        ``tool_result`` is any JSON value. An unknown conversation is a ``KeyError``; an unknown
        role, or a tool call without id or name, is a ``ValueError``.
        """
        row = _message_row(role, content, tool_calls, tool_call_id, tool_name, tool_result, turn_id)
        at = time_or_now(now)
        with self._write() as connection:
            touch(connection, conversation_id, at)
            message_id = int(
                connection.execute(
                    _INSERT + " RETURNING id", _values(conversation_id, row, at)
                ).fetchone()[0]
            )
        return StoredMessage(
            id=message_id,
            conversation_id=conversation_id,
            role=role,
            content=content,
            tool_calls=tuple(json.loads(row[1])),
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            # Round-tripped so the caller sees exactly what a later read returns.
            tool_result=None if row[4] is None else json.loads(row[4]),
            turn_id=turn_id,
            created_at=at,
        )

    def messages(
        self, conversation_id: str, *, after_id: int | None = None, turn_id: str | None = None
    ) -> list[StoredMessage]:
        """The conversation's messages in order (only those after ``after_id``, or of the turn
        ``turn_id``, when given)."""
        sql = "SELECT * FROM messages WHERE conversation_id = ? AND id > ?"
        parameters: list[Any] = [conversation_id, -1 if after_id is None else after_id]
        if turn_id is not None:
            sql += " AND turn_id = ?"
            parameters.append(turn_id)
        return [_message(row) for row in self._read(sql + " ORDER BY id", parameters)]

    def delete_messages(self, conversation_id: str, ids: Iterable[int]) -> int:
        """Delete these messages of the conversation (a failed turn's leftovers); returns how many.

        A summary whose marker message is deleted is dropped too, so it is regenerated rather than
        trusted with unknown coverage.
        """
        wanted = sorted({int(value) for value in ids})
        if not wanted:
            return 0
        marks = ", ".join("?" for _ in wanted)
        with self._write() as connection:
            cursor = connection.execute(
                f"DELETE FROM messages WHERE conversation_id = ? AND id IN ({marks})",
                (conversation_id, *wanted),
            )
            connection.execute(
                "UPDATE conversations SET summary = NULL, summarized_through = NULL "
                f"WHERE id = ? AND summarized_through IN ({marks})",
                (conversation_id, *wanted),
            )
            return cursor.rowcount
